/**
 * What the hand-off of accepted transactions (`src/ingress/handoff.ts`: one `postMessage` of a
 * batch per 10 ms, structured-cloned) costs a send in serialization, in one process — the
 * figure a native queue drained by the main thread in one call (issue 35, item 1's hand-off)
 * would have to beat:
 *
 *   node --import tsx bench/handoff-clone.ts [batch] [batches per block] [blocks]
 *
 * Batches of realistic `Accepted` objects (a `sent` record, a 400-byte wire, the default send
 * options, two packed first-send attempts) go through `v8.serialize` (the ingress thread's side of
 * a `postMessage`: V8's ValueSerializer, which structured clone is) and `v8.deserialize` (the main
 * thread's side). CPU µs per accepted transaction (`process.cpuUsage`), blocks alternated between
 * the two sides, medians. It leaves out what a message costs beyond its payload (the port, the
 * main thread's wake-up: ~13 µs a message on the main thread, ~7 on the ingress one, by the
 * handoff's own comment), which a native queue would still pay once per drain.
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { deserialize, serialize } from 'node:v8';
import { base58Encode } from '../src/native.js';
import { DEFAULT_SEND_OPTIONS, type Accepted } from '../src/delivery/delivery.js';
import { sentRecord } from '../src/store/records.js';

const batch = Number(process.argv[2] ?? 30);
const perBlock = Number(process.argv[3] ?? 2000);
const blocks = Number(process.argv[4] ?? 11);

function accepted(): Accepted {
  const wire = randomBytes(400);
  return {
    record: sentRecord({
      signature: base58Encode(wire.subarray(1, 65)),
      accountId: 'acc_7YzZ5xkWQ3rPm2hT9vLn',
      keyName: 'default',
      tipLamports: 1_000_000n,
      recentBlockhash: base58Encode(wire.subarray(300, 332)),
      durableNonce: false,
      submittedAt: Date.now(),
      submitSlot: 301_234_567,
      lastValidBlockHeight: 280_000_150,
    }),
    wire,
    options: { ...DEFAULT_SEND_OPTIONS },
    receivedAt: process.hrtime.bigint(),
    sentSlot: 301_234_567,
    held: false,
    firstAttempts: ['127.0.0.1:8009', 0, -1, 412, '', '127.0.0.1:8010', 0, -1, 455, ''],
    computeUnitPrice: 10_000,
    signatureOffset: 1,
    blockhashOffset: 300,
  };
}

const batches = Array.from({ length: 64 }, () => Array.from({ length: batch }, accepted));
const serialized = batches.map((b) => serialize(b));

function cpu(run: () => void): number {
  const before = process.cpuUsage();
  run();
  const d = process.cpuUsage(before);
  return (d.user + d.system) / (perBlock * batch);
}
const sendSide = () =>
  cpu(() => {
    for (let i = 0; i < perBlock; i++) serialize(batches[i % batches.length]);
  });
const receiveSide = () =>
  cpu(() => {
    for (let i = 0; i < perBlock; i++) deserialize(serialized[i % serialized.length]!);
  });

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const load = loadavg()[0]!;
sendSide();
receiveSide();
const send: number[] = [];
const receive: number[] = [];
for (let b = 0; b < blocks; b++) {
  send.push(sendSide());
  receive.push(receiveSide());
}
console.log(`hand-off clone, ${batch} accepted a message (${serialized[0]!.length} bytes serialized), ${perBlock} messages a block, ${blocks} blocks; load ${load.toFixed(2)} → ${loadavg()[0]!.toFixed(2)}`);
console.log(`ingress side (serialize):  median ${median(send).toFixed(2)} µs a send [${send.map((x) => x.toFixed(2)).join(', ')}]`);
console.log(`main side (deserialize):   median ${median(receive).toFixed(2)} µs a send [${receive.map((x) => x.toFixed(2)).join(', ')}]`);

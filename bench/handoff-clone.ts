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
 * the two sides, medians. Beside them, the native queue's shape (docs/native.md, the hand-off),
 * emulated in JavaScript (see `push` and `rebuild` below), and the parts of its main side; and the
 * built queue (`src/delivery/handoff-queue.ts`): on the ingress side what the record call with the
 * queue costs beyond the record call without it (the tail, the entry's copy, plus the batch
 * message's sequence numbers serialized), on the main side the drain and the rebuild (plus the
 * message's numbers deserialized). It leaves out what a message costs beyond its payload (the port, the
 * main thread's wake-up: ~13 µs a message on the main thread, ~7 on the ingress one, by the
 * handoff's own comment), which a native queue would still pay once per drain.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, openSync } from 'node:fs';
import { loadavg } from 'node:os';
import { deserialize, serialize } from 'node:v8';
import { accountSlot, base58Encode, handoffClose, handoffOpen, overlay, recordAccepted, usage, utcDay } from '../src/native.js';
import { decodeHandoff, drainHandoff, HandoffQueue } from '../src/delivery/handoff-queue.js';
import { DEFAULT_SEND_OPTIONS, type Accepted } from '../src/delivery/delivery.js';
import type { PackedAttempts } from '../src/delivery/trace.js';
import { sentRecord } from '../src/store/records.js';
import { acceptedNames, acceptedValueBytes, decodeStatus, encodeStatus, resendOf, resendOptionsByte } from '../src/store/status-codec.js';

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

/*
 * The native queue's shape, emulated in JavaScript where the addon would do it (so this is a
 * bound from below on what the queue costs, not a measure of a built queue):
 * - ingress side: what the record call would have to be given beyond what `recordAccepted` takes
 *   today (the tail: receivedAt, the first send's slot, held, the compute-unit price, the two
 *   offsets, skipPreflight, the attempts with their address strings) written into a scratch
 *   buffer, and the entry (length, the status value, the tail) copied into the queue — the
 *   copy the addon would make;
 * - main side: the drain (one copy of the batch's entries out of the queue: `Buffer.from`), and
 *   every entry rebuilt into the `Accepted` `Engine` takes — the signature's and the
 *   blockhash's base58 (the store's decoder encodes the blockhash; the signature is the key's),
 *   `decodeStatus`, `resendOf` (the wire copied out of the batch and the options), the tail's
 *   numbers and the attempts' strings.
 */
const TAIL_FIXED = 8 + 8 + 1 + 4 + 2 + 2 + 1 + 1;
function valueOf(a: Accepted): Buffer {
  return encodeStatus(a.record, { wire: a.wire, antiMev: a.options.antiMev, maxRetries: a.options.maxRetries }, a.wire.subarray(300, 332));
}
const values = batches.map((b) => b.map(valueOf));
const queue = Buffer.alloc(1 << 20);
const scratch = Buffer.alloc(2048);
/** The tail an entry needs beyond the status value, written as the ingress thread would pass it. */
function writeTail(out: Buffer, a: Accepted): number {
  out.writeBigUInt64LE(a.receivedAt, 0);
  out.writeDoubleLE(a.sentSlot, 8);
  out[16] = a.held ? 1 : 0;
  out.writeUInt32LE(a.computeUnitPrice ?? 0, 17);
  out.writeUInt16LE(a.signatureOffset ?? 0, 21);
  out.writeUInt16LE(a.blockhashOffset ?? 0, 23);
  out[25] = a.options.skipPreflight ? 1 : 0;
  const at = a.firstAttempts ?? [];
  out[26] = at.length / 5;
  let off = TAIL_FIXED;
  for (let i = 0; i + 5 <= at.length; i += 5) {
    const tpu = at[i] as string;
    const reason = at[i + 4] as string;
    out[off] = tpu.length;
    off += 1 + out.write(tpu, off + 1, 'latin1');
    out[off] = at[i + 1] as number;
    out.writeInt32LE(at[i + 2] as number, off + 1);
    out.writeUInt32LE(at[i + 3] as number, off + 5);
    out[off + 9] = reason.length;
    off += 10 + out.write(reason, off + 10, 'latin1');
  }
  return off;
}
function push(b: Accepted[], vs: Buffer[]): number {
  let q = 0;
  for (let i = 0; i < b.length; i++) {
    const tail = writeTail(scratch, b[i]!);
    const v = vs[i]!;
    queue.writeUInt16LE(v.length, q);
    q += 2 + v.copy(queue, q + 2);
    queue.writeUInt16LE(tail, q);
    q += 2 + scratch.copy(queue, q + 2, 0, tail);
  }
  return q;
}
const drained = batches.map((b, i) => Buffer.from(queue.subarray(0, push(b, values[i]!))));
function rebuild(batchBytes: Buffer): Accepted[] {
  const buf = Buffer.from(batchBytes); // the drain's copy
  const out: Accepted[] = [];
  let q = 0;
  while (q < buf.length) {
    const vlen = buf.readUInt16LE(q);
    const value = buf.subarray(q + 2, q + 2 + vlen);
    q += 2 + vlen;
    const tlen = buf.readUInt16LE(q);
    const t = buf.subarray(q + 2, q + 2 + tlen);
    q += 2 + tlen;
    const resend = resendOf(value)!;
    const sigOff = t.readUInt16LE(21);
    const record = decodeStatus(base58Encode(resend.wire.subarray(sigOff, sigOff + 64)), value);
    const attempts: PackedAttempts = [];
    let off = TAIL_FIXED;
    for (let n = t[26]!; n > 0; n--) {
      const tpu = t.toString('latin1', off + 1, off + 1 + t[off]!);
      off += 1 + t[off]!;
      const rlen = t[off + 9]!;
      attempts.push(tpu, t[off]!, t.readInt32LE(off + 1), t.readUInt32LE(off + 5), t.toString('latin1', off + 10, off + 10 + rlen));
      off += 10 + rlen;
    }
    out.push({
      record,
      wire: resend.wire,
      options: { skipPreflight: t[25] === 1, maxRetries: resend.maxRetries, antiMev: resend.antiMev, deadlineSlot: record.deadlineSlot ?? null, rebroadcastUntilExpiry: resend.untilExpiry === true },
      receivedAt: t.readBigUInt64LE(0),
      sentSlot: t.readDoubleLE(8),
      held: t[16] === 1,
      firstAttempts: attempts,
      computeUnitPrice: t.readUInt32LE(17),
      signatureOffset: sigOff,
      blockhashOffset: t.readUInt16LE(23),
    });
  }
  return out;
}
{
  // The rebuilt batch must be what was handed off (or the comparison is of different work).
  const back = rebuild(drained[0]!);
  const want = batches[0]!;
  const same = (x: unknown, y: unknown) => JSON.stringify(x, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)) === JSON.stringify(y, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  if (back.length !== want.length || !back.every((a, i) => same(a, want[i]))) throw new Error('the queue emulation does not rebuild the batch');
}

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

const queuePushSide = () =>
  cpu(() => {
    for (let i = 0; i < perBlock; i++) push(batches[i % batches.length]!, values[i % values.length]!);
  });
const queueDrainSide = () =>
  cpu(() => {
    for (let i = 0; i < perBlock; i++) rebuild(drained[i % drained.length]!);
  });

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const load = loadavg()[0]!;
sendSide();
receiveSide();
queuePushSide();
queueDrainSide();
const send: number[] = [];
const receive: number[] = [];
const qpush: number[] = [];
const qdrain: number[] = [];
for (let b = 0; b < blocks; b++) {
  send.push(sendSide());
  receive.push(receiveSide());
  qpush.push(queuePushSide());
  qdrain.push(queueDrainSide());
}
console.log(`hand-off clone, ${batch} accepted a message (${serialized[0]!.length} bytes serialized), ${perBlock} messages a block, ${blocks} blocks; load ${load.toFixed(2)} → ${loadavg()[0]!.toFixed(2)}`);
console.log(`ingress side (serialize):  median ${median(send).toFixed(2)} µs a send [${send.map((x) => x.toFixed(2)).join(', ')}]`);
console.log(`main side (deserialize):   median ${median(receive).toFixed(2)} µs a send [${receive.map((x) => x.toFixed(2)).join(', ')}]`);
console.log(`queue, ingress side (tail + entry copy, emulated):  median ${median(qpush).toFixed(2)} µs a send [${qpush.map((x) => x.toFixed(2)).join(', ')}]`);
console.log(`queue, main side (drain copy + rebuild with decodeStatus): median ${median(qdrain).toFixed(2)} µs a send [${qdrain.map((x) => x.toFixed(2)).join(', ')}]`);

/*
 * The built queue. Ingress side: `recordAccepted` as `StatusTables.insertAccepted` calls it, onto
 * /dev/null (its write is the same `writev(2)` a segment gets, without the disk), with the queue
 * and the tail (`HandoffQueue.tail`) against without them, blocks alternated: the difference is
 * what the hand-off adds to the record call; the batch message's numbers (`v8.serialize` of the
 * batch's sequence numbers) are added to it. Main side: the drain and the rebuild of batches
 * pushed before the timing (`drainHandoff`), plus the message's numbers deserialized.
 */
const nullFd = openSync('/dev/null', 'w');
const index = accountSlot('acc_7YzZ5xkWQ3rPm2hT9vLn');
usage.init(index, 0, utcDay(), 0);
const queue2 = new HandoffQueue(handoffOpen());
const names = acceptedNames('acc_7YzZ5xkWQ3rPm2hT9vLn', 'default');
function recordBatch(b: Accepted[], q: HandoffQueue | null): void {
  const day = utcDay();
  for (const a of b) {
    const r = a.record;
    const value = Buffer.allocUnsafe(acceptedValueBytes(names, a.wire.length, r.deadlineSlot !== undefined));
    const key = a.wire.subarray(1, 65);
    const token = recordAccepted(
      nullFd,
      key,
      a.wire,
      300,
      names,
      r.tipLamports,
      r.submittedAt,
      r.submitSlot,
      r.lastValidBlockHeight ?? -1,
      r.durableNonce,
      r.deadlineSlot ?? -1,
      resendOptionsByte(a.options.antiMev, a.options.maxRetries, a.options.rebroadcastUntilExpiry),
      index,
      day,
      false,
      value,
      q?.id ?? 0,
      q === null ? noTail : q.tail(a),
    );
    if (q !== null) a.handoffSeq = q.next();
    overlay.release(key, token);
  }
}
const noTail = new Uint8Array(0);
/** The batch message's numbers, as the ingress thread posts them. */
const seqsOf = (b: Accepted[]) => b.map((a) => a.handoffSeq!);
const recordOnly = () =>
  cpu(() => {
    for (let i = 0; i < perBlock; i++) recordBatch(batches[i % batches.length]!, null);
  });
const recordQueued = () => {
  const t = cpu(() => {
    for (let i = 0; i < perBlock; i++) {
      const b = batches[i % batches.length]!;
      recordBatch(b, queue2);
      serialize(seqsOf(b));
    }
  });
  // What was pushed goes, outside the timing.
  drainHandoff(queue2.id, [batches[(perBlock - 1) % batches.length]!.at(-1)!.handoffSeq!]);
  return t;
};
/**
 * As on the main thread, a batch is drained while the queue holds little more than that batch:
 * each batch is pushed outside the timing and its drain timed alone (`process.cpuUsage` around
 * each drain, summed; its own cost, ~0.5 µs a batch, is in the figure).
 */
const drainSide = () => {
  let us = 0;
  for (let i = 0; i < perBlock; i++) {
    const b = batches[i % batches.length]!;
    recordBatch(b, queue2);
    const m = serialize(seqsOf(b));
    const before = process.cpuUsage();
    drainHandoff(queue2.id, deserialize(m) as number[]);
    const d = process.cpuUsage(before);
    us += d.user + d.system;
  }
  return us / (perBlock * batch);
};
{
  // The rebuilt batch must be what was handed off.
  const b = batches[1]!;
  recordBatch(b, queue2);
  const back = drainHandoff(queue2.id, seqsOf(b));
  const same = (x: unknown, y: unknown) => JSON.stringify(x, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)) === JSON.stringify(y, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  if (back.length !== b.length || !back.every((a, i) => same({ ...a, handoffSeq: b[i]!.handoffSeq }, b[i]))) throw new Error('the built queue does not rebuild the batch');
  void decodeHandoff;
}
recordOnly();
recordQueued();
drainSide();
const rOnly: number[] = [];
const rQueued: number[] = [];
const drains: number[] = [];
for (let b = 0; b < blocks; b++) {
  rOnly.push(recordOnly());
  rQueued.push(recordQueued());
  drains.push(drainSide());
}
const added = rQueued.map((x, i) => x - rOnly[i]!);
console.log(`built queue, ingress side (record call with the queue and tail − without, + the message's numbers): median ${median(added).toFixed(2)} µs a send [${added.map((x) => x.toFixed(2)).join(', ')}] (record alone ${median(rOnly).toFixed(2)})`);
console.log(`built queue, main side (the message's numbers + drain + rebuild): median ${median(drains).toFixed(2)} µs a send [${drains.map((x) => x.toFixed(2)).join(', ')}]`);
console.log(`load after: ${loadavg()[0]!.toFixed(2)}`);
handoffClose(queue2.id);
closeSync(nullFd);

// Where the queue's main side goes: its parts alone, on one entry, 5 × a block's sends in a row.
{
  const a = batches[0]![0]!;
  const value = values[0]![0]!;
  const part = (run: () => unknown): number => {
    const n = perBlock * batch * 5;
    run();
    const before = process.cpuUsage();
    for (let i = 0; i < n; i++) run();
    const d = process.cpuUsage(before);
    return (d.user + d.system) / n;
  };
  const sig = part(() => base58Encode(a.wire.subarray(1, 65)));
  const bh = part(() => base58Encode(a.wire.subarray(300, 332)));
  const dec = part(() => decodeStatus('x', value));
  const res = part(() => resendOf(value));
  console.log(`queue, main side's parts: signature base58 ${sig.toFixed(2)}, decodeStatus ${dec.toFixed(2)} (its blockhash base58 ${bh.toFixed(2)}), resendOf ${res.toFixed(2)} µs a send`);
}

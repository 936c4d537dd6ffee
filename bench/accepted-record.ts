/**
 * An accepted send's record, the old sequence against the one native call, in one process:
 *
 *   node --import tsx bench/accepted-record.ts [calls per block] [blocks]
 *
 * - **old**: what the submission core did after the first send until issue 35's second step —
 *   `encodeStatus` (the value with its resend tail), the acknowledgement log's `append` (a frame
 *   allocated, key and value copied, `node:zlib` crc32, `writeSync`), `overlay.put`, and the
 *   usage count (`usage.add` with the UTC day, as `Accounts.countSubmissions`);
 * - **new**: `recordAccepted` as `StatusTables.insertAccepted` calls it (the value's buffer, the
 *   log's segment, one native call, the log's bookkeeping), the caller's names cached.
 * Both write real frames to a real segment file (page cache; fdatasync every 100 ms, off the
 * thread) and leave the commit window out (the same in both). CPU time of the process
 * (`process.cpuUsage`, user + system) per call, blocks alternated, medians; each block's records
 * are released from the overlay and marked committed between blocks, outside the timing.
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { accountSlot, base58Encode, overlay, recordAccepted, usage, utcDay } from '../src/native.js';
import { AckLog, FRAME_HEADER_BYTES, type Segment } from '../src/store/ack-log.js';
import { sentRecord, type Resend, type StatusRecord } from '../src/store/records.js';
import { acceptedNames, acceptedValueBytes, encodeStatus, resendOptionsByte } from '../src/store/status-codec.js';
import { tempDir } from '../harness/tmp.js';

/** No hand-off queue (`handoffQueue` 0): the record call pushes nothing. */
const NO_TAIL = new Uint8Array(0);

const calls = Number(process.argv[2] ?? 100_000);
const blocks = Number(process.argv[3] ?? 11);
const tmp = tempDir('landfall-accepted-record-');
const log = new AckLog(join(tmp.dir, 'acks'));
const accountId = 'acc_7YzZ5xkWQ3rPm2hT9vLn';
const index = accountSlot(accountId);
usage.init(index, 0, utcDay(), 0);

/** Distinct transactions (a 400-byte wire: signature at 1, blockhash at 300), reused across blocks. */
const POOL = 4096;
const txs = Array.from({ length: POOL }, () => {
  const wire = randomBytes(400);
  const rec = sentRecord({
    signature: base58Encode(wire.subarray(1, 65)),
    accountId,
    keyName: 'default',
    tipLamports: 1_000_000n,
    recentBlockhash: base58Encode(wire.subarray(300, 332)),
    durableNonce: false,
    submittedAt: Date.now(),
    submitSlot: 301_234_567,
    lastValidBlockHeight: 280_000_150,
  });
  return { wire, key: wire.subarray(1, 65), blockhash: wire.subarray(300, 332), rec };
});
const options = { antiMev: false, maxRetries: 3, rebroadcastUntilExpiry: false };

type Held = { key: Buffer; token: number; seg: Segment };

function oldBlock(held: Held[]): void {
  for (let i = 0; i < calls; i++) {
    const t = txs[i % POOL]!;
    const rec: StatusRecord = t.rec;
    const resend: Resend = { wire: t.wire, antiMev: options.antiMev, maxRetries: options.maxRetries, ...(options.rebroadcastUntilExpiry && { untilExpiry: true }) };
    const value = encodeStatus(rec, resend, t.blockhash);
    const seg = log.append(t.key, value);
    const token = overlay.put(t.key, value);
    usage.add(index, 1, utcDay(Date.now()));
    held.push({ key: t.key, token, seg });
  }
}

const names = acceptedNames(accountId, 'default');
function newBlock(held: Held[]): void {
  for (let i = 0; i < calls; i++) {
    const t = txs[i % POOL]!;
    const rec = t.rec;
    const value = Buffer.allocUnsafe(acceptedValueBytes(names, t.wire.length, rec.deadlineSlot !== undefined));
    const seg = log.writer();
    const token = recordAccepted(
      seg.fd,
      t.key,
      t.wire,
      300,
      names,
      rec.tipLamports,
      rec.submittedAt,
      rec.submitSlot,
      rec.lastValidBlockHeight ?? -1,
      rec.durableNonce,
      rec.deadlineSlot ?? -1,
      resendOptionsByte(options.antiMev, options.maxRetries, options.rebroadcastUntilExpiry),
      index,
      utcDay(Date.now()),
      log.syncEach,
      value,
      0,
      NO_TAIL,
    );
    log.appended(seg, FRAME_HEADER_BYTES + t.key.length + value.length);
    held.push({ key: t.key, token, seg });
  }
}

function measure(run: (held: Held[]) => void): number {
  const held: Held[] = [];
  const before = process.cpuUsage();
  run(held);
  const d = process.cpuUsage(before);
  for (const h of held) {
    overlay.release(h.key, h.token);
    log.committed(h.seg);
  }
  return (d.user + d.system) / calls;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const loadStart = loadavg()[0]!;
// Warm-up (JIT, the segment file, the page cache), not counted.
measure(oldBlock);
measure(newBlock);
const old: number[] = [];
const neu: number[] = [];
for (let b = 0; b < blocks; b++) {
  if (b % 2 === 0) {
    old.push(measure(oldBlock));
    neu.push(measure(newBlock));
  } else {
    neu.push(measure(newBlock));
    old.push(measure(oldBlock));
  }
}
log.close();
tmp.cleanup();
const fmt = (xs: number[]): string => xs.map((x) => x.toFixed(2)).join(', ');
console.log(`accepted record, CPU µs per call (process.cpuUsage), ${calls} calls a block, ${blocks} alternated blocks; load ${loadStart.toFixed(2)} → ${loadavg()[0]!.toFixed(2)}`);
console.log(`old (encode + append + crc32 + writeSync + overlay.put + usage.add): median ${median(old).toFixed(2)} [${fmt(old)}]`);
console.log(`new (recordAccepted):                                           median ${median(neu).toFixed(2)} [${fmt(neu)}]`);
console.log(`saved: ${(median(old) - median(neu)).toFixed(2)} µs a send (${((1 - median(neu) / median(old)) * 100).toFixed(0)} %)`);

/**
 * The native hand-off queue (`src/delivery/handoff-queue.ts`, `native/src/handoff.rs`) through
 * the real record call: what `Store.insertAccepted` pushes with an ingress thread's tail is
 * drained and rebuilt into the very `Accepted` the thread had — every send option, the first
 * send's attempts, the nonce account, held sends, the numbers the status value lacks — in order;
 * an entry recorded but never named is dropped without shifting the batches after it; a record
 * that fails pushes nothing; a closed queue gives nothing back. A rebuilt send's wire is a view
 * into its drained batch; what the main thread keeps for the send's lifetime (its trace's key)
 * holds a copy, not the batch.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_SEND_OPTIONS, type Accepted, type SendOptions } from '../../src/delivery/delivery.js';
import { decodeHandoff, drainHandoff, HandoffQueue } from '../../src/delivery/handoff-queue.js';
import { accountSlot, base58Decode, handoffClose, handoffDrain, handoffOpen, usage, utcDay } from '../../src/native.js';
import { sentRecord } from '../../src/store/records.js';
import { acceptedNames, MAX_WIRE_BYTES, resendOptionsByte } from '../../src/store/status-codec.js';
import { Store } from '../../src/store/store.js';
import { TraceBook } from '../../src/delivery/trace-book.js';
import { statusRecord } from '../../harness/records.js';
import { tempDir } from '../../harness/tmp.js';

let tmp: ReturnType<typeof tempDir>;
let store: Store;
const account = 'acc_handoff_queue';
const index = accountSlot(account);
beforeEach(() => {
  tmp = tempDir();
  store = Store.open(join(tmp.dir, 'store'), { commitWindowMs: 10 });
  usage.init(index, 0, utcDay(), 0);
});
afterEach(async () => {
  await store.close();
  tmp.cleanup();
});

const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)]!;
const int = (n: number) => Math.floor(Math.random() * n);

/** A random accepted send, as the submission core builds it (its wire holds its signature at 1 and its blockhash). */
function accepted(i: number): Accepted {
  const deadline = Math.random() < 0.4 ? int(2 ** 40) : null;
  const base = statusRecord({ accountId: account, keyName: pick(['default', 'bot-1', 'ключ 🔑']), submittedAt: Date.now(), submitSlot: int(2 ** 40) });
  const record = sentRecord({ ...base, ...(deadline !== null && { deadlineSlot: deadline }) });
  const wire = randomBytes(97 + int(MAX_WIRE_BYTES - 96));
  base58Decode(record.signature).copy(wire, 1);
  const blockhashOffset = 65 + int(wire.length - 97);
  base58Decode(record.recentBlockhash).copy(wire, blockhashOffset);
  const options: SendOptions = {
    ...DEFAULT_SEND_OPTIONS,
    skipPreflight: Math.random() < 0.5,
    maxRetries: int(11),
    antiMev: Math.random() < 0.5,
    deadlineSlot: deadline,
    rebroadcastUntilExpiry: Math.random() < 0.3,
  };
  const held = i % 7 === 3;
  const attempts = held ? [] : Array.from({ length: int(4) }, (_, k) => [`127.0.0.${k + 1}:${8000 + int(1000)}`, int(5), pick([-1, 0, 2 ** 40 + 1]), int(2 ** 32), pick(['', 'refused: é 🔑', 'x'.repeat(300)])]).flat();
  return {
    record,
    wire,
    options,
    receivedAt: process.hrtime.bigint() + BigInt(int(2 ** 30)) * (1n << 20n),
    sentSlot: held ? -1 : record.submitSlot,
    held,
    firstAttempts: i % 11 === 5 ? undefined : attempts,
    nonceAccount: i % 5 === 1 ? record.recentBlockhash : undefined,
    computeUnitPrice: i % 6 === 2 ? undefined : pick([0, 1, Number.MAX_SAFE_INTEGER, int(2 ** 32)]),
    signatureOffset: 1,
    blockhashOffset,
  };
}

/** `a` recorded as the submission core records it on an ingress thread with queue `q`; the entry's number. */
function record(a: Accepted, q: HandoffQueue | null): number {
  const { record: r, options: o } = a;
  return store.insertAccepted(
    r,
    a.wire.subarray(1, 65),
    a.wire,
    a.blockhashOffset!,
    acceptedNames(r.accountId, r.keyName),
    resendOptionsByte(o.antiMev, o.maxRetries, o.rebroadcastUntilExpiry),
    index,
    utcDay(),
    q,
    q?.tail(a),
  );
}

describe('the hand-off queue', () => {
  it('rebuilds every accepted send whole and in order; an entry never named is dropped and the batches stay aligned', () => {
    const q = new HandoffQueue(handoffOpen());
    try {
      const sends = Array.from({ length: 300 }, (_, i) => accepted(i));
      const seqs = sends.map((a) => record(a, q));
      expect(seqs).toEqual(sends.map((_, i) => i + 1));
      // Sends 10 and 11 failed after their record (no message names them).
      const named = (from: number, to: number) => seqs.slice(from, to).filter((s) => s !== 11 && s !== 12);
      const batches = [named(0, 30), named(30, 31), named(31, 200), named(200, 300)];
      const back = batches.flatMap((b) => drainHandoff(q.id, b));
      const want = sends.filter((_, i) => i !== 10 && i !== 11);
      expect(back).toHaveLength(want.length);
      for (let i = 0; i < want.length; i++) expect(back[i]).toStrictEqual(want[i]);
      // Nothing is left, and a batch named again finds nothing.
      expect(drainHandoff(q.id, batches[0]!)).toEqual([]);
      expect(usage.get(index, utcDay())!.total).toBe(sends.length);
    } finally {
      handoffClose(q.id);
    }
  });

  it('pushes nothing for a record that fails, or without a queue (the main thread), and a closed queue gives nothing', () => {
    const q = new HandoffQueue(handoffOpen());
    const [a, b, c] = [accepted(0), accepted(1), accepted(2)];
    expect(record(a, q)).toBe(1);
    // A field the record cannot store: refused before anything is written, nothing pushed.
    expect(() => record({ ...b, record: { ...b.record, tipLamports: -1n } }, q)).toThrow(RangeError);
    expect(record(b, null)).toBe(0);
    expect(record(c, q)).toBe(2);
    expect(drainHandoff(q.id, [1, 2])).toStrictEqual([a, c]);
    expect(record(accepted(3), q)).toBe(3);
    expect(handoffClose(q.id)).toBe(true);
    expect(handoffClose(q.id)).toBe(false);
    expect(handoffDrain(q.id, [3]).length).toBe(0);
    expect(decodeHandoff(Buffer.alloc(0))).toEqual([]);
  });

  it("keeps no view of a drained batch in a send's trace: its key is a copy of the signature", () => {
    const q = new HandoffQueue(handoffOpen());
    try {
      const sends = Array.from({ length: 20 }, (_, i) => accepted(i * 2));
      for (const a of sends) record(a, q);
      const back = drainHandoff(q.id, sends.map((_, i) => i + 1));
      const batch = back[0]!.wire.buffer;
      expect(back.every((a) => a.wire.buffer === batch)).toBe(true); // the rebuilt wires are views into the batch
      const book = new TraceBook(() => null);
      for (const a of back) {
        const t = book.open(a, null);
        expect(t.key).toEqual(base58Decode(a.record.signature));
        // A view would hold the whole batch for as long as the trace lives (until the flight ends).
        expect(t.key!.buffer).not.toBe(batch);
      }
    } finally {
      handoffClose(q.id);
    }
  });
});

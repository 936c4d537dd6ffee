import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { base58Encode } from '../../src/native.js';
import { sentRecord, type StatusRecord } from '../../src/store/records.js';
import { startRetention } from '../../src/store/retention.js';
import { RELEASE_GRACE_MS, Store } from '../../src/store/store.js';
import { tempDir } from '../../harness/tmp.js';

let tmp: ReturnType<typeof tempDir>;
let store: Store;
beforeEach(() => {
  tmp = tempDir();
  store = Store.open(tmp.dir);
});
afterEach(async () => {
  await store.close();
  tmp.cleanup();
});

const DAY = 86_400_000;
const BLOCKHASH = base58Encode(randomBytes(32));

function rec(submittedAt: number): StatusRecord {
  return sentRecord({
    signature: base58Encode(randomBytes(64)),
    accountId: 'a',
    keyName: 'k',
    tipLamports: 0n,
    recentBlockhash: BLOCKHASH,
    durableNonce: false,
    submittedAt,
    submitSlot: 0,
    lastValidBlockHeight: null,
  });
}

it('deletes exactly the records older than the window, in slices, while requests keep being served', async () => {
  const now = 100 * DAY;
  const old = Array.from({ length: 2500 }, (_, i) => rec(now - 8 * DAY - i));
  const fresh = Array.from({ length: 300 }, (_, i) => rec(now - 6 * DAY + i));
  // Interleaved in key order (random signatures): every slice holds both kinds.
  for (const r of [...old, ...fresh]) store.insertStatus(r);
  await store.flushed();
  await new Promise((r) => setTimeout(r, 2 * RELEASE_GRACE_MS + 50)); // out of the overlay: LMDB answers
  const r = startRetention(store, { retentionDays: 7, slice: 400, now: () => now, intervalMs: 3_600_000 });
  // The event loop is not held: a timer set now fires before the prune ends.
  let ticks = 0;
  const iv = setInterval(() => ticks++, 0);
  const deleted = await r.runOnce();
  clearInterval(iv);
  r.stop();
  expect(deleted).toBe(2500);
  expect(ticks).toBeGreaterThan(0);
  for (const o of old) expect(store.getStatus(o.signature)).toBeUndefined();
  for (const f of fresh) expect(store.getStatus(f.signature)).toEqual(f);
  expect([...store.pendingEntries()].length).toBe(300);
  // A second run finds nothing more.
  const again = startRetention(store, { retentionDays: 7, slice: 400, now: () => now, intervalMs: 3_600_000 });
  expect(await again.runOnce()).toBe(0);
  again.stop();
});

it('prunes a record\'s delivery trace with it, and keeps the trace of a record it keeps', async () => {
  const now = 100 * DAY;
  const old = rec(now - 8 * DAY);
  const fresh = rec(now - DAY);
  const leader = base58Encode(randomBytes(32));
  const trace = (slot: number) => ({
    attempts: [{ atUs: 300, slot, round: 0, leader, tpu: '127.0.0.1:8003', outcome: 'written' as const, closeCode: null, reason: null }],
    omitted: 0,
  });
  for (const r of [old, fresh]) store.insertStatus(r);
  const traces = [store.putTrace(old.signature, trace(7)), store.putTrace(fresh.signature, trace(9))];
  expect(await Promise.all(traces)).toEqual([true, true]);
  expect(store.getTrace(old.signature)!.attempts[0]!.slot).toBe(7);
  const r = startRetention(store, { retentionDays: 7, now: () => now, intervalMs: 3_600_000 });
  expect(await r.runOnce()).toBe(1);
  r.stop();
  expect(store.getTrace(old.signature)).toBeUndefined();
  expect(store.getTrace(fresh.signature)).toEqual(trace(9));
});

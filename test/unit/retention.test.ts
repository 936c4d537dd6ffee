import { afterEach, beforeEach, expect, it } from 'vitest';
import { startRetention } from '../../src/store/retention.js';
import { Store, type StatusRecord } from '../../src/store/store.js';
import { tempDir } from '../helpers/tmp.js';

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

function rec(signature: string, submittedAt: number): StatusRecord {
  return { signature, accountId: 'a', keyName: 'k', status: 'sent', submittedAt, confirmedAt: null, latencyMs: null, slot: null, submitSlot: 0, expired: false, tipLamports: '0', recentBlockhash: 'h', durableNonce: false };
}

it('deletes exactly the records older than the window, in slices, while requests keep being served', async () => {
  const now = 100 * DAY;
  for (let i = 0; i < 2500; i++) store.insertStatus(rec(`old${i}`, now - 8 * DAY - i), { accountId: 'a', submittedAt: 0, recentBlockhash: 'h', durableNonce: false, lastValidBlockHeight: null, tipLamports: '0' });
  for (let i = 0; i < 300; i++) store.insertStatus(rec(`new${i}`, now - 6 * DAY + i), { accountId: 'a', submittedAt: 0, recentBlockhash: 'h', durableNonce: false, lastValidBlockHeight: null, tipLamports: '0' });
  await store.flushed();
  const r = startRetention(store, { retentionDays: 7, slice: 400, now: () => now, intervalMs: 3_600_000 });
  // The event loop is not held: a timer set now fires before the prune ends.
  let ticks = 0;
  const iv = setInterval(() => ticks++, 0);
  const deleted = await r.runOnce();
  clearInterval(iv);
  r.stop();
  expect(deleted).toBe(2500);
  expect(ticks).toBeGreaterThan(0);
  expect(store.getStatus('old0')).toBeUndefined();
  expect(store.getStatus('old2499')).toBeUndefined();
  expect(store.getStatus('new0')?.signature).toBe('new0');
  expect([...store.pendingEntries()].length).toBe(300);
});

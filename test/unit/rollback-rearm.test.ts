/**
 * After a chain rollback the service sends every pending transaction it tracks again
 * (`rearmWatched`, called from `Engine.onRollback`). The tracked ones are found by signature and
 * each read as `getStatus` reads it, so a send accepted in the last commit window — in the
 * overlay, not yet committed — is sent again too; a scan of committed records (what the re-arm
 * used before) does not list it. Real store and tracker; a commit window of 5 s holds records
 * uncommitted for as long as the test needs (a configuration the store takes, not a fault). The
 * engine is a recorder: what it does with a re-armed record is tested against a real chain
 * (test/faults/chain-restart.test.ts).
 */
import { afterEach, expect, it } from 'vitest';
import { rearmWatched } from '../../src/delivery/rearm.js';
import type { PendingRecord } from '../../src/store/records.js';
import { waitFor } from '../../harness/localnet.js';
import { statusRecord } from '../../harness/records.js';
import { tempDir } from '../../harness/tmp.js';
import { closeWatchingNodes, watchingNode } from '../../harness/watching-node.js';

const tmp = tempDir('landfall-rollback-rearm-');
afterEach(closeWatchingNodes);

function node(commitWindowMs: number) {
  const { store: s, tracker: t } = watchingNode(tmp.dir, commitWindowMs);
  const rearmed: PendingRecord[] = [];
  const engine = { rearm: (rec: PendingRecord) => (rearmed.push(rec), true) };
  /** An accepted send: recorded, then watched (what the hand-off does). */
  const accept = () => {
    const rec = statusRecord({ submittedAt: Date.now() });
    void s.updateStatus(rec, null);
    t.watch(rec, null);
    return rec;
  };
  return { store: s, tracker: t, engine, rearmed, accept };
}

it('sends again a pending transaction accepted in the last commit window (not yet committed)', () => {
  const n = node(5_000);
  const recent = n.accept();
  // The condition the fix is for: the scan of committed records does not list it yet.
  expect([...n.store.pendingEntries()].map((r) => r.signature)).not.toContain(recent.signature);
  expect(rearmWatched(n)).toEqual({ pending: 1, rearmed: 1 });
  expect(n.rearmed.map((r) => r.signature)).toEqual([recent.signature]);
  expect(n.rearmed[0]!.status).toBe('sent');
});

it('sends again the committed ones too, and not one settled since nor one it does not track', async () => {
  const n = node(5);
  const pending = n.accept();
  const settled = n.accept();
  void n.store.updateStatus({ ...settled, status: 'confirmed', confirmedAt: Date.now(), slot: 301_234_570 }, null);
  // A record this node stores but does not track (another node's, not taken over).
  const untracked = statusRecord({ submittedAt: Date.now() });
  void n.store.updateStatus(untracked, null);
  await waitFor('the records committed', () => ([...n.store.pendingEntries()].some((r) => r.signature === untracked.signature) ? true : undefined), 5_000);
  expect(rearmWatched(n)).toEqual({ pending: 1, rearmed: 1 });
  expect(n.rearmed.map((r) => r.signature)).toEqual([pending.signature]);
});

it('counts a pending transaction the engine cannot send again (its blockhash gone) as pending, not re-armed', () => {
  const n = node(5_000);
  n.accept();
  expect(rearmWatched({ ...n, engine: { rearm: () => false } })).toEqual({ pending: 1, rearmed: 0 });
});

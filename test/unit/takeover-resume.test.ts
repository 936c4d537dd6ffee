/**
 * A takeover resumes the dead node's pending records by signature, each read as `getStatus`
 * reads it, so a record applied from the dead node's event a moment before — in the overlay,
 * its commit window not closed yet — is tracked too, not left `sent` for good on every survivor.
 * CI once saw six such records on a machine at load 8–9 (`test/cluster/ack-replication.test.ts`:
 * the last sends b acknowledged stayed `sent` on a and c), where commits took longer than the
 * takeover's (or the late batch's) wait. Real store and tracker; a commit window of 5 s holds
 * the records uncommitted for as long as the test needs (a configuration the store takes, not a
 * fault), so the race is not left to the machine's timing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { NodeLease } from '../../src/cluster/leases.js';
import { PendingOrigins, Takeover } from '../../src/cluster/takeover.js';
import type { PendingRecord } from '../../src/store/records.js';
import { waitFor } from '../../harness/localnet.js';
import { statusRecord } from '../../harness/records.js';
import { tempDir } from '../../harness/tmp.js';
import { closeWatchingNodes, watchingNode } from '../../harness/watching-node.js';

const tmp = tempDir('landfall-takeover-resume-');
afterEach(closeWatchingNodes);

/** c's side of a takeover of b: its store, its tracker, and what its engine would send again. */
function nodeC() {
  const { store, tracker } = watchingNode(tmp.dir, 5_000);
  const origins = new PendingOrigins();
  let bTakenOver = false;
  const resent: PendingRecord[] = [];
  const takeover = new Takeover({
    node: 'c',
    tracker,
    // What the engine is handed to send again (its rebroadcast is not under test here).
    engine: { resume: (rec: PendingRecord) => (resent.push(rec), true) },
    origins,
    heirOf: (n) => (n === 'b' && bTakenOver ? 'c' : null),
  });
  /** An event of b's applied here as the status stream applies it: the store, then the origins and the takeover. */
  const apply = (rec = statusRecord()) => {
    void store.updateStatus(rec, null);
    origins.note(rec, 'b');
    takeover.applied(rec, 'b');
    return rec;
  };
  const takeOverB = () => {
    bTakenOver = true;
    return takeover.takeOver({ node: 'b', started: 1, seq: 1, at: 0 } satisfies NodeLease);
  };
  return { store, tracker, apply, takeOverB, resent, takeover };
}

describe('takeover', () => {
  it("resumes the dead node's records applied just before it, not yet committed", () => {
    const c = nodeC();
    const first = c.apply();
    const recent = c.apply();
    // The condition the fix is for: the scan of committed records does not list them yet.
    expect([...c.store.pendingEntries()].map((r) => r.signature)).not.toContain(recent.signature);
    expect(c.store.getStatus(recent.signature)?.status).toBe('sent');
    expect(c.takeOverB()).toBe(2);
    expect(c.tracker.isWatching(first.signature)).toBe(true);
    expect(c.tracker.isWatching(recent.signature)).toBe(true);
    expect(c.resent.map((r) => r.signature).sort()).toEqual([first.signature, recent.signature].sort());
  });

  it('adopts a late record (applied after the takeover) before its commit', async () => {
    const c = nodeC();
    c.takeOverB();
    const late = c.apply();
    await waitFor('the late record adopted', () => (c.tracker.isWatching(late.signature) ? true : undefined), 4_000);
    expect([...c.store.pendingEntries()].map((r) => r.signature)).not.toContain(late.signature); // still uncommitted
    expect(c.resent.map((r) => r.signature)).toEqual([late.signature]);
  });

  it('does not resume a record that is no longer pending, nor one it already watches', async () => {
    const c = nodeC();
    const settled = c.apply();
    void c.store.updateStatus({ ...settled, status: 'confirmed', confirmedAt: Date.now(), slot: 301_234_570 }, null);
    const once = c.apply();
    expect(c.takeOverB()).toBe(1);
    expect(c.takeOverB()).toBe(0);
    expect(c.resent.map((r) => r.signature)).toEqual([once.signature]);
  });
});

/**
 * The leader tracker's slot view on a real Agave 4.2.2 test validator (issue 15, item 4): Agave
 * offers `slotsUpdatesSubscribe` without any flag, and the test validator (leader of every slot)
 * reports `completed` N (never `firstShredReceived`: it receives no shreds) before its
 * `slotNotification` N + 1; the tracker's view moves on the updates, and with them switched off
 * on `slotSubscribe`. One validator for the file.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaderTracker } from '../../src/delivery/leaders.js';
import { agaveMissingReason, startAgaveValidator, type AgaveValidator } from '../../harness/agave.js';
import { rpc, waitFor } from '../../harness/localnet.js';

const missing = agaveMissingReason();
if (missing !== null) console.log(missing);

describe.runIf(missing === null)('slot view on a real Agave validator', () => {
  let agave: AgaveValidator;
  beforeAll(async () => {
    agave = await startAgaveValidator();
  }, 120_000);
  afterAll(async () => {
    await agave?.stop();
  });

  it('follows slotsUpdatesSubscribe: the view moves on completed, and stays on the validator\'s slot', async () => {
    const t = new LeaderTracker({ rpcUrl: agave.rpcUrl, wsUrl: agave.wsUrl });
    try {
      await t.ready(30_000);
      const from = t.slotMoves.updates;
      await waitFor('five slots moved by slotsUpdates', () => (t.slotMoves.updates >= from + 5 ? true : undefined), 20_000);
      expect(t.slotsUpdatesRefused).toBe(false);
      expect(t.slotEvents.updates).toBeGreaterThan(0);
      const chain = (await rpc(agave.rpcUrl, 'getSlot', [{ commitment: 'processed' }])).result as number;
      // Never ahead of the validator by more than the slot that is starting, never behind by more than one.
      expect(t.currentSlot()).toBeGreaterThanOrEqual(chain - 1);
      expect(t.currentSlot()).toBeLessThanOrEqual(chain + 1);
      expect(t.synced()).toBe(true);
    } finally {
      t.close();
    }
  });

  it('with slotsUpdates off, slotSubscribe moves the view', async () => {
    const t = new LeaderTracker({ rpcUrl: agave.rpcUrl, wsUrl: agave.wsUrl, slotsUpdates: false });
    try {
      await t.ready(30_000);
      const from = t.slotMoves.slot;
      await waitFor('five slots moved by slotSubscribe', () => (t.slotMoves.slot >= from + 5 ? true : undefined), 20_000);
      expect(t.slotEvents.updates).toBe(0);
      expect(t.synced()).toBe(true);
    } finally {
      t.close();
    }
  });
});

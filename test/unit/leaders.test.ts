/**
 * The leader tracker against the local cluster's real RPC and PubSub: leaders and addresses
 * match what the cluster says, the slot follows slotsUpdatesSubscribe where the node offers it and
 * slotSubscribe where it does not, and when the WebSocket is unreachable the slot still advances
 * through the polling fallback.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaderTracker } from '../../src/delivery/leaders.js';
import { startLocalnet, type Localnet } from '../../src/localnet/index.js';
import { waitFor } from '../../harness/localnet.js';

let net: Localnet;
beforeAll(async () => {
  net = await startLocalnet({ slotMs: 50, seed: 'leaders' });
});
afterAll(async () => {
  await net?.close();
});

describe('LeaderTracker', () => {
  it('knows the current slot, every leader of the next slots and their TPU QUIC addresses', async () => {
    const t = new LeaderTracker({ rpcUrl: net.rpcUrl, wsUrl: net.wsUrl });
    try {
      await t.ready();
      const slot = await waitFor('a few slots', () => (t.currentSlot() > 8 ? t.currentSlot() : undefined));
      expect(Math.abs(slot - net.slot())).toBeLessThanOrEqual(2);
      expect(t.synced()).toBe(true);
      expect(t.pushConnected).toBe(true);
      for (let s = slot; s < slot + 40; s++) {
        const v = net.leaderAt(s);
        expect(t.leaderAt(s)).toBe(v.identity);
        expect(t.tpuOf(v.identity)).toBe(v.tpuQuic);
      }
      // Distinct upcoming leaders, each at its first slot, current one first.
      const up = t.upcoming(3);
      expect(up[0]!.identity).toBe(net.leaderAt(t.currentSlot()).identity);
      expect(new Set(up.map((l) => l.identity)).size).toBe(3);
      const blocked = up[0]!.identity;
      expect(t.upcoming(3, (id) => id !== blocked).map((l) => l.identity)).not.toContain(blocked);
      // A blockhash the cluster just handed out is known and alive.
      const { value } = await t.rpc.getLatestBlockhash('confirmed');
      await waitFor('blockhash seen', () => (t.lastValidBlockHeight(value.blockhash) !== null ? true : undefined));
      expect(t.isBlockhashExpired(value.blockhash)).toBe(false);
      expect(t.isBlockhashExpired('11111111111111111111111111111111')).toBe(false); // unknown is not expired
    } finally {
      t.close();
    }
  });

  it('follows slotsUpdatesSubscribe: the view moves on firstShredReceived, before slotSubscribe says so', async () => {
    const t = new LeaderTracker({ rpcUrl: net.rpcUrl, wsUrl: net.wsUrl });
    try {
      await t.ready();
      const from = t.slotMoves.updates;
      await waitFor('five slots moved by slotsUpdates', () => (t.slotMoves.updates >= from + 5 ? true : undefined));
      // The local cluster sends a slot's firstShredReceived before its slotNotification (as an
      // Agave RPC node does): slotSubscribe, counted, never moves the view first.
      expect(t.slotEvents.slot).toBeGreaterThan(0);
      expect(t.slotMoves.slot).toBe(0);
      expect(t.slotsUpdatesRefused).toBe(false);
      expect(Math.abs(t.currentSlot() - net.slot())).toBeLessThanOrEqual(1);
    } finally {
      t.close();
    }
  });

  it('falls back to slotSubscribe on a node that does not offer slotsUpdatesSubscribe', async () => {
    const plain = await startLocalnet({ slotMs: 50, seed: 'leaders', slotsUpdates: false });
    const t = new LeaderTracker({ rpcUrl: plain.rpcUrl, wsUrl: plain.wsUrl });
    try {
      await t.ready();
      await waitFor('refused', () => (t.slotsUpdatesRefused ? true : undefined));
      const from = t.slotMoves.slot;
      await waitFor('five slots moved by slotSubscribe', () => (t.slotMoves.slot >= from + 5 ? true : undefined));
      expect(t.slotEvents.updates).toBe(0);
      expect(t.synced()).toBe(true);
    } finally {
      t.close();
      await plain.close();
    }
  });

  it('falls back to polling getSlot when the WebSocket cannot be reached', async () => {
    // Port 9 (discard) on loopback: nothing listens, every connect is refused.
    const t = new LeaderTracker({ rpcUrl: net.rpcUrl, wsUrl: 'ws://127.0.0.1:9', pollMs: 50, staleMs: 500 });
    try {
      await t.ready();
      const a = t.currentSlot();
      await waitFor('slot advanced by polling', () => (t.currentSlot() >= a + 3 ? true : undefined));
      expect(t.pushConnected).toBe(false);
      expect(t.synced()).toBe(true);
    } finally {
      t.close();
    }
  });
});

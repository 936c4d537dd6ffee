import type { Delivery } from '../src/delivery/delivery.js';

/**
 * Not a mock of delivery: a guard for tests whose every request must be decided *before*
 * delivery (auth, validation, tips, limits, database faults). If a request reaches it, the
 * request fails with a 500 and the test's status assertion fails loudly. Its chain view is
 * unsynced, so a send that got past the other checks is refused as stale (a 500) before it is
 * sent.
 */
export const unreachableDelivery: Delivery = {
  chainFacts: () => ({ health: { synced: false, slot: 0, slotAgeMs: Infinity }, blockhashExpired: false, lastValidBlockHeight: null }),
  latestBlockhash: () => null,
  watchSlots: () => () => {},
  simulate: () => Promise.reject(new Error('delivery reached: this test expected a refusal before delivery')),
  firstSend: () => Promise.reject(new Error('delivery reached: this test expected a refusal before delivery')),
  accepted: () => {
    throw new Error('delivery reached: this test expected a refusal before delivery');
  },
  health: () => ({ synced: false, slot: 0, slotAgeMs: Infinity }),
};

/**
 * The tracker's poll backs off per transaction while the push is live (it is then the push's
 * safety net), and polls every transaction every sweep while the push is off. Real local
 * cluster, real store; the RPC client counts the signatures it polls.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Accounts } from '../../src/accounts/accounts.js';
import { DEFAULT_PLANS } from '../../src/accounts/plans.js';
import { Rpc } from '../../src/chain/rpc.js';
import { startLocalnet, type Localnet } from '../../src/localnet/index.js';
import { Store } from '../../src/store/store.js';
import { Tracker } from '../../src/tracker/tracker.js';
import { waitFor } from '../../harness/localnet.js';
import { statusRecord } from '../../harness/records.js';
import { tempDir } from '../../harness/tmp.js';

/** A real RPC client that counts how often each signature was polled (not the expiry's history look). */
class CountingRpc extends Rpc {
  readonly polls = new Map<string, number>();
  override getSignatureStatuses(signatures: string[], searchTransactionHistory = false) {
    if (!searchTransactionHistory) for (const s of signatures) this.polls.set(s, (this.polls.get(s) ?? 0) + 1);
    return super.getSignatureStatuses(signatures, searchTransactionHistory);
  }
}

let net: Localnet;
const tmp = tempDir('landfall-tracker-poll-');
let store: Store;

beforeAll(async () => {
  net = await startLocalnet({ slotMs: 100, seed: 'tracker-poll' });
  store = Store.open(tmp.dir);
});

afterAll(async () => {
  await store.close();
  await net.close();
  tmp.cleanup();
});

/** Polls per transaction of 20 watched for `ms`, the push on or off (after it has been live long enough to be trusted). */
async function pollsPerTransaction(push: boolean, ms: number): Promise<number> {
  const rpc = new CountingRpc(net.rpcUrl);
  const tracker = new Tracker({
    rpc,
    wsUrl: net.wsUrl,
    store,
    accounts: new Accounts(store, { plans: DEFAULT_PLANS, lamportsPerPoint: 1_000 }),
    tipAddresses: [net.faucet],
    blockHeight: () => 0,
    push,
    sweepMs: 100,
    pollAfterMs: 100,
  });
  try {
    // The push is trusted 2 s after it connected (its subscriptions made again after a gap).
    if (push) await new Promise((r) => setTimeout(r, 2_500));
    const records = Array.from({ length: 20 }, () => statusRecord());
    for (const r of records) tracker.watch(r, process.hrtime.bigint());
    await waitFor('a poll of every transaction', () => (records.every((r) => rpc.polls.has(r.signature)) ? true : undefined));
    await new Promise((r) => setTimeout(r, ms));
    return records.reduce((n, r) => n + (rpc.polls.get(r.signature) ?? 0), 0) / records.length;
  } finally {
    tracker.close();
  }
}

describe('tracker poll', () => {
  it('backs off per transaction while the push is live, and polls every sweep without it', async () => {
    const without = await pollsPerTransaction(false, 3_000);
    const live = await pollsPerTransaction(true, 3_000);
    // Without the push: a poll per sweep (100 ms). With it: at 0.1, 0.2, 0.4, 0.8, 1.6, 3.2 s of age.
    expect(live).toBeGreaterThanOrEqual(3);
    expect(live).toBeLessThan(without / 2);
  }, 30_000);
});

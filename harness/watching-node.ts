/**
 * A node's store and a tracker that only watches (no push, no poll: nothing here is on a chain),
 * for tests of what the node does with the transactions it tracks — a takeover's resume, a
 * rollback's re-arm — against the real store and tracker. `closeWatchingNodes` (an `afterEach`)
 * closes every one opened.
 */
import { Accounts } from '../src/accounts/accounts.js';
import { DEFAULT_PLANS } from '../src/accounts/plans.js';
import { Rpc } from '../src/chain/rpc.js';
import { Store } from '../src/store/store.js';
import { Tracker } from '../src/tracker/tracker.js';

export interface WatchingNode {
  store: Store;
  tracker: Tracker;
}

const opened: WatchingNode[] = [];
let serial = 0;

/**
 * A fresh store under `dir` with `commitWindowMs` (a long one holds records uncommitted for as
 * long as a test needs: a configuration the store takes, not a fault), and its tracker.
 */
export function watchingNode(dir: string, commitWindowMs: number): WatchingNode {
  const store = Store.open(`${dir}/node-${++serial}`, { commitWindowMs });
  const tracker = new Tracker({
    rpc: new Rpc('http://127.0.0.1:9'),
    wsUrl: '',
    store,
    accounts: new Accounts(store, { plans: DEFAULT_PLANS, lamportsPerPoint: 1_000 }),
    tipAddresses: [],
    blockHeight: () => 0,
    push: false,
    poll: false,
  });
  const node = { store, tracker };
  opened.push(node);
  return node;
}

export async function closeWatchingNodes(): Promise<void> {
  for (const n of opened.splice(0)) {
    n.tracker.close();
    await n.store.close();
  }
}

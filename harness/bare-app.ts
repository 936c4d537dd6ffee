/**
 * The HTTP API alone on a real port: a fresh LMDB store in a temporary directory, real accounts
 * and native token buckets, and a delivery that never reaches a leader — for the tests whose
 * cases are decided before delivery (auth, bodies, validity, limits, status, listings).
 */
import { Accounts } from '../src/accounts/accounts.js';
import { DEFAULT_PLANS, type PlanName } from '../src/accounts/plans.js';
import { RateLimiter } from '../src/accounts/rate-limiter.js';
import { DEFAULT_CONFIG } from '../src/config.js';
import { buildApp } from '../src/http/api.js';
import type { Services } from '../src/http/types.js';
import { listen, type RunningServer } from '../src/http/server.js';
import { TipSet } from '../src/native.js';
import { Store } from '../src/store/store.js';
import { unreachableDelivery } from './guard-delivery.js';
import { tempDir } from './tmp.js';

export interface BareApp {
  store: Store;
  accounts: Accounts;
  server: RunningServer;
  /** `http://127.0.0.1:<port>` */
  base: string;
  /** A new account on `plan`: its id and API key. */
  newAccount(plan?: PlanName): { id: string; key: string };
  close(): Promise<void>;
}

/** Start the API with `tipAddresses` (base58) as the tip set; `extra` replaces or adds services (a test's own status hub). */
export async function startBareApp(tipAddresses: string[], extra: Partial<Services> = {}): Promise<BareApp> {
  const tmp = tempDir();
  const store = Store.open(tmp.dir);
  const accounts = new Accounts(store, { plans: DEFAULT_PLANS, lamportsPerPoint: 1000 });
  const app = buildApp({
    config: { ...DEFAULT_CONFIG, dataDir: tmp.dir },
    accounts,
    store,
    limiter: new RateLimiter(DEFAULT_PLANS, 40_000),
    tips: new TipSet(tipAddresses),
    delivery: unreachableDelivery,
    ...extra,
  });
  const server = await listen(app, '127.0.0.1', 0);
  return {
    store,
    accounts,
    server,
    base: `http://127.0.0.1:${server.port}`,
    newAccount(plan = 'starter') {
      const c = accounts.createAccount(`t-${Math.random()}`, plan);
      return { id: c.account_id, key: c.api_key };
    },
    async close() {
      server.close();
      await store.close();
      tmp.cleanup();
    },
  };
}

/**
 * A real database fault: the LMDB environment is closed under the running server, so every
 * lookup fails inside lmdb-js. The API answers 500 Internal error with the spec's message and
 * keeps serving.
 */
import { Keypair } from '@solana/web3.js';
import { afterAll, expect, it } from 'vitest';
import { Accounts } from '../../src/accounts/accounts.js';
import { DEFAULT_PLANS } from '../../src/accounts/plans.js';
import { RateLimiter } from '../../src/accounts/rate-limiter.js';
import { DEFAULT_CONFIG } from '../../src/config.js';
import { buildApp } from '../../src/http/api.js';
import { listen } from '../../src/http/server.js';
import { TipSet } from '../../src/native.js';
import { Store } from '../../src/store/store.js';
import { makeTipAddresses, web3Base58 } from '../../harness/transactions.js';
import { unreachableDelivery } from '../../harness/guard-delivery.js';
import { tempDir } from '../../harness/tmp.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());


it('answers 500 Internal error when the database fails during a status lookup, and stays up', async () => {
  const store = Store.open(tmp.dir);
  const accounts = new Accounts(store, { plans: DEFAULT_PLANS, lamportsPerPoint: 1000 });
  const tipAddresses = makeTipAddresses(2).map((t) => t.toBase58());
  const server = await listen(
    buildApp({ config: DEFAULT_CONFIG, accounts, store, limiter: new RateLimiter(DEFAULT_PLANS, 50_000), tips: new TipSet(tipAddresses), delivery: unreachableDelivery }),
    '127.0.0.1',
    0,
  );
  const a = accounts.createAccount('x');
  const sig = web3Base58(Keypair.generate().secretKey);
  const base = `http://127.0.0.1:${server.port}`;
  expect((await fetch(`${base}/v1/status/${sig}?api-key=${a.api_key}`)).status).toBe(404);

  await store.root.close();
  const r = await fetch(`${base}/v1/status/${sig}?api-key=${a.api_key}`);
  expect(r.status).toBe(500);
  const body = (await r.json()) as any;
  expect(body).toMatchObject({ success: false, error: { code: 500, message: 'Internal error' } });
  expect(JSON.stringify(body)).not.toContain(a.api_key);
  expect(await (await fetch(`${base}/ping`)).text()).toBe('pong');
  server.close();
});

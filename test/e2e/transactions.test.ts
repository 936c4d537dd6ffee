/**
 * `GET /v1/transactions`: the caller's own transactions, newest first, a page at a time, on a real
 * port with the real LMDB store (its `account_txs` index), accounts and native token buckets.
 */
import { Keypair } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Accounts } from '../../src/accounts/accounts.js';
import { DEFAULT_PLANS } from '../../src/accounts/plans.js';
import { sentRecord } from '../../src/store/records.js';
import type { Store } from '../../src/store/store.js';
import { startBareApp, type BareApp } from '../../harness/bare-app.js';
import { makeTipAddresses, web3Base58 } from '../../harness/transactions.js';

let store: Store;
let accounts: Accounts;
let base: string;
let api: BareApp;

beforeAll(async () => {
  api = await startBareApp(makeTipAddresses(8).map((t) => t.toBase58()));
  ({ store, accounts, base } = api);
});

afterAll(() => api.close());

const newAccount = (plan?: 'starter' | 'whale') => api.newAccount(plan);

async function get(path: string, headers: Record<string, string> = {}) {
  const r = await fetch(base + path, { headers });
  return { status: r.status, headers: r.headers, body: (await r.json()) as any };
}

function expectError(r: { status: number; body: any }, status: number, message: string, reason?: RegExp) {
  expect(r.status).toBe(status);
  expect(r.body.success).toBe(false);
  expect(r.body.error.message).toBe(message);
  if (reason) expect(r.body.error.reason).toMatch(reason);
}

const T0 = Date.UTC(2026, 10, 21, 10, 0, 0, 0);

/** A status record of `accountId` submitted at `at` (ms); its signature. */
function record(accountId: string, at: number, keyName = 'default'): string {
  const sig = web3Base58(Keypair.generate().secretKey); // 64 random bytes, base58
  store.insertStatus(
    sentRecord({
      signature: sig, accountId, keyName, submittedAt: at, submitSlot: 77, tipLamports: 1_000_000n,
      recentBlockhash: web3Base58(Keypair.generate().publicKey.toBytes()), durableNonce: false, lastValidBlockHeight: null,
    }),
  );
  return sig;
}

describe('GET /v1/transactions', () => {
  it('lists only the caller\'s own transactions, newest first, each as the status endpoint answers it; header, api-key and api_key alike', async () => {
    const a = newAccount('whale');
    const b = newAccount('whale');
    const mine = [record(a.id, T0 + 1), record(a.id, T0 + 3, 'second'), record(a.id, T0 + 2)];
    const theirs = [record(b.id, T0 + 4), record(b.id, T0)];
    await store.flushed();
    for (const r of [
      await get('/v1/transactions', { authorization: `Bearer ${a.key}` }),
      await get(`/v1/transactions?api-key=${a.key}`),
      await get(`/v1/transactions?api_key=${a.key}`),
    ]) {
      expect(r.status).toBe(200);
      expect(r.headers.get('ratelimit-limit')).toBe(String(DEFAULT_PLANS.whale.queryTps));
      expect(r.body.next_cursor).toBeNull();
      expect(r.body.transactions.map((t: any) => t.signature)).toEqual([mine[1], mine[2], mine[0]]);
      for (const t of r.body.transactions) expect(t).toEqual((await get(`/v1/status/${t.signature}?api-key=${a.key}`)).body);
    }
    expect(r0(await get(`/v1/transactions?api-key=${b.key}`))).toEqual([theirs[0], theirs[1]]);
    // A fresh account has none.
    const c = newAccount();
    expect(await get(`/v1/transactions?api-key=${c.key}`)).toMatchObject({ status: 200, body: { transactions: [], next_cursor: null } });
  });

  it('pages without duplicates or gaps, ties in time included, while another account writes', async () => {
    const a = newAccount('whale');
    const b = newAccount('whale');
    const sigs: string[] = [];
    // 23 records, several in the same millisecond (the signature orders those).
    for (let i = 0; i < 23; i++) {
      sigs.push(record(a.id, T0 + Math.floor(i / 3)));
      record(b.id, T0 + Math.floor(i / 3));
    }
    await store.flushed();
    const seen: string[] = [];
    let before: string | null = null;
    let pages = 0;
    do {
      const r = await get(`/v1/transactions?limit=5${before ? `&before=${before}` : ''}&api-key=${a.key}`);
      expect(r.status).toBe(200);
      expect(r.body.transactions.length).toBeLessThanOrEqual(5);
      seen.push(...r0(r));
      before = r.body.next_cursor;
      pages++;
    } while (before);
    expect(pages).toBe(5);
    expect(new Set(seen).size).toBe(23);
    expect(new Set(seen)).toEqual(new Set(sigs));
    // Newest first across pages.
    const at = await Promise.all(seen.map(async (s) => Date.parse((await get(`/v1/status/${s}?api-key=${a.key}`)).body.submitted_at)));
    expect(at).toEqual([...at].sort((x, y) => y - x));
    // limit 100 (the largest) takes them all in one page; limit 23 too, with no next page.
    expect(r0(await get(`/v1/transactions?limit=100&api-key=${a.key}`))).toEqual(seen);
    const exact = await get(`/v1/transactions?limit=23&api-key=${a.key}`);
    expect(r0(exact)).toEqual(seen);
    expect(exact.body.next_cursor).toBeNull();
  });

  it('a record removed by retention leaves the list (and its index entry goes with it)', async () => {
    const a = newAccount('whale');
    const old = record(a.id, 1_000);
    const recent = record(a.id, T0);
    await store.flushed();
    expect(r0(await get(`/v1/transactions?api-key=${a.key}`))).toEqual([recent, old]);
    let next: Buffer | undefined;
    do next = (await store.pruneStatusSlice(2_000, next, 1000)).next;
    while (next);
    expect(r0(await get(`/v1/transactions?api-key=${a.key}`))).toEqual([recent]);
  });

  it('400 for a bad limit or cursor, with the reason; 401 without a valid key', async () => {
    const a = newAccount('whale');
    record(a.id, T0);
    await store.flushed();
    for (const bad of ['0', '101', '-1', 'abc', '1.5', '', '1e2', '9999']) {
      expectError(await get(`/v1/transactions?limit=${bad}&api-key=${a.key}`), 400, 'Invalid request', /limit must be an integer from 1 to 100/);
    }
    for (const bad of ['abc', 'A'.repeat(95), 'A'.repeat(97), '+'.repeat(96)]) {
      expectError(await get(`/v1/transactions?before=${encodeURIComponent(bad)}&api-key=${a.key}`), 400, 'Invalid request', /before must be the next_cursor of a previous page/);
    }
    expectError(await get('/v1/transactions'), 401, 'Unauthorized');
    expectError(await get('/v1/transactions?api-key=lf_wrong'), 401, 'Unauthorized');
  });

  it('draws on the account\'s query budget: 429 past it', async () => {
    const a = newAccount();
    record(a.id, T0);
    await store.flushed();
    const budget = DEFAULT_PLANS.starter.queryTps;
    // Three budgets' worth at once (one after another, a busy machine refills tokens as it goes).
    const burst = await Promise.all(Array.from({ length: 3 * budget }, () => get(`/v1/transactions?api-key=${a.key}`)));
    expect(burst.every((r) => r.status === 200 || r.status === 429)).toBe(true);
    expect(burst.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(budget);
    const refused = burst.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expectError(r, 429, 'Query rate limit exceeded');
      expect(r.headers.get('retry-after')).not.toBeNull();
    }
  });
});

/** The signatures of a page. */
function r0(r: { body: any }): string[] {
  return r.body.transactions.map((t: any) => t.signature);
}

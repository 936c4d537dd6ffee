/**
 * The per-thread key cache (`KeyCache`) holds the caller's account too: it must answer exactly
 * what `Store.getAccount` would answer now — a plan set, a key revoked, a cluster mirror applied
 * (each committed by any handle of the data directory, as the admin CLI's process is), or a
 * confirmation's credit not committed yet — on the very next call.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Accounts } from '../../src/accounts/accounts.js';
import { KeyCache } from '../../src/accounts/key-cache.js';
import { DEFAULT_PLANS } from '../../src/accounts/plans.js';
import { Store } from '../../src/store/store.js';
import { statusRecord } from '../../harness/records.js';
import { tempDir } from '../../harness/tmp.js';

let tmp: ReturnType<typeof tempDir>;
let store: Store;
let accounts: Accounts;
let keys: KeyCache;
const NOW = Date.UTC(2026, 10, 21, 10, 14, 0);

beforeEach(() => {
  tmp = tempDir();
  store = Store.open(tmp.dir);
  accounts = new Accounts(store, { plans: DEFAULT_PLANS, lamportsPerPoint: 1000, now: () => NOW });
  keys = new KeyCache(accounts, store);
});

afterEach(async () => {
  await store.close();
  tmp.cleanup();
});

describe('KeyCache', () => {
  it('answers the account as the store holds it after every kind of account write', async () => {
    const c = accounts.createAccount('bot');
    expect(keys.authenticate(c.api_key)?.account.plan).toBe('starter');
    // A plan set by another handle of the same data directory (the CLI's process does this).
    const cli = new Accounts(store, { plans: DEFAULT_PLANS, lamportsPerPoint: 1000 });
    cli.setPlan(c.account_id, 'pro');
    expect(keys.authenticate(c.api_key)?.account.plan).toBe('pro');
    // A cluster node mirroring the accounts bucket.
    store.mirrorAccountSync({ id: c.account_id, name: 'renamed', plan: 'growth', memberSince: NOW, planUpgradedAt: NOW }, 7);
    expect(keys.authenticate(c.api_key)?.account).toMatchObject({ name: 'renamed', plan: 'growth' });
    // A confirmation's credit: seen at once from the overlay, and still after it commits.
    const rec = statusRecord({ accountId: c.account_id, tipLamports: 5000n, status: 'confirmed', confirmedAt: NOW, latencyMs: 5, slot: 9 });
    const committed = store.updateStatus(rec, null, accounts.confirmationCredit(5000n, NOW));
    expect(keys.authenticate(c.api_key)?.account.points).toBe(5);
    await committed;
    await store.flushed();
    expect(keys.authenticate(c.api_key)?.account.points).toBe(5);
    expect(keys.authenticate(c.api_key)?.account).toEqual(store.getAccount(c.account_id));
  });

  it('refuses a revoked key on the next call, and keeps answering the account of the others', () => {
    const c = accounts.createAccount('bot');
    const second = accounts.createKey(c.account_id, 'second');
    expect(keys.authenticate(second.api_key)?.key.name).toBe('second');
    expect(keys.authenticate(c.api_key)?.account.id).toBe(c.account_id);
    accounts.revokeKey(c.account_id, 'second');
    expect(keys.authenticate(second.api_key)).toBeUndefined();
    accounts.setPlan(c.account_id, 'whale');
    expect(keys.authenticate(c.api_key)?.account.plan).toBe('whale');
    expect(keys.authenticate('lf_unknown')).toBeUndefined();
  });
});

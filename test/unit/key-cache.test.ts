/**
 * The per-thread key cache (`KeyCache`) holds the caller's account too: it must answer exactly
 * what `Store.getAccount` would answer now — a plan set, a key revoked, a cluster mirror applied
 * (each committed by any handle of the data directory, as the admin CLI's process is), or a
 * confirmation's credit not committed yet — on the very next call.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Accounts } from '../../src/accounts/accounts.js';
import { KeyCache } from '../../src/accounts/key-cache.js';
import { DEFAULT_PLANS } from '../../src/accounts/plans.js';
import { RateLimiter } from '../../src/accounts/rate-limiter.js';
import { AdmissionView, ADMIT_KEY_OUT_LEN, GenerationFile, TipSet } from '../../src/native.js';
import { accountOverlayKey, Store } from '../../src/store/store.js';
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

  it('caches no unknown key, no bad key and no key read while a write is in progress', () => {
    const c = accounts.createAccount('bot');
    for (const bad of ['', 'lf_' + 'a'.repeat(254), 'lf_clé', 'lf_\ud800', 'lf_unknown']) expect(keys.authenticate(bad)).toBeUndefined();
    expect(keys.size).toBe(0);
    // A write marked in progress (another process's, between its begin and its end): answered
    // from the store every time, cached only once the write has ended.
    const gens = store.generations();
    const mark = gens.begin();
    expect(keys.authenticate(c.api_key)?.account.plan).toBe('starter');
    expect(keys.size).toBe(0);
    gens.end(mark, { accounts: true });
    expect(keys.authenticate(c.api_key)?.account.plan).toBe('starter');
    expect(keys.size).toBe(1);
  });

  it('keeps the generations in a 0600 file of the data directory that another handle shares', () => {
    expect(statSync(join(tmp.dir, 'generations')).mode & 0o777).toBe(0o600);
    const other = new GenerationFile(tmp.dir, false);
    const before = store.keysGeneration();
    const mark = other.begin();
    expect(store.generations().active()).toBe(1);
    other.end(mark, true, false);
    expect(store.keysGeneration()).toBe(before + 1);
    expect(store.generations().active()).toBe(0);
  });

  it("answers the send's one call only for a current entry that holds its account's plan facts", async () => {
    const c = accounts.createAccount('bot');
    const limiter = new RateLimiter(DEFAULT_PLANS);
    const view = new AdmissionView();
    const tips = new TipSet([]);
    const out = new Float64Array(ADMIT_KEY_OUT_LEN);
    const send = () => keys.admitSend(c.api_key, 'not a transaction', tips, view, out);
    // No facts given (no core folds with this cache): never answered, the lookups' path decides.
    keys.authenticate(c.api_key);
    expect(send()).toBeNull();
    let computed = 0;
    keys.admitWith((a) => {
      computed++;
      return { minTipLamports: DEFAULT_PLANS[a.plan].minTipBp * 1000, bucket: limiter.sendBucket(a) };
    });
    // The entry made before has no facts until its account is read again.
    expect(keys.authenticate(c.api_key)?.account.plan).toBe('starter');
    expect(send()).toBeNull();
    expect(computed).toBe(0);
    accounts.setPlan(c.account_id, 'pro');
    expect(send()).toBeNull(); // the account changed: JavaScript reads it
    expect(keys.authenticate(c.api_key)?.account.plan).toBe('pro');
    expect(computed).toBe(1);
    const lookups = keys.lookups;
    const hit = send();
    expect(keys.lookups).toBe(lookups);
    expect(hit?.who).toEqual({ key: expect.objectContaining({ accountId: c.account_id }), account: store.getAccount(c.account_id) });
    expect(hit?.bucket).toBe(limiter.sendBucket(store.getAccount(c.account_id)!));
    expect(hit?.r).toMatchObject({ ok: false }); // inspected: it is not a transaction
    expect(out[0]).toBe(-1);
    // A credit held in the overlay: JavaScript reads the overlay's account.
    const rec = statusRecord({ accountId: c.account_id, tipLamports: 5000n, status: 'confirmed', confirmedAt: NOW, latencyMs: 5, slot: 9 });
    const committed = store.updateStatus(rec, null, accounts.confirmationCredit(5000n, NOW));
    expect(send()).toBeNull();
    await committed;
    await store.flushed();
    await vi.waitFor(() => expect(store.heldAccount(accountOverlayKey(c.account_id))).toBeUndefined(), { timeout: 10_000, interval: 20 });
    // Facts that cannot be computed (no bucket slot left, say): none kept, never answered.
    keys.admitWith(() => {
      throw new Error('no bucket');
    });
    accounts.setPlan(c.account_id, 'whale');
    expect(keys.authenticate(c.api_key)?.account.plan).toBe('whale');
    expect(send()).toBeNull();
    // A revoked key: never answered, and 401 the ordinary way.
    keys.admitWith((a) => ({ minTipLamports: 1, bucket: limiter.sendBucket(a) }));
    const k2 = accounts.createKey(c.account_id, 'second');
    expect(keys.authenticate(k2.api_key)).toBeDefined();
    expect(keys.admitSend(k2.api_key, 'x', tips, view, out)).not.toBeNull();
    accounts.revokeKey(c.account_id, 'second');
    expect(keys.admitSend(k2.api_key, 'x', tips, view, out)).toBeNull();
    expect(keys.authenticate(k2.api_key)).toBeUndefined();
  });
});

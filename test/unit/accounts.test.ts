import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Accounts, isoNoZone } from '../../src/accounts/accounts.js';
import { hashApiKey } from '../../src/accounts/api-keys.js';
import { DEFAULT_PLANS, validatePlans } from '../../src/accounts/plans.js';
import { LandfallError } from '../../src/errors.js';
import { Store } from '../../src/store/store.js';
import { tempDir } from '../helpers/tmp.js';

let tmp: ReturnType<typeof tempDir>;
let store: Store;
let clock: number;
let accounts: Accounts;

beforeEach(() => {
  tmp = tempDir();
  store = Store.open(tmp.dir);
  clock = Date.UTC(2026, 10, 21, 10, 14, 0);
  accounts = new Accounts(store, { plans: DEFAULT_PLANS, lamportsPerPoint: 1000, now: () => clock });
});

afterEach(async () => {
  await store.close();
  tmp.cleanup();
});

describe('accounts and keys', () => {
  it('creates an account whose key authenticates, and stores only the key hash', async () => {
    const c = accounts.createAccount('bot one');
    expect(c.api_key).toMatch(/^lf_[1-9A-HJ-NP-Za-km-z]{40,50}$/);
    const auth = accounts.authenticate(c.api_key);
    expect(auth?.account.id).toBe(c.account_id);
    expect(auth?.key.name).toBe('default');
    await store.flushed();
    // Nothing in the store holds the key text.
    const raw = JSON.stringify([...store.apiKeys.getRange()].map((e) => e.value));
    expect(raw).not.toContain(c.api_key);
    expect(store.keyByHash(hashApiKey(c.api_key))?.accountId).toBe(c.account_id);
  });

  it('refuses unknown, empty, oversize and revoked keys', () => {
    const c = accounts.createAccount('a');
    const second = accounts.createKey(c.account_id, 'second');
    expect(accounts.authenticate('lf_nope')).toBeUndefined();
    expect(accounts.authenticate('')).toBeUndefined();
    expect(accounts.authenticate('x'.repeat(10_000))).toBeUndefined();
    accounts.revokeKey(c.account_id, 'second');
    expect(accounts.authenticate(second.api_key)).toBeUndefined();
    expect(accounts.authenticate(c.api_key)).toBeDefined();
    expect(() => accounts.revokeKey(c.account_id, 'second')).toThrow(LandfallError);
    expect(accounts.listKeys(c.account_id).map((k) => [k.name, k.revoked_at !== null])).toEqual([
      ['default', false],
      ['second', true],
    ]);
  });

  it('rejects duplicate key names and bad names', () => {
    const c = accounts.createAccount('a');
    expect(() => accounts.createKey(c.account_id, 'default')).toThrow(/already has a key/);
    expect(() => accounts.createKey(c.account_id, '')).toThrow(LandfallError);
    expect(() => accounts.createKey('acc_missing', 'k')).toThrow(/no account/);
  });
});

describe('plans, points and upgrades', () => {
  it('shows every field of spec 2.5 for a new starter account', () => {
    const c = accounts.createAccount('a');
    const v = accounts.view(accounts.get(c.account_id)!);
    expect(v).toEqual({
      plan: 'starter',
      plan_upgraded_at: '2026-11-21T10:14:00',
      member_since: '2026-11-21T10:14:00',
      limits: { max_tps: DEFAULT_PLANS.starter.maxTps, min_tip_bp: DEFAULT_PLANS.starter.minTipBp },
      usage: { service_points: 0, transactions_total: 0, transactions_today: 0 },
      next_tier: {
        plan: 'growth',
        threshold_bp: DEFAULT_PLANS.growth.thresholdBp,
        remaining_bp: DEFAULT_PLANS.growth.thresholdBp,
        progress_percent: 0,
        benefits: {
          new_max_tps: DEFAULT_PLANS.growth.maxTps,
          new_tip_bp: DEFAULT_PLANS.growth.minTipBp,
          tip_savings_percent: ((1000 - 750) / 1000) * 100,
        },
      },
    });
  });

  it('credits floor(tip / lamports_per_point) and upgrades across two thresholds at once', async () => {
    const c = accounts.createAccount('a');
    let a = await accounts.accrueTip(c.account_id, 1999n);
    expect(a?.points).toBe(1);
    expect(a?.plan).toBe('starter');
    clock += 60_000;
    // 10 000 000 BP reaches pro directly (growth's 1 000 000 crossed on the way).
    a = await accounts.accrueTip(c.account_id, 10_000_000n * 1000n);
    expect(a?.points).toBe(10_000_001);
    expect(a?.plan).toBe('pro');
    const v = accounts.view(a!);
    expect(v.plan_upgraded_at).toBe(isoNoZone(clock));
    expect(v.member_since).not.toBe(v.plan_upgraded_at);
    expect(v.limits).toEqual({ max_tps: 80, min_tip_bp: 500 });
    expect(v.next_tier?.plan).toBe('whale');
    expect(v.next_tier?.remaining_bp).toBe(100_000_000 - 10_000_001);
  });

  it('has next_tier null on whale and never downgrades automatically', async () => {
    const c = accounts.createAccount('a');
    accounts.setPlan(c.account_id, 'whale');
    const a = await accounts.accrueTip(c.account_id, 5000n);
    expect(a?.plan).toBe('whale');
    expect(accounts.view(a!).next_tier).toBeNull();
  });

  it('loses no point under many concurrent accruals', async () => {
    const c = accounts.createAccount('a');
    await Promise.all(Array.from({ length: 500 }, () => accounts.accrueTip(c.account_id, 3000n)));
    expect(accounts.get(c.account_id)?.points).toBe(1500);
  });

  it('validates plan tables', () => {
    expect(validatePlans(DEFAULT_PLANS)).toEqual(DEFAULT_PLANS);
    expect(() => validatePlans({ ...DEFAULT_PLANS, pro: { ...DEFAULT_PLANS.pro, thresholdBp: 5 } })).toThrow(/thresholdBp/);
    expect(() => validatePlans({ starter: DEFAULT_PLANS.starter })).toThrow(/growth is missing/);
  });
});

describe('usage counters', () => {
  it('counts totals and the UTC day, rolling over at midnight, and persists them', async () => {
    const c = accounts.createAccount('a');
    accounts.countSubmissions(c.account_id, 3);
    accounts.countSubmissions(c.account_id, 2);
    expect(accounts.usage(c.account_id)).toEqual({ total: 5, today: 5 });
    clock = Date.UTC(2026, 10, 22, 0, 0, 1);
    expect(accounts.usage(c.account_id)).toEqual({ total: 5, today: 0 });
    accounts.countSubmissions(c.account_id, 1);
    expect(accounts.usage(c.account_id)).toEqual({ total: 6, today: 1 });
    await store.flushed();
    const fresh = new Accounts(store, { plans: DEFAULT_PLANS, lamportsPerPoint: 1000, now: () => clock });
    expect(fresh.usage(c.account_id)).toEqual({ total: 6, today: 1 });
  });
});

describe('status records', () => {
  it('writes, updates to a terminal state, and prunes by age', async () => {
    const base = {
      accountId: 'acc', keyName: 'default', status: 'sent' as const, confirmedAt: null, latencyMs: null,
      slot: null, submitSlot: 1, expired: false, tipLamports: '1000000', recentBlockhash: 'x', durableNonce: false,
    };
    const pending = { accountId: 'acc', submittedAt: 0, recentBlockhash: 'x', durableNonce: false, lastValidBlockHeight: null, tipLamports: '1' };
    for (let i = 0; i < 10; i++) store.insertStatus({ ...base, signature: `s${i}`, submittedAt: 1000 + i }, pending);
    // Readable at once, before the asynchronous batch commits (a send is followed by a poll).
    expect(store.getStatus('s7')?.submittedAt).toBe(1007);
    expect(store.status.get('s7')).toBeUndefined();
    await store.flushed();
    expect(store.status.get('s7')?.submittedAt).toBe(1007);
    expect([...store.pendingEntries()].length).toBe(10);
    await store.updateStatus({ ...base, signature: 's3', submittedAt: 1003, status: 'confirmed', confirmedAt: 2000, latencyMs: 997, slot: 5 });
    await store.flushed();
    expect(store.getStatus('s3')?.status).toBe('confirmed');
    expect([...store.pendingEntries()].map(([k]) => k)).not.toContain('s3');
    let n = 0;
    for (let got = 1; got > 0; ) n += got = await store.pruneStatusBefore(1005, 2);
    expect(n).toBe(5);
    expect(store.getStatus('s4')).toBeUndefined();
    expect(store.getStatus('s5')?.signature).toBe('s5');
  });
});

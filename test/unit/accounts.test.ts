import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Worker } from 'node:worker_threads';
import { Accounts, isoNoZone } from '../../src/accounts/accounts.js';
import { hashApiKey } from '../../src/accounts/api-keys.js';
import { DEFAULT_PLANS, validatePlans } from '../../src/accounts/plans.js';
import { LandfallError } from '../../src/errors.js';
import { utcDay } from '../../src/native.js';
import { decodeStatus, statusKey } from '../../src/store/status-codec.js';
import { Store } from '../../src/store/store.js';
import { statusRecord } from '../../harness/records.js';
import { tempDir } from '../../harness/tmp.js';

let tmp: ReturnType<typeof tempDir>;
let store: Store;
let clock: number;
let accounts: Accounts;
const WORKER = new URL('./fixtures/store-worker.mjs', import.meta.url);

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
      // Additive: the conversion the account was opened with (this test's 1000).
      lamports_per_point: 1000,
    });
  });

  /**
   * Confirm a new transaction of the account tipping `tip`, through the store's commit window
   * (where a confirmation's credit is applied); resolves with the account after it.
   */
  async function confirm(accountId: string, tip: bigint, signature?: string) {
    const rec = statusRecord({ accountId, tipLamports: tip, status: 'confirmed', confirmedAt: clock, latencyMs: 5, slot: 9, ...(signature && { signature }) });
    await store.updateStatus(rec, null, accounts.confirmationCredit(tip, clock));
    return accounts.get(accountId);
  }

  it('credits floor(tip / lamports_per_point) and upgrades across two thresholds at once', async () => {
    const c = accounts.createAccount('a');
    let a = await confirm(c.account_id, 1999n);
    expect(a?.points).toBe(1);
    expect(a?.plan).toBe('starter');
    clock += 60_000;
    // 10 000 000 BP reaches pro directly (growth's 1 000 000 crossed on the way).
    a = await confirm(c.account_id, 10_000_000n * 1000n);
    expect(a?.points).toBe(10_000_001);
    expect(a?.plan).toBe('pro');
    const v = accounts.view(a!);
    expect(v.plan_upgraded_at).toBe(isoNoZone(clock));
    expect(v.member_since).not.toBe(v.plan_upgraded_at);
    expect(v.limits).toEqual({ max_tps: 80, min_tip_bp: 500 });
    expect(v.next_tier?.plan).toBe('whale');
    expect(v.next_tier?.remaining_bp).toBe(100_000_000 - 10_000_001);
    // A tip below one point earns nothing.
    expect(accounts.confirmationCredit(999n, clock)).toBeUndefined();
  });

  it('has next_tier null on whale and never downgrades automatically', async () => {
    const c = accounts.createAccount('a');
    accounts.setPlan(c.account_id, 'whale');
    const a = await confirm(c.account_id, 5000n);
    expect(a?.plan).toBe('whale');
    expect(accounts.view(a!).next_tier).toBeNull();
  });

  it('loses no point under many concurrent confirmations', async () => {
    const c = accounts.createAccount('a');
    await Promise.all(Array.from({ length: 500 }, () => confirm(c.account_id, 3000n)));
    expect(accounts.get(c.account_id)?.points).toBe(1500);
  });

  it('shows the points with the confirmation at once, before the window commits them', async () => {
    const c = accounts.createAccount('a');
    const rec = statusRecord({ accountId: c.account_id, tipLamports: 5000n, status: 'confirmed', confirmedAt: clock, latencyMs: 5, slot: 9 });
    const committed = store.updateStatus(rec, null, accounts.confirmationCredit(5000n, clock));
    expect(store.getStatus(rec.signature)?.status).toBe('confirmed');
    expect(accounts.get(c.account_id)?.points).toBe(5);
    // The same confirmation written again before the commit shows no second credit.
    void store.updateStatus(rec, null, accounts.confirmationCredit(5000n, clock));
    expect(accounts.get(c.account_id)?.points).toBe(5);
    await committed;
    store.root.resetReadTxn();
    expect(store.accounts.get(c.account_id)?.points).toBe(5);
  });

  it('credits a confirmation once however often it is written, in one window or several', async () => {
    const c = accounts.createAccount('a');
    const sig = statusRecord().signature;
    // The same confirmation written three times in one window (a tracker and two nodes' events) …
    await Promise.all([confirm(c.account_id, 7000n, sig), confirm(c.account_id, 7000n, sig), confirm(c.account_id, 7000n, sig)]);
    expect(accounts.get(c.account_id)?.points).toBe(7);
    // … and again later (a restarted service confirming it again).
    await confirm(c.account_id, 7000n, sig);
    expect(accounts.get(c.account_id)?.points).toBe(7);
    // A second transaction is credited.
    await confirm(c.account_id, 7000n);
    expect(accounts.get(c.account_id)?.points).toBe(14);
  });

  it('validates plan tables', () => {
    expect(validatePlans(DEFAULT_PLANS)).toEqual(DEFAULT_PLANS);
    expect(() => validatePlans({ ...DEFAULT_PLANS, pro: { ...DEFAULT_PLANS.pro, thresholdBp: 5 } })).toThrow(/thresholdBp/);
    expect(() => validatePlans({ starter: DEFAULT_PLANS.starter })).toThrow(/growth is missing/);
  });
});

describe('usage counters', () => {
  const day = () => utcDay(clock);

  it('counts totals and the UTC day in memory, rolling over at midnight, shared by every Accounts of the process', () => {
    const c = accounts.createAccount('a');
    accounts.countSubmissions(c.account_id, 3);
    accounts.countSubmissions(c.account_id, 2);
    expect(accounts.usage(c.account_id)).toEqual({ total: 5, today: 5 });
    clock = Date.UTC(2026, 10, 22, 0, 0, 1);
    expect(accounts.usage(c.account_id)).toEqual({ total: 5, today: 0 });
    accounts.countSubmissions(c.account_id, 1);
    expect(accounts.usage(c.account_id)).toEqual({ total: 6, today: 1 });
    // Another Accounts of the process (another thread's) counts into the same numbers.
    const other = new Accounts(store, { plans: DEFAULT_PLANS, lamportsPerPoint: 1000, now: () => clock });
    expect(other.usage(c.account_id)).toEqual({ total: 6, today: 1 });
    other.countSubmissions(c.account_id, 4);
    expect(accounts.usage(c.account_id)).toEqual({ total: 10, today: 5 });
    expect(accounts.view(accounts.get(c.account_id)!).usage).toMatchObject({ transactions_total: 10, transactions_today: 5 });
  });

  it('commits usage with the status records: a record new to the store counts once, whoever writes it first', async () => {
    const c = accounts.createAccount('records');
    const today = Date.UTC(2026, 10, 21, 12);
    const yesterday = Date.UTC(2026, 10, 20, 12);
    const a = statusRecord({ accountId: c.account_id, submittedAt: yesterday });
    const b = statusRecord({ accountId: c.account_id, submittedAt: today });
    store.insertStatus(a);
    store.insertStatus(b);
    // The settlement of b written in the same window, and an acceptance of b written again (a
    // second thread, a replay): b still counts once.
    void store.updateStatus({ ...b, status: 'confirmed', confirmedAt: today + 1, latencyMs: 1, slot: 3 });
    store.insertStatus(b);
    await store.flushed();
    expect(store.getUsage(c.account_id)).toEqual({ total: 2, day: utcDay(today), today: 1 });
    // A settlement committed before its acceptance (another thread's window first) counts it.
    const d = statusRecord({ accountId: c.account_id, submittedAt: today });
    await store.updateStatus({ ...d, status: 'failed', confirmedAt: today + 1, slot: 4 });
    store.insertStatus(d);
    await store.flushed();
    expect(store.getUsage(c.account_id)).toEqual({ total: 3, day: utcDay(today), today: 2 });
    // The later acceptance did not turn the committed record back.
    store.root.resetReadTxn();
    expect(decodeStatus(d.signature, store.status.getBinary(statusKey(d.signature)!)!).status).toBe('failed');
    // A record of an earlier day counts in the total only.
    await store.updateStatus(statusRecord({ accountId: c.account_id, submittedAt: yesterday }));
    expect(store.getUsage(c.account_id)).toEqual({ total: 4, day: utcDay(today), today: 2 });
  });

  it('starts from the committed counts, keeping today only on the same UTC day', async () => {
    const same = accounts.createAccount('same day');
    const older = accounts.createAccount('older day');
    for (let i = 0; i < 2; i++) store.insertStatus(statusRecord({ accountId: same.account_id, submittedAt: clock }));
    for (let i = 0; i < 3; i++) store.insertStatus(statusRecord({ accountId: older.account_id, submittedAt: clock - 86_400_000 }));
    await store.flushed();
    expect(accounts.usage(same.account_id)).toEqual({ total: 2, today: 2 });
    accounts.countSubmissions(same.account_id, 1);
    expect(accounts.usage(same.account_id)).toEqual({ total: 3, today: 3 });
    expect(accounts.usage(older.account_id)).toEqual({ total: 3, today: 0 });
    accounts.countSubmissions(older.account_id, 1);
    expect(accounts.usage(older.account_id)).toEqual({ total: 4, today: 1 });
    expect(day()).toBe(utcDay(clock));
  });

  it('loses no count when several worker threads count the same account at once', async () => {
    {
      const c = accounts.createAccount('threads');
      // 10 committed records of yesterday (real clock) to start from.
      for (let i = 0; i < 10; i++) store.insertStatus(statusRecord({ accountId: c.account_id, submittedAt: Date.now() - 86_400_000 }));
      await store.flushed();
      const shared = new SharedArrayBuffer(8);
      const flags = new Int32Array(shared);
      const THREADS = 4;
      const N = 20_000;
      let failure: unknown = null;
      const workers = Array.from({ length: THREADS }, () => {
        const worker = new Worker(WORKER, { workerData: { mode: 'count', dir: tmp.dir, accountId: c.account_id, n: N, shared } });
        const done = new Promise<{ counted: number }>((resolve, reject) => {
          worker.once('message', resolve);
          worker.once('error', (e) => reject((failure = e)));
          worker.once('exit', (code) => code !== 0 && reject((failure ??= new Error(`worker exited with code ${code}`))));
        });
        done.catch(() => {});
        // Listened for from the start: a worker may exit before the test gets to wait for it.
        const exited = new Promise((r) => worker.once('exit', r));
        return { worker, done, exited };
      });
      while (Atomics.load(flags, 0) < THREADS) {
        if (failure) throw failure;
        await new Promise((r) => setTimeout(r, 5));
      }
      Atomics.store(flags, 1, 1);
      Atomics.notify(flags, 1);
      for (const w of workers) expect((await w.done).counted).toBe(N);
      await Promise.all(workers.map((w) => w.exited));
      // The workers count on the real clock's day.
      const real = new Accounts(store, { plans: DEFAULT_PLANS, lamportsPerPoint: 1000 });
      expect(real.usage(c.account_id)).toEqual({ total: 10 + THREADS * N, today: THREADS * N });
    }
  });
});

/**
 * Budgets across nodes (issue 13, part 5): the share table's weights (pure), and the weight
 * plumbing from the main thread into the real native buckets that every thread's RateLimiter
 * takes from (a worker thread runs the built RateLimiter, as an ingress thread does).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Worker } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { ACCOUNT_SLOTS, accountSlot, buckets } from '../../src/native.js';
import { budgetShares, enableBudgetShares, QUERY, SEND } from '../../src/accounts/budget-shares.js';
import { RateLimiter } from '../../src/accounts/rate-limiter.js';
import { DEFAULT_PLANS, type PlanName, type PlanTable } from '../../src/accounts/plans.js';
import { BudgetSharer, DemandMeter, EPSILON, FRESH_MS, KNOWN_MS, LEASE_MS, MARGIN_MS, STALE_MS, ShareTable } from '../../src/cluster/shares.js';
import type { AccountRecord } from '../../src/store/store.js';

describe('ShareTable: weights from demand reports', () => {
  const RATE = 10;
  const EPS = EPSILON * RATE;
  /** A table for node `self` that has heard its own report at `t` (NATS works). */
  function table(self: string, t = 0): ShareTable {
    const st = new ShareTable(self);
    st.observe({ node: self, accounts: {} }, t);
    return st;
  }

  it('splits by demand, counts an idle node as ε, and the live nodes’ shares add up to 1', () => {
    const demand: Record<string, number> = { a: 30, b: 10, c: 0 };
    const tables = Object.keys(demand).map((n) => table(n));
    for (const t of tables) {
      for (const [n, d] of Object.entries(demand)) if (n !== t.self) t.observe({ node: n, accounts: d ? { acc: [d, 0] } : {} }, 0);
    }
    const w = tables.map((t) => t.weight('acc', SEND, demand[t.self]!, RATE, 100));
    const sum = 30 + 10 + EPS;
    expect(w[0]).toBeCloseTo(30 / sum, 12);
    expect(w[1]).toBeCloseTo(10 / sum, 12);
    expect(w[2]).toBeCloseTo(EPS / sum, 12);
    expect(w.reduce((x, y) => x + y)).toBeCloseTo(1, 12);
    // The query budget is weighed on its own demand (nobody asked: equal shares).
    expect(tables[0]!.weight('acc', QUERY, 0, 2 * RATE, 100)).toBeCloseTo(1 / 3, 12);
  });

  it('a node alone with two idle live peers gets ≥ 98 % of the budget', () => {
    const t = table('a');
    t.observe({ node: 'b', accounts: {} }, 0);
    t.observe({ node: 'c', accounts: {} }, 0);
    const w = t.weight('acc', SEND, RATE, RATE, 100);
    expect(w).toBeCloseTo(RATE / (RATE + 2 * EPS), 12);
    expect(w).toBeGreaterThanOrEqual(0.98);
    expect(t.liveNodes(100)).toEqual(['a', 'b', 'c']);
    expect(t.defaultWeight(100)).toBeCloseTo(1 / 3, 12);
  });

  it('a silent peer is no longer weighed by demand, but its slice stays reserved until its lease ends', () => {
    const t = table('a', 0);
    t.observe({ node: 'b', accounts: { acc: [50, 0] } }, 0);
    t.observe({ node: 'c', accounts: { acc: [50, 0] } }, 0);
    expect(t.weight('acc', SEND, 50, RATE, STALE_MS)).toBeCloseTo(1 / 3, 12);
    // c goes on reporting, b falls silent (cut off from NATS, or dead: nobody can tell).
    const silent = STALE_MS + MARGIN_MS + 1;
    t.observe({ node: 'a', accounts: {} }, silent); // NATS still works for a
    t.observe({ node: 'c', accounts: { acc: [50, 0] } }, silent);
    expect(t.liveNodes(silent)).toEqual(['a', 'c']);
    expect(t.peerAccounts(silent)).toEqual(new Set(['acc']));
    // a and c split what b may still use (1/3) away: 2/3 between them, by demand.
    expect(t.weight('acc', SEND, 50, RATE, silent)).toBeCloseTo(1 / 3, 12);
    expect(t.weight('acc', SEND, 150, RATE, silent)).toBeCloseTo((2 / 3) * (150 / 200), 12);
    expect(t.defaultWeight(silent)).toBeCloseTo(1 / 3, 12);
    // Past b's lease (+ the margin), its slice is handed out again.
    const after = LEASE_MS + MARGIN_MS + 1;
    t.observe({ node: 'a', accounts: {} }, after);
    t.observe({ node: 'c', accounts: { acc: [50, 0] } }, after);
    t.forgetGone(after);
    expect(t.weight('acc', SEND, 50, RATE, after)).toBeCloseTo(0.5, 12);
    expect(t.knownNodes(after)).toBe(2);
  });

  it('while a live peer is not heard, no node raises its weight, so the sides of a split cannot add up to more than the plan', () => {
    // a | b + c: each side hears itself, not the other. Before the split all three asked for 50.
    const t = { a: table('a', 0), b: table('b', 0) };
    for (const [self, st] of Object.entries(t)) for (const n of ['a', 'b', 'c']) if (n !== self) st.observe({ node: n, accounts: { acc: [50, 0] } }, 0);
    const held = { a: t.a.weight('acc', SEND, 50, RATE, 100), b: t.b.weight('acc', SEND, 50, RATE, 100) };
    expect(held.a).toBeCloseTo(1 / 3, 12);
    // One second into the split (FRESH_MS < 1 s < STALE_MS: a still weighs b and c by their last
    // reports, and they a): a's clients ask for twice as much, b's too (c is heard by b).
    const now = FRESH_MS + 400;
    expect(now).toBeLessThan(STALE_MS);
    t.a.observe({ node: 'a', accounts: {} }, now);
    t.b.observe({ node: 'b', accounts: {} }, now);
    t.b.observe({ node: 'c', accounts: { acc: [100, 0] } }, now);
    const wa = t.a.weight('acc', SEND, 100, RATE, now, held.a);
    const wb = t.b.weight('acc', SEND, 100, RATE, now, held.b);
    // Without the rule a takes 100/200 and b 100/250: with c's (as b), 1.3 of the plan.
    expect(wa).toBeLessThanOrEqual(held.a);
    expect(wb).toBeLessThanOrEqual(held.b);
    expect(wa + 2 * wb).toBeLessThanOrEqual(1 + 1e-12);
    // A weight can always go down, and with every peer heard again it follows demand at once.
    expect(t.a.weight('acc', SEND, 10, RATE, now, held.a)).toBeCloseTo(10 / 110, 12);
    t.a.observe({ node: 'b', accounts: { acc: [50, 0] } }, now);
    t.a.observe({ node: 'c', accounts: { acc: [50, 0] } }, now);
    expect(t.a.weight('acc', SEND, 100, RATE, now, held.a)).toBeCloseTo(0.5, 12);
  });

  it('without its own report back a node gives its share up before the others reserve its slice, and uses nothing past its lease', () => {
    const t = table('a', 0);
    t.observe({ node: 'b', accounts: { acc: [50, 0] } }, 0);
    t.observe({ node: 'c', accounts: {} }, 0);
    const cut = STALE_MS - MARGIN_MS;
    expect(t.mode(cut)).toBe('shared');
    expect(t.mode(cut + 1)).toBe('local-share');
    // At most the slice (1 / known nodes) from STALE_MS - MARGIN_MS, before the others reserve it
    // (from STALE_MS + MARGIN_MS): a node holding more gives it up, one holding less keeps it.
    expect(t.weight('acc', SEND, 1000, RATE, cut + 1, 0.9)).toBeCloseTo(1 / 3, 12);
    expect(t.weight('acc', SEND, 1000, RATE, cut + 1, 0.1)).toBeCloseTo(0.1, 12);
    // The whole slice once the others reserve it.
    expect(t.weight('acc', SEND, 1000, RATE, STALE_MS + 3 * MARGIN_MS + 1, 0.1)).toBeCloseTo(1 / 3, 12);
    expect(t.defaultWeight(STALE_MS + 3 * MARGIN_MS + 1)).toBeCloseTo(1 / 3, 12);
    expect(t.weight('acc', SEND, 1000, RATE, LEASE_MS - MARGIN_MS, 1 / 3)).toBeCloseTo(1 / 3, 12);
    // Its lease over (the others may hand the slice out from LEASE_MS + MARGIN_MS): nothing.
    expect(t.weight('acc', SEND, 1000, RATE, LEASE_MS - MARGIN_MS + 1, 1 / 3)).toBe(0);
    // Long after: the nodes known when NATS last worked still count (the divisor never shrinks).
    const later = 10 * KNOWN_MS;
    t.forgetGone(later);
    expect(t.knownNodes(later)).toBe(3);
    expect(t.defaultWeight(later)).toBe(0);
    // NATS back: shared again, from fresh reports.
    t.observe({ node: 'a', accounts: {} }, later);
    t.observe({ node: 'b', accounts: {} }, later);
    expect(t.mode(later)).toBe('shared');
    expect(t.weight('acc', SEND, RATE, RATE, later)).toBeCloseTo(RATE / (RATE + EPS), 12);
  });

  it('a node the leases know but not yet heard from counts as an idle node', () => {
    const t = table('a');
    t.hintKnownNodes(3);
    expect(t.weight('acc', SEND, RATE, RATE, 0)).toBeCloseTo(RATE / (RATE + 2 * EPS), 12);
    expect(t.defaultWeight(0)).toBeCloseTo(1 / 3, 12);
    t.observe({ node: 'b', accounts: { acc: [RATE, 0] } }, 0);
    expect(t.weight('acc', SEND, RATE, RATE, 0)).toBeCloseTo(RATE / (2 * RATE + EPS), 12);
  });

  it('before NATS is heard at all, the share is 1 / the nodes the leases know', () => {
    const t = new ShareTable('a');
    expect(t.mode(0)).toBe('local-share');
    expect(t.weight('acc', SEND, 5, RATE, 0)).toBe(1);
    t.hintKnownNodes(3);
    expect(t.weight('acc', SEND, 5, RATE, 0)).toBeCloseTo(1 / 3, 12);
  });
});

// ---- weights reach the native buckets of every thread --------------------------------------

const WORKER = new URL('./fixtures/share-limiter-worker.mjs', import.meta.url);
/** Bucket slots no other test file uses. */
const FIRST_SLOT = 44_000;
/** Small, exact budgets: starter 40 sends/s (burst 40), 80 queries/s; growth 200/s. */
const PLANS: PlanTable = {
  ...DEFAULT_PLANS,
  starter: { ...DEFAULT_PLANS.starter, maxTps: 40, queryTps: 80 },
  growth: { ...DEFAULT_PLANS.growth, maxTps: 200, queryTps: 400 },
};

let seq = 0;
function account(plan: PlanName = 'starter'): AccountRecord {
  const id = `share-test-${process.pid}-${seq++}`;
  return { id, name: id, plan, points: 0, memberSince: 0, planUpgradedAt: 0 };
}

describe('budget shares reach every thread’s limiter (real native buckets)', () => {
  let worker: Worker;
  let main: RateLimiter;

  beforeAll(async () => {
    const buffer = enableBudgetShares(ACCOUNT_SLOTS);
    main = new RateLimiter(PLANS, FIRST_SLOT);
    worker = new Worker(WORKER, { workerData: { shares: buffer, plans: PLANS, firstSlot: FIRST_SLOT } });
    await new Promise<void>((resolve, reject) => {
      worker.once('online', resolve);
      worker.once('error', reject);
    });
  });
  afterAll(async () => {
    await worker.terminate();
  });

  /** `tries` takes of one token on the worker thread; with the ms from before `before()` to the answer. */
  async function onWorker(a: AccountRecord, budget: 'send' | 'query', tries: number, before = (): void => {}): Promise<{ granted: number; seconds: number }> {
    const t0 = performance.now();
    before();
    const reply = new Promise<{ granted: number }>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    worker.postMessage({ account: a, budget, tries });
    const { granted } = await reply;
    return { granted, seconds: (performance.now() - t0) / 1000 };
  }

  it('a demand report counts only on its own node\'s subject (lf.demand.<node>): another node\'s claimed demand is ignored and logged', () => {
    const logged: string[] = [];
    // `receive` is driven by hand here: the link is never used (NATS itself: test/cluster/).
    const sharer = new BudgetSharer({ node: 'a', link: { up: false, publish: () => {}, subscribe: () => () => {} }, shares: budgetShares!, plans: PLANS, account: () => undefined, log: (m) => logged.push(m) });
    const report = (node: string) => new TextEncoder().encode(JSON.stringify({ node, accounts: { acc: [40, 0] } }));
    sharer.receive(report('b'), 0, 'lf.demand.evil');
    expect(sharer.table.liveNodes(0)).not.toContain('b');
    expect(logged).toEqual(['cluster: ignoring a malformed demand report: node "b" is not the node of its subject lf.demand.evil']);
    sharer.receive(report('b'), 0, 'lf.demand.b');
    expect(sharer.table.liveNodes(0)).toContain('b');
  });

  it('a weight set on the main thread changes what the worker thread is granted, both ways', async () => {
    const shares = budgetShares!;
    const a = account();
    const index = accountSlot(a.id);
    // A quarter of 40/s: burst 10, 10/s.
    const r1 = await onWorker(a, 'send', 40, () => {
      shares.setWeight(index, SEND, 0.25);
      main.reweigh(a);
    });
    expect(r1.granted).toBeGreaterThanOrEqual(10);
    expect(r1.granted).toBeLessThanOrEqual(10 + Math.ceil(10 * r1.seconds));
    expect(shares.takeDemand(index, SEND)).toBe(40); // every attempt counted, granted or refused

    // The whole budget again: no fresh burst (the bucket keeps what it had), but the rate is 40/s.
    const t0 = performance.now();
    shares.setWeight(index, SEND, 1);
    main.reweigh(a);
    await new Promise((r) => setTimeout(r, 500));
    const refilling = (performance.now() - t0) / 1000;
    const r2 = await onWorker(a, 'send', 100);
    expect(r2.granted).toBeGreaterThanOrEqual(Math.floor(40 * refilling) - 1);
    expect(r2.granted).toBeLessThanOrEqual(Math.ceil(40 * (refilling + r2.seconds)) + 1);
  });

  it('a growing share brings no fresh burst; a shrinking one keeps the tokens in use', () => {
    const a = account();
    const index = accountSlot(a.id);
    const slot = FIRST_SLOT + 2 * index;
    budgetShares!.setWeight(index, SEND, 0.25);
    main.reweigh(a);
    expect(buckets.available(slot)).toBe(10);
    budgetShares!.setWeight(index, SEND, 1);
    main.reweigh(a);
    expect(buckets.available(slot)).toBe(10); // not 40: the new room refills at 40/s
    // 30 tokens are in use (40 − 10), more than the new burst of 4: the smaller bucket is empty.
    budgetShares!.setWeight(index, SEND, 0.1);
    main.reweigh(a);
    expect(buckets.available(slot)).toBe(0);
  });

  it('the query budget has its own weight', async () => {
    const a = account();
    const index = accountSlot(a.id);
    budgetShares!.setWeight(index, QUERY, 0.5);
    main.reweigh(a);
    const r = await onWorker(a, 'query', 200);
    // Half of 80/s: burst 40 (the whole budget would grant 80).
    expect(r.granted).toBeGreaterThanOrEqual(40);
    expect(r.granted).toBeLessThanOrEqual(40 + Math.ceil(40 * r.seconds));
    expect(budgetShares!.takeDemand(index, QUERY)).toBe(200);
  });

  it('a thread that reconfigures for a plan change, or meets a new account, reads the weights', async () => {
    const a = account('starter');
    const index = accountSlot(a.id);
    budgetShares!.setWeight(index, SEND, 0.1);
    const r1 = await onWorker(a, 'send', 20); // first sight on the worker: configured at 0.1 × 40
    expect(r1.granted).toBeGreaterThanOrEqual(4);
    expect(r1.granted).toBeLessThanOrEqual(4 + Math.ceil(4 * r1.seconds));
    // Upgraded (as the tracker does): the worker reconfigures itself at 0.1 × 200 = 20, 4 still in use.
    const r2 = await onWorker({ ...a, plan: 'growth' }, 'send', 100);
    expect(r2.granted).toBeGreaterThanOrEqual(16);
    expect(r2.granted).toBeLessThanOrEqual(20 + Math.ceil(20 * (r1.seconds + r2.seconds)));

    // An account no node has a weight for yet gets the default share.
    budgetShares!.setDefaultWeight(0.5);
    const fresh = account();
    const r3 = await onWorker(fresh, 'send', 100);
    expect(r3.granted).toBeGreaterThanOrEqual(20);
    expect(r3.granted).toBeLessThanOrEqual(20 + Math.ceil(20 * r3.seconds));
  });

  it('DemandMeter reports the tokens asked for over the last second, per account', async () => {
    const meter = new DemandMeter(budgetShares!);
    meter.sample(); // drain what earlier tests left
    const a = account();
    const b = account();
    await onWorker(a, 'send', 7);
    await onWorker(b, 'query', 3);
    const d1 = meter.sample();
    expect(d1.get(accountSlot(a.id))).toEqual([7, 0]);
    expect(d1.get(accountSlot(b.id))).toEqual([0, 3]);
    await onWorker(a, 'send', 5);
    expect(meter.sample().get(accountSlot(a.id))).toEqual([12, 0]); // both ticks are in the window
    for (let i = 0; i < 3; i++) meter.sample();
    expect(meter.sample().get(accountSlot(a.id))).toEqual([5, 0]); // the first tick has left the window
    expect(meter.sample().has(accountSlot(a.id))).toBe(false); // and then the second
  });
});

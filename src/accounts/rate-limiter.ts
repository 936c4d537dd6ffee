/**
 * Per-account send and query budgets on the native lock-free token buckets.
 *
 * Each account gets two bucket slots (send, query) the first time it is seen. The plan is
 * re-read from the account record on every request; when it differs from what the slots were
 * configured for (an upgrade by the tracker, a `set-plan` by the CLI), the slots are
 * reconfigured before the take, so the new limits apply to the very next request.
 */
import { LandfallError } from '../errors.js';
import { accountSlot, buckets } from '../native.js';
import { budgetShares, QUERY, SEND } from './budget-shares.js';
import type { AccountRecord } from '../store/store.js';
import { queryTps, type PlanName, type PlanTable } from './plans.js';

export interface RateDecision {
  granted: boolean;
  /** Requests per second of this budget. */
  limit: number;
  remaining: number;
  /** ms until the request would be granted (0 when granted). */
  retryAfterMs: number;
  /** ms until the budget is full again. */
  resetMs: number;
}

/** An account's two bucket slots, configured for its plan (`RateLimiter.sendBucket`). */
export interface Slots {
  /** The account's process-wide slot index (`accountSlot`). */
  index: number;
  send: number;
  query: number;
  /** The plan this thread last configured the slots for. */
  plan: PlanName;
}

export class RateLimiter {
  /** This thread's view of which plan each account's buckets are configured for. */
  private readonly byAccount = new Map<string, Slots>();

  /**
   * @param firstSlot first bucket slot this limiter may use (tests use disjoint ranges). Slots
   *   come from the process-wide account registry, so every thread's limiter (with the same
   *   `firstSlot`) takes from the same two buckets of an account.
   */
  constructor(
    private readonly plans: PlanTable,
    private readonly firstSlot = 0,
  ) {}

  private slots(a: AccountRecord): Slots {
    let s = this.byAccount.get(a.id);
    if (!s) {
      const index = accountSlot(a.id);
      const send = this.firstSlot + 2 * index;
      if (send + 2 > buckets.slots) {
        throw new LandfallError('BUCKET_INVALID', `rate limiter out of bucket slots (${buckets.slots})`);
      }
      // A slot is never reused within a process, and a fresh one starts full (GCRA: TAT 0).
      s = { index, send, query: send + 1, plan: a.plan };
      this.configure(s, a.plan);
      this.byAccount.set(a.id, s);
    } else if (s.plan !== a.plan) {
      // An upgrade (tracker) or set-plan (CLI, any process): the next request gets the new limits.
      this.configure(s, a.plan);
      s.plan = a.plan;
    }
    return s;
  }

  private configure(s: Slots, plan: PlanName): void {
    const p = this.plans[plan];
    // Clustered, this node's buckets hold its share of the account's budget (budget-shares.ts);
    // a single node has no shares (weight 1). Configuring with the values already set (another
    // thread got there first) changes nothing.
    const ws = budgetShares === null ? 1 : budgetShares.weight(s.index, SEND);
    const wq = budgetShares === null ? 1 : budgetShares.weight(s.index, QUERY);
    configureShare(s.send, p.maxTps, ws);
    configureShare(s.query, queryTps(p), wq);
  }

  /**
   * Main thread, clustered: apply the account's current share weights (set in `budgetShares`)
   * to its buckets now. The buckets are process-wide, so every thread's takes see it at once;
   * a thread that reconfigures later (plan change) reads the same weights.
   *
   * A share that grows brings no fresh burst: the bucket keeps the tokens it had and fills to its
   * new size at the new rate. Otherwise every node whose share grows at the same moment (they
   * all start at 1/n when demand appears everywhere at once, and each sees its own demand a
   * report earlier than the others') would hand out the difference at once, together.
   */
  reweigh(a: AccountRecord): void {
    const s = this.slots(a);
    const before = [buckets.available(s.send), buckets.available(s.query)] as const;
    this.configure(s, a.plan);
    keepAvailable(s.send, before[0]);
    keepAvailable(s.query, before[1]);
  }

  private take(slot: number, n: number, limit: number): RateDecision {
    const t = buckets.takeDetailed(slot, n);
    return { granted: t.granted, limit, remaining: t.remaining, retryAfterMs: t.retryAfterMs, resetMs: t.resetMs };
  }

  /** Take `n` send tokens (a batch of N takes N at once, all or nothing). */
  takeSend(a: AccountRecord, n: number): RateDecision {
    const s = this.slots(a);
    if (budgetShares !== null) budgetShares.addDemand(s.index, SEND, n);
    return this.take(s.send, n, this.plans[a.plan].maxTps);
  }

  /**
   * The account's slots, configured for its current plan, for a send token taken in the addon's
   * send call (`inspectAdmit`, after admission); `sendDemand` then counts it, as `takeSend` does.
   */
  sendBucket(a: AccountRecord): Readonly<Slots> {
    return this.slots(a);
  }

  /** Count `n` send tokens asked of `s` (clustered: the account's share follows its demand). */
  sendDemand(s: Readonly<Slots>, n: number): void {
    if (budgetShares !== null) budgetShares.addDemand(s.index, SEND, n);
  }

  /** Take one query token (status, account). */
  takeQuery(a: AccountRecord): RateDecision {
    const s = this.slots(a);
    if (budgetShares !== null) budgetShares.addDemand(s.index, QUERY, 1);
    return this.take(s.query, 1, queryTps(this.plans[a.plan]));
  }
}

/** After a bucket grew: take back the tokens above the `available` it had (they refill at its rate). */
function keepAvailable(slot: number, available: number): void {
  const extra = buckets.available(slot) - available;
  if (extra > 0) buckets.take(slot, extra);
}

/** Lowest rate a share configures (tokens/s): the native bucket refuses intervals past ~18 min. */
const MIN_SHARE_RATE = 0.01;

/**
 * Configure a bucket with share `w` of a budget of `rate`/s. Capacity = one second of burst
 * (docs/decisions.md, "Rate limits"), scaled by the same share and rounded down so the nodes' capacities never add
 * up to more than the plan's; at least 1 so an idle node still serves a trickle.
 */
function configureShare(slot: number, rate: number, w: number): void {
  buckets.configure(slot, Math.max(MIN_SHARE_RATE, rate * w), Math.max(1, Math.floor(rate * w)));
}

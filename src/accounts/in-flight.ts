/**
 * Transactions in flight per account — accepted and still pending (sent, neither settled nor
 * expired) — counted once for the whole process, under a cap that scales with the plan.
 *
 * Why a cap: a pending transaction costs the service memory, a place in every tracker sweep and
 * rebroadcast round, and a status poll, for as long as it can still land. The token bucket
 * limits how fast an account adds them, not how many it holds; a transaction that never lands
 * and never expires (a durable-nonce transaction whose nonce is never used) would pile up
 * without bound. The cap is `inFlightPerTps × max_tps` (default 20: twenty seconds of the plan's
 * whole send rate), so a bot whose transactions land within a few slots holds a small part of
 * it, and one whose transactions stop landing is told to wait instead of piling up more.
 *
 * Who counts: the submission core adds one when it accepts a new signature (on whichever
 * thread), before the first send, and refuses with 429 past the cap; the tracker (main thread)
 * takes one away when it settles or expires a transaction, and adds back what it resumes after
 * a restart.
 */
import type { AccountRecord } from '../store/store.js';
import { AccountCounters } from './account-counters.js';
import type { PlanName, PlanTable } from './plans.js';

export class InFlight {
  readonly counters: AccountCounters;

  /**
   * @param perTps the cap in seconds of the plan's send rate (`inFlightPerTps`)
   * @param shared the buffer of another thread's `InFlight` (`buffer`), or none for a new one
   */
  constructor(
    private readonly plans: PlanTable,
    readonly perTps: number,
    shared?: SharedArrayBuffer,
  ) {
    this.counters = new AccountCounters(shared);
  }

  get buffer(): SharedArrayBuffer {
    return this.counters.buffer;
  }

  /** Transactions an account on `plan` may have in flight at once (at least 1). */
  cap(plan: PlanName): number {
    return Math.max(1, Math.floor(this.perTps * this.plans[plan].maxTps));
  }

  /** Count one more for `account` unless it is at its plan's cap: null if counted, else the cap. */
  tryAdd(account: AccountRecord): number | null {
    const cap = this.cap(account.plan);
    return this.counters.tryIncrement(account.id, cap) ? null : cap;
  }

  /** One of the account's transactions settled, expired, or was never accepted after all. */
  release(accountId: string): void {
    this.counters.decrement(accountId);
  }

  /** Count transactions that are already pending (resumed after a restart), past any cap. */
  add(accountId: string, n = 1): void {
    this.counters.add(accountId, n);
  }

  count(accountId: string): number {
    return this.counters.count(accountId);
  }
}

/**
 * Open `/v1/stream` sockets per account, counted once for the whole process in the shared
 * per-account counters (`AccountCounters`): the main thread creates them and hands the buffer to
 * every ingress thread. Opening is a compare-and-swap against the cap, so two threads can never
 * together exceed it.
 */
import { AccountCounters } from '../accounts/account-counters.js';

export class StreamSlots extends AccountCounters {
  /** Take one of the account's `max` stream slots; false when all are taken. */
  tryOpen(accountId: string, max: number): boolean {
    return this.tryIncrement(accountId, max);
  }

  /** Give back a slot taken by `tryOpen`. */
  close(accountId: string): void {
    this.decrement(accountId);
  }
}

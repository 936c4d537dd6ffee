/**
 * Small per-account counters shared by every thread of the process: one Int32 per account slot
 * (the native registry's index, the same in every thread) in a SharedArrayBuffer that the main
 * thread creates and hands to every ingress thread (`IngressInit`). No message per change: a
 * thread adds, another reads the sum at once.
 *
 * Used for open `/v1/stream` sockets (`StreamSlots`) and transactions in flight (`InFlight`).
 * Taking one under a cap is a compare-and-swap loop, so two threads can never together pass it;
 * giving one back never goes below zero, so a stray release cannot open room that was never
 * taken.
 */
import { ACCOUNT_SLOTS, accountSlot } from '../native.js';

export class AccountCounters {
  readonly counts: Int32Array;
  /** account id → slot, per thread: the native lookup takes a shared lock. */
  private readonly slots = new Map<string, number>();

  /** @param shared the buffer of another thread's counters (`buffer`), or none for a new set */
  constructor(shared?: SharedArrayBuffer) {
    this.counts = new Int32Array(shared ?? new SharedArrayBuffer(ACCOUNT_SLOTS * Int32Array.BYTES_PER_ELEMENT));
  }

  /** The shared memory, to hand to another thread. */
  get buffer(): SharedArrayBuffer {
    return this.counts.buffer as SharedArrayBuffer;
  }

  /** The account's slot (its counter's index in `counts`). */
  slotOf(accountId: string): number {
    let i = this.slots.get(accountId);
    if (i === undefined) this.slots.set(accountId, (i = accountSlot(accountId)));
    return i;
  }

  /** Add one unless the account already counts `max` (every thread together); false then. */
  tryIncrement(accountId: string, max: number): boolean {
    const i = this.slotOf(accountId);
    for (;;) {
      const n = Atomics.load(this.counts, i);
      if (n >= max) return false;
      if (Atomics.compareExchange(this.counts, i, n, n + 1) === n) return true;
    }
  }

  /** Add `n` with no cap (counting what already exists, e.g. after a restart). */
  add(accountId: string, n = 1): void {
    Atomics.add(this.counts, this.slotOf(accountId), n);
  }

  /** Take one away; never below zero. */
  decrement(accountId: string): void {
    const i = this.slotOf(accountId);
    for (;;) {
      const n = Atomics.load(this.counts, i);
      if (n <= 0) return;
      if (Atomics.compareExchange(this.counts, i, n, n - 1) === n) return;
    }
  }

  /** The account's count, every thread together. */
  count(accountId: string): number {
    return Atomics.load(this.counts, this.slotOf(accountId));
  }
}

/**
 * Open `/v1/stream` sockets per account, counted once for the whole process: one Int32 per
 * account slot (the native registry's index, the same in every thread) in a SharedArrayBuffer
 * that the main thread creates and hands to every ingress thread. Opening is a compare-and-swap
 * against the cap, so two threads can never together exceed it.
 */
import { ACCOUNT_SLOTS, accountSlot } from '../native.js';

export class StreamSlots {
  readonly counts: Int32Array;

  /** @param shared the buffer from another thread's `StreamSlots` (`counts.buffer`), or none for a new one */
  constructor(shared?: SharedArrayBuffer) {
    this.counts = new Int32Array(shared ?? new SharedArrayBuffer(ACCOUNT_SLOTS * Int32Array.BYTES_PER_ELEMENT));
  }

  /** Take one of the account's `max` stream slots; false when all are taken. */
  tryOpen(accountId: string, max: number): boolean {
    const i = accountSlot(accountId);
    for (;;) {
      const n = Atomics.load(this.counts, i);
      if (n >= max) return false;
      if (Atomics.compareExchange(this.counts, i, n, n + 1) === n) return true;
    }
  }

  /** Give back a slot taken by `tryOpen`. */
  close(accountId: string): void {
    Atomics.sub(this.counts, accountSlot(accountId), 1);
  }

  /** Open streams of the account, every thread together. */
  count(accountId: string): number {
    return Atomics.load(this.counts, accountSlot(accountId));
  }
}

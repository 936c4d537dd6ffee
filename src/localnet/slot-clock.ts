/**
 * The cluster's slot clock: slot `n` begins `n × slotMs` after the start, on the monotonic clock.
 *
 * Each tick is a fresh `setTimeout` aimed at the next boundary computed from the start time, not
 * from the previous tick, so timer lateness never accumulates into drift. A tick that runs more
 * than a whole slot late (a blocked event loop) emits every missed slot in order, as a real
 * cluster's slots keep passing whether or not anyone watches. Timers are `unref`'d: the clock
 * alone never keeps the process alive.
 */
import { performance } from 'node:perf_hooks';

export type SlotListener = (slot: number) => void;

export class SlotClock {
  private readonly origin = performance.now();
  private current = 0;
  private timer: NodeJS.Timeout | null = null;

  /** Starts at slot 0 (already current when the constructor returns; no event for it). */
  constructor(
    private readonly slotMs: number,
    private readonly onSlot: SlotListener,
  ) {
    this.schedule();
  }

  get slot(): number {
    return this.current;
  }

  /**
   * The slot a moment belongs to by the schedule (origin + n × slotMs), given as a
   * `performance.now()` time. It can run one slot ahead of `slot` while a due tick waits for
   * the event loop.
   */
  slotAt(perfMs: number): number {
    return Math.max(0, Math.floor((perfMs - this.origin) / this.slotMs));
  }

  /** When slot `slot` begins by the schedule, as a `performance.now()` time. */
  startOf(slot: number): number {
    return this.origin + slot * this.slotMs;
  }

  /** Milliseconds until the current slot ends (0 when the boundary is due). */
  private msLeftInSlot(): number {
    return Math.max(0, this.startOf(this.current + 1) - performance.now());
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(): void {
    this.timer = setTimeout(() => this.tick(), this.msLeftInSlot());
    this.timer.unref();
  }

  private tick(): void {
    const due = Math.floor((performance.now() - this.origin) / this.slotMs);
    while (this.current < due) {
      this.current++;
      this.onSlot(this.current);
      // A listener may stop the clock (close from inside a slot event): honour it at once.
      if (this.timer === null) return;
    }
    this.schedule();
  }
}

/**
 * The current slot estimated from recent slot events, as Agave's TPU clients do it (tpu-client's
 * and tpu-client-next's recent-leader-slots): keep the last few slots the node reported as
 * started, take their median, allow the newer ones to run ahead of it by the number of events
 * after the median plus a bounded skip, and answer with the highest recorded slot within that
 * bound. A single event far ahead of the others (a bad notification, another chain's slot) is
 * ignored until enough others agree with it; a late event for an old slot never moves it back.
 *
 * Events: `slotsUpdatesSubscribe`'s `firstShredReceived` N (slot N started reaching this node) and
 * `completed` N (slot N is whole: N + 1 starts), `slotSubscribe`'s slot N, a polled `getSlot`.
 */

/** How far past the median (plus the events after it) a slot may run: 12 leaders of 4 slots each skipping in a row is unlikely. */
export const MAX_SLOT_SKIP_DISTANCE = 48;
/** Slot events remembered. */
export const RECENT_SLOTS = 12;

/** The slot a `slotsUpdatesNotification` says has started, or null for the other update types. */
export function slotStartOf(update: unknown): number | null {
  if (typeof update !== 'object' || update === null) return null;
  const { type, slot } = update as { type?: unknown; slot?: unknown };
  if (typeof slot !== 'number' || !Number.isSafeInteger(slot) || slot < 0) return null;
  if (type === 'firstShredReceived') return slot;
  if (type === 'completed') return slot + 1;
  return null;
}

export class RecentSlots {
  /** Distinct slots in arrival order, oldest first. */
  private readonly slots: number[] = [];

  constructor(private readonly capacity = RECENT_SLOTS) {}

  /** Remember that `slot` started (a slot already remembered is not counted twice). */
  record(slot: number): void {
    if (this.slots.includes(slot)) return;
    this.slots.push(slot);
    if (this.slots.length > this.capacity) this.slots.shift();
  }

  /** Forget everything (the chain restarted, or the view went stale). */
  clear(): void {
    this.slots.length = 0;
  }

  get size(): number {
    return this.slots.length;
  }

  /** The estimated current slot, or null before any event. */
  estimate(): number | null {
    if (this.slots.length === 0) return null;
    const sorted = [...this.slots].sort((a, b) => a - b);
    const last = sorted.length - 1;
    const medianIndex = last >> 1;
    // With n events after the median, the newest slot should be about n past it.
    const bound = sorted[medianIndex]! + (last - medianIndex) + MAX_SLOT_SKIP_DISTANCE;
    for (let i = last; i >= 0; i--) if (sorted[i]! <= bound) return sorted[i]!;
    return sorted[medianIndex]!;
  }
}

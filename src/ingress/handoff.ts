/**
 * The hand-off of accepted transactions from an ingress thread to the main thread (the one
 * rebroadcast scheduler and tracker), coalesced: one message per `HANDOFF_LINGER_MS` (or per
 * `HANDOFF_MAX` transactions, whichever comes first), not one per event-loop turn.
 *
 * Why: a message costs the main thread ~13 µs to receive and the ingress thread ~7 µs to send
 * whatever it carries (measured on the send bench, `--cpu-prof`), and below a few thousand
 * requests/s an event-loop turn holds one request, so a message per turn was a message per
 * transaction. Nothing waits for the hand-off: the response was written and the first send made
 * before it; rebroadcast rounds go once per slot (400 ms), the tracker remembers a landing seen
 * before its `watch`, and cluster status events linger 50 ms for company anyway. What the
 * linger delays is another thread's `/v1/stream` push and the main thread's live trace, so a
 * trace request flushes first (`flush`, then the request on the same port: it arrives after).
 *
 * What a batch carries is the caller's: an ingress thread's are the numbers of the sends' entries
 * on its native hand-off queue (`src/delivery/handoff-queue.ts`), whose payload the main thread
 * drains on the message.
 */
/** How long the first transaction of a hand-off waits for company, ms. */
export const HANDOFF_LINGER_MS = 10;
/** A hand-off this large goes at once. */
export const HANDOFF_MAX = 256;

export class AcceptedHandoff<T> {
  private batch: T[] = [];
  private timer: NodeJS.Timeout | null = null;

  private immediate: NodeJS.Immediate | null = null;

  /**
   * @param prompt `ackReplication: quorum`: responses wait for the main thread's answer, so the
   *   hand-off goes at the end of this event-loop turn (with whatever else this turn accepted),
   *   not after the linger
   */
  constructor(
    private readonly post: (batch: T[]) => void,
    private readonly prompt = false,
  ) {}

  add(a: T): void {
    this.batch.push(a);
    if (this.batch.length >= HANDOFF_MAX) this.flush();
    else if (this.prompt) this.immediate ??= setImmediate(() => this.flush());
    else this.timer ??= setTimeout(() => this.flush(), HANDOFF_LINGER_MS);
  }

  /** Send what waits now (before a message that must arrive after it, and on close). */
  flush(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.immediate !== null) clearImmediate(this.immediate);
    this.immediate = null;
    if (this.batch.length === 0) return;
    const batch = this.batch;
    this.batch = [];
    this.post(batch);
  }
}

/**
 * A label whose set of values is bounded: the first `max` distinct values keep their own value,
 * every later one is counted as {@link OTHER}.
 *
 * Why first-come rather than a ranking recomputed at each scrape: a counter's series must only
 * ever grow. Moving a leader in and out of a re-ranked top-N would shrink "other" (Prometheus
 * would read a counter reset) and scatter one leader's history over two series. Admission in the
 * order of first use keeps every series monotonic and still picks the leaders that matter: a
 * leader's share of slots is its share of stake, so the most-staked leaders are the ones reached
 * first and most often (on mainnet, 32 labels cover the leaders of most slots; the ~1,500 others
 * add up under "other", where the leader label used to grow without bound).
 */
export const OTHER = 'other';

export class BoundedLabel {
  private readonly admitted = new Set<string>();

  constructor(readonly max: number) {}

  /** `value` itself while it is admitted or there is room; {@link OTHER} once the set is full. */
  of(value: string): string {
    if (this.admitted.has(value)) return value;
    if (this.admitted.size >= this.max) return OTHER;
    this.admitted.add(value);
    return value;
  }
}

/**
 * A labelled Prometheus histogram whose observations are a few plain-number increments.
 *
 * prom-client's `Histogram.observe(labels, v)` hashes the labels object on every call; on the
 * request path (one observation per response) that is most of its cost. Here a series is looked
 * up once by its label values (a `Map` per label, as `Metrics.request` counts responses) and an
 * observation is a bucket search and three adds. prom-client sees the values only when scraped:
 * this object has the shape a registry reads (`name`, `help`, `type`, `aggregator`, `get()`), so
 * it renders, serialises to JSON for another thread and aggregates across ingress threads (sum)
 * as prom-client's own histograms do.
 */
import type { MetricValueWithName } from 'prom-client';

/** One label set's counts: `counts[i]` observations ≤ `bounds[i]` (not cumulative), then +Inf. */
class Series {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    private readonly bounds: readonly number[],
    readonly labels: Record<string, string>,
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(v: number): void {
    const { bounds } = this;
    let i = 0;
    while (i < bounds.length && v > bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += v;
    this.count++;
  }
}

export type HistogramSeries = Pick<Series, 'observe'>;

export class LabeledHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  /** Label values joined by a separator no label value contains (`\u0000`) → series. */
  private readonly series = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    private readonly bounds: readonly number[],
  ) {}

  /** The series of these label values (in `labelNames` order), made on first use. */
  labels(...values: string[]): HistogramSeries {
    const key = values.length === 1 ? values[0]! : values.join('\u0000');
    let s = this.series.get(key);
    if (s === undefined) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((n, i) => (labels[n] = values[i] ?? ''));
      this.series.set(key, (s = new Series(this.bounds, labels)));
    }
    return s;
  }

  /** What a prom-client registry reads at scrape time: cumulative buckets, sum and count per series. */
  get(): { name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: MetricValueWithName<string>[] } {
    const values: MetricValueWithName<string>[] = [];
    for (const s of this.series.values()) {
      let cumulative = 0;
      for (let i = 0; i <= this.bounds.length; i++) {
        cumulative += s.counts[i]!;
        const le = i < this.bounds.length ? String(this.bounds[i]) : '+Inf';
        values.push({ metricName: `${this.name}_bucket`, labels: { ...s.labels, le }, value: cumulative });
      }
      values.push({ metricName: `${this.name}_sum`, labels: s.labels, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: s.labels, value: s.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

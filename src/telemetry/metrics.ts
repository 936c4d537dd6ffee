/**
 * Prometheus metrics (`GET /metrics`) through prom-client.
 *
 * Hot path: a request or a 429 only increments plain numbers in Maps it already holds (its
 * duration goes to a `LabeledHistogram` series found the same way); the engine's and tracker's
 * own counters are read, never copied on the way. prom-client sees all of them only when scraped,
 * through `collect` callbacks. The one prom-client call on the hot path is the engine's
 * service-latency `Histogram.observe`, once per first send.
 *
 * Each service has its own registry (several can live in one process: tests, the demo); the
 * Node process metrics (event-loop delay, heap, GC, CPU) are process-wide, collected once, and
 * appended to every scrape.
 */
import { AggregatorRegistry, collectDefaultMetrics, Counter, Gauge, Registry, type Histogram, type Metric, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import { PLAN_ORDER } from '../accounts/plans.js';
import { sendOutcomeReasons } from '../native.js';
import { LabeledHistogram, type HistogramSeries } from './histogram.js';
import { procStatus, statusBytes } from '../memory/resident.js';

/** One thread's metrics as prom-client serialises them (for aggregation across ingress threads). */
export type MetricsJson = MetricObjectWithValues<MetricValue<string>>[];

/** What the metrics read from the delivery engine (`Engine`). */
export interface DeliverySource {
  /** Request received → first QUIC stream written, seconds. */
  readonly serviceLatency: Histogram;
  /** Its native part: first send handed to the QUIC client → first stream written, seconds. */
  readonly nativeLatency: Histogram;
  readonly counters: {
    readonly sends: ReadonlyMap<string, { ok: number; failed: number }>;
    readonly drops: ReadonlyMap<string, number>;
  };
  readonly inFlight: number;
  /** Pending transactions sent again after chain rollbacks. */
  readonly rearmed: number;
  readonly leaders: { readonly rollbacks: number };
  health(): { slot: number; slotAgeMs: number; synced: boolean };
}

/** What the metrics read from the confirmation tracker (`Tracker`). */
export interface TrackerSource {
  readonly size: number;
  readonly stats: {
    readonly confirmed: number;
    readonly failed: number;
    readonly expired: number;
    readonly push: number;
    readonly poll: number;
    readonly sweepErrors: number;
    readonly lastSweepMs: number;
    /** Durable-nonce transactions whose nonce account was checked, and those expired by a check. */
    readonly nonceChecks: number;
    readonly nonceExpired: number;
  };
}

/** What the metrics read of the store's process-wide state (`StoreHealth`). */
export interface StoreSource {
  view(): { available: boolean; free_bytes: number | null };
}

/** What the metrics read of the log's process-wide state (`LogHealth`). */
export interface LogSource {
  readonly droppedLines: number;
}

/** A token bucket, or the cap on transactions in flight (`in_flight`). */
export type Budget = 'send' | 'query' | 'in_flight';

/**
 * A scrape may be served a text rendered up to a second before (`rendered-text.ts`): its last
 * line, a comment Prometheus ignores, says when it was rendered (ms since the epoch), so a reader
 * that needs values newer than an event can tell.
 */
export const RENDERED_AT = '# landfall rendered_at_ms=';

function stamped(text: string): string {
  return `${text}${RENDERED_AT}${Date.now()}\n`;
}

let processRegistry: Registry | null = null;

/** The process-wide registry of Node's own metrics, started on first use. */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

type Labels = Record<string, string>;

/** Bucket bounds of the HTTP request duration histogram, seconds: 100 µs (a status read) to 10 s. */
export const HTTP_DURATION_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];
/**
 * Bucket bounds of the landing latency histogram, seconds: acceptance to the confirmed outcome
 * observed. A transaction lands in the slot it was sent in or a few after (400 ms each), and the
 * `confirmed` commitment is a few slots later still: 0.25 s to 60 s, finest from 0.5 s to 5 s.
 */
export const LANDING_LATENCY_BUCKETS = [0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 7.5, 10, 20, 30, 60];
/** Bucket bounds of the slots-to-land histogram: the landing slot minus the slot at acceptance. */
export const SLOTS_TO_LAND_BUCKETS = [0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50, 100, 150];

/** What `landfall_build_info` tells (value 1): which build is running. */
export interface BuildInfo {
  version: string;
  /** `process.version`. */
  node: string;
}

export class Metrics {
  readonly registry = new Registry();
  /** route pattern → HTTP status → responses. */
  private readonly requests = new Map<string, Map<number, number>>();
  /** plan → 429s by budget. */
  private readonly limited = new Map<string, Record<Budget, number>>();
  /** plan → transactions accepted (recorded for the first time). */
  private readonly acceptedByPlan = new Map<string, number>();
  /** plan → outcome → transactions that reached it (main thread: the tracker's). */
  private readonly outcomesByPlan = new Map<string, Map<string, number>>();
  private readonly httpDuration = new LabeledHistogram(
    'landfall_http_request_duration_seconds',
    'HTTP request received to response written, by route pattern and status code',
    ['route', 'code'],
    HTTP_DURATION_BUCKETS,
  );
  /** route pattern → HTTP status → its duration series (two Map lookups per response, as `requests`). */
  private readonly durations = new Map<string, Map<number, HistogramSeries>>();
  private readonly landingLatency = new LabeledHistogram(
    'landfall_landing_latency_seconds',
    'Landing latency, the headline number: request received to the confirmed outcome observed (push or poll), by plan',
    ['plan'],
    LANDING_LATENCY_BUCKETS,
  );
  private readonly slotsToLand = new LabeledHistogram(
    'landfall_slots_to_land',
    'Slots from acceptance (the slot of the send result) to the slot the transaction landed in, confirmed ones, by plan',
    ['plan'],
    SLOTS_TO_LAND_BUCKETS,
  );

  constructor() {
    // Every series whose labels are known in advance exists from the start, at 0 (Prometheus's
    // "avoid missing metrics"): a rate over them, an alert on them, a quantile of the landing
    // latency, has data to evaluate before the first refusal or landing. Labels known only as
    // they come (routes and codes, leaders) appear with their first value.
    for (const plan of PLAN_ORDER) {
      this.limited.set(plan, { send: 0, query: 0, in_flight: 0 });
      this.acceptedByPlan.set(plan, 0);
      this.outcomesByPlan.set(plan, new Map([['confirmed', 0], ['failed', 0], ['expired', 0]]));
      this.landingLatency.labels(plan);
      this.slotsToLand.labels(plan);
    }
    const { requests, limited, acceptedByPlan } = this;
    this.counter('landfall_http_requests_total', 'HTTP responses written, by route pattern and status code', ['route', 'code'], function* () {
      for (const [route, codes] of requests) for (const [code, n] of codes) yield [{ route, code: String(code) }, n];
    });
    this.register(this.httpDuration);
    this.counter(
      'landfall_rate_limited_total',
      'Requests refused with 429 by an account token bucket (budget send, query) or the cap on transactions in flight (in_flight), by the account\'s plan',
      ['budget', 'plan'],
      function* () {
        for (const [plan, budgets] of limited) for (const budget of ['send', 'query', 'in_flight'] as const) yield [{ budget, plan }, budgets[budget]];
      },
    );
    this.counter('landfall_plan_accepted_total', 'Transactions accepted (recorded for the first time, first send done), by the account\'s plan', ['plan'], function* () {
      for (const [plan, n] of acceptedByPlan) yield [{ plan }, n];
    });
  }

  /** Count one response and its duration (hot path: four Map lookups, a bucket search, some adds). */
  request(route: string, status: number, seconds: number): void {
    let codes = this.requests.get(route);
    if (!codes) this.requests.set(route, (codes = new Map()));
    codes.set(status, (codes.get(status) ?? 0) + 1);
    let series = this.durations.get(route);
    if (!series) this.durations.set(route, (series = new Map()));
    let s = series.get(status);
    if (!s) series.set(status, (s = this.httpDuration.labels(route, String(status))));
    s.observe(seconds);
  }

  /** Count one 429 of an account on `plan` from an account bucket or the in-flight cap. */
  rateLimited(budget: Budget, plan: string): void {
    let budgets = this.limited.get(plan);
    if (!budgets) this.limited.set(plan, (budgets = { send: 0, query: 0, in_flight: 0 }));
    budgets[budget]++;
  }

  /** Count one transaction accepted for an account on `plan`. */
  accepted(plan: string): void {
    this.acceptedByPlan.set(plan, (this.acceptedByPlan.get(plan) ?? 0) + 1);
  }

  /**
   * A transaction of an account on `plan` reached `outcome` (main thread, from the tracker's
   * changes). A confirmed one is observed in the landing latency and slots-to-land histograms.
   */
  settled(plan: string, outcome: 'confirmed' | 'failed' | 'expired', landing: { latencyMs: number; slots: number } | null): void {
    let outcomes = this.outcomesByPlan.get(plan);
    if (!outcomes) this.outcomesByPlan.set(plan, (outcomes = new Map()));
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    if (landing === null) return;
    this.landingLatency.labels(plan).observe(landing.latencyMs / 1000);
    this.slotsToLand.labels(plan).observe(Math.max(0, landing.slots));
  }

  /**
   * Expose what only the main thread knows: the build, and the per-plan outcomes and landing
   * histograms (registered once, so the ingress threads' values never add to them).
   */
  watchService(info: BuildInfo): void {
    const infoGauge = new Gauge({ name: 'landfall_build_info', help: 'Always 1; the labels say which build runs (Landfall version, Node.js version)', labelNames: ['version', 'node'], registers: [this.registry] });
    infoGauge.set({ ...info }, 1);
    const { outcomesByPlan } = this;
    this.counter('landfall_plan_transactions_total', 'Tracked transactions reaching an outcome (confirmed, failed, expired), by the account\'s plan', ['plan', 'outcome'], function* () {
      for (const [plan, outcomes] of outcomesByPlan) for (const [outcome, n] of outcomes) yield [{ plan, outcome }, n];
    });
    this.register(this.landingLatency);
    this.register(this.slotsToLand);
  }

  /** Expose the delivery engine: service-added latency, sends per leader, drops, flights, chain view. */
  watchDelivery(engine: DeliverySource): void {
    this.registry.registerMetric(engine.serviceLatency);
    this.registry.registerMetric(engine.nativeLatency);
    this.counter(
      'landfall_leader_sends_total',
      'Transaction writes to a leader TPU over QUIC, by leader identity and result (ok: stream written; failed: dropped)',
      ['leader', 'result'],
      function* () {
        for (const [leader, c] of engine.counters.sends) {
          yield [{ leader, result: 'ok' }, c.ok];
          yield [{ leader, result: 'failed' }, c.failed];
        }
      },
    );
    // Every reason the QUIC client can give, from the start at 0.
    const reasons = sendOutcomeReasons();
    this.counter('landfall_send_drops_total', 'Transaction writes that did not reach a leader, by reason', ['reason'], function* () {
      for (const reason of reasons) yield [{ reason }, engine.counters.drops.get(reason) ?? 0];
      for (const [reason, n] of engine.counters.drops) if (!reasons.includes(reason)) yield [{ reason }, n];
    });
    this.gauge('landfall_delivery_in_flight', 'Transactions held for anti-MEV or with rebroadcast rounds left', () => engine.inFlight);
    this.gauge('landfall_chain_slot', 'Current cluster slot as the leader tracker sees it', () => engine.health().slot);
    this.gauge('landfall_chain_slot_age_seconds', 'Time since the leader tracker last saw the slot advance', () => engine.health().slotAgeMs / 1000);
    this.gauge('landfall_chain_synced', '1 while the chain view is fresh (what GET /health reports), else 0', () => (engine.health().synced ? 1 : 0));
    this.counter('landfall_chain_rollbacks_total', 'Times the chain came back at a lower slot than the last one seen (a restarted validator, a fail-over to a node behind)', [], function* () {
      yield [{}, engine.leaders.rollbacks];
    });
    this.counter('landfall_resent_after_rollback_total', 'Pending transactions sent again after a chain rollback (what landed in the lost slots is gone)', [], function* () {
      yield [{}, engine.rearmed];
    });
  }

  /** Expose the confirmation tracker: outcomes, observation sources, pending count and sweep lag. */
  watchTracker(tracker: TrackerSource): void {
    const { stats } = tracker;
    this.counter(
      'landfall_transactions_total',
      'Tracked transactions reaching an outcome: confirmed and failed landed; expired can no longer land',
      ['outcome'],
      function* () {
        for (const outcome of ['confirmed', 'failed', 'expired'] as const) yield [{ outcome }, stats[outcome]];
      },
    );
    this.counter(
      'landfall_tracker_observations_total',
      'Outcomes observed by the tracker, by source (push: logsSubscribe; poll: getSignatureStatuses)',
      ['source'],
      function* () {
        for (const source of ['push', 'poll'] as const) yield [{ source }, stats[source]];
      },
    );
    this.counter('landfall_tracker_sweep_errors_total', 'Tracker sweeps (getSignatureStatuses, expiry) that failed', [], function* () {
      yield [{}, stats.sweepErrors];
    });
    this.counter('landfall_tracker_nonce_checks_total', "Checks of a durable-nonce transaction's nonce account by the tracker", [], function* () {
      yield [{}, stats.nonceChecks];
    });
    this.counter(
      'landfall_tracker_nonce_expired_total',
      'Durable-nonce transactions expired because their nonce account cannot verify them (missing, not a nonce account, another nonce)',
      [],
      function* () {
        yield [{}, stats.nonceExpired];
      },
    );
    this.gauge('landfall_tracker_pending', 'Transactions the tracker is still watching (sent, not settled or expired)', () => tracker.size);
    this.gauge('landfall_tracker_last_sweep_seconds', 'Duration of the last tracker sweep', () => stats.lastSweepMs / 1000);
  }

  /** Expose the store's state (every thread's: one shared state): whether it can commit, and the disk's room. */
  watchStore(store: StoreSource, resent: () => number): void {
    this.gauge('landfall_store_available', '1 while the store can commit (sends are accepted), else 0 (GET /health says why)', () => (store.view().available ? 1 : 0));
    this.gauge('landfall_store_free_bytes', "Free bytes on the data directory's filesystem at the store's last check", () => store.view().free_bytes ?? 0);
    this.counter('landfall_resent_after_restart_total', 'Pending transactions sent again after a restart (their bytes kept in the store)', [], function* () {
      yield [{}, resent()];
    });
  }

  /** Expose the log's dropped lines (every thread's: one shared count). */
  watchLog(log: LogSource): void {
    this.counter('landfall_log_lines_dropped_total', 'Log lines dropped because they could not be written (a full or failing log filesystem; GET /health says since when)', [], function* () {
      yield [{}, log.droppedLines];
    });
  }

  /**
   * Expose the process's resident memory by kind (Linux, `/proc/self/status`): anonymous (the
   * heap, stacks, buffers: what a leak grows), file-backed (the mapped LMDB files and the
   * binaries: what grows with the data and what the kernel can drop), shared memory. RSS counts
   * all of them, and LMDB's maps grow it by the size of what is read (371 MB resident for a
   * 128 MiB store in a 15-minute soak, anonymous memory flat), so an alert on RSS fires on data
   * growth; alert on the anonymous part instead. Main thread only (one process).
   */
  watchMemory(read: () => string | null = procStatus): void {
    const kinds: Array<[string, string]> = [
      ['anon', 'RssAnon'],
      ['file', 'RssFile'],
      ['shmem', 'RssShmem'],
    ];
    new Gauge({
      name: 'landfall_process_resident_memory_bytes',
      help: 'Resident memory of the process by kind: anon (heap, stacks, buffers: what a leak grows), file (mapped files: the LMDB store, binaries; grows with the data, reclaimable), shmem',
      labelNames: ['kind'],
      registers: [this.registry],
      collect() {
        const status = read();
        for (const [kind, field] of kinds) {
          const bytes = statusBytes(status, field);
          if (bytes !== null) this.set({ kind }, bytes);
        }
      },
    });
  }

  /** The Prometheus text exposition of this service and of the process. */
  async text(): Promise<string> {
    return stamped((await this.registry.metrics()) + (await processMetrics().metrics()));
  }

  /** This registry's values (not the process metrics), for another thread to aggregate. */
  json(): Promise<MetricsJson> {
    return this.registry.getMetricsAsJSON() as Promise<MetricsJson>;
  }

  /**
   * The exposition of this registry summed with other threads' (counters and histograms add up;
   * gauges are only registered on one thread), plus the process metrics.
   */
  async aggregatedText(others: MetricsJson[]): Promise<string> {
    const merged = AggregatorRegistry.aggregate([await this.json(), ...others] as Parameters<typeof AggregatorRegistry.aggregate>[0]);
    return stamped((await merged.metrics()) + (await processMetrics().metrics()));
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /**
   * A counter whose values live elsewhere (plain numbers incremented in place): at scrape time
   * it is reset and refilled from `read`, so prom-client never sits on the hot path.
   */
  private counter(name: string, help: string, labelNames: string[], read: () => Iterable<[Labels, number]>): void {
    new Counter({
      name,
      help,
      labelNames,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [labels, n] of read()) this.inc(labels, n);
      },
    });
  }

  /** A `LabeledHistogram` has the shape a registry reads (`get()` and its fields), not prom-client's class. */
  private register(h: LabeledHistogram): void {
    this.registry.registerMetric(h as unknown as Metric);
  }

  private gauge(name: string, help: string, read: () => number): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.set(read());
      },
    });
  }
}

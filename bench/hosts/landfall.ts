/**
 * Child process: the whole Landfall service (`startService`), as `landfall serve` runs it, plus
 * the calls a benchmark needs from inside it: an account, the service-added latency histogram
 * (reset between load phases, so each phase reports its own), counters, resident memory, and
 * status records read straight from the store.
 */
import type { PlanName } from '../../src/accounts/plans.js';
import type { Config } from '../../src/config.js';
import { startService, type Service } from '../../src/service.js';
import type { StatusRecord } from '../../src/store/store.js';
import { serveChild } from '../lib/child.js';
import { cpuMs, LoopDelayMonitor, memory, type LoopDelay } from '../lib/process-stats.js';

let svc: Service | null = null;
const loop = new LoopDelayMonitor();

function running(): Service {
  if (!svc) throw new Error('service not started');
  return svc;
}

/**
 * Quantiles of the engine's service-added latency histogram (prom-client, fixed buckets). A
 * quantile is the upper bound of the bucket it falls in, so "p99 ≤ 1 ms" is exact when 1 ms is a
 * bucket bound; null when it falls past the last bound.
 */
export interface LatencySummary {
  count: number;
  p50Us: number | null;
  p90Us: number | null;
  p99Us: number | null;
  p999Us: number | null;
  /** Cumulative counts per bucket upper bound (µs; null = +Inf). */
  buckets: { leUs: number | null; count: number }[];
}

async function summary(h: Service['engine']['serviceLatency']): Promise<LatencySummary> {
  const { values } = await h.get();
  const buckets = values
    .filter((v) => v.metricName?.endsWith('_bucket'))
    .map((v) => {
      const le = v.labels['le'];
      return { leUs: le === '+Inf' || le === undefined ? null : Math.round(Number(le) * 1e7) / 10, count: v.value };
    });
  const count = buckets[buckets.length - 1]?.count ?? 0;
  const q = (x: number): number | null => (count === 0 ? null : (buckets.find((b) => b.count >= x * count)?.leUs ?? null));
  return { count, p50Us: q(0.5), p90Us: q(0.9), p99Us: q(0.99), p999Us: q(0.999), buckets };
}

export interface LandfallSnapshot {
  serviceLatency: LatencySummary;
  sends: { ok: number; failed: number };
  drops: Record<string, number>;
  rebroadcasts: number;
  deliveryFailed: number;
  inFlight: number;
  tracker: Service['tracker']['stats'];
  memory: ReturnType<typeof memory>;
  /** CPU time used by the service process so far (every thread), ms. */
  cpuMs: number;
  /** Event-loop delay of the service's main thread since the phase began. */
  loopDelay: LoopDelay;
}

serveChild({
  async start(config: Config) {
    svc = await startService(config);
    return { url: svc.url, tipAddresses: svc.tipAddresses };
  },
  createAccount({ name, plan }: { name: string; plan: PlanName }) {
    const c = running().accounts.createAccount(name, plan);
    return { id: c.account_id, key: c.api_key };
  },
  /** Start a phase: the latency histogram and the event-loop delay from zero. */
  reset() {
    running().engine.serviceLatency.reset();
    loop.reset();
  },
  async snapshot(): Promise<LandfallSnapshot> {
    const s = running();
    const e = s.engine;
    const sends = { ok: 0, failed: 0 };
    for (const c of e.counters.sends.values()) {
      sends.ok += c.ok;
      sends.failed += c.failed;
    }
    return {
      serviceLatency: await summary(e.serviceLatency),
      sends,
      drops: Object.fromEntries(e.counters.drops),
      rebroadcasts: e.counters.rebroadcasts,
      deliveryFailed: e.counters.deliveryFailed,
      inFlight: e.inFlight,
      tracker: { ...s.tracker.stats },
      memory: memory(),
      cpuMs: cpuMs(),
      loopDelay: loop.read(),
    };
  },
  /** The stored status records of these signatures (null where there is none). */
  statuses(signatures: string[]): (StatusRecord | null)[] {
    const store = running().store;
    return signatures.map((sig) => store.getStatus(sig) ?? null);
  },
  async close() {
    await svc?.close();
    svc = null;
  },
});

/**
 * Child process: the whole Landfall service (`startService`), as `landfall serve` runs it, plus
 * the calls a benchmark needs from inside it: an account, the service-added latency histogram
 * and the engine's and tracker's counts (reset between load phases, so each phase reports its
 * own), resident memory, CPU time, and status records read straight from the store.
 */
import type { PlanName } from '../../src/accounts/plans.js';
import type { Config } from '../../src/config.js';
import { startService, type Service } from '../../src/service.js';
import type { StatusRecord } from '../../src/store/store.js';
import { readFileSync } from 'node:fs';
import { setFlagsFromString, writeHeapSnapshot } from 'node:v8';
import { runInNewContext } from 'node:vm';
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

type HistogramValues = Awaited<ReturnType<Service['serviceLatency']>>;

/** Cumulative bucket counts of the service's latency histogram (every ingress thread's added up). */
function bucketsOf(values: HistogramValues): { leUs: number | null; count: number }[] {
  return values
    .filter((v) => v.metricName?.endsWith('_bucket'))
    .map((v) => {
      const le = v.labels['le'];
      return { leUs: le === '+Inf' || le === undefined ? null : Math.round(Number(le) * 1e7) / 10, count: v.value };
    });
}

/** The histogram's counts since `base` (read at the phase's start), as quantiles. */
function summary(values: HistogramValues, base: HistogramValues | null): LatencySummary {
  const before = base ? bucketsOf(base) : [];
  const buckets = bucketsOf(values).map((b, i) => ({ ...b, count: b.count - (before[i]?.count ?? 0) }));
  const count = buckets[buckets.length - 1]?.count ?? 0;
  const q = (x: number): number | null => (count === 0 ? null : (buckets.find((b) => b.count >= x * count)?.leUs ?? null));
  return { count, p50Us: q(0.5), p90Us: q(0.9), p99Us: q(0.99), p999Us: q(0.999), buckets };
}

/** The engine's and tracker's event counts (each since the last `reset`). */
interface Counts {
  /** Streams written / failed, summed over leaders. */
  sends: { ok: number; failed: number };
  /** Failed or dropped sends by reason. */
  drops: Record<string, number>;
  rebroadcasts: number;
  deliveryFailed: number;
  /** Settled by the tracker, and by which source. */
  tracker: { confirmed: number; failed: number; expired: number; push: number; poll: number; sweepErrors: number };
}

export interface LandfallSnapshot extends Counts {
  serviceLatency: LatencySummary;
  /** Its native part: first send handed to the QUIC client → stream written. */
  nativeLatency: LatencySummary;
  /** Transactions held or with rebroadcasts left, now. */
  inFlight: number;
  memory: ReturnType<typeof memory>;
  /** CPU time used by the service process so far (every thread), ms. */
  cpuMs: number;
  /** Event-loop delay of the service's main thread since the phase began. */
  loopDelay: LoopDelay;
  /** Times the service gave memory back so far (`src/memory/give-back.ts`). */
  gaveBack: number;
}

/** The counts since the service started. */
function counts(s: Service): Counts {
  const e = s.engine;
  const sends = { ok: 0, failed: 0 };
  for (const c of e.counters.sends.values()) {
    sends.ok += c.ok;
    sends.failed += c.failed;
  }
  const { confirmed, failed, expired, push, poll, sweepErrors } = s.tracker.stats;
  return {
    sends,
    drops: Object.fromEntries(e.counters.drops),
    rebroadcasts: e.rebroadcaster.counters.rebroadcasts,
    deliveryFailed: e.counters.deliveryFailed,
    tracker: { confirmed, failed, expired, push, poll, sweepErrors },
  };
}

/** `now − base`, field by field (a count absent from `base` started at zero). */
function since<T>(now: T, base: T): T {
  if (typeof now === 'number') return (now - (base as number)) as T;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(now as Record<string, unknown>)) {
    out[k] = since(v, (base as Record<string, unknown>)[k] ?? (typeof v === 'number' ? 0 : {}));
  }
  return out as T;
}

/** The counts at the last `reset`. */
let base: Counts | null = null;
/** The latency histogram at the start of the phase (the histograms are cumulative, one per thread). */
let latencyBase: HistogramValues | null = null;
let nativeBase: HistogramValues | null = null;

/** A full V8 collection on this (the service's main) thread right after each give-back. */
function collectAfterGiveBack(s: Service): void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  let seen = 0;
  setInterval(() => {
    if (s.giveBack.count === seen) return;
    seen = s.giveBack.count;
    gc();
  }, 200).unref();
}

serveChild({
  async start(config: Config) {
    // SATURATION_GIVE_BACK=0: never give memory back (the quiet never lasts long enough), to
    // measure what the give-back changes; `gc`: after each give-back, a full V8 collection too.
    const giveBack = process.env['SATURATION_GIVE_BACK'];
    svc = await startService(config, giveBack === '0' ? { giveBack: { quietMs: Number.POSITIVE_INFINITY } } : {});
    if (giveBack === 'gc') collectAfterGiveBack(svc);
    return { url: svc.url, tipAddresses: svc.tipAddresses };
  },
  createAccount({ name, plan }: { name: string; plan: PlanName }) {
    const c = running().accounts.createAccount(name, plan);
    return { id: c.account_id, key: c.api_key };
  },
  /** Start a phase: the latency histogram, the event-loop delay and the counts from zero. */
  async reset() {
    const s = running();
    latencyBase = await s.serviceLatency();
    nativeBase = await s.serviceLatency('native');
    loop.reset();
    base = counts(s);
  },
  async snapshot(): Promise<LandfallSnapshot> {
    const s = running();
    const now = counts(s);
    return {
      ...(base ? since(now, base) : now),
      serviceLatency: summary(await s.serviceLatency(), latencyBase),
      nativeLatency: summary(await s.serviceLatency('native'), nativeBase),
      inFlight: s.engine.inFlight,
      memory: memory(),
      cpuMs: cpuMs(),
      loopDelay: loop.read(),
      gaveBack: s.giveBack.count,
    };
  },
  /**
   * Where the process's memory is, for a memory question: `process.memoryUsage()` (V8's heap,
   * what it holds for ArrayBuffers and native objects), RssAnon from /proc, and the sizes of the
   * service's in-memory books; with `gc`, after a full collection (so live objects are told from
   * garbage not yet collected); with `snapshot`, a heap snapshot written there.
   */
  heap({ gc = false, snapshot }: { gc?: boolean; snapshot?: string } = {}) {
    if (gc) {
      setFlagsFromString('--expose-gc');
      (runInNewContext('gc') as () => void)();
    }
    const file = snapshot ? writeHeapSnapshot(snapshot) : null;
    // Anonymous memory by where it lives (/proc/self/smaps): malloc's main heap (brk) and its
    // thread arenas (read-write mappings at a 64 MiB boundary: the native code's threads), and
    // the rest (V8's pages of every isolate, stacks).
    const anon = { mallocMiB: 0, otherMiB: 0 };
    try {
      let start = 0n;
      let arena = false;
      for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
        const m = /^([0-9a-f]+)-[0-9a-f]+ (\S+) \S+ \S+ \d+\s*(.*)$/.exec(line);
        if (m) {
          start = BigInt(`0x${m[1]}`);
          arena = m[3] === '[heap]' || (m[3] === '' && m[2]!.startsWith('rw') && start % (64n << 20n) === 0n);
          continue;
        }
        if (line.startsWith('Anonymous:')) anon[arena ? 'mallocMiB' : 'otherMiB'] += Number(line.split(/\s+/)[1]) / 1024;
      }
    } catch {
      // not Linux
    }
    const mib = (b: number): number => Math.round((b / 1048576) * 10) / 10;
    const u = process.memoryUsage();
    const e = running().engine;
    return {
      rssAnonMiB: memory().rssAnonMiB,
      mallocMiB: Math.round(anon.mallocMiB * 10) / 10,
      otherAnonMiB: Math.round(anon.otherMiB * 10) / 10,
      heapTotalMiB: mib(u.heapTotal),
      heapUsedMiB: mib(u.heapUsed),
      externalMiB: mib(u.external),
      arrayBuffersMiB: mib(u.arrayBuffers),
      inFlight: e.inFlight,
      liveTraces: e.traces.size,
      queued: e.client.peerStats().reduce((n, p) => n + p.queued, 0),
      gaveBack: running().giveBack.count,
      snapshot: file,
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

/**
 * Child process: the HTTP load generator, an undici `Pool` of keep-alive connections.
 *
 * Why not autocannon or wrk2: every send must carry a different transaction (a repeated
 * signature is deduplicated by the server, which would measure a different path), and the
 * latencies of interest are well under a millisecond, while autocannon's histogram counts whole
 * milliseconds (it records into an integer HDR histogram) and wrk2 (not an npm package) needs a
 * Lua script to vary bodies and a system package CI does not install. undici is Node's own HTTP
 * client; this file only schedules requests and keeps every latency sample.
 *
 * Two modes:
 * - closed loop (`rate` absent): `connections` requests in flight, each connection sending its
 *   next request as soon as the previous response is read: the maximum sustained rate;
 * - open loop (`rate`): requests issued on a fixed schedule, whatever the responses do, with at
 *   most `connections` in flight (more wait in undici's queue, and that wait counts as latency).
 *   The timer ticks about once per millisecond and issues every request that has come due, so a
 *   request may leave up to ~1 ms after its scheduled time: that lag is reported separately
 *   rather than added to the server's latency.
 *
 * Latency is measured from handing the request to undici until its response body is read.
 * Requests issued during `warmupMs` are sent but not recorded.
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { serveChild } from '../lib/child.js';
import { cpuMs } from '../lib/process-stats.js';

export interface LoadSpec {
  origin: string;
  method: 'GET' | 'POST';
  /** Request path; `{item}` in it is replaced by the item. */
  path: string;
  headers: Record<string, string>;
  /** Newline-separated items: the body of a POST, or what fills `{item}` in a GET path. */
  itemsFile: string;
  /** false: each item is sent once (the phase stops early if they run out); true: cycle. */
  reuse: boolean;
  connections: number;
  durationMs: number;
  warmupMs?: number;
  /** Requests per second (open loop); absent: closed loop. */
  rate?: number;
  /** Count the occurrences of this string in every response body (per-item successes). */
  countInBody?: string;
  /** Return every response body, indexed like the items (small runs only). */
  collectBodies?: boolean;
}

export interface Quantiles {
  p50Us: number;
  p90Us: number;
  p99Us: number;
  p999Us: number;
  maxUs: number;
  meanUs: number;
}

export interface LoadResult {
  mode: 'closed' | 'open';
  connections: number;
  /** Requested rate (open loop), req/s. */
  rate: number | null;
  /** Length of the measured window, ms. */
  durationMs: number;
  /** Requests issued in the measured window, and of those, completed with each status. */
  issued: number;
  completed: number;
  statusCounts: Record<string, number>;
  /** Requests that failed without a response (connection errors, timeouts). */
  transportErrors: number;
  firstError: string | null;
  /** Responses completed in the measured window per second. */
  achievedRps: number;
  latency: Quantiles;
  /** Open loop: how late requests left against their schedule. */
  lag: Quantiles | null;
  /** Sum of `countInBody` occurrences over the measured responses. */
  counted: number;
  /** Items ran out before the duration did (reuse: false). */
  exhausted: boolean;
  itemsUsed: number;
  /** CPU time the load generator itself used during the phase, ms. */
  cpuMs: number;
  bodies?: (string | null)[];
}

/** Headers and body must arrive within this long; a stuck request becomes a transport error. */
const REQUEST_TIMEOUT_MS = 10_000;

function quantiles(values: Float64Array, n: number): Quantiles {
  const v = values.subarray(0, n).sort();
  const at = (q: number): number => (n === 0 ? Number.NaN : v[Math.min(n - 1, Math.floor(q * n))]!);
  let sum = 0;
  for (let i = 0; i < n; i++) sum += v[i]!;
  const r = (x: number): number => Math.round(x * 10) / 10;
  return { p50Us: r(at(0.5)), p90Us: r(at(0.9)), p99Us: r(at(0.99)), p999Us: r(at(0.999)), maxUs: r(n ? v[n - 1]! : Number.NaN), meanUs: r(n ? sum / n : Number.NaN) };
}

function countOf(haystack: string, needle: string): number {
  let n = 0;
  for (let i = haystack.indexOf(needle); i >= 0; i = haystack.indexOf(needle, i + needle.length)) n++;
  return n;
}

async function load(spec: LoadSpec): Promise<LoadResult> {
  const items = readFileSync(spec.itemsFile, 'utf8').split('\n').filter((l) => l.length > 0);
  if (items.length === 0) throw new Error(`no items in ${spec.itemsFile}`);
  const pool = new Pool(spec.origin, {
    connections: spec.connections,
    pipelining: 1,
    headersTimeout: REQUEST_TIMEOUT_MS,
    bodyTimeout: REQUEST_TIMEOUT_MS,
  });
  const templated = spec.path.includes('{item}');
  const headers = spec.method === 'POST' ? { 'content-type': 'application/json', ...spec.headers } : spec.headers;
  const warmupMs = spec.warmupMs ?? 0;
  // Room for every sample the window can produce; grown if needed.
  let latencies = new Float64Array(1 << 16);
  let lags = new Float64Array(spec.rate ? 1 << 16 : 0);
  let recorded = 0;
  let lagged = 0;
  let issued = 0;
  let completed = 0;
  let counted = 0;
  let transportErrors = 0;
  let firstError: string | null = null;
  let completedInWindow = 0;
  const statusCounts: Record<string, number> = {};
  const bodies = spec.collectBodies ? new Array<string | null>(items.length).fill(null) : undefined;
  let next = 0;
  let exhausted = false;

  const cpu0 = cpuMs();
  const t0 = performance.now();
  const windowStart = t0 + warmupMs;
  const end = windowStart + spec.durationMs;

  function take(): number | null {
    if (next >= items.length) {
      if (!spec.reuse) {
        exhausted = true;
        return null;
      }
      next = 0;
    }
    return next++;
  }

  function grow(a: Float64Array<ArrayBuffer>, n: number): Float64Array<ArrayBuffer> {
    if (n < a.length) return a;
    const b = new Float64Array(a.length * 2);
    b.set(a);
    return b;
  }

  async function one(index: number, scheduledAt: number | null): Promise<void> {
    const item = items[index]!;
    const start = performance.now();
    const measured = start >= windowStart && start < end;
    if (measured) {
      issued++;
      if (scheduledAt !== null) {
        lags = grow(lags, lagged);
        lags[lagged++] = (start - scheduledAt) * 1000;
      }
    }
    try {
      const res = await pool.request({
        method: spec.method,
        path: templated ? spec.path.replace('{item}', item) : spec.path,
        headers,
        body: spec.method === 'POST' ? item : undefined,
      });
      let text: string | null = null;
      if (spec.countInBody !== undefined || bodies) text = await res.body.text();
      else await res.body.dump();
      const done = performance.now();
      if (bodies) bodies[index] = text;
      if (done >= windowStart && done < end) completedInWindow++;
      if (!measured) return;
      completed++;
      const k = String(res.statusCode);
      statusCounts[k] = (statusCounts[k] ?? 0) + 1;
      if (text !== null && spec.countInBody !== undefined) counted += countOf(text, spec.countInBody);
      latencies = grow(latencies, recorded);
      latencies[recorded++] = (done - start) * 1000;
    } catch (e) {
      if (!measured) return;
      transportErrors++;
      firstError ??= (e as Error).message;
    }
  }

  if (spec.rate === undefined) {
    // Closed loop: each connection sends its next request when the previous one is done.
    const worker = async (): Promise<void> => {
      while (performance.now() < end) {
        const i = take();
        if (i === null) return;
        await one(i, null);
      }
    };
    await Promise.all(Array.from({ length: spec.connections }, worker));
  } else {
    // Open loop: issue what has come due, about once per millisecond, never waiting for responses.
    const rate = spec.rate;
    const inflight = new Set<Promise<void>>();
    let scheduled = 0;
    await new Promise<void>((resolve) => {
      const tick = (): void => {
        const now = performance.now();
        const due = Math.min(Math.floor(((Math.min(now, end) - t0) / 1000) * rate), Math.ceil(((end - t0) / 1000) * rate));
        while (scheduled < due) {
          const i = take();
          if (i === null) break;
          const p = one(i, t0 + (scheduled / rate) * 1000);
          scheduled++;
          inflight.add(p);
          void p.finally(() => inflight.delete(p));
        }
        if (now >= end || exhausted) resolve();
        else setTimeout(tick, 1);
      };
      tick();
    });
    await Promise.all(inflight);
  }
  const windowMs = Math.min(performance.now(), end) - windowStart;
  await pool.close();
  return {
    mode: spec.rate === undefined ? 'closed' : 'open',
    connections: spec.connections,
    rate: spec.rate ?? null,
    durationMs: Math.round(windowMs),
    issued,
    completed,
    statusCounts,
    transportErrors,
    firstError,
    achievedRps: windowMs > 0 ? (completedInWindow * 1000) / windowMs : 0,
    latency: quantiles(latencies, recorded),
    lag: spec.rate === undefined ? null : quantiles(lags, lagged),
    counted,
    exhausted,
    itemsUsed: next,
    cpuMs: cpuMs() - cpu0,
    ...(bodies && { bodies }),
  };
}

serveChild({ load });

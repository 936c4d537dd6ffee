/**
 * Load phases against a server under test (Landfall or the peer): sign fresh transactions, reset
 * the server's own statistics, run the load generator, then collect the server's statistics and
 * the CPU time every process used. Shared by the send, batch and delivery suites.
 */
import type { LandfallSnapshot } from '../hosts/landfall.js';
import type { LoadResult } from '../hosts/loadgen.js';
import type { LoopDelay, Memory } from './process-stats.js';
import type { SignedTx } from './signed.js';
import { sendBody, type Stack } from './stack.js';
import { fmtNs, fmtOps } from './suite.js';

/** At most this many requests in flight in an open-loop phase (more queue in the client). */
export const OPEN_CONNECTIONS = 64;
export const WARMUP_MS = 1000;
const PROBE_MS = 1500;
const PROBE_WARMUP_MS = 500;
/** Rebroadcast rounds of one phase finish within a few slots; the next phase waits at most this long. */
const SETTLE_MS = 5000;

/** Measured time of each phase: `BENCH_LOAD_MS`, default 8000. */
export function loadMs(): number {
  const env = Number(process.env['BENCH_LOAD_MS']);
  return Number.isFinite(env) && env > 0 ? env : 8000;
}

/** CPU cores each process kept busy during a phase (CPU time ÷ wall time, all threads). */
export type CoresUsed = Record<string, number>;

export interface Phase {
  load: Omit<LoadResult, 'bodies'>;
  cores: CoresUsed;
  /** Landfall only: the service's own counters and histogram over the phase. */
  service?: Omit<LandfallSnapshot, 'cpuMs' | 'memory' | 'loopDelay'>;
  memory: Memory;
  /** The server's main-thread event-loop delay during the phase. */
  loopDelay: LoopDelay;
}

export interface ServerStats {
  service?: LandfallSnapshot;
  memory: Memory;
  cpuMs: number;
  loopDelay: LoopDelay;
}

export interface Server {
  name: string;
  url: string;
  /** Before a phase: reset the server's own statistics. */
  reset(): Promise<void>;
  /** After a phase: its statistics. */
  snapshot(): Promise<ServerStats>;
  /** Wait until work the last phase left behind (rebroadcasts) is done, or `SETTLE_MS` passed. */
  settle(): Promise<void>;
}

export function landfallServer(stack: Stack): Server {
  return {
    name: 'landfall',
    url: stack.landfall.url,
    reset: () => stack.landfall.reset(),
    async snapshot() {
      const s = await stack.landfall.snapshot();
      return { service: s, memory: s.memory, cpuMs: s.cpuMs, loopDelay: s.loopDelay };
    },
    async settle() {
      const deadline = Date.now() + SETTLE_MS;
      while (Date.now() < deadline && (await stack.landfall.snapshot()).inFlight > 0) await new Promise((r) => setTimeout(r, 200));
    },
  };
}

/** What one request carries and how its success shows in the response. */
export interface RequestShape {
  path: string;
  txsPerRequest: number;
  /** Requests in flight in a closed-loop (maximum rate) phase: enough to keep the server busy. */
  connections: number;
  body(txs: SignedTx[]): string;
  /** Appears once per transaction accepted. */
  success: string;
}

export const SINGLE_SEND: RequestShape = {
  path: '/v1/send',
  txsPerRequest: 1,
  connections: 32,
  body: (txs) => sendBody(txs[0]!),
  success: '"success":true',
};

export const BATCH_SIZE = 100;

export const BATCH_SEND: RequestShape = {
  path: '/v1/send/batch',
  txsPerRequest: BATCH_SIZE,
  connections: 4,
  body: (txs) => `{"transactions":[${txs.map((t) => `"${t.wire.toString('base64')}"`).join(',')}]}`,
  success: '"status":"sent"',
};

export interface PhaseOptions {
  /** Open loop at this many requests/s; absent: closed loop with the shape's `connections`. */
  rate?: number;
  durationMs: number;
  warmupMs: number;
}

/**
 * One phase of `requests` requests at most. Throws unless every measured request got a 200 with
 * every transaction accepted, or if the transactions ran out before the time did.
 */
export async function runPhase(
  stack: Stack,
  server: Server,
  shape: RequestShape,
  requests: number,
  opts: PhaseOptions,
): Promise<Phase> {
  const txs = await stack.transactions(requests * shape.txsPerRequest);
  const lines: string[] = [];
  for (let i = 0; i < txs.length; i += shape.txsPerRequest) lines.push(shape.body(txs.slice(i, i + shape.txsPerRequest)));
  const itemsFile = stack.items(`${server.name}${shape.path.replaceAll('/', '-')}`, lines);
  await server.settle();
  await server.reset();
  const cpu0 = await cpuTimes(stack, server);
  const t0 = performance.now();
  const load = await stack.load({
    origin: server.url,
    method: 'POST',
    path: shape.path,
    headers: { authorization: `Bearer ${stack.apiKey}` },
    itemsFile,
    reuse: false,
    connections: opts.rate === undefined ? shape.connections : OPEN_CONNECTIONS,
    durationMs: opts.durationMs,
    warmupMs: opts.warmupMs,
    countInBody: shape.success,
    ...(opts.rate !== undefined && { rate: opts.rate }),
  });
  const wallMs = performance.now() - t0;
  const after = await server.snapshot();
  const cpu1 = await cpuTimes(stack, server, after.cpuMs);
  const cores: CoresUsed = { loadgen: round2(load.cpuMs / wallMs) };
  for (const k of Object.keys(cpu1)) cores[k] = round2((cpu1[k]! - cpu0[k]!) / wallMs);
  const ok = load.statusCounts['200'] ?? 0;
  if (load.exhausted) throw new Error(`${server.name}: ran out of transactions (${requests} requests) before the phase ended`);
  if (ok !== load.completed || load.counted !== ok * shape.txsPerRequest || load.transportErrors > 0) {
    throw new Error(
      `${server.name} ${shape.path}: ${load.completed - ok} non-200 responses ${JSON.stringify(load.statusCounts)}, ` +
        `${ok * shape.txsPerRequest - load.counted} transactions not accepted, ${load.transportErrors} transport errors (${load.firstError ?? 'none'})`,
    );
  }
  const phase: Phase = { load, cores, memory: after.memory, loopDelay: after.loopDelay };
  if (after.service) {
    const { cpuMs: _cpu, memory: _memory, loopDelay: _loop, ...service } = after.service;
    phase.service = service;
  }
  return phase;
}

/** CPU time so far of the server under test and of the cluster, ms. */
async function cpuTimes(stack: Stack, server: Server, serverCpuMs?: number): Promise<Record<string, number>> {
  const cluster = await stack.cluster.child.call<{ cpuMs: number }>('stats');
  return { [server.name]: serverCpuMs ?? (await server.snapshot()).cpuMs, cluster: cluster.cpuMs };
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}

/** Requests a phase at `rps` for `ms` needs, with a margin. */
function supply(rps: number, ms: number, margin: number): number {
  return Math.ceil((rps * ms * margin) / 1000) + 50;
}

/**
 * The maximum sustained rate: a short closed-loop probe sizes the transaction supply, then the
 * measured closed-loop phase. `probeRequests` must outlast the probe at any plausible rate.
 */
export async function maxPhase(stack: Stack, server: Server, shape: RequestShape, durationMs: number, probeRequests: number): Promise<Phase> {
  const probe = await runPhase(stack, server, shape, probeRequests, { durationMs: PROBE_MS, warmupMs: PROBE_WARMUP_MS });
  const phase = await runPhase(stack, server, shape, supply(probe.load.achievedRps, WARMUP_MS + durationMs, 2), { durationMs, warmupMs: WARMUP_MS });
  console.log(`  ${server.name} ${shape.path}: max ${fmtOps(phase.load.achievedRps)} req/s (probe ${fmtOps(probe.load.achievedRps)}), p99 ${fmtUs(phase.load.latency.p99Us)}`);
  return phase;
}

/** An open-loop phase at `fraction` of `maxRps`. */
export async function fractionPhase(stack: Stack, server: Server, shape: RequestShape, maxRps: number, fraction: number, durationMs: number): Promise<Phase> {
  const rate = Math.max(1, Math.round(maxRps * fraction));
  const phase = await runPhase(stack, server, shape, supply(rate, WARMUP_MS + durationMs, 1.05), { rate, durationMs, warmupMs: WARMUP_MS });
  const sl = phase.service?.serviceLatency;
  console.log(
    `  ${server.name} @ ${fraction * 100} % (${rate} req/s): p50 ${fmtUs(phase.load.latency.p50Us)}, p99 ${fmtUs(phase.load.latency.p99Us)}` +
      (sl ? `; service-added p50 ${fmtBound(sl.p50Us)}, p99 ${fmtBound(sl.p99Us)}` : ''),
  );
  return phase;
}

/** Microseconds for people. */
export function fmtUs(us: number): string {
  return fmtNs(us * 1000);
}

/** A histogram quantile: the upper bound of its bucket, or past the last bound (null). */
export function fmtBound(us: number | null): string {
  return us === null ? 'above the top bucket' : `≤ ${fmtUs(us)}`;
}

export function fmtCores(c: CoresUsed): string {
  return Object.entries(c)
    .map(([k, v]) => `${k} ${v.toFixed(2)}`)
    .join(', ');
}

/**
 * Load phases against a server under test (Landfall or the peer). A phase:
 *
 *   1. optionally puts a fresh server process in place (`Server.prepare`);
 *   2. signs fresh transactions and writes the request bodies (the same bodies, in the same
 *      order, for every server);
 *   3. warms up: a short load at the phase's own rate (closed loop for a maximum-rate phase,
 *      where it is also the probe that sizes the transaction supply) — for an open-loop phase
 *      asked to be warmed like a maximum (`ratePhase`'s `probeRequests`), first the same
 *      closed-loop probe a maximum-rate phase starts with — then lets the server finish what that
 *      left behind (`settle`: rebroadcasts);
 *   4. resets the server's own statistics and reads the CPU time of every process from `/proc`;
 *   5. runs the measured load, reads the server's statistics, waits until the server has finished
 *      the work the phase's requests caused (their rebroadcasts), and reads `/proc` again.
 *
 * CPU per accepted send = the server process's CPU time over that window (every thread) ÷ the
 * 2xx responses of the measured load; cores used = each process's CPU time during the measured
 * load alone ÷ its wall time. Every response of the warm-up and of the measured load must
 * be a 200 carrying the shape's success marker once per transaction, or the phase throws.
 * Shared by the send, batch and delivery suites.
 */
import type { LandfallSnapshot } from '../hosts/landfall.js';
import type { LoadResult, LoadSpec } from '../hosts/loadgen.js';
import { cpuBetween, readCpu, type CpuReading, type CpuUsage } from './proc-cpu.js';
import type { LoopDelay, Memory, ThreadLoopDelay } from './process-stats.js';
import type { SignedTx } from './signed.js';
import type { Child } from './child.js';
import { sendBody, type Stack } from './stack.js';
import { fmtNs, fmtOps } from './suite.js';

/** At most this many requests in flight in an open-loop phase (more queue in the client). */
export const OPEN_CONNECTIONS = 64;
export const WARMUP_MS = 1000;
/**
 * The warm-up of an open-loop phase, at the phase's rate: `WARMUP_MS`, or `BENCH_RATE_WARMUP_MS`
 * to check what a longer one changes (at 400 req/s a fresh process is still compiling hot
 * functions, on V8's platform threads, through the measured window).
 */
const rateWarmupMs = Number(process.env['BENCH_RATE_WARMUP_MS'] ?? WARMUP_MS);
/** The closed-loop warm-up of a maximum-rate phase, which also sizes its transaction supply. */
export const PROBE_MS = 1500;
/**
 * Rebroadcast rounds of one phase finish within a few slots (3 rounds, plus up to 8 free ones for
 * rounds that did not reach the slot's leader); a phase waits at most this long for them.
 */
const SETTLE_MS = 10_000;
/**
 * Transactions signed for a closed-loop phase: this × the probe's rate × the phase's length. A
 * fresh process's probe runs before its JIT has warmed up, so the measured rate can be well above it.
 */
const CLOSED_LOOP_SUPPLY = 3;

/** Measured time of each phase: `BENCH_LOAD_MS`, default 8000. */
export function loadMs(): number {
  const env = Number(process.env['BENCH_LOAD_MS']);
  return Number.isFinite(env) && env > 0 ? env : 8000;
}

/** CPU cores each process kept busy during a phase (CPU time ÷ wall time, all threads). */
export type CoresUsed = Record<string, number>;

export interface Phase {
  /** The measured load (no warm-up in it). */
  load: Omit<LoadResult, 'bodies'>;
  warmup: { durationMs: number; achievedRps: number; completed: number };
  /** The closed-loop probe run before an open-loop phase's warm-up, when it was warmed like a maximum. */
  probe?: { durationMs: number; achievedRps: number; completed: number };
  /** 2xx responses of the measured load. */
  accepted: number;
  /** CPU time over the measured window (load + settle), per process: the server's name, `cluster`, `loadgen`. */
  cpu: Record<string, CpuUsage>;
  /** The server's CPU time over the window ÷ `accepted`, µs. */
  cpuPerAcceptedUs: number;
  /** Cores each process kept busy during the measured load (settle excluded). */
  cores: CoresUsed;
  /** Landfall only: the service's own counters and histogram over the measured load. */
  service?: Omit<LandfallSnapshot, 'cpuMs' | 'memory' | 'loopDelay'>;
  /** What the cluster's validators received over QUIC during the window (sink or not). */
  arrivals: { received: number; atLeader: number };
  memory: Memory;
  /** The server's main-thread event-loop delay during the measured load. */
  loopDelay: LoopDelay;
  /** Every event loop of the server process during the measured load: `main`, then each worker thread. */
  threadLoopDelays: ThreadLoopDelay[];
  /** How long the server took after the measured load to finish its rebroadcasts (`complete` false: gave up at `SETTLE_MS`). */
  settle: Settle;
}

export interface Settle {
  ms: number;
  complete: boolean;
}

export interface ServerStats {
  service?: LandfallSnapshot;
  memory: Memory;
  cpuMs: number;
  loopDelay: LoopDelay;
}

export interface Server {
  name: string;
  readonly url: string;
  /** The bench account's key on this server. */
  readonly apiKey: string;
  /** The server process, for `/proc`. */
  readonly pid: number;
  /** Before a phase: put a fresh process in place, where phases must not share one. */
  prepare?(): Promise<void>;
  /** Before the measured load: reset the server's own statistics. */
  reset(): Promise<void>;
  /** After the measured load: its statistics. */
  snapshot(): Promise<ServerStats>;
  /** Wait until work the last load left behind (rebroadcasts) is done, or `SETTLE_MS` passed. */
  settle(): Promise<Settle>;
  /** Event-loop delay of every thread of its process with a loop (the built-in `loopDelays` call, `child.ts`). */
  loopDelays: ThreadLoopDelaysOf;
}

export interface ThreadLoopDelaysOf {
  reset(): Promise<void>;
  read(): Promise<ThreadLoopDelay[]>;
}

/** The built-in `loopDelays` call of a child process. */
export function loopDelaysOf(child: () => Child): ThreadLoopDelaysOf {
  return {
    reset: async () => void (await child().call('loopDelays', { op: 'reset' })),
    read: () => child().call<ThreadLoopDelay[]>('loopDelays', { op: 'read' }),
  };
}

/**
 * A server under test in a child process whose host answers `reset` and `snapshot` (the peer,
 * the floor); `settle` waits for its leftover work (default: it leaves none).
 */
export function childServer(child: Child, url: string, apiKey: string, settle: () => Promise<Settle> = async () => ({ ms: 0, complete: true })): Server {
  return {
    name: child.name,
    url,
    apiKey,
    pid: child.pid,
    reset: () => child.call('reset'),
    snapshot: () => child.call<ServerStats>('snapshot'),
    settle,
    loopDelays: loopDelaysOf(() => child),
  };
}

/** Wait until `inFlight()` (transactions with rebroadcasts left) is 0, or `SETTLE_MS` passed. */
export async function settleUntilIdle(inFlight: () => Promise<number>): Promise<Settle> {
  const t0 = performance.now();
  const deadline = t0 + SETTLE_MS;
  let complete = false;
  while (!(complete = (await inFlight()) === 0) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  return { ms: Math.round(performance.now() - t0), complete };
}

export interface LandfallServerOptions {
  /** A fresh service process (and data directory) before every phase. */
  fresh?: boolean;
  /** Its ingress threads (passed as `ingressThreads`; absent: the service's default). */
  ingressThreads?: number;
}

export function landfallServer(stack: Stack, opts: LandfallServerOptions = {}): Server {
  const lfOpts = opts.ingressThreads === undefined ? {} : { ingressThreads: opts.ingressThreads };
  return {
    name: 'landfall',
    get url() {
      return stack.landfall.url;
    },
    get apiKey() {
      return stack.apiKey;
    },
    get pid() {
      return stack.landfall.child.pid;
    },
    ...(opts.fresh && { prepare: () => stack.restartLandfall(lfOpts) }),
    reset: () => stack.landfall.reset(),
    async snapshot() {
      const s = await stack.landfall.snapshot();
      return { service: s, memory: s.memory, cpuMs: s.cpuMs, loopDelay: s.loopDelay };
    },
    settle: () => settleUntilIdle(async () => (await stack.landfall.snapshot()).inFlight),
    loopDelays: loopDelaysOf(() => stack.landfall.child),
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

/**
 * Each of `txs` sent once to `/v1/send` at `rate` over `connections`, the response bodies
 * collected in order (the delivery and saturation suites read each one's slot and signature).
 */
export function sendEachOnce(stack: Stack, name: string, txs: SignedTx[], o: { connections: number; durationMs: number; rate: number }): Promise<LoadResult> {
  return stack.load({
    origin: stack.landfall.url,
    method: 'POST',
    path: SINGLE_SEND.path,
    headers: { authorization: `Bearer ${stack.apiKey}` },
    itemsFile: stack.items(name, txs.map((t) => SINGLE_SEND.body([t]))),
    reuse: false,
    ...o,
    collectBodies: true,
  });
}

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
  /** Requests signed for the warm-up (it stops early if they run out, so be generous). */
  warmupRequests: number;
  /** Requests signed for the measured load, given the warm-up's achieved rate. */
  requests(warmupRps: number): number;
  /**
   * Before the warm-up, a closed-loop probe of `PROBE_MS` with this many requests at most: the
   * warm-up a maximum-rate phase gets, so that a fresh process's JIT has compiled the hot path
   * before an open-loop phase measures it, as it has before a maximum-rate one does.
   */
  probeRequests?: number;
}

/** Sign `requests` requests' transactions and write their bodies; returns the items file. */
async function prepareItems(stack: Stack, server: Server, shape: RequestShape, name: string, requests: number): Promise<string> {
  const txs = await stack.transactions(requests * shape.txsPerRequest);
  const lines: string[] = [];
  for (let i = 0; i < txs.length; i += shape.txsPerRequest) lines.push(shape.body(txs.slice(i, i + shape.txsPerRequest)));
  return stack.items(`${server.name}${shape.path.replaceAll('/', '-')}-${name}`, lines);
}

/** One load run; throws unless every response was a 200 with every transaction accepted. */
async function loadChecked(stack: Stack, server: Server, shape: RequestShape, itemsFile: string, spec: Pick<LoadSpec, 'rate' | 'durationMs'>, what: string): Promise<LoadResult> {
  const load = await stack.load({
    origin: server.url,
    method: 'POST',
    path: shape.path,
    headers: { authorization: `Bearer ${server.apiKey}` },
    itemsFile,
    reuse: false,
    connections: spec.rate === undefined ? shape.connections : OPEN_CONNECTIONS,
    durationMs: spec.durationMs,
    warmupMs: 0,
    countInBody: shape.success,
    ...(spec.rate !== undefined && { rate: spec.rate }),
  });
  const ok = load.statusCounts['200'] ?? 0;
  if (load.exhausted) throw new Error(`${server.name} ${what}: ran out of transactions (${load.itemsUsed} requests) before the phase ended`);
  if (ok !== load.completed || load.counted !== ok * shape.txsPerRequest || load.transportErrors > 0) {
    throw new Error(
      `${server.name} ${shape.path} ${what}: ${load.completed - ok} non-200 responses ${JSON.stringify(load.statusCounts)}, ` +
        `${ok * shape.txsPerRequest - load.counted} transactions not accepted, ${load.transportErrors} transport errors (${load.firstError ?? 'none'})`,
    );
  }
  return load;
}

interface ClusterStats {
  arrivals: { received: number; atLeader: number };
}

/** `/proc` readings of the server, the cluster and the load generator. */
function readAll(stack: Stack, server: Server): Record<string, CpuReading> {
  return {
    [server.name]: readCpu(server.pid),
    cluster: readCpu(stack.cluster.child.pid),
    loadgen: readCpu(stack.loadgen.child.pid),
  };
}

/** One phase (see the module comment). */
export async function runPhase(stack: Stack, server: Server, shape: RequestShape, opts: PhaseOptions): Promise<Phase> {
  await server.prepare?.();
  const spec = { durationMs: opts.durationMs, ...(opts.rate !== undefined && { rate: opts.rate }) };
  let probe: LoadResult | undefined;
  if (opts.probeRequests !== undefined) {
    const probeItems = await prepareItems(stack, server, shape, 'probe', opts.probeRequests);
    probe = await loadChecked(stack, server, shape, probeItems, { durationMs: PROBE_MS }, 'probe');
  }
  const warmItems = await prepareItems(stack, server, shape, 'warmup', opts.warmupRequests);
  const warm = await loadChecked(stack, server, shape, warmItems, { ...spec, durationMs: opts.warmupMs }, 'warm-up');
  const items = await prepareItems(stack, server, shape, 'measured', opts.requests(warm.achievedRps));
  await server.settle();
  await server.reset();
  await server.loopDelays.reset();
  const c0 = await stack.cluster.child.call<ClusterStats>('stats');
  const cpu0 = readAll(stack, server);
  const load = await loadChecked(stack, server, shape, items, spec, 'measured');
  const cpuLoad = readAll(stack, server);
  const threadLoopDelays = await server.loopDelays.read();
  const after = await server.snapshot();
  const settle = await server.settle();
  const cpu1 = readAll(stack, server);
  const c1 = await stack.cluster.child.call<ClusterStats>('stats');

  const cpu: Record<string, CpuUsage> = {};
  const cores: CoresUsed = {};
  for (const k of Object.keys(cpu1)) {
    cpu[k] = cpuBetween(cpu0[k]!, cpu1[k]!);
    cores[k] = cpuBetween(cpu0[k]!, cpuLoad[k]!).cores;
  }
  const accepted = load.statusCounts['200'] ?? 0;
  const { bodies: _bodies, ...loadStats } = load;
  const phase: Phase = {
    load: loadStats,
    warmup: { durationMs: warm.durationMs, achievedRps: warm.achievedRps, completed: warm.completed },
    ...(probe && { probe: { durationMs: probe.durationMs, achievedRps: probe.achievedRps, completed: probe.completed } }),
    accepted,
    cpu,
    cpuPerAcceptedUs: accepted > 0 ? (cpu[server.name]!.totalMs * 1000) / accepted : Number.NaN,
    cores,
    arrivals: {
      received: c1.arrivals.received - c0.arrivals.received,
      atLeader: c1.arrivals.atLeader - c0.arrivals.atLeader,
    },
    memory: after.memory,
    loopDelay: after.loopDelay,
    threadLoopDelays,
    settle,
  };
  if (after.service) {
    const { cpuMs: _cpu, memory: _memory, loopDelay: _loop, ...service } = after.service;
    phase.service = service;
  }
  return phase;
}

/** Requests a phase at `rps` for `ms` needs, with a margin. */
function supply(rps: number, ms: number, margin: number): number {
  return Math.ceil((rps * ms * margin) / 1000) + 50;
}

/**
 * The maximum sustained rate: closed loop. The warm-up is a closed-loop probe of `probeRequests`
 * requests at most (it must outlast `PROBE_MS` at any plausible rate); its rate sizes the supply.
 */
export async function maxPhase(stack: Stack, server: Server, shape: RequestShape, durationMs: number, probeRequests: number): Promise<Phase> {
  const phase = await runPhase(stack, server, shape, {
    durationMs,
    warmupMs: PROBE_MS,
    warmupRequests: probeRequests,
    requests: (rps) => supply(rps, durationMs, CLOSED_LOOP_SUPPLY),
  });
  console.log(
    `  ${server.name} ${shape.path}: max ${fmtOps(phase.load.achievedRps)} req/s (probe ${fmtOps(phase.warmup.achievedRps)}), ` +
      `p99 ${fmtUs(phase.load.latency.p99Us)}, CPU ${fmtUs(phase.cpuPerAcceptedUs)} per accepted request (${fmtCores(phase.cores)})`,
  );
  return phase;
}

/**
 * An open-loop phase at `rate` requests/s. With `probeRequests`, warmed like a maximum-rate phase
 * first (its closed-loop probe, `PhaseOptions.probeRequests`), then at the rate.
 */
export async function ratePhase(stack: Stack, server: Server, shape: RequestShape, rate: number, durationMs: number, probeRequests?: number): Promise<Phase> {
  const phase = await runPhase(stack, server, shape, {
    rate,
    durationMs,
    warmupMs: rateWarmupMs,
    warmupRequests: supply(rate, rateWarmupMs, 1.05),
    requests: () => supply(rate, durationMs, 1.05),
    ...(probeRequests !== undefined && { probeRequests }),
  });
  const sl = phase.service?.serviceLatency;
  console.log(
    `  ${server.name} @ ${fmtOps(rate)} req/s: p50 ${fmtUs(phase.load.latency.p50Us)}, p99 ${fmtUs(phase.load.latency.p99Us)}` +
      (sl ? `; service-added p50 ${fmtBound(sl.p50Us)}, p99 ${fmtBound(sl.p99Us)}` : '') +
      `; CPU ${fmtUs(phase.cpuPerAcceptedUs)} per accepted request (${fmtCores(phase.cores)})`,
  );
  return phase;
}

/** An open-loop phase at `fraction` of `maxRps`. */
export function fractionPhase(stack: Stack, server: Server, shape: RequestShape, maxRps: number, fraction: number, durationMs: number): Promise<Phase> {
  return ratePhase(stack, server, shape, Math.max(1, Math.round(maxRps * fraction)), durationMs);
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

/**
 * Benchmark suite "targets": the send path's targets of "Speed, round two", each measured as a
 * ratio inside one run, alternating the servers so a slow period of a shared machine lands on both.
 *
 * One stack against the **sink** cluster (validators count what arrives and execute nothing, so
 * every send gets its full 3 rebroadcast rounds), the Landfall service (a fresh process per phase:
 * a sink lands nothing, so one phase's transactions would be tracked into the next), the peer
 * (`peer/app.ts`) and the floor (`floor/app.ts`), the same load generator and transactions:
 *
 *   1. **service ÷ floor**: Landfall and the floor at their maximum (closed loop), alternated
 *      `BENCH_ROUNDS` times; CPU per accepted send of each (every thread of its process, from
 *      `/proc/<pid>/task/*\/stat`, until its rebroadcasts are done), median over the rounds;
 *   2. **a fixed rate both sustain** (`PEER_RATE`, open loop): Landfall and the peer alternated,
 *      `BENCH_FAIR_MS` windows (default 20 s): CPU per send, p50 / p99 / p99.9, and Landfall's
 *      service-added latency (its histogram, request received → first QUIC stream written,
 *      pooled over the rounds);
 *   3. **a modest rate** (`LOW_RATE`): Landfall's CPU per send there ÷ at its maximum (step 1);
 *   4. **throughput per core**: each server pinned (`taskset`) to core 0, the load generator,
 *      the cluster and this process to the other cores; the maximum of Landfall and of the peer,
 *      alternated.
 *
 * Every phase is warmed the same way: the fixed-rate phases of steps 2 and 3 start with the
 * closed-loop probe a maximum-rate phase starts with (then 1 s at their rate), so a fresh
 * Landfall process has compiled its hot path before it is measured at a fixed rate, as it has
 * before its maximum (with 1 s at 400 req/s only, V8's background threads were 109–119 µs of each
 * send there), and the long-lived peer and the floor get the same probe. What V8's background
 * threads still take is reported beside the low-rate row.
 *
 * The status row (p99 at 1 M records ÷ at 10 k) and the cluster row (CPU per send, 3 nodes ÷ 1)
 * come from their own suites' results (`status`, `cluster`); the README table shows all of them.
 * Knobs: `BENCH_LOAD_MS` (each maximum phase, default 8000), `BENCH_FAIR_MS` (each fixed-rate
 * window, default 20000), `BENCH_ROUNDS` (default 3).
 */
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { INSTRUMENT, spawnChild, type Child } from './lib/child.js';
import {
  childServer,
  fmtUs,
  landfallServer,
  loadMs,
  maxPhase,
  ratePhase,
  settleUntilIdle,
  SINGLE_SEND,
  type Phase,
  type Server,
} from './lib/phase.js';
import { allCores, canPin, pin } from './lib/pin.js';
import { defaultIngressThreads, SINK_CLUSTER, startStack, TIP_LAMPORTS, type Stack } from './lib/stack.js';
import { finishMachineInfo, fmtOps, fmtRatio, machineInfo, machineLine, mdTable, median, warnIfBusy, type SuiteResult } from './lib/suite.js';
import type { Suite } from './lib/suite.js';
import type { LatencySummary } from './hosts/landfall.js';
import { startPeerServer } from './send.js';

/** The open-loop rate of the Landfall ÷ peer comparison: one both sustain on two busy cores. */
export const PEER_RATE = 1000;
/** The modest rate of the "CPU per send at a low rate ÷ at max" row. */
export const LOW_RATE = 400;
/** Requests signed for a maximum-rate probe (as in the send suite). */
const PROBE_REQUESTS = 40_000;
const PAYER_SOL = 3000;
/** Below this share of the offered rate, a fixed-rate phase did not sustain it (said in the table). */
const SUSTAINED = 0.97;

function envNumber(name: string, fallback: number): number {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

// ---- result shape ---------------------------------------------------------------------------

export type Step = 'max' | 'peer-rate' | 'low-rate' | 'pinned-max';
export type ServerName = 'landfall' | 'floor' | 'peer';

export interface Measured {
  step: Step;
  server: ServerName;
  round: number;
  /** Offered rate (open loop), req/s; null for the closed loop. */
  rate: number | null;
  phase: Phase;
}

/** One row of the README's table. */
export interface TargetRow {
  id: string;
  measure: string;
  /** The figure when this round of work began (issue "Speed, round two"). */
  before: string;
  target: string;
  /** Measured value (NaN: not measured); `shown` is how the table prints it. */
  measured: number;
  shown: string;
  met: boolean | null;
  /** Where the measured value comes from. */
  source: string;
  /** What to bear in mind reading it (e.g. a rate not sustained); empty when nothing. */
  note?: string;
}

export interface TargetsResult extends SuiteResult {
  suite: 'targets';
  durationSec: number;
  config: {
    maxLoadMs: number;
    fairMs: number;
    rounds: number;
    peerRate: number;
    lowRate: number;
    ingressThreads: number;
    pinned: { server: string; others: string } | null;
  };
  measured: Measured[];
  /** Medians over the rounds, by step and server. */
  medians: Record<string, { cpuPerSendUs: number; rps: number; p50Us: number; p99Us: number; p999Us: number; v8PerSendUs?: number }>;
  /** Landfall's service-added latency at `peerRate`, every round's histogram added up. */
  serviceLatency: LatencySummary | null;
  /** Its native part (first send handed to the QUIC client → stream written), the same rounds. */
  nativeLatency?: LatencySummary | null;
  /** The rows of this suite (the status and cluster rows are read from their suites at render time). */
  rows: TargetRow[];
}

// ---- servers --------------------------------------------------------------------------------

/** The floor (`floor/app.ts`) in a process of its own, against the stack's cluster. */
async function startFloorServer(stack: Stack): Promise<{ server: Server; child: Child }> {
  const child = await spawnChild('floor', new URL('./floor/host.ts', import.meta.url), INSTRUMENT);
  const apiKey = stack.apiKey;
  const { url } = await child.call<{ url: string }>('start', {
    rpcUrl: stack.cluster.rpcUrl,
    wsUrl: stack.cluster.wsUrl,
    tipAddresses: stack.tipAddresses,
    apiKey,
    minTipLamports: BigInt(TIP_LAMPORTS),
  });
  return { server: childServer(child, url, apiKey, () => settleUntilIdle(() => child.call<number>('inFlight'))), child };
}

/** `server`, pinned to `cpus` before each phase (after `prepare`, which may start a new process). */
function pinnedTo(server: Server, cpus: string): Server {
  return {
    name: server.name,
    get url() {
      return server.url;
    },
    get apiKey() {
      return server.apiKey;
    },
    get pid() {
      return server.pid;
    },
    async prepare() {
      await server.prepare?.();
      pin(server.pid, cpus);
    },
    reset: () => server.reset(),
    snapshot: () => server.snapshot(),
    settle: () => server.settle(),
    loopDelays: server.loopDelays,
  };
}

// ---- statistics -----------------------------------------------------------------------------

function mediansOf(measured: Measured[]): TargetsResult['medians'] {
  const out: TargetsResult['medians'] = {};
  const keys = new Set(measured.map((m) => `${m.step}/${m.server}`));
  for (const k of keys) {
    const ms = measured.filter((m) => `${m.step}/${m.server}` === k);
    const ps = ms.map((m) => m.phase);
    out[k] = {
      cpuPerSendUs: median(ps.map((p) => p.cpuPerAcceptedUs)),
      rps: median(ps.map((p) => p.load.achievedRps)),
      p50Us: median(ps.map((p) => p.load.latency.p50Us)),
      p99Us: median(ps.map((p) => p.load.latency.p99Us)),
      p999Us: median(ps.map((p) => p.load.latency.p999Us)),
      v8PerSendUs: median(ms.map(v8PerSend)),
    };
  }
  return out;
}

/**
 * µs of each accepted send spent on V8's background threads (`v8-platform`: the optimizing
 * compiler and concurrent GC), from the server's per-thread CPU.
 */
function v8PerSend(m: Measured): number {
  const ms = m.phase.cpu[m.server]?.byName?.['v8-platform']?.ms;
  return ms === undefined || m.phase.accepted === 0 ? Number.NaN : (ms * 1000) / m.phase.accepted;
}

/** Several phases' latency histograms added up (same bounds), with their quantiles. */
export function pooledLatency(summaries: LatencySummary[]): LatencySummary | null {
  if (summaries.length === 0) return null;
  const buckets = summaries[0]!.buckets.map((b, i) => ({ leUs: b.leUs, count: summaries.reduce((n, s) => n + (s.buckets[i]?.count ?? 0), 0) }));
  const count = buckets[buckets.length - 1]?.count ?? 0;
  const q = (x: number): number | null => (count === 0 ? null : (buckets.find((b) => b.count >= x * count)?.leUs ?? null));
  return { count, p50Us: q(0.5), p90Us: q(0.9), p99Us: q(0.99), p999Us: q(0.999), buckets };
}

// ---- run ------------------------------------------------------------------------------------

async function run(): Promise<TargetsResult> {
  const machine = machineInfo();
  warnIfBusy(machine);
  const t0 = performance.now();
  const maxMs = loadMs();
  const fairMs = envNumber('BENCH_FAIR_MS', 20_000);
  const rounds = Math.round(envNumber('BENCH_ROUNDS', 3));
  const threads = defaultIngressThreads() ?? 1;
  const cores = os.cpus().length;
  const pinning = cores >= 2 && canPin() ? { server: '0', others: cores === 2 ? '1' : `1-${cores - 1}` } : null;
  const measured: Measured[] = [];
  const record = (step: Step, server: ServerName, round: number, rate: number | null, phase: Phase): void => {
    measured.push({ step, server, round, rate, phase });
  };
  /** `a` then `b` in even rounds, `b` then `a` in odd ones. */
  const alternate = async (round: number, a: () => Promise<void>, b: () => Promise<void>): Promise<void> => {
    for (const f of round % 2 === 0 ? [a, b] : [b, a]) await f();
  };

  const stack = await startStack({ cluster: SINK_CLUSTER, payerSol: PAYER_SOL, landfall: { ingressThreads: threads } });
  const children: Child[] = [];
  try {
    const peerStarted = await startPeerServer(stack);
    children.push(peerStarted.child);
    const floorStarted = await startFloorServer(stack);
    children.push(floorStarted.child);
    const peer = peerStarted.server;
    const floor = floorStarted.server;
    const landfall = landfallServer(stack, { fresh: true, ingressThreads: threads });

    console.log(`1. Landfall and the floor at their maximum, ${rounds} rounds of ${maxMs / 1000} s`);
    for (let r = 0; r < rounds; r++) {
      await alternate(
        r,
        async () => record('max', 'landfall', r, null, await maxPhase(stack, landfall, SINGLE_SEND, maxMs, PROBE_REQUESTS)),
        async () => record('max', 'floor', r, null, await maxPhase(stack, floor, SINGLE_SEND, maxMs, PROBE_REQUESTS)),
      );
    }
    console.log(`2. Landfall and the peer at ${fmtOps(PEER_RATE)} req/s, ${rounds} rounds of ${fairMs / 1000} s`);
    for (let r = 0; r < rounds; r++) {
      await alternate(
        r,
        async () => record('peer-rate', 'landfall', r, PEER_RATE, await ratePhase(stack, landfall, SINGLE_SEND, PEER_RATE, fairMs, PROBE_REQUESTS)),
        async () => record('peer-rate', 'peer', r, PEER_RATE, await ratePhase(stack, peer, SINGLE_SEND, PEER_RATE, fairMs, PROBE_REQUESTS)),
      );
    }
    // The floor at the same low rate says how much of the climb is our own parts' (uWS, the
    // native inspect, the QUIC client's wake-ups), which no bookkeeping change removes.
    console.log(`3. Landfall and the floor at ${LOW_RATE} req/s, ${rounds} rounds of ${maxMs / 1000} s`);
    for (let r = 0; r < rounds; r++) {
      await alternate(
        r,
        async () => record('low-rate', 'landfall', r, LOW_RATE, await ratePhase(stack, landfall, SINGLE_SEND, LOW_RATE, maxMs, PROBE_REQUESTS)),
        async () => record('low-rate', 'floor', r, LOW_RATE, await ratePhase(stack, floor, SINGLE_SEND, LOW_RATE, maxMs, PROBE_REQUESTS)),
      );
    }

    if (pinning) {
      console.log(`4. pinned: each server on core ${pinning.server}, load generator, cluster and bench on cores ${pinning.others}; ${rounds} rounds`);
      const others = [stack.loadgen.child.pid, stack.cluster.child.pid, process.pid];
      try {
        for (const pid of others) pin(pid, pinning.others);
        pin(peer.pid, pinning.server);
        const lf = pinnedTo(landfall, pinning.server);
        for (let r = 0; r < rounds; r++) {
          await alternate(
            r,
            async () => record('pinned-max', 'landfall', r, null, await maxPhase(stack, lf, SINGLE_SEND, maxMs, PROBE_REQUESTS)),
            async () => record('pinned-max', 'peer', r, null, await maxPhase(stack, peer, SINGLE_SEND, maxMs, PROBE_REQUESTS)),
          );
        }
      } finally {
        for (const pid of [...others, peer.pid, landfall.pid]) pin(pid, allCores());
      }
    } else {
      console.log('4. pinned throughput skipped: needs 2 cores and taskset');
    }
  } finally {
    for (const c of children) await c.close();
    await stack.close();
  }

  const medians = mediansOf(measured);
  const atPeerRate = measured.filter((m) => m.step === 'peer-rate' && m.server === 'landfall');
  const serviceLatency = pooledLatency(atPeerRate.flatMap((m) => (m.phase.service ? [m.phase.service.serviceLatency] : [])));
  const nativeLatency = pooledLatency(atPeerRate.flatMap((m) => (m.phase.service?.nativeLatency ? [m.phase.service.nativeLatency] : [])));
  return {
    suite: 'targets',
    machine: finishMachineInfo(machine),
    durationSec: Math.round((performance.now() - t0) / 100) / 10,
    config: { maxLoadMs: maxMs, fairMs, rounds, peerRate: PEER_RATE, lowRate: LOW_RATE, ingressThreads: threads, pinned: pinning },
    measured,
    medians,
    serviceLatency,
    nativeLatency,
    rows: rowsOf(medians, serviceLatency),
  };
}

// ---- the rows -------------------------------------------------------------------------------

/** A histogram quantile: its bucket's upper bound ("≤ 75.0 µs"), or past the top bucket. */
function bound(us: number | null): string {
  return us === null ? '> 100 ms' : `≤ ${fmtUs(us)}`;
}

function ratioRow(id: string, measure: string, before: string, limit: number, comparison: '<=' | '>=', value: number, source: string): TargetRow {
  const met = Number.isNaN(value) ? null : comparison === '<=' ? value <= limit : value >= limit;
  return { id, measure, before, target: `${comparison === '<=' ? '≤' : '≥'} ${limit}×`, measured: value, shown: Number.isNaN(value) ? 'not measured' : fmtRatio(value), met, source };
}

function rowsOf(m: TargetsResult['medians'], sl: LatencySummary | null): TargetRow[] {
  const get = (k: string) => m[k] ?? { cpuPerSendUs: Number.NaN, rps: Number.NaN, p50Us: Number.NaN, p99Us: Number.NaN, p999Us: Number.NaN };
  // The fixed-rate rows compare like with like only where both servers kept up with the rate.
  const unsustained = ['landfall', 'peer'].filter((s) => !(get(`peer-rate/${s}`).rps >= SUSTAINED * PEER_RATE));
  const caveat = unsustained.length === 0 ? '' : `${unsustained.join(' and ')} did not sustain ${fmtOps(PEER_RATE)} req/s`;
  const lfMax = get('max/landfall');
  const recorded = sl !== null && sl.count > 0;
  // A quantile past the top bucket (null) is worse than any bound: Infinity.
  const p50 = !recorded ? Number.NaN : (sl.p50Us ?? Number.POSITIVE_INFINITY);
  const p99 = !recorded ? Number.NaN : (sl.p99Us ?? Number.POSITIVE_INFINITY);
  const latencyShown = recorded ? `${bound(sl.p50Us)} / ${bound(sl.p99Us)}` : 'not measured';
  return [
    ratioRow('floor', 'CPU per send at max (sink) ÷ the floor’s', '~2.1×', 1.25, '<=', lfMax.cpuPerSendUs / get('max/floor').cpuPerSendUs, 'targets: step 1'),
    withCaveat(
      ratioRow('peer-cpu', `CPU per send at ${fmtOps(PEER_RATE)} req/s ÷ the peer’s`, '~1.0×', 0.6, '<=', get('peer-rate/landfall').cpuPerSendUs / get('peer-rate/peer').cpuPerSendUs, 'targets: step 2'),
      caveat,
    ),
    ratioRow('pinned', 'throughput per pinned core ÷ the peer’s', 'not measured', 2, '>=', get('pinned-max/landfall').rps / get('pinned-max/peer').rps, 'targets: step 4'),
    {
      id: 'service-latency',
      measure: `service-added latency at ${fmtOps(PEER_RATE)} req/s, p50 / p99`,
      before: '≤ 300 µs / ≤ 3 ms',
      target: '≤ 100 µs / ≤ 1 ms',
      measured: p99,
      shown: latencyShown,
      note: unsustained.includes('landfall') ? caveat : '',
      met: recorded ? p50 <= 100 && p99 <= 1000 : null,
      source: 'targets: step 2, the service’s histogram',
    },
    withCaveat(
      ratioRow('low-rate', `CPU per send at ${LOW_RATE} req/s ÷ at max`, '3.0×', 1.5, '<=', get('low-rate/landfall').cpuPerSendUs / lfMax.cpuPerSendUs, 'targets: steps 3 and 1'),
      [floorLowRate(get('low-rate/floor').cpuPerSendUs / get('max/floor').cpuPerSendUs), jitShare(get('low-rate/landfall').v8PerSendUs, lfMax.v8PerSendUs)].filter((n) => n !== '').join('; '),
    ),
  ];
}

/** The floor's own climb from max to the low rate, beside the service's (empty if not measured). */
function floorLowRate(ratio: number): string {
  return Number.isFinite(ratio) ? `the floor's own: ${ratio.toFixed(2)}×` : '';
}

/**
 * The JIT's share beside the low-rate row: µs of each send on V8's background threads there and at
 * the maximum (empty if not measured). Each Landfall phase is a fresh process (a sink lands
 * nothing, so one phase's transactions would be tracked into the next): what its warm-up has not
 * compiled by the measured window is compiled in it.
 */
function jitShare(low: number | undefined, max: number | undefined): string {
  return low !== undefined && max !== undefined && Number.isFinite(low) && Number.isFinite(max)
    ? `V8's background threads, mostly the JIT: ${Math.round(low)} µs of each send here, ${Math.round(max)} at max`
    : '';
}

function withCaveat(row: TargetRow, caveat: string): TargetRow {
  return { ...row, note: caveat };
}

/** A row from another suite's results file: its target `id`'s measured value (NaN when absent). */
function otherSuiteRow(suite: string, targetId: string, id: string, measure: string, before: string, limit: number): TargetRow {
  const file = new URL(`./results/${suite}.json`, import.meta.url);
  let value = Number.NaN;
  let date = '';
  if (existsSync(file)) {
    const r = JSON.parse(readFileSync(file, 'utf8')) as { machine?: { date?: string }; targets?: { id: string; measured: number }[] };
    value = r.targets?.find((t) => t.id === targetId)?.measured ?? Number.NaN;
    date = r.machine?.date?.slice(0, 10) ?? '';
  }
  return ratioRow(id, measure, before, limit, '<=', value, `the \`${suite}\` suite${date ? ` (run ${date})` : ' (not run)'}`);
}

/** Every row of the README table: this suite's, then the status and cluster suites'. */
export function allRows(res: TargetsResult): TargetRow[] {
  return [
    ...rowsOf(res.medians, res.serviceLatency),
    otherSuiteRow('status', 'p99-flat', 'status', 'status p99 at 1 M records ÷ at 10 k', '1.80×', 1.2),
    otherSuiteRow('cluster', 'hot-path', 'cluster', 'CPU per send, 3 clustered nodes ÷ single node', '1.19×', 1.05),
  ];
}

function resultCell(r: TargetRow): string {
  const note = r.note ? `; ${r.note}` : '';
  if (r.met === null) return r.shown + (r.note ? ` (${r.note})` : '');
  return r.met ? `${r.shown} (met${note})` : `**${r.shown}** (missed${note})`;
}

/** The README block: one table of the targets. */
function readmeTable(res: TargetsResult): string {
  return [
    mdTable(
      ['measure', 'at the start of this round', 'target', 'measured'],
      allRows(res).map((r) => [r.measure, r.before, r.target, resultCell(r)]),
    ),
    '',
    `Ratios inside one run, alternating the servers (${res.config.rounds} rounds, medians), on ${res.machine.cpuCores} cores with the 1-minute load ` +
      `${res.machine.loadAvg1mStart}–${res.machine.loadAvg1mEnd} (${res.machine.date.slice(0, 10)}); the last two rows from ` +
      allRows(res).slice(-2).map((r) => r.source).join(' and ') +
      '; how, and every figure: ' +
      '[docs/performance.md](docs/performance.md#the-targets-measured-fairly). Run: `npm run bench -- targets` (and `status`, `cluster` for their rows).',
  ].join('\n');
}

const STEP_LABEL: Record<Step, string> = { max: 'max (closed loop)', 'peer-rate': 'fixed rate', 'low-rate': 'low rate', 'pinned-max': 'max, pinned to one core' };

/** The docs block: every phase's figures and the medians. */
function details(res: TargetsResult): string {
  const rows = res.measured.map((m) => {
    const p = m.phase;
    const sl = p.service?.serviceLatency;
    const sustained = m.rate === null ? '' : p.load.achievedRps >= SUSTAINED * m.rate ? '' : ' (not sustained)';
    return [
      STEP_LABEL[m.step],
      m.server,
      String(m.round + 1),
      m.rate === null ? '—' : fmtOps(m.rate),
      fmtOps(p.load.achievedRps) + sustained,
      fmtUs(p.load.latency.p50Us),
      fmtUs(p.load.latency.p99Us),
      fmtUs(p.load.latency.p999Us),
      sl && sl.count > 0 ? `${bound(sl.p50Us)} / ${bound(sl.p99Us)}` : '—',
      fmtUs(p.cpuPerAcceptedUs),
      (p.arrivals.received / Math.max(1, p.accepted)).toFixed(1),
    ];
  });
  const med = Object.entries(res.medians).map(([k, v]) => {
    const [step, server] = k.split('/') as [Step, string];
    return [STEP_LABEL[step], server, fmtOps(v.rps), fmtUs(v.p50Us), fmtUs(v.p99Us), fmtUs(v.p999Us), fmtUs(v.cpuPerSendUs)];
  });
  const sl = res.serviceLatency;
  const nl = res.nativeLatency ?? null;
  // CPU and wake-ups per send by thread group, at the maximum and at the low rate (medians over
  // the rounds): where the gap to the floor is, and what does not shrink with the rate.
  const runs = (step: Step, server: ServerName) => res.measured.filter((m) => m.step === step && m.server === server);
  const threadSteps: Step[] = ['max', 'low-rate'];
  const groups = [...new Set(res.measured.filter((m) => threadSteps.includes(m.step)).flatMap((m) => Object.keys(m.phase.cpu[m.server]?.byName ?? {})))].sort();
  const groupCell = (step: Step, server: ServerName, g: string): string => {
    const ms = runs(step, server);
    const us = median(ms.map((m) => ((m.phase.cpu[m.server]?.byName[g]?.ms ?? 0) * 1000) / m.phase.accepted));
    if (Number.isNaN(us) || us < 0.05) return '—';
    // Wake-ups (voluntary context switches) per send; absent from results written before they were read.
    const wakes = median(ms.map((m) => (m.phase.cpu[m.server]?.byName[g]?.wakeups ?? Number.NaN) / m.phase.accepted));
    return Number.isNaN(wakes) ? fmtUs(us) : `${fmtUs(us)} (${wakes.toFixed(2)})`;
  };
  const threadRows = threadSteps.flatMap((step) =>
    (['landfall', 'floor'] as const).filter((server) => runs(step, server).length > 0).map((server) => [STEP_LABEL[step], server, ...groups.map((g) => groupCell(step, server, g))]),
  );
  return [
    machineLine(res.machine, 'undici load generator') +
      ` Maximum phases ${res.config.maxLoadMs / 1000} s, fixed-rate windows ${res.config.fairMs / 1000} s, ${res.config.rounds} rounds; ` +
      `Landfall with ${res.config.ingressThreads} ingress thread${res.config.ingressThreads === 1 ? '' : 's'}, a fresh process per phase; sink cluster.` +
      (res.config.pinned ? ` Pinned phases: the server on core ${res.config.pinned.server}, everything else on ${res.config.pinned.others}.` : ' Pinned phases: not run (needs 2 cores and taskset).'),
    '',
    '**Medians over the rounds**',
    '',
    mdTable(['step', 'server', 'req/s', 'p50', 'p99', 'p99.9', 'CPU per send'], med),
    '',
    sl && sl.count > 0
      ? `Landfall’s service-added latency at ${fmtOps(res.config.peerRate)} req/s (${fmtOps(sl.count)} sends over the rounds, bucket upper bounds): ` +
        `p50 ${bound(sl.p50Us)}, p90 ${bound(sl.p90Us)}, p99 ${bound(sl.p99Us)}, p99.9 ${bound(sl.p999Us)}` +
        (nl && nl.count > 0
          ? `; its native part (first send handed to the QUIC client → stream written): p50 ${bound(nl.p50Us)}, p90 ${bound(nl.p90Us)}, p99 ${bound(nl.p99Us)}, p99.9 ${bound(nl.p999Us)}.`
          : '.')
      : 'Landfall’s service-added latency: not recorded.',
    '',
    '**CPU per send by thread, and (in brackets) wake-ups per send** at the maximum and at the low rate (medians over the rounds; `/proc/<pid>/task/<tid>/stat` and the `voluntary_ctxt_switches` of its `status`; threads named as in the send suite: `main`, `node-worker` the ingress threads, `landfall-first` the first sends’ QUIC thread, `landfall-quic` the shared QUIC runtime, `libuv-pool`, `v8-platform`)',
    '',
    mdTable(['step', 'server', ...groups], threadRows),
    '',
    '**Every phase** (CPU per send: every thread of the server’s process from the start of the measured load until its rebroadcasts are done, ÷ its 200s; QUIC writes: what the validators received per accepted send)',
    '',
    mdTable(['step', 'server', 'round', 'offered req/s', 'req/s', 'p50', 'p99', 'p99.9', 'service-added p50 / p99', 'CPU per send', 'QUIC writes per send'], rows),
    '',
    `Raw numbers: \`bench/results/targets.json\`; run: \`npm run bench -- targets\` (${res.durationSec} s).`,
  ].join('\n');
}

export const suite: Suite<TargetsResult> = {
  name: 'targets',
  title: 'The targets, measured fairly',
  run,
  readmeTable,
  details,
};

/**
 * Benchmark suite "send": `POST /v1/send` end to end, Landfall against the peer, in one run.
 *
 * Processes (each its own, see `lib/child.ts`): the local cluster, the Landfall service
 * (`startService`, every plan's rate limit raised so the buckets are taken but never refuse), the
 * peer (`peer/app.ts`), the load generator (`hosts/loadgen.ts`, undici), and, before any of them,
 * one ed25519 verifier per core.
 *
 * Steps:
 *   1. the machine's ed25519 limit: every core verifying signatures for `LIMIT_MS`;
 *   2. against a **sink** cluster (validators count what arrives over QUIC and execute nothing,
 *      so LiteSVM does not share the two cores with the service):
 *      - the CPU time of one native `inspectTransaction` on the suite's own transactions, in a
 *        process of its own (the yardstick of the CPU-per-send target);
 *      - for Landfall and the peer, alternating: the maximum sustained rate (closed loop), 50 %
 *        of each one's own maximum and a fixed `FIXED_RATE` (open loop): req/s, latency, the
 *        service-added latency (Landfall's own histogram), event-loop delay, and CPU per
 *        accepted request from `/proc` (every thread of the server process, grouped by thread);
 *      - scaling: Landfall's maximum with 1 and with 2 ingress threads (`ingressThreads`);
 *   3. against the **executing** cluster (LiteSVM runs what lands, in a process on the same
 *      cores): the maximum of each, Landfall then the peer.
 *
 * Each Landfall phase against the sink runs on a fresh service process: nothing lands on a sink,
 * so the service's tracker keeps polling every transaction of a phase until its blockhash expires
 * (60 s); a fresh process keeps that out of the next phase. The peer delivers nothing, so it needs
 * no such reset. Every request carries a distinct, real transaction (a unique self-transfer plus
 * the minimum tip, signed by one funded payer on a fresh blockhash before each phase): the same
 * bodies, in the same order, for both servers. Every response must be a 200 with
 * `"success":true`. `BENCH_LOAD_MS` sets the measured time of each phase (default 8000).
 */
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { join } from 'node:path';
import { INSTRUMENT, spawnChild, type Child } from './lib/child.js';
import {
  childServer,
  fmtBound,
  fmtCores,
  fmtUs,
  fractionPhase,
  landfallServer,
  loadMs,
  maxPhase,
  OPEN_CONNECTIONS,
  PROBE_MS,
  ratePhase,
  SINGLE_SEND,
  WARMUP_MS,
  type Phase,
  type Server,
} from './lib/phase.js';
import { clockTicks } from './lib/proc-cpu.js';
import { LOOP_DELAY_RESOLUTION_MS, type LoopDelay, type ThreadLoopDelay } from './lib/process-stats.js';
import { defaultIngressThreads, hasSendThreads, LOAD_CLUSTER, SINK_CLUSTER, startStack, TIP_LAMPORTS, UNLIMITED_TPS, type Stack } from './lib/stack.js';
import {
  finishMachineInfo,
  fmtOps,
  fmtRatio,
  machineInfo,
  machineLine,
  mdTable,
  packageVersion,
  target,
  targetsTable,
  warnIfBusy,
  type Suite,
  type SuiteResult,
  type Target,
} from './lib/suite.js';

// ---- configuration --------------------------------------------------------------------------

const LIMIT_MS = 3000;
/** Requests signed for a maximum-rate probe: enough for 25 000 req/s over its 1.5 s. */
const PROBE_REQUESTS = 40_000;
/** The fixed open-loop rate of the "CPU at a modest rate" target. */
export const FIXED_RATE = 400;
export const HALF = 0.5;
/** Ingress thread counts compared against the sink. */
export const SCALING_THREADS = [1, 2] as const;
/** The native inspect measurement: this many of the suite's transactions, cycled for this long. */
const INSPECT_TXS = 512;
const INSPECT_MS = 2000;
/** SOL for each payer: minimum tip + fee for every transaction Landfall lands, with room to spare. */
const PAYER_SOL = 2000;

// ---- result shape ---------------------------------------------------------------------------

export type ClusterMode = 'sink' | 'executing';
export type LoadKind = 'max' | 'half' | 'fixed';

/** One measured phase, labelled. */
export interface Run {
  server: 'landfall' | 'peer';
  cluster: ClusterMode;
  /** Landfall's `ingressThreads` (null for the peer). */
  ingressThreads: number | null;
  kind: LoadKind;
  /** Offered rate (open loop), req/s; null for the closed loop. */
  rate: number | null;
  phase: Phase;
}

export interface SendResult extends SuiteResult {
  suite: 'send';
  durationSec: number;
  config: {
    loadMs: number;
    warmupMs: number;
    maxConnections: number;
    openConnections: number;
    tipLamports: number;
    fixedRate: number;
    clockTicksPerSec: number;
    loadGenerator: string;
    peer: string;
    sinkCluster: string;
    executingCluster: string;
    /** The service's default `ingressThreads`, or null if it has no such setting (then the requested counts were ignored). */
    serviceIngressThreadsDefault: number | null;
    /** Landfall's ingress threads in every phase but the scaling ones. */
    ingressThreads: number;
    /** `sendThreads` passed to the service (0), or null if it has no such setting. */
    sendThreads: number | null;
    /** The code measured: `git rev-parse --short HEAD`, and whether src/ or native/ had uncommitted changes (null outside a git checkout). */
    source: { commit: string; dirty: boolean } | null;
  };
  ed25519: { verifiesPerSec: number; processes: number; perProcess: number[]; durationMs: number };
  /** One native `inspectTransaction`, on the suite's transactions, alone in a process. */
  inspect: { calls: number; wallMs: number; cpuUsPerCall: number; wallUsPerCall: number };
  runs: Run[];
  ratios: Record<string, { value: number; meaning: string }>;
  targets: Target[];
}

/** The checked-out commit and whether the service's code differs from it (null outside a git checkout). */
function sourceVersion(): SendResult['config']['source'] {
  try {
    const git = (args: string[]): string => execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return { commit: git(['rev-parse', '--short', 'HEAD']), dirty: git(['status', '--porcelain', '--', 'src', 'native/src']) !== '' };
  } catch {
    return null;
  }
}

// ---- the ed25519 limit and the inspect yardstick ---------------------------------------------

const VERIFIER = new URL('./hosts/verifier.ts', import.meta.url);

/** Verifications per second with every core verifying at once (one process per core). */
export async function ed25519Limit(durationMs: number): Promise<SendResult['ed25519']> {
  const n = os.cpus().length;
  const verifiers: Child[] = [];
  try {
    for (let i = 0; i < n; i++) verifiers.push(await spawnChild(`verifier${i}`, VERIFIER));
    await Promise.all(verifiers.map((v) => v.call('prepare')));
    const runs = await Promise.all(verifiers.map((v) => v.call<{ count: number; elapsedMs: number }>('spin', { durationMs })));
    const perProcess = runs.map((r) => (r.count * 1000) / r.elapsedMs);
    return { verifiesPerSec: perProcess.reduce((a, b) => a + b, 0), processes: n, perProcess, durationMs };
  } finally {
    for (const v of verifiers) await v.close();
  }
}

/** CPU time of one `inspectTransaction` on `INSPECT_TXS` of the stack's own request transactions. */
async function inspectCost(stack: Stack): Promise<SendResult['inspect']> {
  const base64 = (await stack.transactions(INSPECT_TXS)).map((t) => t.wire.toString('base64'));
  const child = await spawnChild('inspect', VERIFIER);
  try {
    const r = await child.call<{ calls: number; wallMs: number; cpuUs: number }>('inspect', {
      base64,
      tipAddresses: stack.tipAddresses,
      tipLamports: TIP_LAMPORTS,
      durationMs: INSPECT_MS,
    });
    return { calls: r.calls, wallMs: r.wallMs, cpuUsPerCall: r.cpuUs / r.calls, wallUsPerCall: (r.wallMs * 1000) / r.calls };
  } finally {
    await child.close();
  }
}

// ---- the peer ------------------------------------------------------------------------------

/** The peer, with the stack's tip addresses and (the current) bench key, kept for its whole life. */
export async function startPeerServer(stack: Stack): Promise<{ server: Server; child: Child }> {
  const child = await spawnChild('peer', new URL('./peer/host.ts', import.meta.url), INSTRUMENT);
  const apiKey = stack.apiKey;
  const { url } = await child.call<{ url: string }>('start', {
    dataDir: join(stack.dir, 'peer'),
    tipAddresses: stack.tipAddresses,
    account: { apiKey, id: stack.accountId, keyName: 'default', minTipLamports: BigInt(TIP_LAMPORTS), maxTps: UNLIMITED_TPS },
  });
  return { server: childServer(child, url, apiKey), child };
}

// ---- run ------------------------------------------------------------------------------------

/** The worker threads' event loops (ingress threads), if the server has any. */
function workerLoops(p: Phase): ThreadLoopDelay[] {
  return (p.threadLoopDelays ?? []).filter((d) => d.thread !== 'main');
}

/** The event-loop delay of the loops that serve HTTP: the worst worker loop if there are workers, else the main thread's. */
export function httpLoopDelay(p: Phase): LoopDelay {
  const workers = workerLoops(p);
  if (workers.length === 0) return p.loopDelay;
  return { p50Us: Math.max(...workers.map((w) => w.p50Us)), p99Us: Math.max(...workers.map((w) => w.p99Us)), maxUs: Math.max(...workers.map((w) => w.maxUs)) };
}

/** The service-added latency histogram's p99, or NaN when the service recorded nothing. */
function serviceP99(p: Phase): number {
  const sl = p.service?.serviceLatency;
  if (!sl || sl.count === 0) return Number.NaN;
  return sl.p99Us ?? Number.POSITIVE_INFINITY;
}

function find(runs: Run[], server: Run['server'], cluster: ClusterMode, kind: LoadKind, ingressThreads?: number): Run {
  const r = runs.find((x) => x.server === server && x.cluster === cluster && x.kind === kind && (ingressThreads === undefined || x.ingressThreads === ingressThreads));
  if (!r) throw new Error(`no ${server} ${cluster} ${kind} run${ingressThreads === undefined ? '' : ` with ${ingressThreads} ingress threads`}`);
  return r;
}

async function run(): Promise<SendResult> {
  const machine = machineInfo();
  warnIfBusy(machine);
  const t0 = performance.now();
  const durationMs = loadMs();
  const serviceDefault = defaultIngressThreads();
  const threads = serviceDefault ?? 1;

  console.log(`ed25519 limit: ${os.cpus().length} processes verifying for ${LIMIT_MS} ms…`);
  const ed25519 = await ed25519Limit(LIMIT_MS);
  console.log(`  ${fmtOps(ed25519.verifiesPerSec)} verifications/s`);

  const runs: Run[] = [];
  const record = (server: Run['server'], cluster: ClusterMode, ingressThreads: number | null, kind: LoadKind, rate: number | null, phase: Phase): Phase => {
    runs.push({ server, cluster, ingressThreads, kind, rate, phase });
    return phase;
  };

  // ---- against the sink ----
  console.log(`sink cluster: Landfall (${threads} ingress thread${threads === 1 ? '' : 's'}, a fresh process per phase) and the peer`);
  let inspect: SendResult['inspect'] | null = null;
  {
    const stack = await startStack({ cluster: SINK_CLUSTER, payerSol: PAYER_SOL, landfall: { ingressThreads: threads } });
    let peerChild: Child | null = null;
    try {
      inspect = await inspectCost(stack);
      console.log(`  inspectTransaction: ${fmtUs(inspect.cpuUsPerCall)} CPU per call (${fmtOps(inspect.calls)} calls)`);
      const started = await startPeerServer(stack);
      peerChild = started.child;
      const peer = started.server;
      const landfall = landfallServer(stack, { fresh: true, ingressThreads: threads });

      const lfMax = record('landfall', 'sink', threads, 'max', null, await maxPhase(stack, landfall, SINGLE_SEND, durationMs, PROBE_REQUESTS));
      const peerMax = record('peer', 'sink', null, 'max', null, await maxPhase(stack, peer, SINGLE_SEND, durationMs, PROBE_REQUESTS));
      for (const [server, max] of [
        [landfall, lfMax],
        [peer, peerMax],
      ] as const) {
        const rate = Math.max(1, Math.round(max.load.achievedRps * HALF));
        const name = server === peer ? 'peer' : 'landfall';
        record(name, 'sink', name === 'peer' ? null : threads, 'half', rate, await fractionPhase(stack, server, SINGLE_SEND, max.load.achievedRps, HALF, durationMs));
      }
      record('landfall', 'sink', threads, 'fixed', FIXED_RATE, await ratePhase(stack, landfall, SINGLE_SEND, FIXED_RATE, durationMs));
      record('peer', 'sink', null, 'fixed', FIXED_RATE, await ratePhase(stack, peer, SINGLE_SEND, FIXED_RATE, durationMs));
      for (const n of SCALING_THREADS) {
        if (n === threads) continue;
        console.log(`  scaling: Landfall with ${n} ingress thread${n === 1 ? '' : 's'}`);
        const scaled = landfallServer(stack, { fresh: true, ingressThreads: n });
        record('landfall', 'sink', n, 'max', null, await maxPhase(stack, scaled, SINGLE_SEND, durationMs, PROBE_REQUESTS));
      }
    } finally {
      await peerChild?.close();
      await stack.close();
    }
  }

  // ---- against the executing cluster ----
  console.log('executing cluster (LiteSVM on the same cores): Landfall and the peer at their maximum');
  {
    const stack = await startStack({ cluster: LOAD_CLUSTER, payerSol: PAYER_SOL, landfall: { ingressThreads: threads } });
    let peerChild: Child | null = null;
    try {
      const started = await startPeerServer(stack);
      peerChild = started.child;
      record('landfall', 'executing', threads, 'max', null, await maxPhase(stack, landfallServer(stack), SINGLE_SEND, durationMs, PROBE_REQUESTS));
      record('peer', 'executing', null, 'max', null, await maxPhase(stack, started.server, SINGLE_SEND, durationMs, PROBE_REQUESTS));
    } finally {
      await peerChild?.close();
      await stack.close();
    }
  }

  if (!inspect) throw new Error('the inspect measurement did not run');
  const inspectCpuUs = inspect.cpuUsPerCall;
  const lf = (kind: LoadKind, cluster: ClusterMode = 'sink', n = threads): Phase => find(runs, 'landfall', cluster, kind, n).phase;
  const pr = (kind: LoadKind, cluster: ClusterMode = 'sink'): Phase => find(runs, 'peer', cluster, kind).phase;
  const rps = (p: Phase): number => p.load.achievedRps;
  const ratios: SendResult['ratios'] = {
    cpuOverInspect: {
      value: lf('max').cpuPerAcceptedUs / inspectCpuUs,
      meaning: 'Landfall CPU per accepted send at its maximum (sink, all threads) ÷ the CPU of one inspectTransaction',
    },
    cpuFixedOverMax: {
      value: lf('fixed').cpuPerAcceptedUs / lf('max').cpuPerAcceptedUs,
      meaning: `Landfall CPU per accepted send at ${FIXED_RATE} req/s ÷ at its maximum (sink)`,
    },
    throughputOverPeerSink: { value: rps(lf('max')) / rps(pr('max')), meaning: 'Landfall maximum req/s ÷ the peer’s, sink cluster' },
    throughputOverPeerExecuting: {
      value: rps(lf('max', 'executing')) / rps(pr('max', 'executing')),
      meaning: 'Landfall maximum req/s ÷ the peer’s, executing cluster on the same cores',
    },
    p99At50OverPeer: {
      value: lf('half').load.latency.p99Us / pr('half').load.latency.p99Us,
      meaning: 'Landfall p99 at 50 % of its maximum ÷ the peer’s p99 at 50 % of its maximum (sink)',
    },
    cpuOverPeer: { value: lf('max').cpuPerAcceptedUs / pr('max').cpuPerAcceptedUs, meaning: 'Landfall CPU per accepted send ÷ the peer’s, both at their maximum (sink)' },
    scaling: {
      value: rps(find(runs, 'landfall', 'sink', 'max', 2).phase) / rps(find(runs, 'landfall', 'sink', 'max', 1).phase),
      meaning: 'Landfall maximum req/s with 2 ingress threads ÷ with 1 (sink)',
    },
    throughputOverEd25519: { value: rps(lf('max')) / ed25519.verifiesPerSec, meaning: 'Landfall maximum req/s (sink) ÷ ed25519 verifications/s on all cores' },
  };
  const r = (k: string): number => ratios[k]!.value;
  const targets: Target[] = [
    target('cpu-vs-inspect', 'CPU per accepted send at max (sink, all service threads) ≤ 4 × one native inspectTransaction', r('cpuOverInspect'), '×', '<=', 4),
    target('cpu-fixed-vs-max', `CPU per accepted send at ${FIXED_RATE} req/s ≤ 2 × the figure at max`, r('cpuFixedOverMax'), '×', '<=', 2),
    target('throughput-vs-peer-sink', 'send throughput against the sink ≥ 3 × the peer', r('throughputOverPeerSink'), '×', '>=', 3),
    target('throughput-vs-peer-executing', 'send throughput with the executing cluster co-located ≥ 1.5 × the peer', r('throughputOverPeerExecuting'), '×', '>=', 1.5),
    target('p99-vs-peer', 'p99 at 50 % load ≤ the peer’s p99 at 50 % load', r('p99At50OverPeer'), '×', '<=', 1),
    target('loop-delay-p99', 'event-loop delay p99 at 50 % load ≤ 1 ms (the loops serving HTTP: the ingress threads’, else the main thread’s)', httpLoopDelay(lf('half')).p99Us, 'µs', '<=', 1000),
    target('throughput-vs-ed25519', 'send throughput (sink) ≥ 50 % of the ed25519 limit (all cores)', r('throughputOverEd25519'), '×', '>=', 0.5),
    target('service-latency-p99', 'service-added latency p99 ≤ 1 ms at 50 % load', serviceP99(lf('half')), 'µs', '<=', 1000),
  ];
  return {
    suite: 'send',
    machine: finishMachineInfo(machine),
    durationSec: Math.round((performance.now() - t0) / 100) / 10,
    config: {
      loadMs: durationMs,
      warmupMs: WARMUP_MS,
      maxConnections: SINGLE_SEND.connections,
      openConnections: OPEN_CONNECTIONS,
      tipLamports: TIP_LAMPORTS,
      fixedRate: FIXED_RATE,
      clockTicksPerSec: clockTicks(),
      loadGenerator: `undici ${packageVersion('undici')} Pool, keep-alive, one process (bench/hosts/loadgen.ts)`,
      peer: `fastify ${packageVersion('fastify')}, @solana/web3.js ${packageVersion('@solana/web3.js')}, node:crypto, lmdb ${packageVersion('lmdb')} (bench/peer/app.ts)`,
      sinkCluster: 'local cluster in sink mode: 4 validators, 400 ms slots, QUIC limits raised; validators count what arrives and execute nothing (bench/lib/stack.ts SINK_CLUSTER)',
      executingCluster: 'local cluster, 4 validators, 400 ms slots, QUIC limits raised; LiteSVM executes what lands (bench/lib/stack.ts LOAD_CLUSTER)',
      serviceIngressThreadsDefault: serviceDefault,
      ingressThreads: threads,
      sendThreads: hasSendThreads() ? 0 : null,
      source: sourceVersion(),
    },
    ed25519,
    inspect,
    runs,
    ratios,
    targets,
  };
}

// ---- docs block -----------------------------------------------------------------------------

const KIND_ORDER: LoadKind[] = ['max', 'half', 'fixed'];

function loadLabel(r: Run, res: SendResult): string {
  if (r.kind === 'max') return `max (closed loop, ${res.config.maxConnections} conns)`;
  if (r.kind === 'half') return `50 % (${fmtOps(r.rate ?? 0)} req/s)`;
  return `${fmtOps(r.rate ?? 0)} req/s`;
}

function serverLabel(r: Run, res: SendResult): string {
  if (r.server === 'peer') return 'peer';
  const ignored = res.config.serviceIngressThreadsDefault === null ? ', ignored: not a setting of this service' : '';
  return `landfall (ingressThreads ${r.ingressThreads ?? '—'}${ignored})`;
}

/** Runs in the order of its docs block: cluster, server (Landfall first, by threads), load. */
function ordered(res: SendResult): Run[] {
  const key = (r: Run): number[] => [
    r.cluster === 'sink' ? 0 : 1,
    r.server === 'landfall' ? 0 : 1,
    r.ingressThreads === res.config.ingressThreads || r.ingressThreads === null ? 0 : (r.ingressThreads ?? 0),
    KIND_ORDER.indexOf(r.kind),
  ];
  return [...res.runs].sort((a, b) => {
    const ka = key(a);
    const kb = key(b);
    for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return ka[i]! - kb[i]!;
    return 0;
  });
}

/** Thread groups in a fixed order (those present), then any others. */
const GROUP_ORDER = ['main', 'node-worker', 'landfall-first', 'landfall-quic', 'libuv-pool', 'v8-platform', 'node-loader', 'node'];

function groupsOf(res: SendResult): string[] {
  const seen = new Set<string>();
  for (const r of res.runs) for (const g of Object.keys(r.phase.cpu[r.server]?.byName ?? {})) seen.add(g);
  return [...GROUP_ORDER.filter((g) => seen.has(g)), ...[...seen].filter((g) => !GROUP_ORDER.includes(g)).sort()];
}

/** µs per accepted request of one thread group in one run ('—' when absent). */
function groupCell(r: Run, group: string): string {
  const u = r.phase.cpu[r.server];
  const g = u?.byName[group];
  if (!u || !g) return '—';
  const us = (g.ms * 1000) / r.phase.accepted;
  return `${us < 0.05 ? '0' : fmtUs(us)}${g.threads > 1 ? ` (×${g.threads})` : ''}`;
}

/** "509 µs per send: main 322 µs (63 %), landfall-quic 85 µs (17 %), …": the three largest thread groups of one run. */
function profileLine(r: Run): string {
  const u = r.phase.cpu[r.server]!;
  const total = r.phase.cpuPerAcceptedUs;
  const parts = Object.entries(u.byName)
    .map(([g, v]) => [g, (v.ms * 1000) / r.phase.accepted] as const)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([g, us]) => `${g} ${fmtUs(us)} (${Math.round((100 * us) / total)} %)`);
  return `${fmtUs(total)} per send: ${parts.join(', ')}; cores during the load: ${fmtCores(r.phase.cores)}`;
}

function arrivalsPerSend(r: Run): string {
  return (r.phase.arrivals.received / r.phase.accepted).toFixed(1);
}

function readmeTable(res: SendResult): string {
  if (!Array.isArray(res.runs)) return 'The results in `bench/results/send.json` predate this suite’s current shape; run `npm run bench -- send`.';
  const src = res.config.source;
  const out: string[] = [
    machineLine(res.machine, `${res.config.loadGenerator.split(' Pool')[0]} load generator`) +
      (src ? ` Code: commit ${src.commit}${src.dirty ? ' with uncommitted changes in src/ or native/' : ''}.` : ''),
    '',
  ];
  const runs = ordered(res);
  const get = (server: Run['server'], cluster: ClusterMode, kind: LoadKind, n?: number): Run => find(res.runs, server, cluster, kind, n);
  const lfMax = get('landfall', 'sink', 'max', res.config.ingressThreads);
  out.push(
    `Each request is \`POST /v1/send\` with a distinct signed transaction (self-transfer + ${res.config.tipLamports.toLocaleString('en-US')}-lamport tip), ` +
      'the same transactions in the same order for both servers; every response was checked (200, `"success":true`). ' +
      `Load generator: ${res.config.loadGenerator} (not autocannon, whose latency histogram counts whole milliseconds; not wrk2, which needs a Lua script ` +
      `to vary bodies and a system package). Peer: ${res.config.peer}: it stops after the LMDB write, while Landfall also ` +
      'writes each transaction to two leaders over QUIC before it answers, rebroadcasts it and tracks it.',
    '',
    `**Clusters.** Sink: ${res.config.sinkCluster}. Nothing lands on a sink, so Landfall does its most work per send there: every ` +
      `transaction gets its full 3 rebroadcast rounds (${arrivalsPerSend(lfMax)} QUIC writes per accepted send reached the validators, against ` +
      `${arrivalsPerSend(get('landfall', 'executing', 'max'))} with the executing cluster, where its confirmation ends the rounds early), and the tracker polls it ` +
      'every second (`getSignatureStatuses`, from 1 s after the send) until the phase ends; each Landfall phase against the sink runs on a ' +
      `fresh service process, so one phase's unlanded transactions are not polled during the next. Executing: ${res.config.executingCluster}, ` +
      `in its own process on the same ${res.machine.cpuCores} cores.`,
    '',
    mdTable(
      ['server', 'cluster', 'load', 'req/s', 'p50', 'p99', 'p99.9', 'service-added p50 / p99 / p99.9', 'event-loop delay p99 / max: main; ingress threads (worst)', 'CPU per accepted send', 'CPU cores used'],
      runs.map((r) => {
        const p = r.phase;
        const sl = p.service?.serviceLatency;
        return [
          serverLabel(r, res),
          r.cluster,
          loadLabel(r, res),
          fmtOps(p.load.achievedRps),
          fmtUs(p.load.latency.p50Us),
          fmtUs(p.load.latency.p99Us),
          fmtUs(p.load.latency.p999Us),
          !sl ? '—' : sl.count === 0 ? 'not recorded' : `${fmtBound(sl.p50Us)} / ${fmtBound(sl.p99Us)} / ${fmtBound(sl.p999Us)}`,
          `${fmtUs(p.loopDelay.p99Us)} / ${fmtUs(p.loopDelay.maxUs)}` +
            (workerLoops(p).length > 0 ? `; ${fmtUs(httpLoopDelay(p).p99Us)} / ${fmtUs(httpLoopDelay(p).maxUs)}` : ''),
          fmtUs(p.cpuPerAcceptedUs),
          fmtCores(p.cores),
        ];
      }),
    ),
    '',
    `Each phase: a warm-up at the phase's own rate (${WARMUP_MS / 1000} s; for max, a ${PROBE_MS / 1000} s closed-loop probe), then ${res.config.loadMs / 1000} s measured. ` +
      'Latency is the client’s (request handed to undici → response read); service-added latency is the service’s own histogram (request ' +
      'received → first QUIC stream written), reset before the measured load; its values are bucket bounds ("not recorded": the histogram the bench ' +
      `reads stayed empty). Event-loop delay: how late a ${LOOP_DELAY_RESOLUTION_MS} ms timer ran (\`monitorEventLoopDelay\`) on the server’s main thread and on each worker ` +
      'thread (`bench/lib/loop-delay.cjs`; with ingress threads those are the loops that serve requests). **CPU per accepted send**: the server process’s CPU time (utime + stime ' +
      `of every thread, \`/proc/<pid>/stat\`, ${res.config.clockTicksPerSec} ticks/s) from the start of the measured load until the service has ` +
      'finished its rebroadcasts, ÷ the 200 responses of the measured load. CPU cores used: each process’s CPU time during the measured load ÷ its length.',
    '',
    `**Where the CPU goes** (µs per accepted send by thread, \`/proc/<pid>/task/<tid>\`; threads named by \`bench/lib/thread-names.cjs\`: ` +
      '`main` the event loop (HTTP, JSON, N-API calls, the engine and tracker), `node-worker` Node worker threads (the ingress threads), ' +
      '`landfall-first` the addon’s thread for first sends and `landfall-quic` its shared tokio runtime (QUIC writes: encryption, UDP), `libuv-pool` libuv’s pool (lmdb-js write transactions, ' +
      'async N-API work), `v8-platform` V8’s background threads (GC, compilation), `node-loader` the TypeScript loader; the validators’ ' +
      'QUIC arrivals per accepted send show what the sends caused):',
    '',
  );
  const groups = groupsOf(res);
  out.push(
    mdTable(
      ['server', 'cluster', 'load', 'total', ...groups, 'validator arrivals per send (at the leader)'],
      runs.map((r) => [
        serverLabel(r, res),
        r.cluster,
        loadLabel(r, res),
        fmtUs(r.phase.cpuPerAcceptedUs),
        ...groups.map((g) => groupCell(r, g)),
        r.server === 'landfall' ? `${(r.phase.arrivals.received / r.phase.accepted).toFixed(2)} (${(r.phase.arrivals.atLeader / r.phase.accepted).toFixed(2)})` : '—',
      ]),
    ),
    '',
    `Native \`inspectTransaction\` (base64 decode, parse, ed25519 verify, tip scan) on ${INSPECT_TXS} of these transactions, alone in a process: ` +
      `${fmtUs(res.inspect.cpuUsPerCall)} CPU per call (${fmtOps(res.inspect.calls)} calls in ${(res.inspect.wallMs / 1000).toFixed(1)} s). ` +
      `Machine limit: ${fmtOps(res.ed25519.verifiesPerSec)} ed25519 verifications/s on ${res.ed25519.processes} cores (\`ed25519Verify\`, one process per core, ${res.ed25519.durationMs / 1000} s). ` +
      `Landfall ÷ peer: ${fmtRatio(res.ratios['throughputOverPeerSink']!.value)} throughput against the sink, ` +
      `${fmtRatio(res.ratios['throughputOverPeerExecuting']!.value)} with the executing cluster, ${fmtRatio(res.ratios['cpuOverPeer']!.value)} CPU per send at max. ` +
      `Scaling: \`ingressThreads\` 2 ÷ 1: ${fmtRatio(res.ratios['scaling']!.value)} the maximum rate` +
      (res.config.serviceIngressThreadsDefault === null ? ' (this service has no `ingressThreads` setting: both served HTTP on the main thread)' : '') +
      '.',
    '',
    '**Targets**',
    '',
    targetsTable(res.targets, (v, unit) => (unit === 'µs' ? fmtUs(v) : `${v.toFixed(2)}${unit}`)),
    '',
  );
  const missed = res.targets.filter((t) => !t.met && !Number.isNaN(t.measured));
  const unmeasured = res.targets.filter((t) => Number.isNaN(t.measured));
  if (unmeasured.length > 0) {
    out.push(`Not measured: ${unmeasured.map((t) => t.description).join('; ')} (the service recorded no samples where the bench reads them).`, '');
  }
  const unsettled = res.runs.filter((r) => r.phase.settle && !r.phase.settle.complete);
  if (unsettled.length > 0) {
    out.push(
      `Rebroadcasts still in flight ${(unsettled[0]!.phase.settle.ms / 1000).toFixed(0)} s after the load in: ` +
        `${unsettled.map((r) => `${serverLabel(r, res)} ${r.cluster} ${loadLabel(r, res)}`).join('; ')} (their CPU window ends there).`,
      '',
    );
  }
  if (missed.length > 0) {
    const at = (kind: LoadKind): Run => get('landfall', 'sink', kind, res.config.ingressThreads);
    const lfExec = get('landfall', 'executing', 'max');
    const where: Record<string, Run> = {
      'cpu-vs-inspect': lfMax,
      'cpu-fixed-vs-max': at('fixed'),
      'throughput-vs-peer-sink': lfMax,
      'throughput-vs-peer-executing': lfExec,
      'p99-vs-peer': at('half'),
      'loop-delay-p99': at('half'),
      'throughput-vs-ed25519': lfMax,
      'service-latency-p99': at('half'),
    };
    out.push('Missed, by how much, and where that phase’s CPU went (the rows above; largest thread groups, µs per accepted send):', '');
    for (const t of missed) {
      const by = t.comparison === '<=' ? t.measured / t.limit : t.limit / t.measured;
      const r = where[t.id];
      out.push(`- ${t.description}: ${by.toFixed(2)}× off.` + (r ? ` ${serverLabel(r, res)}, ${r.cluster}, ${loadLabel(r, res)}: ${profileLine(r)}.` : ''));
    }
    out.push('');
  }
  out.push(`Raw numbers: \`bench/results/send.json\`; run: \`npm run bench -- send\` (${res.durationSec} s).`);
  return out.join('\n');
}

export const suite: Suite<SendResult> = {
  name: 'send',
  title: 'Performance (send path)',
  run,
  readmeTable,
};

/**
 * Benchmark suite "cluster" (issue 13): several Landfall nodes joined by NATS JetStream.
 *
 * 1. **Limit accuracy** of the demand-weighted shares (`src/cluster/shares.ts`): three node
 *    processes (`hosts/share-node.ts`: the real native buckets, `RateLimiter` and `BudgetSharer`,
 *    nothing else, each its own process as real nodes are) on a 3-server NATS cluster, one account
 *    at RATE sends/s with a burst of RATE. Phases, each with every node offering an open-loop load:
 *    - *all busy*: every node offered 2 × RATE: the most any 1-s window granted across the nodes
 *      ÷ (rate + burst) (target ≤ 1.1) and the steady mean ÷ rate;
 *    - *one alone*: one node offered 2 × RATE, the others idle: its steady 1-s windows ÷ rate
 *      (target ≥ 0.9);
 *    - *NATS down*: every NATS server stopped, every node offered 2 × RATE on its local share.
 *    "Steady" skips the first WARMUP_MS of a phase: the re-balance (≤ one 200 ms report period
 *    plus the 1-s demand window) is part of the scheme and shown apart (the first window).
 * 2. **Whole nodes** (`landfall serve` children, the compiled CLI: `npm run build:ts` first) on one
 *    local Solana cluster: three clustered nodes on a 3-server NATS cluster (replicas 3) and one
 *    single node (no NATS), same tip addresses, same payer, in the same run:
 *    - *hot-path cost*: the same open-loop load of HOT_RATE sends/s (real signed, tipped
 *      transactions, signed before the phase; the plans' rate limits raised out of the way as in
 *      the HTTP suites) on clustered node `a` and on the single node, alternating, after one
 *      unmeasured phase each, ROUNDS rounds each; CPU time of the whole node process from /proc
 *      over the phase and a TAIL_MS tail (tracking, status events) ÷ sends accepted, per thread
 *      too; the median round (target: clustered ≤ 1.05 × single, issue 21);
 *    - *replication lag*: LAG_SAMPLES sends to `a`, one at a time, each followed by polling `b`
 *      every LAG_POLL_MS until the status is readable there: acknowledgement on `a` → readable
 *      on `b`, p50 / p99 / max (resolution: the poll period).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_PLANS, type PlanTable } from '../src/accounts/plans.js';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { LANDFALL_BIN, startClusterNodes, type ClusterNode } from '../harness/cluster-nodes.js';
import { SendLoad, startClusterEnv, statusOn, type ClusterEnv } from '../harness/cluster-load.js';
import { startNatsCluster, type NatsCluster } from '../harness/nats-cluster.js';
import { cpuBetween, readCpu } from './lib/proc-cpu.js';
import { maxInWindow, perWindow } from '../harness/windows.js';
import { spawnChild, type Child } from './lib/child.js';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { tempDir } from '../harness/tmp.js';
import { TxSigner } from './lib/signed.js';
import { benchPlans, sendBody, startLoadgen, TIP_LAMPORTS, writeItems, type Loadgen } from './lib/stack.js';
import { finishMachineInfo, machineInfo, machineLine, mdTable, median, target, targetsTable, warnIfBusy, type Suite, type SuiteResult, type Target } from './lib/suite.js';

/** The account's send rate in the limit phases (burst = one second of it). */
const RATE = 50;
const NODES = 3;
const PHASE_MS = Number(process.env['BENCH_LOAD_MS'] ?? 6000);
/** Skipped at the start of each phase before "steady" windows count. */
const WARMUP_MS = 1500;
const WINDOW_MS = 1000;

/** Hot-path phases: each side gets this many alternating rounds of PHASE_MS. */
const ROUNDS = 5;
/**
 * The hot-path phases' open-loop rate: the low-rate row of the targets suite, which the local
 * cluster executes without falling behind. (At the ~60 sends/s of a closed loop signing with
 * web3.js, a node's per-second work was most of its CPU per send on both sides.)
 */
const HOT_RATE = Number(process.env['BENCH_CLUSTER_RATE'] ?? 400);
const HOT_CONNECTIONS = 32;
/**
 * The validators' QUIC limits lifted as in the HTTP suites (`LOAD_CLUSTER`): every node sends from
 * 127.0.0.1, and Agave's unstaked 20 streams per 100 ms would throttle both sides' first sends.
 */
const LOAD_CHAIN_ARGS = ['--max-streams-per-100ms', '0', '--max-connections-per-peer', '64', '--max-connections-per-ip-per-minute', '0'];
/** Measured after each load phase: the sends' confirmations and their status events. */
const TAIL_MS = 2000;
const LAG_SAMPLES = 100;
const LAG_POLL_MS = 5;

const PLANS: PlanTable = { ...DEFAULT_PLANS, starter: { ...DEFAULT_PLANS.starter, maxTps: RATE, queryTps: 2 * RATE } };

export interface LimitPhase {
  name: 'all-busy' | 'one-alone' | 'nats-down';
  /** Offered sends/s per node. */
  offered: number[];
  /** Granted per node over the phase. */
  granted: number[];
  /** Granted (all nodes) per consecutive 1-s window of the phase. */
  windows: number[];
  /** Most granted (all nodes) in any 1-s window of the phase, warm-up included, ÷ (rate + burst). */
  maxWindowRatio: number;
  /** Mean granted per second after the warm-up ÷ rate (all nodes, or the one busy node). */
  steadyRatio: number;
  /** Least granted in a whole 1-s window after the warm-up ÷ rate. */
  minWindowRatio: number;
}

export interface HotPathSide {
  accepted: number;
  refused: number;
  cpuMs: number;
  wallMs: number;
  /** CPU µs of the node process per accepted send. */
  cpuUsPerSend: number;
  /** CPU of the idle node (no sends), ms per wall second: timers, NATS pings, leases, reports. */
  idleCpuMsPerSec: number;
  /** (CPU under load − idle CPU over the same time) ÷ sends accepted, µs: the per-send cost. */
  marginalUsPerSend: number;
  /** CPU per accepted send by thread name (`bench/lib/thread-names.cjs`), µs. */
  threadsUsPerSend: Record<string, number>;
  /** Load generator's latency, µs. */
  p50Us: number;
  p99Us: number;
  /** JetStream messages of status events published per second over the phase and its tail. */
  statusMessagesPerSec: number;
  /** CPU per send of each round, µs (the figures above are the median round's). */
  rounds?: number[];
}

export interface ClusterResult extends SuiteResult {
  suite: 'cluster';
  config: { rate: number; burst: number; nodes: number; phaseMs: number; warmupMs: number; rounds: number; hotRate: number; tailMs: number; lagSamples: number; lagPollMs: number };
  limits: LimitPhase[];
  /** `ratio`: clustered ÷ single CPU per accepted send; `marginalRatio`: the same, idle CPU taken out. */
  hotPath: { clustered: HotPathSide; single: HotPathSide; ratio: number; marginalRatio: number };
  /** Acknowledgement on node a → readable on node b, ms. */
  lag: { p50: number; p99: number; max: number; samples: number };
  targets: Target[];
}

async function limitPhase(name: LimitPhase['name'], nodes: Child[], offered: number[]): Promise<LimitPhase> {
  const startAt = Date.now() + 300;
  const results = await Promise.all(
    nodes.map((n, i) => n.call<{ granted: number[]; refused: number }>('load', { rate: offered[i]!, ms: PHASE_MS, startAt }, PHASE_MS + 30_000)),
  );
  const all = results.flatMap((r) => r.granted);
  const end = startAt + PHASE_MS;
  const steadyFrom = startAt + WARMUP_MS;
  const busy = offered.map((o, i) => (o > 0 ? i : -1)).filter((i) => i >= 0);
  const busyGrants = busy.flatMap((i) => results[i]!.granted);
  const steady = perWindow(busyGrants, WINDOW_MS, steadyFrom, end);
  return {
    name,
    offered,
    granted: results.map((r) => r.granted.length),
    windows: perWindow(all, WINDOW_MS, startAt, end),
    maxWindowRatio: maxInWindow(all, WINDOW_MS, startAt, end) / (2 * RATE),
    steadyRatio: steady.reduce((a, b) => a + b, 0) / steady.length / RATE,
    minWindowRatio: Math.min(...steady) / RATE,
  };
}

/** Until `method` answers `want` on every node (bounded). */
async function waitForAll(nodes: Child[], method: 'mode' | 'live', want: string | number, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const got = await Promise.all(nodes.map((n) => n.call(method)));
    if (got.every((g) => g === want)) return;
    await sleep(100);
  }
  throw new Error(`nodes did not all answer ${method} = ${want}`);
}

/** Part 1: the limit phases on share-node processes. */
async function limitPhases(): Promise<LimitPhase[]> {
  const nats: NatsCluster = await startNatsCluster(NODES);
  const nodes: Child[] = [];
  try {
    for (let i = 0; i < NODES; i++) {
      const c = await spawnChild(`share-node-${i}`, new URL('./hosts/share-node.ts', import.meta.url));
      nodes.push(c);
      await c.call('start', { servers: [nats.urls[i]!], node: `node-${i}`, plans: PLANS, accountId: 'bench-account' });
    }
    await waitForAll(nodes, 'mode', 'shared');
    await waitForAll(nodes, 'live', NODES); // every node hears every other's reports
    const limits: LimitPhase[] = [];
    limits.push(await limitPhase('all-busy', nodes, [2 * RATE, 2 * RATE, 2 * RATE]));
    await sleep(2000); // the demand window empties
    limits.push(await limitPhase('one-alone', nodes, [2 * RATE, 0, 0]));
    for (let i = 0; i < NODES; i++) await nats.stop(i);
    await waitForAll(nodes, 'mode', 'local-share');
    limits.push(await limitPhase('nats-down', nodes, [2 * RATE, 2 * RATE, 2 * RATE]));

    return limits;
  } finally {
    for (const n of nodes) await n.close().catch(() => {});
    await nats.close();
  }
}

const quantile = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

/**
 * One open-loop phase of HOT_RATE sends/s on `node` (transactions signed beforehand, on a fresh
 * blockhash, so the load generator's own work is the same on both sides), then TAIL_MS with no
 * load: the sends' tracking and the status events they cause are part of their cost. CPU of the
 * node process over load and tail, from /proc, per thread.
 */
async function hotPathPhase(env: ClusterEnv, node: ClusterNode, key: string, h: HotPathHarness, round: number): Promise<HotPathSide> {
  const pid = node.pid();
  if (pid === null) throw new Error(`node ${node.name} is not running`);
  const { blockhash } = await env.connection.getLatestBlockhash('confirmed');
  const txs = h.signer.sign(blockhash, Math.ceil((HOT_RATE * PHASE_MS) / 1000) + 100);
  const itemsFile = writeItems(h.dir, `hot-${node.name}-${round}`, txs.map(sendBody));
  const messagesBefore = await statusMessages(node, key);
  const before = readCpu(pid);
  const r = await h.loadgen.load({
    origin: node.url,
    method: 'POST',
    path: '/v1/send',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    itemsFile,
    reuse: false,
    connections: HOT_CONNECTIONS,
    durationMs: PHASE_MS,
    rate: HOT_RATE,
  });
  await sleep(TAIL_MS);
  const cpu = cpuBetween(before, readCpu(pid));
  const messages = (await statusMessages(node, key)) - messagesBefore;
  if (r.transportErrors > 0) throw new Error(`${r.transportErrors} sends to ${node.name} failed: ${r.firstError}`);
  const accepted = r.statusCounts['200'] ?? 0;
  if (accepted === 0) throw new Error(`no send accepted by ${node.name}: ${JSON.stringify(r.statusCounts)}`);
  const threads: Record<string, number> = {};
  for (const [name, t] of Object.entries(cpu.byName)) threads[name] = (1000 * t.ms) / accepted;
  return {
    accepted,
    refused: r.completed - accepted,
    cpuMs: cpu.totalMs,
    wallMs: cpu.wallMs,
    cpuUsPerSend: (1000 * cpu.totalMs) / accepted,
    idleCpuMsPerSec: 0,
    marginalUsPerSend: 0,
    threadsUsPerSend: threads,
    p50Us: r.latency.p50Us,
    p99Us: r.latency.p99Us,
    statusMessagesPerSec: (1000 * messages) / cpu.wallMs,
  };
}

/** The node's `landfall_cluster_status_messages_total` (0 on a single node). */
async function statusMessages(node: ClusterNode, key: string): Promise<number> {
  const text = await (await fetch(`${node.url}/metrics`, { headers: { authorization: `Bearer ${key}` } })).text();
  const m = /^landfall_cluster_status_messages_total (\d+)/m.exec(text);
  return m ? Number(m[1]) : 0;
}

interface HotPathHarness {
  dir: string;
  loadgen: Loadgen;
  signer: TxSigner;
}

/** The node's CPU over PHASE_MS with no load, ms per second. */
async function idleCpu(node: ClusterNode): Promise<number> {
  const before = readCpu(node.pid()!);
  await sleep(PHASE_MS);
  const cpu = cpuBetween(before, readCpu(node.pid()!));
  return (1000 * cpu.totalMs) / cpu.wallMs;
}

function withIdle(s: HotPathSide, idleCpuMsPerSec: number): HotPathSide {
  const marginalMs = s.cpuMs - (idleCpuMsPerSec * s.wallMs) / 1000;
  return { ...s, idleCpuMsPerSec, marginalUsPerSend: (1000 * marginalMs) / s.accepted };
}

/** The round whose CPU per send is the median (its other figures with it). */
function medianRound(rounds: HotPathSide[], idle: number): HotPathSide {
  const m = median(rounds.map((r) => r.cpuUsPerSend));
  const best = rounds.reduce((a, b) => (Math.abs(b.cpuUsPerSend - m) < Math.abs(a.cpuUsPerSend - m) ? b : a));
  return withIdle({ ...best, cpuUsPerSend: m, rounds: rounds.map((r) => Math.round(r.cpuUsPerSend)) }, idle);
}

/** Part 2: whole nodes, clustered and single, on one chain. */
async function nodePhases(): Promise<Pick<ClusterResult, 'hotPath' | 'lag'>> {
  const nodeArgs = (): { execArgv: string[] } => ({ execArgv: nodeExecArgv() });
  const plans = benchPlans();
  const env = await startClusterEnv({ seed: 'bench-cluster', slotMs: 400, names: ['a', 'b', 'c'], config: { plans }, nodeArgs, chainArgs: LOAD_CHAIN_ARGS });
  const tmp = tempDir('landfall-bench-cluster-');
  let loadgen: Loadgen | null = null;
  try {
    const [a, b] = [env.cluster.nodes[0]!, env.cluster.nodes[1]!];
    const single = await startClusterNodes(['single'], { nats: [], rpcUrl: env.chain.rpcUrl, wsUrl: env.chain.wsUrl, config: { tipAddresses: env.tips.map((t) => t.toBase58()), plans }, nodeArgs });
    try {
      const solo = single.nodes[0]!;
      const { stdout } = await promisify(execFile)(process.execPath, [LANDFALL_BIN, 'accounts', 'create', '--name', 'bench', '--plan', 'whale', '--json', '--data', solo.dataDir]);
      const soloKey = (JSON.parse(stdout) as { api_key: string }).api_key;
      loadgen = await startLoadgen();
      const h: HotPathHarness = { dir: tmp.dir, loadgen, signer: new TxSigner(env.payer, env.tips.map((t) => t.toBase58()), TIP_LAMPORTS) };
      // Idle first (the sends' trackers would still be busy after a load phase).
      const idleClustered = await idleCpu(a);
      const idleSingle = await idleCpu(solo);
      // One unmeasured phase each: JIT warm-up, connections to the leaders, the account's share.
      await hotPathPhase(env, a, env.key, h, -1);
      await hotPathPhase(env, solo, soloKey, h, -1);
      const clustered: HotPathSide[] = [];
      const alone: HotPathSide[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        clustered.push(await hotPathPhase(env, a, env.key, h, r));
        alone.push(await hotPathPhase(env, solo, soloKey, h, r));
      }

      const lags: number[] = [];
      for (let i = 0; i < LAG_SAMPLES; i++) {
        const load = new SendLoad(env, [a], { workers: 1, gapMs: 1 });
        await waitForAck(load);
        await load.stop();
        const ack = load.acks[0]!;
        for (;;) {
          const r = await statusOn(b, env.key, ack.signature);
          if (r.status === 200) break;
          if (Date.now() - ack.at > 30_000) throw new Error(`${ack.signature} not on b after 30 s`);
          await sleep(LAG_POLL_MS);
        }
        lags.push(Date.now() - ack.at);
      }
      lags.sort((x, y) => x - y);
      // A clean exit writes the nodes' `--cpu-prof` profiles (a kill writes none).
      if (process.env['BENCH_CPU_PROF']) await Promise.all([a.stop(), solo.stop()]);
      const c = medianRound(clustered, idleClustered);
      const s1 = medianRound(alone, idleSingle);
      return {
        hotPath: { clustered: c, single: s1, ratio: c.cpuUsPerSend / s1.cpuUsPerSend, marginalRatio: c.marginalUsPerSend / s1.marginalUsPerSend },
        lag: { p50: quantile(lags, 0.5), p99: quantile(lags, 0.99), max: lags[lags.length - 1]!, samples: lags.length },
      };
    } finally {
      await single.close();
    }
  } finally {
    await loadgen?.child.close();
    await env.close();
    tmp.cleanup();
  }
}

/** Node options of the measured nodes: thread names for the per-thread CPU, and `BENCH_CPU_PROF`. */
function nodeExecArgv(): string[] {
  const names = fileURLToPath(new URL('./lib/thread-names.cjs', import.meta.url));
  const prof = process.env['BENCH_CPU_PROF'];
  return ['--require', names, ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${join(prof, 'cluster-nodes')}`] : [])];
}

/** Until the load's first acknowledgement. */
async function waitForAck(load: SendLoad): Promise<void> {
  const end = Date.now() + 10_000;
  while (load.acks.length === 0) {
    if (Date.now() > end) throw new Error('no send acknowledged in 10 s');
    await sleep(1);
  }
}

async function run(): Promise<ClusterResult> {
  const machine = machineInfo();
  warnIfBusy(machine);
  const limits = await limitPhases();
  const { hotPath, lag } = await nodePhases();
  const [allBusy, alone, down] = [limits[0]!, limits[1]!, limits[2]!];
  const targets = [
    target('limit-all', 'all nodes busy: most granted in any 1-s window ≤ 1.1 × (rate + burst)', allBusy.maxWindowRatio, 'ratio', '<=', 1.1),
    target('limit-alone', 'one node alone: its least 1-s window ≥ 90 % of the rate', alone.minWindowRatio, 'ratio', '>=', 0.9),
    target('limit-down', 'NATS down (local shares): most granted in any 1-s window ≤ 1.1 × (rate + burst)', down.maxWindowRatio, 'ratio', '<=', 1.1),
    target('hot-path', `CPU per accepted send at ${HOT_RATE} sends/s, clustered ÷ single node ≤ 1.05`, hotPath.ratio, 'ratio', '<=', 1.05),
    target('hot-path-marginal', `CPU per accepted send above idle at ${HOT_RATE} sends/s, clustered ÷ single node ≤ 1.05`, hotPath.marginalRatio, 'ratio', '<=', 1.05),
  ];
  return {
    suite: 'cluster',
    machine: finishMachineInfo(machine),
    config: { rate: RATE, burst: RATE, nodes: NODES, phaseMs: PHASE_MS, warmupMs: WARMUP_MS, rounds: ROUNDS, hotRate: HOT_RATE, tailMs: TAIL_MS, lagSamples: LAG_SAMPLES, lagPollMs: LAG_POLL_MS },
    limits,
    hotPath,
    lag,
    targets,
  };
}

function readmeTable(r: ClusterResult): string {
  const pct = (x: number): string => `${(100 * x).toFixed(1)} %`;
  return [
    machineLine(r.machine, `${r.config.nodes} node processes on a ${r.config.nodes}-server NATS cluster`),
    '',
    `Limit accuracy of the demand-weighted shares: one account at ${r.config.rate} sends/s (burst ${r.config.burst}), ` +
      `${r.config.nodes} nodes each offered an open-loop load for ${r.config.phaseMs / 1000} s per phase; "steady" skips the first ${r.config.warmupMs / 1000} s (the re-balance).`,
    '',
    mdTable(
      ['phase', 'offered per node (req/s)', 'granted per node', 'granted per 1-s window (all nodes)', 'max 1-s window ÷ (rate + burst)', 'steady granted ÷ rate', 'least steady window ÷ rate'],
      r.limits.map((p) => [p.name, p.offered.join(' / '), p.granted.join(' / '), p.windows.join(', '), pct(p.maxWindowRatio), pct(p.steadyRatio), pct(p.minWindowRatio)]),
    ),
    '',
    `Whole nodes (\`landfall serve\` children, one local cluster, 400 ms slots, rate limits raised out of the way): the same open-loop load of ${r.config.hotRate} sends/s (real tipped transactions, signed before each phase) on clustered node a (3 nodes, 3 NATS servers, replicas 3) and on a single node, alternating, ${r.config.rounds} rounds of ${r.config.phaseMs / 1000} s each after one unmeasured round; CPU of the whole node process from /proc over the phase and a ${r.config.tailMs / 1000} s tail; the median round. Replication lag: ${r.config.lagSamples} sends to a one at a time, each polled on b every ${r.config.lagPollMs} ms until readable.`,
    '',
    mdTable(
      ['node', 'sends accepted (per s)', 'refused', 'CPU per accepted send (rounds)', 'idle CPU', 'CPU per send above idle', 'p50 / p99', 'status messages per s'],
      sides(r).map(([name, x]) => [
        name,
        `${x.accepted} (${((1000 * x.accepted) / (x.wallMs - r.config.tailMs)).toFixed(0)})`,
        String(x.refused),
        `${x.cpuUsPerSend.toFixed(0)} µs (${(x.rounds ?? []).join(', ')})`,
        `${x.idleCpuMsPerSec.toFixed(0)} ms/s`,
        `${x.marginalUsPerSend.toFixed(0)} µs`,
        `${(x.p50Us / 1000).toFixed(2)} / ${(x.p99Us / 1000).toFixed(2)} ms`,
        (x.statusMessagesPerSec ?? 0).toFixed(0),
      ]),
    ),
    '',
    threadTable(r),
    '',
    mdTable(['replication lag (ack on a → readable on b)', 'p50', 'p99', 'max'], [[`${r.lag.samples} sends`, `${r.lag.p50} ms`, `${r.lag.p99} ms`, `${r.lag.max} ms`]]),
    '',
    targetsTable(r.targets, (v) => pct(v)),
  ].join('\n');
}

const sides = (r: ClusterResult): [string, HotPathSide][] => [
  ['clustered (a)', r.hotPath.clustered],
  ['single', r.hotPath.single],
];

/** CPU per send by thread, µs, in the median rounds. */
function threadTable(r: ClusterResult): string {
  const names = [...new Set(sides(r).flatMap(([, x]) => Object.keys(x.threadsUsPerSend ?? {})))].sort();
  return mdTable(
    ['thread (µs per send)', ...sides(r).map(([n]) => n)],
    names.map((t) => [t, ...sides(r).map(([, x]) => (x.threadsUsPerSend?.[t] ?? 0).toFixed(0))]),
  );
}

export const suite: Suite<ClusterResult> = {
  name: 'cluster',
  title: 'Benchmark: several nodes (cluster)',
  run,
  readmeTable,
};

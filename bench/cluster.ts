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
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_PLANS, type PlanTable } from '../src/accounts/plans.js';
import { startNatsCluster, type NatsCluster } from '../test/helpers/nats-cluster.js';
import { maxInWindow, perWindow } from '../test/helpers/windows.js';
import { spawnChild, type Child } from './lib/child.js';
import { finishMachineInfo, machineInfo, machineLine, mdTable, target, targetsTable, warnIfBusy, type Suite, type SuiteResult, type Target } from './lib/suite.js';

/** The account's send rate in the limit phases (burst = one second of it). */
const RATE = 50;
const NODES = 3;
const PHASE_MS = Number(process.env['BENCH_LOAD_MS'] ?? 6000);
/** Skipped at the start of each phase before "steady" windows count. */
const WARMUP_MS = 1500;
const WINDOW_MS = 1000;

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

export interface ClusterResult extends SuiteResult {
  suite: 'cluster';
  config: { rate: number; burst: number; nodes: number; phaseMs: number; warmupMs: number };
  limits: LimitPhase[];
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

async function waitForMode(nodes: Child[], mode: string, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const modes = await Promise.all(nodes.map((n) => n.call<string>('mode')));
    if (modes.every((m) => m === mode)) return;
    await sleep(100);
  }
  throw new Error(`nodes did not reach budget mode ${mode}`);
}

/** Until every node hears every other's demand reports. */
async function waitForLive(nodes: Child[], n: number, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const live = await Promise.all(nodes.map((c) => c.call<number>('live')));
    if (live.every((l) => l === n)) return;
    await sleep(100);
  }
  throw new Error(`nodes did not all see ${n} live nodes`);
}

async function run(): Promise<ClusterResult> {
  const machine = machineInfo();
  warnIfBusy(machine);
  const nats: NatsCluster = await startNatsCluster(NODES);
  const nodes: Child[] = [];
  try {
    for (let i = 0; i < NODES; i++) {
      const c = await spawnChild(`share-node-${i}`, new URL('./hosts/share-node.ts', import.meta.url));
      nodes.push(c);
      await c.call('start', { servers: [nats.urls[i]!], node: `node-${i}`, plans: PLANS, accountId: 'bench-account' });
    }
    await waitForMode(nodes, 'shared');
    await waitForLive(nodes, NODES);
    const limits: LimitPhase[] = [];
    limits.push(await limitPhase('all-busy', nodes, [2 * RATE, 2 * RATE, 2 * RATE]));
    await sleep(2000); // the demand window empties
    limits.push(await limitPhase('one-alone', nodes, [2 * RATE, 0, 0]));
    for (let i = 0; i < NODES; i++) await nats.stop(i);
    await waitForMode(nodes, 'local-share');
    limits.push(await limitPhase('nats-down', nodes, [2 * RATE, 2 * RATE, 2 * RATE]));

    const allBusy = limits[0]!;
    const alone = limits[1]!;
    const down = limits[2]!;
    const targets = [
      target('limit-all', 'all nodes busy: most granted in any 1-s window ≤ 1.1 × (rate + burst)', allBusy.maxWindowRatio, 'ratio', '<=', 1.1),
      target('limit-alone', 'one node alone: its least 1-s window ≥ 90 % of the rate', alone.minWindowRatio, 'ratio', '>=', 0.9),
      target('limit-down', 'NATS down (local shares): most granted in any 1-s window ≤ 1.1 × (rate + burst)', down.maxWindowRatio, 'ratio', '<=', 1.1),
    ];
    return {
      suite: 'cluster',
      machine: finishMachineInfo(machine),
      config: { rate: RATE, burst: RATE, nodes: NODES, phaseMs: PHASE_MS, warmupMs: WARMUP_MS },
      limits,
      targets,
    };
  } finally {
    for (const n of nodes) await n.close().catch(() => {});
    await nats.close();
  }
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
    targetsTable(r.targets, (v) => pct(v)),
  ].join('\n');
}

export const suite: Suite<ClusterResult> = {
  name: 'cluster',
  title: 'Benchmark: several nodes (cluster)',
  run,
  readmeTable,
};

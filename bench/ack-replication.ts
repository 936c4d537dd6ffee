/**
 * Benchmark suite "ack-replication" (issue 32): what `ackReplication: quorum` adds to a send's
 * response. One local Solana cluster, a 3-server NATS cluster (JetStream R3), two clustered
 * `landfall serve` nodes (the compiled CLI: `npm run build:ts` first) on it: `l` in `local`, `q`
 * in `quorum` (the same config file, `q` given `LANDFALL_ACK_REPLICATION=quorum`). Rounds
 * alternate between them (ROUNDS each, after one unmeasured round each): a closed-loop load of
 * WORKERS concurrent senders, one real signed, tipped transaction after another, for ROUND_MS;
 * each response's time from the request to its 200 (client side, `performance.now()`), p50 / p99
 * per round; the median round of each side. The machine may be busy with other work: the load
 * average is in the result, and alternated rounds keep both sides under the same conditions.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_PLANS } from '../src/accounts/plans.js';
import type { ClusterNode } from '../harness/cluster-nodes.js';
import { LOAD_TIP, startClusterEnv, type ClusterEnv } from '../harness/cluster-load.js';
import { legacyTx, transfer } from '../harness/transactions.js';
import { finishMachineInfo, machineInfo, machineLine, mdTable, median, warnIfBusy, type MachineInfo, type Suite, type SuiteResult } from './lib/suite.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 5);
const ROUND_MS = Number(process.env['BENCH_LOAD_MS'] ?? 4000);
const WORKERS = 4;

interface Round {
  sends: number;
  p50Ms: number;
  p99Ms: number;
  refused: number;
}

export interface AckReplicationResult extends SuiteResult {
  suite: 'ack-replication';
  machine: MachineInfo;
  config: { rounds: number; roundMs: number; workers: number };
  local: Round & { rounds: Round[] };
  quorum: Round & { rounds: Round[] };
  added: { p50Ms: number; p99Ms: number };
}

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
}

let unique = 0;

async function round(env: ClusterEnv, node: ClusterNode): Promise<Round> {
  const times: number[] = [];
  let refused = 0;
  const { blockhash } = await env.connection.getLatestBlockhash('confirmed');
  const end = performance.now() + ROUND_MS;
  await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      while (performance.now() < end) {
        const tx = legacyTx([transfer(env.payer.publicKey, env.payer.publicKey, 2_000_000 + ++unique), transfer(env.payer.publicKey, env.tips[unique % env.tips.length]!, LOAD_TIP)], {
          feePayer: env.payer,
          blockhash,
        });
        const body = JSON.stringify({ transaction: tx.base64 });
        const t0 = performance.now();
        const r = await fetch(`${node.url}/v1/send`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${env.key}` }, body });
        await r.arrayBuffer();
        if (r.status === 200) times.push(performance.now() - t0);
        else refused++;
      }
    }),
  );
  return { sends: times.length, p50Ms: percentile(times, 0.5), p99Ms: percentile(times, 0.99), refused };
}

const mid = (rs: Round[]): Round => ({
  sends: median(rs.map((r) => r.sends)),
  p50Ms: median(rs.map((r) => r.p50Ms)),
  p99Ms: median(rs.map((r) => r.p99Ms)),
  refused: median(rs.map((r) => r.refused)),
});

async function run(): Promise<AckReplicationResult> {
  const machine = machineInfo();
  warnIfBusy(machine);
  const plans = { ...DEFAULT_PLANS, whale: { ...DEFAULT_PLANS.whale, maxTps: 5_000, queryTps: 5_000 } };
  const env = await startClusterEnv({
    seed: 'bench-ack-replication',
    slotMs: 100,
    names: ['l', 'q'],
    config: { plans },
    nodeArgs: (name) => (name === 'q' ? { env: { LANDFALL_ACK_REPLICATION: 'quorum' } } : {}),
  });
  try {
    const [l, q] = env.cluster.nodes as [ClusterNode, ClusterNode];
    await round(env, l);
    await round(env, q);
    const local: Round[] = [];
    const quorum: Round[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      // Alternated, and each side first in turn.
      for (const side of i % 2 === 0 ? ['l', 'q'] : ['q', 'l']) {
        const r = await round(env, side === 'l' ? l : q);
        (side === 'l' ? local : quorum).push(r);
        console.log(`round ${i + 1} ${side === 'l' ? 'local ' : 'quorum'}: ${r.sends} sends, p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms`);
        await sleep(500);
      }
    }
    const lm = mid(local);
    const qm = mid(quorum);
    return {
      suite: 'ack-replication',
      machine: finishMachineInfo(machine),
      config: { rounds: ROUNDS, roundMs: ROUND_MS, workers: WORKERS },
      local: { ...lm, rounds: local },
      quorum: { ...qm, rounds: quorum },
      added: { p50Ms: qm.p50Ms - lm.p50Ms, p99Ms: qm.p99Ms - lm.p99Ms },
    };
  } finally {
    await env.close();
  }
}

function readmeTable(r: AckReplicationResult): string {
  const f = (x: number) => x.toFixed(2);
  const row = (name: string, x: Round): string[] => [name, String(x.sends), f(x.p50Ms), f(x.p99Ms)];
  return [
    mdTable(['ackReplication', 'sends per round', 'response p50 (ms)', 'response p99 (ms)'], [row('`local`', r.local), row('`quorum`', r.quorum), ['added by `quorum`', '', f(r.added.p50Ms), f(r.added.p99Ms)]]),
    '',
    `Median of ${r.config.rounds} alternated rounds of ${r.config.roundMs / 1000} s per side, ${r.config.workers} concurrent senders (closed loop), two clustered nodes on one 3-server NATS cluster (JetStream R3) and the local cluster, all on this machine. ` +
      machineLine(r.machine, '`npm run bench -- ack-replication`'),
  ].join('\n');
}

export const suite: Suite<AckReplicationResult> = { name: 'ack-replication', title: 'Replicated acknowledgement', run, readmeTable };

/**
 * A/B of the ingress path in one run: two service builds (two worktrees' `bench/hosts/landfall.ts`,
 * each importing its own `src/`) against one sink cluster and one load generator, alternated,
 * each phase on a fresh process: closed-loop max rate of `POST /v1/send`, CPU µs per accepted
 * request for the whole process and per thread name (`/proc`), one ingress thread.
 *
 *   node --import tsx bench/ingress-ab.ts <dirA> <dirB> [rounds]
 * BENCH_LOAD_MS sets each measured phase (default 8000). BENCH_CPU_PROF=<dir> writes profiles.
 * BENCH_AB_RATE=<req/s> measures at that open-loop rate instead of the maximum (per-wakeup costs).
 * BENCH_AB_CONFIG_A / BENCH_AB_CONFIG_B=<json> merge settings into one variant's service config
 * (an ablation of a setting: the same directory twice, e.g. '{"quicFirstSendNice":0}').
 * BENCH_AB_NODE_ARGS_A / BENCH_AB_NODE_ARGS_B=<flags> add Node/V8 flags to one variant's process
 * (space-separated, e.g. '--max-semi-space-size=32').
 * BENCH_AB_HEAP=1 also prints, after each phase, the service's array buffers and V8 heap after a
 * full collection, per send still in flight (what a send's state holds while it is in flight).
 * Each variant's service-added latency (whole and native part) is pooled over its phases: p50,
 * p99 (bucket bounds) and the share of first sends over 1 ms (exact: 1 ms is a bucket bound).
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Keypair, LAMPORTS_PER_SOL } from '@solana/web3.js';
import { DEFAULT_CONFIG } from '../src/config.js';
import { INSTRUMENT, spawnChild, type Child } from './lib/child.js';
import { loadMs, maxPhase, ratePhase, SINGLE_SEND, type Server } from './lib/phase.js';
import { tempDir } from '../harness/tmp.js';
import { benchPlans, freePort, SINK_CLUSTER, startCluster, startLoadgen, TIP_LAMPORTS, writeItems, type Stack } from './lib/stack.js';
import { TxSigner } from './lib/signed.js';
import { loopDelaysOf } from './lib/phase.js';
import type { LatencySummary } from './hosts/landfall.js';
import { pooledLatency } from './targets.js';

const [dirA, dirB, roundsArg] = process.argv.slice(2);
if (!dirA || !dirB) throw new Error('usage: ingress-ab.ts <dirA> <dirB> [rounds]');
const rounds = Number(roundsArg ?? 3);
const rate = process.env.BENCH_AB_RATE ? Number(process.env.BENCH_AB_RATE) : null;
const tmp = tempDir('landfall-ab-');
const cluster = await startCluster(SINK_CLUSTER);
const tipAddresses = Array.from({ length: 8 }, () => Keypair.generate().publicKey.toBase58());
const payer = Keypair.generate();
await cluster.airdrop(tipAddresses, BigInt(LAMPORTS_PER_SOL));
await cluster.airdrop([payer.publicKey.toBase58()], 2000n * BigInt(LAMPORTS_PER_SOL));
const loadgen = await startLoadgen();
const signer = new TxSigner(payer, tipAddresses, TIP_LAMPORTS);

let child: Child | null = null;
let url = '';
let apiKey = '';
let gen = 0;
async function startVariant(dir: string, name: string): Promise<void> {
  const overrides = JSON.parse(process.env[`BENCH_AB_CONFIG_${name}`] ?? '{}') as Record<string, unknown>;
  await child?.close();
  const port = await freePort();
  const nodeArgs = (process.env[`BENCH_AB_NODE_ARGS_${name}`] ?? '').split(' ').filter((a) => a !== '');
  child = await spawnChild(name, pathToFileURL(join(dir, 'bench/hosts/landfall.ts')), [...INSTRUMENT, ...nodeArgs]);
  const config = {
    ...DEFAULT_CONFIG,
    port,
    dataDir: join(tmp.dir, `data-${gen++}`),
    rpcUrl: cluster.rpcUrl,
    wsUrl: cluster.wsUrl,
    plans: benchPlans(),
    tipAddresses,
    logLevel: 'warn',
    ingressThreads: 1,
    ...overrides,
  };
  url = (await child.call<{ url: string }>('start', config)).url;
  apiKey = (await child.call<{ key: string }>('createAccount', { name: 'bench', plan: 'starter' })).key;
}

const stack = {
  dir: tmp.dir,
  cluster,
  loadgen,
  tipAddresses,
  transactions: async (count: number) => signer.sign(await cluster.blockhash(), count),
  items: (name: string, lines: Iterable<string>) => writeItems(tmp.dir, name, lines),
  load: (spec: Parameters<Stack['load']>[0]) => loadgen.load(spec),
} as unknown as Stack;

function server(name: string, dir: string): Server {
  return {
    name,
    get url() {
      return url;
    },
    get apiKey() {
      return apiKey;
    },
    get pid() {
      return child!.pid;
    },
    prepare: () => startVariant(dir, name),
    reset: () => child!.call('reset'),
    async snapshot() {
      const s = await child!.call<{ memory: never; cpuMs: number; loopDelay: never }>('snapshot');
      return { service: s as never, memory: s.memory, cpuMs: s.cpuMs, loopDelay: s.loopDelay };
    },
    async settle() {
      return { ms: 0, complete: true };
    },
    loopDelays: loopDelaysOf(() => child!),
  };
}

const results: Record<string, Array<{ rps: number; total: number; byName: Record<string, number>; wakeups: Record<string, number> }>> = { A: [], B: [] };
const latencies: Record<string, { whole: LatencySummary[]; native: LatencySummary[] }> = { A: { whole: [], native: [] }, B: { whole: [], native: [] } };

/** p50 and p99 (bucket bounds) and the share over 1 ms, for people. */
function latencyLine(l: LatencySummary | null): string {
  if (l === null || l.count === 0) return 'none';
  const within = l.buckets.find((b) => b.leUs === 1000)?.count ?? 0;
  const bound = (us: number | null): string => (us === null ? '> top' : `≤ ${us} µs`);
  return `p50 ${bound(l.p50Us)}, p99 ${bound(l.p99Us)}, over 1 ms ${(((l.count - within) / l.count) * 100).toFixed(2)} % of ${l.count}`;
}
for (let r = 0; r < rounds; r++) {
  for (const [v, dir] of r % 2 === 0 ? [['A', dirA], ['B', dirB]] : [['B', dirB], ['A', dirA]]) {
    const s = server(v!, dir!);
    let p;
    for (let attempt = 0; ; attempt++) {
      try {
        p = rate === null ? await maxPhase(stack, s, SINGLE_SEND, loadMs(), 40_000) : await ratePhase(stack, s, SINGLE_SEND, rate, loadMs());
        break;
      } catch (e) {
        // A loaded machine can time a send out (a 500): that phase is run again.
        if (attempt >= 2) throw e;
        console.log(`${v} phase failed (${(e as Error).message.slice(0, 120)}); again`);
      }
    }
    const cpu = p.cpu[v!]!;
    const byName: Record<string, number> = {};
    // Wake-ups per 100 accepted sends, per thread name.
    const wakeups: Record<string, number> = {};
    for (const [n, t] of Object.entries(cpu.byName)) {
      byName[n] = Math.round((t.ms * 1000) / p.accepted);
      wakeups[n] = Math.round((t.wakeups * 100) / p.accepted);
    }
    results[v!]!.push({ rps: Math.round(p.load.achievedRps), total: Math.round(p.cpuPerAcceptedUs), byName, wakeups });
    console.log(v, JSON.stringify(results[v!]!.at(-1)));
    const service = p.service;
    // Both variants must have done the same work: streams written and failed per accepted send.
    if (service) {
      console.log(`${v} QUIC writes per send ${(service.sends.ok / p.accepted).toFixed(2)}, failed ${service.sends.failed}, drops ${JSON.stringify(service.drops)}`);
      latencies[v!]!.whole.push(service.serviceLatency);
      latencies[v!]!.native.push(service.nativeLatency);
    }
    console.log(`${v} service-added: ${latencyLine(service?.serviceLatency ?? null)}; native part: ${latencyLine(service?.nativeLatency ?? null)}`);
    if (process.env.BENCH_AB_HEAP === '1') {
      // What the process holds per send still in flight (on the sink nothing lands: every flight
      // runs until its blockhash dies), after a full collection: live objects, not garbage.
      const h = await child!.call<{ arrayBuffersMiB: number; heapUsedMiB: number; inFlight: number; liveTraces: number }>('heap', { gc: true });
      const kb = (mib: number): string => (h.inFlight > 0 ? ((mib * 1024) / h.inFlight).toFixed(2) : '-');
      console.log(`${v} after a full GC: ${h.inFlight} in flight, ${h.liveTraces} live traces; array buffers ${h.arrayBuffersMiB} MiB (${kb(h.arrayBuffersMiB)} KB a send in flight), V8 heap used ${h.heapUsedMiB} MiB (${kb(h.heapUsedMiB)} KB)`);
    }
  }
}
await (child as Child | null)?.close();
await loadgen.child.close();
await cluster.child.close();
tmp.cleanup();
const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const v of ['A', 'B']) {
  const rs = results[v]!;
  console.log(`${v} service-added, pooled: ${latencyLine(pooledLatency(latencies[v]!.whole))}; native part: ${latencyLine(pooledLatency(latencies[v]!.native))}`);
  console.log(`${v}: median rps ${med(rs.map((x) => x.rps))}, µs/send ${med(rs.map((x) => x.total))}, ingress(node-worker) ${med(rs.map((x) => x.byName['node-worker'] ?? 0))}, main ${med(rs.map((x) => x.byName['main'] ?? 0))}`);
}

/**
 * What the HTTP suites share: a local cluster, the Landfall service and the load generator, each
 * in its own process (see `child.ts`), an account on a plan whose rate limits are raised out of
 * the way, a funded fee payer, and the files the load generator reads its requests from.
 *
 * The cluster executes what lands (`LOAD_CLUSTER`) or is a sink that only counts what arrives
 * (`SINK_CLUSTER`); the service can be restarted on a fresh data directory between phases
 * (`restartLandfall`), with its ingress thread count as an option.
 *
 * The tests' stack (`harness/stack.ts`) runs the service and cluster in the test's own process;
 * this one puts each part in a process of its own, so each one's CPU can be read from `/proc` and
 * none shares an event loop with another. Both build on the same harness (`harness/`).
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Keypair, LAMPORTS_PER_SOL } from '@solana/web3.js';
import { DEFAULT_PLANS, PLAN_ORDER, minTipLamports, type PlanTable } from '../../src/accounts/plans.js';
import { DEFAULT_CONFIG, type Config } from '../../src/config.js';
import { Rpc } from '../../src/chain/rpc.js';
import { freePort } from '../../src/cluster/nats-servers.js';
import type { LocalnetOptions } from '../../src/localnet/index.js';
import type { StatusRecord } from '../../src/store/store.js';
import type { LandfallSnapshot } from '../hosts/landfall.js';
import type { LoadResult, LoadSpec } from '../hosts/loadgen.js';
import { tempDir } from '../../harness/tmp.js';
import { INSTRUMENT, spawnChild, type Child } from './child.js';
import { TxSigner, type SignedTx } from './signed.js';

/** Requests per second no benchmark reaches: the plan's token buckets never refuse. */
export const UNLIMITED_TPS = 1_000_000;

/**
 * The default plan table (tips, thresholds) with every rate limit raised to `UNLIMITED_TPS`: the
 * buckets are still taken on every request, they just never refuse.
 */
export function benchPlans(): PlanTable {
  const plans = {} as PlanTable;
  for (const p of PLAN_ORDER) plans[p] = { ...DEFAULT_PLANS[p], maxTps: UNLIMITED_TPS, queryTps: UNLIMITED_TPS };
  return plans;
}

/** The starter plan's minimum tip: accepted on every plan the account may be upgraded to. */
export const TIP_LAMPORTS = Number(minTipLamports(DEFAULT_PLANS.starter, DEFAULT_CONFIG.lamportsPerPoint));

/**
 * Cluster options for load: Agave's unstaked QUIC limits (20 streams per 100 ms, 8 new
 * connections a minute per IP) would throttle a benchmark whose every sender is 127.0.0.1.
 * Receipts and blocks are kept for 300 slots (2 minutes), enough for any blockhash lifetime,
 * so a long run does not pile up 30 minutes of receipts in the cluster's memory.
 */
export const LOAD_CLUSTER: LocalnetOptions = {
  validators: 4,
  slotMs: 400,
  maxStreamsPer100ms: 0,
  maxConnectionsPerPeer: 64,
  maxConnectionsPerIpPerMinute: 0,
  historySlots: 300,
};

/**
 * `LOAD_CLUSTER` as a sink: validators count what arrives over QUIC and execute nothing, so a
 * throughput phase measures the sender, not LiteSVM on the same cores. Nothing lands, so the
 * service rebroadcasts every transaction its full rounds and its tracker polls every one.
 */
export const SINK_CLUSTER: LocalnetOptions = { ...LOAD_CLUSTER, sink: true };

const here = (file: string): URL => new URL(`../hosts/${file}`, import.meta.url);

export interface Cluster {
  child: Child;
  rpcUrl: string;
  wsUrl: string;
  sink: boolean;
  airdrop(addresses: string[], lamports: bigint): Promise<void>;
  blockhash(): Promise<string>;
}

export async function startCluster(opts: LocalnetOptions): Promise<Cluster> {
  const child = await spawnChild('cluster', here('cluster.ts'));
  try {
    const info = await child.call<{ rpcUrl: string; wsUrl: string; sink: boolean }>('start', opts);
    const rpc = new Rpc(info.rpcUrl);
    return {
      child,
      ...info,
      airdrop: (addresses, lamports) => child.call('airdrop', { addresses, lamports }),
      blockhash: async () => (await rpc.getLatestBlockhash('confirmed')).value.blockhash,
    };
  } catch (e) {
    await child.close();
    throw e;
  }
}

export interface Landfall {
  child: Child;
  url: string;
  reset(): Promise<void>;
  snapshot(): Promise<LandfallSnapshot>;
}

/** A status still open: not yet known to the service, or sent and neither landed nor expired. */
export function stillOpen(r: StatusRecord | null): boolean {
  return r === null || (r.status === 'sent' && !r.expired);
}

/**
 * The status records of `signatures` (in order; null: unknown to the service), asked of the
 * service every `pollMs` until none is still open or `timeoutMs` has passed: the settle wait of
 * the benches that count outcomes. Each poll asks only for those still open (a closed record
 * does not open again): asking for all 9,000 every second had the service's process build and
 * send megabytes of records a second through the benchmark's channel, and its memory after a
 * load said more about that than about the service.
 */
export async function settleStatuses(landfall: Landfall, signatures: string[], timeoutMs: number, pollMs: number): Promise<(StatusRecord | null)[]> {
  const deadline = Date.now() + timeoutMs;
  const records: (StatusRecord | null)[] = signatures.map(() => null);
  let open = signatures.map((_, i) => i);
  for (;;) {
    const now = await landfall.child.call<(StatusRecord | null)[]>('statuses', open.map((i) => signatures[i]!));
    for (const [k, i] of open.entries()) records[i] = now[k]!;
    open = open.filter((i) => stillOpen(records[i]!));
    if (open.length === 0 || Date.now() > deadline) return records;
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/**
 * Settings the service may not have (the config is in flux): `ingressThreads` (HTTP server
 * threads on one port) and `sendThreads` (the piscina pool, being removed). A key the service
 * does not know is ignored by it.
 */
type ServiceConfig = Config & { ingressThreads?: number; sendThreads?: number };

/** The service's default ingress thread count, or null when it has no such setting (one HTTP thread). */
export function defaultIngressThreads(): number | null {
  const v = (DEFAULT_CONFIG as ServiceConfig).ingressThreads;
  return typeof v === 'number' ? v : null;
}

/** Whether the service has a `sendThreads` setting (if so, the bench sets 0: sends from the calling thread). */
export function hasSendThreads(): boolean {
  return 'sendThreads' in DEFAULT_CONFIG;
}

/**
 * A TCP port free on 127.0.0.1 now (below the kernel's ephemeral range: see the function). The
 * service is given one rather than port 0: with several ingress threads on one port
 * (SO_REUSEPORT) each thread must bind the same, known port.
 */
export { freePort };

export interface LandfallOptions {
  /** HTTP ingress threads (`ingressThreads`); absent: the service's default. */
  ingressThreads?: number;
}

/**
 * `landfall serve` on `dataDir` against `cluster`, with the bench plan table; `tipAddresses` null
 * uses the data directory's own. Instrumented (`INSTRUMENT`): named threads, worker event-loop delay.
 */
export async function startLandfall(cluster: Cluster, dataDir: string, tipAddresses: string[] | null, opts: LandfallOptions = {}): Promise<Landfall> {
  const port = await freePort();
  const child = await spawnChild('landfall', here('landfall.ts'), INSTRUMENT);
  const config: ServiceConfig = {
    ...DEFAULT_CONFIG,
    port,
    dataDir,
    rpcUrl: cluster.rpcUrl,
    wsUrl: cluster.wsUrl,
    plans: benchPlans(),
    tipAddresses,
    // No line per request: the peer (Fastify, `logger: false`) writes none either.
    logLevel: 'warn',
    // Where the piscina send pool still exists: send from the calling thread, as the service
    // does once the pool is gone (its hand-off measured slower than sending inline).
    ...(hasSendThreads() && { sendThreads: 0 }),
    ...(opts.ingressThreads !== undefined && { ingressThreads: opts.ingressThreads }),
  };
  try {
    const { url } = await child.call<{ url: string }>('start', config);
    return {
      child,
      url,
      reset: () => child.call('reset'),
      snapshot: () => child.call<LandfallSnapshot>('snapshot'),
    };
  } catch (e) {
    await child.close();
    throw e;
  }
}

export interface Loadgen {
  child: Child;
  load(spec: LoadSpec): Promise<LoadResult>;
}

export async function startLoadgen(): Promise<Loadgen> {
  const child = await spawnChild('loadgen', here('loadgen.ts'));
  return {
    child,
    // Generous: the phase plus its drain.
    load: (spec) => child.call<LoadResult>('load', spec, (spec.warmupMs ?? 0) + spec.durationMs + 60_000),
  };
}

/** Write load-generator items (one per line) to `<dir>/<name>.items`; returns the path. */
export function writeItems(dir: string, name: string, lines: Iterable<string>): string {
  const file = join(dir, `${name}.items`);
  writeFileSync(file, [...lines].join('\n') + '\n');
  return file;
}

export interface Stack {
  dir: string;
  cluster: Cluster;
  /** The running service (a new one after `restartLandfall`). */
  readonly landfall: Landfall;
  loadgen: Loadgen;
  tipAddresses: string[];
  /** The running service's bench account and key. */
  readonly apiKey: string;
  readonly accountId: string;
  /**
   * Replace the service with a fresh process on a fresh data directory (a new account and key),
   * e.g. so transactions an earlier phase left pending (on a sink none ever lands) are not
   * tracked into the next phase.
   */
  restartLandfall(opts?: LandfallOptions): Promise<void>;
  /** `count` fresh transactions on the cluster's latest blockhash. */
  transactions(count: number): Promise<SignedTx[]>;
  /** Write load-generator items (one per line) to a file in the stack's directory. */
  items(name: string, lines: Iterable<string>): string;
  load(spec: LoadSpec): Promise<LoadResult>;
  close(): Promise<void>;
}

export interface StackOptions {
  cluster?: LocalnetOptions;
  /** SOL airdropped to the fee payer: tips and fees of every transaction the suite sends. */
  payerSol: number;
  landfall?: LandfallOptions;
}

/** Cluster, service, load generator, a funded payer and an account: ready to send. */
export async function startStack(opts: StackOptions): Promise<Stack> {
  const tmp = tempDir('landfall-bench-');
  const closers: Array<() => Promise<void> | void> = [tmp.cleanup];
  const close = async (): Promise<void> => {
    for (const c of closers.reverse()) await c();
    closers.length = 0;
  };
  let landfall: Landfall | null = null;
  let dataDir = '';
  let account = { id: '', key: '' };
  let generation = 0;
  try {
    const cluster = await startCluster(opts.cluster ?? LOAD_CLUSTER);
    closers.push(() => cluster.child.close());
    const tipAddresses = Array.from({ length: 8 }, () => Keypair.generate().publicKey.toBase58());
    const payer = Keypair.generate();
    // Tip addresses hold a rent-exempt balance from the start, as they do on mainnet.
    await cluster.airdrop(tipAddresses, BigInt(LAMPORTS_PER_SOL));
    await cluster.airdrop([payer.publicKey.toBase58()], BigInt(opts.payerSol) * BigInt(LAMPORTS_PER_SOL));
    const startService = async (o: LandfallOptions): Promise<void> => {
      dataDir = join(tmp.dir, generation === 0 ? 'data' : `data-${generation}`);
      generation++;
      const lf = await startLandfall(cluster, dataDir, tipAddresses, o);
      try {
        account = await lf.child.call<{ id: string; key: string }>('createAccount', { name: 'bench', plan: 'starter' });
      } catch (e) {
        await lf.child.close();
        throw e;
      }
      landfall = lf;
    };
    await startService(opts.landfall ?? {});
    closers.push(() => landfall?.child.close());
    const loadgen = await startLoadgen();
    closers.push(() => loadgen.child.close());
    const signer = new TxSigner(payer, tipAddresses, TIP_LAMPORTS);
    return {
      dir: tmp.dir,
      cluster,
      get landfall() {
        return landfall!;
      },
      loadgen,
      tipAddresses,
      get apiKey() {
        return account.key;
      },
      get accountId() {
        return account.id;
      },
      async restartLandfall(o = {}) {
        const old = landfall;
        landfall = null;
        await old?.child.close();
        rmSync(dataDir, { recursive: true, force: true });
        await startService(o);
      },
      transactions: async (count) => signer.sign(await cluster.blockhash(), count),
      items: (name, lines) => writeItems(tmp.dir, name, lines),
      load: (spec) => loadgen.load(spec),
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}

/** The JSON body of `POST /v1/send` for one transaction (default options, as most bots send). */
export function sendBody(tx: SignedTx): string {
  return `{"transaction":"${tx.wire.toString('base64')}"}`;
}

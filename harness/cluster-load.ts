/**
 * A whole test cluster for the multi-node failure tests (issue 13): the local Solana cluster as
 * a child process, 3 routed JetStream nats-servers, Landfall nodes as child processes sharing
 * one set of tip addresses, one account created through KV (the admin CLI with --nats) and a
 * funded payer; plus an open-loop send load on chosen nodes that records every acknowledged
 * signature, and status reads across nodes.
 */
import { Connection, Keypair, PublicKey } from '@solana/web3.js';
import { startChildLocalnet, type ChildLocalnet } from './child-localnet.js';
import { startClusterNodes, type ClusterNode, type ClusterNodes, type ClusterNodesOptions } from './cluster-nodes.js';
import { fundedKeypair, waitFor } from './localnet.js';
import { logLines } from './log-lines.js';
import { startNatsCluster, type NatsCluster } from './nats-cluster.js';
import { legacyTx, makeTipAddresses, transfer, web3Base58 } from './transactions.js';

export interface ClusterEnv {
  chain: ChildLocalnet;
  nats: NatsCluster;
  cluster: ClusterNodes;
  connection: Connection;
  tips: PublicKey[];
  accountId: string;
  key: string;
  payer: Keypair;
  close(): Promise<void>;
}

export interface ClusterEnvOptions {
  seed: string;
  slotMs: number;
  names: string[];
  /** Extra config keys for every node. */
  config?: Record<string, unknown>;
  /** The account's plan (default whale). */
  plan?: string;
  /** More `landfall localnet` options for the chain (the validators' QUIC limits). */
  chainArgs?: string[];
  /** More nats-server flags (`--no_advertise` when a node reaches NATS through proxies). */
  natsArgs?: string[];
  /** The `--routes` of server `i` (see `startNatsServers`): routes through proxies a test can cut. */
  natsRoutesOf?: (i: number, routePorts: number[]) => string;
  /** Extra arguments and environment of node `name` (see `startClusterNodes`), given the servers' URLs. */
  nodeArgs?: (name: string, natsUrls: string[]) => ReturnType<NonNullable<ClusterNodesOptions['nodeArgs']>>;
}

/** Start everything; resolves once every node accepts the account's key. */
export async function startClusterEnv(o: ClusterEnvOptions): Promise<ClusterEnv> {
  const parts: { close(): Promise<unknown> }[] = [];
  try {
    const chain = await startChildLocalnet({ seed: o.seed, slotMs: o.slotMs, ...(o.chainArgs ? { args: o.chainArgs } : {}) });
    parts.push({ close: () => chain.kill() });
    const nats = await startNatsCluster(3, undefined, o.natsArgs, o.natsRoutesOf);
    parts.push(nats);
    const tips = makeTipAddresses(8);
    const cluster = await startClusterNodes(o.names, {
      nats: nats.urls,
      rpcUrl: chain.rpcUrl,
      wsUrl: chain.wsUrl,
      config: { tipAddresses: tips.map((t) => t.toBase58()), ...o.config },
      ...(o.nodeArgs ? { nodeArgs: (name: string) => o.nodeArgs!(name, nats.urls) } : {}),
    });
    parts.push(cluster);
    const created = JSON.parse(await cluster.cli('accounts', 'create', '--name', 'bot', '--plan', o.plan ?? 'whale', '--json')) as { account_id: string; api_key: string };
    for (const n of cluster.nodes) {
      await waitFor(`node ${n.name} to know the key`, async () => ((await accountOn(n, created.api_key)).status === 200 ? true : undefined), 30_000);
    }
    const connection = new Connection(chain.rpcUrl, 'confirmed');
    const payer = await fundedKeypair(connection, 500);
    return {
      chain,
      nats,
      cluster,
      connection,
      tips,
      accountId: created.account_id,
      key: created.api_key,
      payer,
      async close() {
        for (const p of parts.reverse()) await p.close().catch(() => {});
      },
    };
  } catch (e) {
    for (const p of parts.reverse()) await p.close().catch(() => {});
    throw e;
  }
}

export async function accountOn(node: ClusterNode, key: string): Promise<{ status: number; body: any }> {
  const r = await fetch(`${node.url}/v1/account`, { headers: { authorization: `Bearer ${key}` } });
  return { status: r.status, body: (await r.json()) as any };
}

export async function statusOn(node: ClusterNode, key: string, signature: string): Promise<{ status: number; body: any }> {
  const r = await fetch(`${node.url}/v1/status/${signature}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: r.status, body: (await r.json()) as any };
}

export const isTerminal = (body: any): boolean => body?.status === 'confirmed' || body?.status === 'failed' || body?.status === 'expired' || body?.expired === true;

/** One acknowledged send. */
export interface Ack {
  signature: string;
  node: string;
  /** Date.now() when the 200 arrived. */
  at: number;
  /** Date.now() when the request was sent. */
  sentAt: number;
}

/** Tip of every load transaction, lamports (above every plan's minimum at 1000 lamports per point). */
export const LOAD_TIP = 1_000_000;

/**
 * Open-loop-ish send load: `workers` loops per node, each sending one tipped transaction after
 * another (`gapMs` apart), until `stop()`. Every 200 is recorded with its time; refusals (429)
 * and errors (a dead node) are counted, never thrown.
 */
/**
 * Makes every load transaction distinct (its self-transfer's amount), across SendLoad instances
 * too: a per-instance counter gave a new load the same transactions as an earlier one within a
 * blockhash's slot, so a "new" send was an idempotent resubmission (the cluster bench's
 * replication lag read 2 ms at p50 for signatures already replicated).
 */
let unique = 0;

/** A load request unanswered this long is given up (counted as an error). */
const REQUEST_TIMEOUT_MS = 10_000;

export class SendLoad {
  readonly acks: Ack[] = [];
  readonly refused = new Map<number, number>();
  /** The first refusal's body of each status, for a failing test's message. */
  private readonly firstRefusal = new Map<number, string>();
  errors = 0;
  private firstError = '';
  /** Requests unanswered now: node and when each was sent (a hung node shows here). */
  private readonly open = new Set<{ node: string; at: number }>();
  private running = true;
  private readonly loops: Promise<void>[] = [];
  private blockhash = '';
  private blockhashAt = 0;

  constructor(
    private readonly env: ClusterEnv,
    nodes: ClusterNode[],
    o: { workers?: number; gapMs?: number; keys?: string[] } = {},
  ) {
    // Keys are dealt to the loops in turn (two keys of one account: one budget).
    const keys = o.keys ?? [env.key];
    for (const n of nodes) for (let w = 0; w < (o.workers ?? 2); w++) this.loops.push(this.loop(n, o.gapMs ?? 20, keys[this.loops.length % keys.length]!));
  }

  /** What the load saw so far, per node and per refusal, for a failing test's message. */
  summary(): string {
    const per = new Map<string, number>();
    for (const a of this.acks) per.set(a.node, (per.get(a.node) ?? 0) + 1);
    const refused = [...this.refused].map(([s, n]) => `${n} × ${s} (first ${this.firstRefusal.get(s)})`);
    const now = Date.now();
    const open = [...this.open].map((o) => `${o.node} ${now - o.at} ms`);
    return (
      `acknowledged ${[...per].map(([n, c]) => `${c} on ${n}`).join(', ') || 'none'}; refused ${refused.join('; ') || 'none'}; ` +
      `errors ${this.errors}${this.errors > 0 ? ` (first ${this.firstError})` : ''}; unanswered now ${open.join(', ') || 'none'}`
    );
  }

  /**
   * Wait (bounded) until `node` has acknowledged `count` sends; the timeout's message says what
   * the load saw and the node's last warnings.
   */
  async waitAcks(node: ClusterNode, count: number, timeoutMs: number): Promise<void> {
    const acked = () => (this.acks.filter((x) => x.node === node.name).length >= count ? true : undefined);
    await waitFor(`${count} sends acknowledged by ${node.name}`, acked, timeoutMs).catch((e: Error) => {
      // The service logs its levels by name (`"level":"warn"`).
      const warnings = logLines(node.output()).filter((l) => l.level === 'warn' || l.level === 'error' || l.level === 'fatal');
      this.running = false; // the test is over: its loops end with their current request
      throw new Error(`${e.message}: ${this.summary()}; its last warnings: ${warnings.slice(-10).map((l) => JSON.stringify(l)).join('\n') || 'none'}`);
    });
  }

  /** Stop sending; resolves once every request in flight has answered. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  private async freshBlockhash(): Promise<string> {
    if (Date.now() - this.blockhashAt > 1000) {
      this.blockhash = (await this.env.connection.getLatestBlockhash('confirmed')).blockhash;
      this.blockhashAt = Date.now();
    }
    return this.blockhash;
  }

  private async loop(node: ClusterNode, gapMs: number, key: string): Promise<void> {
    while (this.running) {
      // What this loop waits on now (a hung node or chain RPC shows in `summary`).
      const waiting = { node: `${node.name} (blockhash)`, at: Date.now() };
      this.open.add(waiting);
      try {
        const { payer, tips } = this.env;
        const tip = tips[unique % tips.length]!;
        const tx = legacyTx([transfer(payer.publicKey, payer.publicKey, ++unique), transfer(payer.publicKey, tip, LOAD_TIP)], {
          feePayer: payer,
          blockhash: await this.freshBlockhash(),
        });
        const sentAt = Date.now();
        waiting.node = node.name;
        waiting.at = sentAt;
        // Bounded, as a bot's request is: a request the node never answers is counted as an
        // error (its reason in `summary`) and the loop goes on, instead of holding it for good.
        const r = await fetch(`${node.url}/v1/send`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: JSON.stringify({ transaction: tx.base64 }),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        const body = await r.text();
        if (r.status === 200) this.acks.push({ signature: web3Base58(tx.signatures[0]!), node: node.name, at: Date.now(), sentAt });
        else {
          this.refused.set(r.status, (this.refused.get(r.status) ?? 0) + 1);
          if (!this.firstRefusal.has(r.status)) this.firstRefusal.set(r.status, `${node.name}: ${body.slice(0, 300)}`);
        }
      } catch (e) {
        if (this.errors++ === 0) this.firstError = `${node.name}: ${String(e)}`;
      } finally {
        this.open.delete(waiting);
      }
      await new Promise((r) => setTimeout(r, gapMs));
    }
  }
}

/**
 * Wait (bounded) until every signature reads as terminal on every node; returns the ones that
 * never did (with what the node last said).
 */
export async function waitTerminalEverywhere(nodes: ClusterNode[], key: string, signatures: string[], timeoutMs: number): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  let left = signatures.flatMap((s) => nodes.map((n) => ({ s, n })));
  const last = new Map<string, string>();
  while (left.length > 0 && Date.now() < deadline) {
    const still: typeof left = [];
    for (const x of left) {
      const r = await statusOn(x.n, key, x.s).catch(() => ({ status: 0, body: null }));
      if (r.status === 200 && isTerminal(r.body)) continue;
      if (r.status === 429) await new Promise((res) => setTimeout(res, 100)); // the account's query budget
      last.set(`${x.n.name} ${x.s}`, `${r.status} ${JSON.stringify(r.body)}`);
      still.push(x);
    }
    left = still;
    if (left.length > 0) await new Promise((r) => setTimeout(r, 250));
  }
  return left.map((x) => `${x.n.name} ${x.s}: ${last.get(`${x.n.name} ${x.s}`)}`);
}

/**
 * Issue 13, failure scenario 1 (the replication half; the limits across nodes are asserted by
 * test/cluster/limits.test.ts): three Landfall nodes (child processes) on one local Solana
 * cluster, joined by a 3-server NATS JetStream cluster (replicas 3). One account with two keys,
 * created through the accounts bucket (the admin CLI with --nats), sends to all three nodes:
 * - every acknowledged status is readable on every node, with either key;
 * - every node ends with the same points (Σ floor(tip / lamports per point) of what confirmed),
 *   the same usage (each send counted once, also the three sent again to a node that knows them
 *   only from replication) and the plan upgraded once;
 * - `/v1/stream` on one node receives the changes of the sends made on the others;
 * - a key revoked and a plan set through the bucket apply on every node (measured; the issue asks
 *   for 1 s).
 */
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLANS } from '../../src/accounts/plans.js';
import type { ClusterNode } from '../../harness/cluster-nodes.js';
import { accountOn, startClusterEnv, statusOn, waitTerminalEverywhere, type ClusterEnv } from '../../harness/cluster-load.js';
import { waitFor } from '../../harness/localnet.js';
import { freshMetricsText, metricSum } from '../../harness/metrics.js';
import { legacyTx, transfer, web3Base58 } from '../../harness/transactions.js';

const LAMPORTS_PER_POINT = 1000;
/** Growth after a few sends' points, so the upgrade happens during the test (once). */
const PLANS = {
  starter: { ...DEFAULT_PLANS.starter, maxTps: 50, queryTps: 400 },
  growth: { ...DEFAULT_PLANS.growth, maxTps: 60, queryTps: 400, thresholdBp: 4_000 },
  pro: { ...DEFAULT_PLANS.pro, maxTps: 70, queryTps: 400, thresholdBp: 10_000_000 },
  whale: { ...DEFAULT_PLANS.whale, maxTps: 80, queryTps: 400, thresholdBp: 100_000_000 },
};
const SENDS = 12;

let env: ClusterEnv;
let accountId: string;
const keys: string[] = [];

beforeAll(async () => {
  env = await startClusterEnv({ seed: 'cluster-replication', slotMs: 100, names: ['a', 'b', 'c'], config: { plans: PLANS, lamportsPerPoint: LAMPORTS_PER_POINT } });
  const created = JSON.parse(await env.cluster.cli('accounts', 'create', '--name', 'replicated', '--json')) as { account_id: string; api_key: string };
  accountId = created.account_id;
  keys.push(created.api_key);
  keys.push((JSON.parse(await env.cluster.cli('keys', 'create', '--account', accountId, '--name', 'second', '--json')) as { api_key: string }).api_key);
  for (const n of env.cluster.nodes) {
    for (const key of keys) await waitFor(`${n.name} to know the key`, async () => ((await accountOn(n, key)).status === 200 ? true : undefined), 10_000);
  }
}, 90_000);

afterAll(async () => {
  await env?.close();
});

/** Each sent transaction's base64, by signature (to send it again). */
const wires = new Map<string, string>();

/** Send one tipped transaction to `node` with `key`; resolves with its signature (200 asserted). */
async function send(node: ClusterNode, key: string, tip: number, unique: number): Promise<string> {
  const { blockhash } = await env.connection.getLatestBlockhash('confirmed');
  const tx = legacyTx([transfer(env.payer.publicKey, env.payer.publicKey, unique), transfer(env.payer.publicKey, env.tips[unique % env.tips.length]!, tip)], {
    feePayer: env.payer,
    blockhash,
  });
  const sig = web3Base58(tx.signatures[0]!);
  wires.set(sig, tx.base64);
  expect(await post(node, key, tx.base64)).toBe(sig);
  return sig;
}

/** `POST /v1/send` of `base64` to `node`; resolves with the answer's signature (200 asserted). */
async function post(node: ClusterNode, key: string, base64: string): Promise<string> {
  const r = await fetch(`${node.url}/v1/send`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ transaction: base64 }),
  });
  expect(r.status, await r.clone().text()).toBe(200);
  return ((await r.json()) as { signature: string }).signature;
}

/**
 * A status / account read, again while it is refused for the account's query budget (429): the
 * budget is the account's across all nodes, and this test reads a lot from three at once.
 */
const read = <T extends { status: number }>(what: string, get: () => Promise<T>): Promise<T> =>
  waitFor(what, async () => {
    const r = await get();
    return r.status === 429 ? undefined : r;
  }, 10_000);

/** `/v1/stream` on `node`: every status message it receives. */
function stream(node: ClusterNode, key: string): Promise<{ messages: { type: string; signature?: string; status?: string }[]; close(): void }> {
  const ws = new WebSocket(`${node.url.replace(/^http/, 'ws')}/v1/stream?api-key=${key}`);
  const messages: { type: string; signature?: string; status?: string }[] = [];
  ws.on('message', (d) => messages.push(JSON.parse(String(d))));
  ws.on('error', () => {});
  return waitFor('the stream to be ready', () => (messages.some((m) => m.type === 'ready') ? { messages, close: () => ws.close() } : undefined), 10_000);
}

describe('three nodes, one account, two keys', () => {
  it('every acknowledged status is readable on every node; points, usage and the upgrade count once', async () => {
    const nodes = env.cluster.nodes;
    for (const n of nodes) {
      const h = await waitFor(`${n.name} to see every node`, async () => {
        const h = (await n.health()).cluster;
        return h?.nodes.length === 3 ? h : undefined;
      }, 10_000);
      expect(h).toEqual({ node: n.name, nats: 'up', mode: 'clustered', nodes: ['a', 'b', 'c'], budget: 'shared', replication_backlog: 0 });
    }
    const watch = await stream(nodes[0]!, keys[0]!);
    const t0 = Date.now();
    const sent: { sig: string; tip: number; node: string }[] = [];
    /** Acknowledged on the origin → readable on another node, ms (polled every ~2 ms). */
    const lags: number[] = [];
    for (let i = 0; i < SENDS; i++) {
      const node = nodes[i % 3]!;
      const tip = 1_000_000 + i * 1_234; // ~1000 points each, not all round
      const sig = await send(node, keys[i % 2]!, tip, i + 1);
      const acked = Date.now();
      sent.push({ sig, tip, node: node.name });
      // Readable on every other node with either key (replication: wait, bounded).
      await Promise.all(
        nodes
          .filter((n) => n !== node)
          .map(async (n, j) => {
            const r = await waitFor(`${sig} on ${n.name}`, async () => {
              const r = await statusOn(n, keys[j % 2]!, sig);
              return r.status === 200 ? r : undefined;
            }, 10_000);
            lags.push(Date.now() - acked);
            expect(r.body.signature).toBe(sig);
          }),
      );
      // Sent again to another node, which knows it only from the replicated record (its filter
      // of known signatures was told by the record's put): answered as a resend, and counted
      // once (the usage below).
      if (i < 3) expect(await post(nodes[(i + 1) % 3]!, keys[0]!, wires.get(sig)!)).toBe(sig);
    }
    lags.sort((x, y) => x - y);
    const pct = (p: number) => lags[Math.min(lags.length - 1, Math.ceil((p / 100) * lags.length) - 1)];
    console.log(`replication lag, acknowledged on one node -> readable on another (${lags.length} samples): p50 ${pct(50)} ms, p99 ${pct(99)} ms, max ${lags[lags.length - 1]} ms`);
    console.log(`sent ${SENDS} and read them everywhere in ${Date.now() - t0} ms`);
    const stuck = await waitTerminalEverywhere(nodes, keys[0]!, sent.map((s) => s.sig), 30_000);
    // On a failure, what each node says of each send (the assertion below names the stuck ones).
    if (stuck.length > 0) for (const s of sent) console.log(s.node, s.sig, (await Promise.all(nodes.map(async (n) => (await statusOn(n, keys[0]!, s.sig)).body.status))).join(' '));
    expect(stuck).toEqual([]);

    console.log(`terminal everywhere at ${Date.now() - t0} ms`);
    // The same terminal record everywhere; points from the confirmed ones.
    let expectedPoints = 0;
    for (const s of sent) {
      const views = await Promise.all(nodes.map(async (n) => (await read(`${s.sig} on ${n.name}`, () => statusOn(n, keys[0]!, s.sig))).body));
      for (const v of views) expect({ status: v.status, slot: v.slot }).toEqual({ status: views[0].status, slot: views[0].slot });
      if (views[0].status === 'confirmed') expectedPoints += Math.floor(s.tip / LAMPORTS_PER_POINT);
    }
    expect(expectedPoints).toBeGreaterThanOrEqual(PLANS.growth.thresholdBp); // the upgrade must have happened
    const accounts = await Promise.all(nodes.map(async (n) => (await read(`account on ${n.name}`, () => accountOn(n, keys[1]!))).body));
    for (const a of accounts) {
      expect(a.usage).toEqual({ service_points: expectedPoints, transactions_total: SENDS, transactions_today: SENDS });
      expect(a.plan).toBe('growth');
    }
    console.log(`plan_upgraded_at per node: ${accounts.map((a) => a.plan_upgraded_at).join(', ')}`);

    // The stream on node a saw the changes of the sends on b and c.
    await waitFor('the remote changes on the stream', () => {
      const seen = new Set(watch.messages.filter((m) => m.type === 'status' && m.status !== 'sent').map((m) => m.signature));
      return sent.every((s) => seen.has(s.sig)) ? true : undefined;
    }, 10_000);
    watch.close();

    // /metrics of a node: the link, the nodes, the budget mode, the outbox and the lag of what it applied.
    const text = await freshMetricsText(nodes[0]!.url);
    expect([
      metricSum(text, 'landfall_cluster_nats_up'),
      metricSum(text, 'landfall_cluster_nodes'),
      metricSum(text, 'landfall_cluster_budget_mode'),
      metricSum(text, 'landfall_cluster_outbox'),
    ]).toEqual([1, 3, 0, 0]);
    // Node a timed the acceptance of every send made on b and c.
    expect(metricSum(text, 'landfall_cluster_replication_lag_seconds_count')).toBe(sent.filter((s) => s.node !== 'a').length);
  }, 60_000);

  it('a key revoked and a plan set through the accounts bucket apply on every node', async () => {
    const nodes = env.cluster.nodes;
    const until = async (what: string, ok: (n: ClusterNode) => Promise<boolean>): Promise<number> => {
      const start = Date.now();
      await Promise.all(nodes.map((n) => waitFor(`${what} on ${n.name}`, async () => ((await ok(n)) ? true : undefined), 10_000)));
      return Date.now() - start;
    };
    await env.cluster.cli('keys', 'revoke', '--account', accountId, '--name', 'second');
    const revokedMs = await until('the revoked key refused', async (n) => (await accountOn(n, keys[1]!)).status === 401);
    for (const n of nodes) expect((await read(`account on ${n.name}`, () => accountOn(n, keys[0]!))).status).toBe(200);

    await env.cluster.cli('accounts', 'set-plan', accountId, 'pro');
    const planMs = await until('the new plan', async (n) => (await accountOn(n, keys[0]!)).body.limits?.max_tps === PLANS.pro.maxTps);
    console.log(`after the admin CLI returned: key refused on all 3 nodes within ${revokedMs} ms, plan applied on all 3 within ${planMs} ms`);
    expect(revokedMs).toBeLessThanOrEqual(1_000);
    expect(planMs).toBeLessThanOrEqual(1_000);
  });
});

/**
 * Issue 32: a split, a | b + c, each side still reaching a server. Three routed JetStream servers
 * (replicas 3) whose routes go through TCP proxies the test controls (harness/tcp-proxy.ts); node
 * a uses server 0 only, b server 1, c server 2 (the servers run with --no_advertise, so a node
 * knows no other server). The routes between server 0 and the others are cut for 10 s: a keeps
 * core NATS (its own demand reports come back) but hears neither b nor c, and its server has no
 * JetStream quorum; b and c have both. One account on the growth plan (30 sends/s), every node
 * offered far more. Measured:
 * - the sends accepted by the three nodes together in every 2-s window of the split (from 1 s in)
 *   stay ≤ 1.1 × the plan's rate: each side reserves the slice of the nodes it does not hear;
 * - a, whose lease writes fail (no quorum on its side), takes nobody over;
 * - after the split every acknowledged send is terminal on every node, the same points and usage
 *   everywhere, matching the confirmations on the chain.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ClusterNode } from '../../harness/cluster-nodes.js';
import { LOAD_TIP, SendLoad, startClusterEnv, type ClusterEnv } from '../../harness/cluster-load.js';
import { acceptedRate, ackedIn, arrivals, ledgerEverywhere, settledEverywhere, takeoversSince, type Arrivals } from '../../harness/cluster-faults.js';
import { startTcpProxy, type TcpProxy } from '../../harness/tcp-proxy.js';
import { waitFor } from '../../harness/localnet.js';

const LAMPORTS_PER_POINT = 1_000;
const RATE = 30; // growth
const SPLIT_MS = 10_000;
const WINDOW_MS = 2_000;
const SETTLE_MS = 30_000;

describe('a split: a | b + c, each side reaching a server', () => {
  let env: ClusterEnv;
  let nodes: ClusterNode[];
  /** `routes[i][j]`: server i's route to server j. */
  const routes: TcpProxy[][] = [[], [], []];
  const streams = new Map<string, Arrivals>();

  beforeAll(async () => {
    for (let i = 0; i < 3; i++) for (let j = 0; j < 3; j++) routes[i]![j] = await startTcpProxy();
    env = await startClusterEnv({
      seed: 'cluster-split',
      slotMs: 100,
      names: ['a', 'b', 'c'],
      plan: 'growth',
      // No server learns another's real address (clients: --no_advertise; routes: an address that
      // refuses), so every route stays on the proxies the test cuts.
      natsArgs: ['--no_advertise', '--cluster_advertise', '127.0.0.1:1'],
      natsRoutesOf: (i, ports) =>
        ports
          .map((p, j) => {
            routes[i]![j]!.target = p;
            return j === i ? null : `nats-route://127.0.0.1:${new URL(routes[i]![j]!.url).port}`;
          })
          .filter((u) => u !== null)
          .join(','),
      // Each node on its own server, and only there.
      nodeArgs: (name, urls) => ({ args: ['--nats', urls[['a', 'b', 'c'].indexOf(name)]!] }),
    });
    nodes = env.cluster.nodes;
    await waitFor('every node to see three live nodes', async () => ((await Promise.all(nodes.map((n) => n.health()))).every((h) => h.cluster?.nodes.length === 3) ? true : undefined), 30_000);
    for (const n of nodes) streams.set(n.name, await arrivals(n, env.key));
  }, 90_000);
  afterAll(async () => {
    for (const s of streams.values()) s.close();
    await env?.close();
    for (const row of routes) for (const p of row) await p.close();
  });

  it('the account’s rate stays within its plan on both sides, and everything settles after', async () => {
    const cut = [routes[0]![1]!, routes[0]![2]!, routes[1]![0]!, routes[2]![0]!];
    const load = new SendLoad(env, nodes, { workers: 2, gapMs: 10 });
    await sleep(3_000);
    const splitAt = Date.now();
    for (const p of cut) p.cut();
    let healedAt = 0;
    try {
      await sleep(SPLIT_MS);
    } finally {
      for (const p of cut) p.heal();
      healedAt = Date.now();
    }
    await sleep(3_000);
    await load.stop();

    const inWindow = (from: number, to: number) => ackedIn(load.acks, from, to);
    const { perSecond, ratio } = acceptedRate(load.acks, splitAt, healedAt, { rate: RATE, windowMs: WINDOW_MS, node: 'a', streams });
    // Was it a split? b's sends of the middle of the split reached a only after it.
    const middle = inWindow(splitAt + 3_000, healedAt - 3_000).filter((k) => k.node === 'b');
    const crossed = middle.filter((k) => (streams.get('a')!.firstAt.get(k.signature) ?? Infinity) < healedAt).length;
    const takeovers = takeoversSince(nodes, splitAt);
    console.log(
      `split ${healedAt - splitAt} ms: accepted per second ${perSecond.join(', ')}; busiest ${WINDOW_MS / 1000}-s window ${(ratio * 100).toFixed(1)} % of the plan's rate; ` +
        `b's sends of the middle of the split on a during it: ${crossed} of ${middle.length}; takeovers ${takeovers.join('; ') || 'none'}; refused ${JSON.stringify(Object.fromEntries(load.refused))}, errors ${load.errors}`,
    );
    expect(load.errors).toBe(0);
    expect(middle.length).toBeGreaterThan(0);
    expect(crossed).toBe(0);
    expect(ratio).toBeLessThanOrEqual(1.1);
    expect(takeovers.filter((t) => t.startsWith('a '))).toEqual([]);

    const unsettled = await settledEverywhere(env, nodes, streams, load.acks.map((k) => k.signature), SETTLE_MS);
    expect(unsettled).toEqual([]);
    const { views, chainConfirmed } = await ledgerEverywhere(env, nodes, load.acks.map((k) => k.signature));
    console.log(`usage on the nodes: ${views.join(' | ')}; confirmed on the chain ${chainConfirmed}`);
    expect(new Set(views).size).toBe(1);
    expect(JSON.parse(views[0]!).service_points).toBe(chainConfirmed * Math.floor(LOAD_TIP / LAMPORTS_PER_POINT));
  }, 110_000);
});

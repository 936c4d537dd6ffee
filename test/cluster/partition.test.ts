/**
 * Issue 32, item 3: budget shares are leases, so an account's rate holds through a partition.
 * Three Landfall nodes over three routed JetStream servers (replicas 3), one local Solana cluster;
 * node a reaches NATS only through TCP proxies the test controls (harness/tcp-proxy.ts). One
 * account on the growth plan (30 sends/s), every node offered far more than that throughout. a is
 * cut off from NATS for 10 s and goes on serving its clients: the others stop hearing it, it stops
 * hearing itself, and neither side may use what the other may still be using. Measured:
 * - the sends accepted by the three nodes together in every 2-s window of the cut (from 1 s in,
 *   sliding by 1 s) stay ≤ 1.1 × the plan's rate (1.31–1.33× before: the others split the whole
 *   rate while a kept its third);
 * - after the cut, every acknowledged send is terminal on every node, the same points and usage
 *   everywhere, matching the confirmations on the chain.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ClusterNode } from '../../harness/cluster-nodes.js';
import { LOAD_TIP, SendLoad, startClusterEnv, type ClusterEnv } from '../../harness/cluster-load.js';
import { acceptedRate, ackedIn, arrivals, ledgerEverywhere, settledEverywhere, type Arrivals } from '../../harness/cluster-faults.js';
import { startTcpProxy, type TcpProxy } from '../../harness/tcp-proxy.js';
import { waitFor } from '../../harness/localnet.js';

const LAMPORTS_PER_POINT = 1_000;
const RATE = 30; // growth
const CUT_MS = 10_000;
/** Windows the accepted rate is measured over (2 s: a send's 200 timed late or early by the client moves it by one window, not the rate). */
const WINDOW_MS = 2_000;
const SETTLE_MS = 30_000;

describe('a node cut off from NATS while it serves its clients', () => {
  let env: ClusterEnv;
  let nodes: ClusterNode[];
  const proxies: TcpProxy[] = [];
  const streams = new Map<string, Arrivals>();

  beforeAll(async () => {
    for (let i = 0; i < 3; i++) proxies.push(await startTcpProxy());
    env = await startClusterEnv({
      seed: 'cluster-partition',
      slotMs: 100,
      names: ['a', 'b', 'c'],
      plan: 'growth',
      natsArgs: ['--no_advertise'], // a must not learn the servers' own addresses: it would reconnect around the proxies
      // a reaches each server through its own proxy (the later --nats wins).
      nodeArgs: (name, urls) => {
        if (name !== 'a') return {};
        urls.forEach((u, i) => (proxies[i]!.target = Number(new URL(u).port)));
        return { args: ['--nats', proxies.map((p) => p.url).join(',')] };
      },
    });
    nodes = env.cluster.nodes;
    await waitFor('every node to see three live nodes', async () => ((await Promise.all(nodes.map((n) => n.health()))).every((h) => h.cluster?.nodes.length === 3) ? true : undefined), 20_000);
    for (const n of nodes) streams.set(n.name, await arrivals(n, env.key));
  }, 90_000);
  afterAll(async () => {
    for (const s of streams.values()) s.close();
    await env?.close();
    for (const p of proxies) await p.close();
  });

  it('the account’s rate stays within its plan through the cut, and everything settles after it', async () => {
    const load = new SendLoad(env, nodes, { workers: 2, gapMs: 10 });
    await sleep(3_000);
    const cutAt = Date.now();
    for (const p of proxies) p.cut();
    let healedAt = 0;
    try {
      // Printed, not asserted: what a's /health said of its link during the cut (the rate below is the point).
      const noticed = await waitFor('a to notice the cut', async () => ((await nodes[0]!.health()).cluster?.nats === 'down' ? Date.now() - cutAt : undefined), CUT_MS).catch(async () => {
        console.log(`a did not say its link was down within ${CUT_MS} ms: ${JSON.stringify(await nodes[0]!.health().catch((x: unknown) => String(x)))}`);
        console.log(nodes[0]!.output().split('\n').filter((l) => l.includes('cluster')).slice(-15).join('\n'));
        return null;
      });
      if (noticed !== null) console.log(`a's /health said its link was down ${noticed} ms into the cut`);
      await sleep(Math.max(0, cutAt + CUT_MS - Date.now()));
    } finally {
      for (const p of proxies) p.heal();
      healedAt = Date.now();
    }
    await sleep(3_000);
    await load.stop();

    // What the three nodes accepted together, per second of the cut, and a's part of it.
    const inWindow = (from: number, to: number) => ackedIn(load.acks, from, to);
    const { perSecond, ratio } = acceptedRate(load.acks, cutAt, healedAt, { rate: RATE, windowMs: WINDOW_MS, node: 'a', streams });
    const before = inWindow(cutAt - 2_000, cutAt).length / 2 / RATE;
    console.log(
      `a cut off ${healedAt - cutAt} ms: accepted per second of the cut ${perSecond.join(', ')}; busiest ${WINDOW_MS / 1000}-s window ${(ratio * 100).toFixed(1)} % of the plan's rate ` +
        `(before the cut ${(before * 100).toFixed(1)} %); refused ${JSON.stringify(Object.fromEntries(load.refused))}, errors ${load.errors}`,
    );
    expect(load.errors).toBe(0);
    expect(ratio).toBeLessThanOrEqual(1.1);
    // a kept serving its clients through the cut.
    expect(inWindow(cutAt, healedAt).some((k) => k.node === 'a')).toBe(true);

    const unsettled = await settledEverywhere(env, nodes, streams, load.acks.map((k) => k.signature), SETTLE_MS);
    expect(unsettled).toEqual([]);
    const { views, chainConfirmed } = await ledgerEverywhere(env, nodes, load.acks.map((k) => k.signature));
    console.log(`usage on the nodes: ${views.join(' | ')}; confirmed on the chain ${chainConfirmed}`);
    expect(new Set(views).size).toBe(1);
    expect(JSON.parse(views[0]!).service_points).toBe(chainConfirmed * Math.floor(LOAD_TIP / LAMPORTS_PER_POINT));
  }, 110_000);
});

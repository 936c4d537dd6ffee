/**
 * Issue 32, item 1: a nats-server that stalls (SIGSTOP: a frozen VM, a hung disk) is not a dead
 * node. Three Landfall nodes over three routed JetStream servers (replicas 3), one local Solana
 * cluster, sends on every node throughout; one server is frozen and let run again:
 * - the server most nodes use, for 10 s (the nodes stuck on it notice it and move on; the others
 *   must not take them over meanwhile);
 * - the same for 3, 4 and 5 s in turn (around the dead-after time);
 * - the server leading the node-leases bucket, for 10 s (every lease write waits for an election).
 * After each: no node took over another, every acknowledged send is terminal on every node, the
 * points and usage are the same on every node and match the confirmations on the chain. The
 * replication lag during and after the stall is printed (docs/cluster-failover.md).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { NODES_BUCKET } from '../../src/cluster/leases.js';
import { STATUS_STREAM } from '../../src/cluster/link.js';
import { type ClusterNode } from '../../harness/cluster-nodes.js';
import { LOAD_TIP, SendLoad, startClusterEnv, type Ack, type ClusterEnv } from '../../harness/cluster-load.js';
import { arrivals, lagSummary, ledgerEverywhere, percentile, replicationLag, settledEverywhere, takeoversSince, type Arrivals } from '../../harness/cluster-faults.js';
import { waitFor } from '../../harness/localnet.js';
import { logLines } from '../../harness/log-lines.js';

/** When each node's link went down and up again within `[from, to)`, relative to `from`. */
function linkMoves(nodes: ClusterNode[], from: number, to: number): string {
  return nodes
    .map((n) => {
      const ls = logLines(n.output()).filter((l) => (l.time as number) >= from && (l.time as number) < to && /NATS link (up|down)/.test(String(l.msg)));
      return ls.length === 0 ? `${n.name} stayed up` : `${n.name} ${ls.map((l) => `${String(l.msg).includes('up') ? 'up' : 'down'} +${(l.time as number) - from}`).join(' ')}`;
    })
    .join(', ');
}

const LAMPORTS_PER_POINT = 1_000;
/** Every acknowledged send is terminal everywhere this long after the fault ends (the promise). */
const SETTLE_MS = 30_000;
/** The promise is 2 s at p99; asserted with room for a busy machine (a copy lost to ack_wait, 30 s, fails it). */
const STALL_P99_BOUND_MS = 3_000;

describe('a nats-server that stalls (SIGSTOP) under load', () => {
  let env: ClusterEnv;
  let nodes: ClusterNode[];
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const streams = new Map<string, Arrivals>();
  const allAcks: string[] = [];

  /** Server index of each node's connection now (from the servers' monitoring endpoints). */
  const serverOf = async (): Promise<Map<string, number>> => {
    const out = new Map<string, number>();
    for (let i = 0; i < 3; i++) for (const name of await env.nats.clients(i)) if (name.startsWith('landfall-')) out.set(name.slice('landfall-'.length), i);
    return out;
  };
  /** The server most nodes are connected to, and how many are. */
  const busiest = async (): Promise<{ server: number; nodes: string[] }> => {
    const on = await serverOf();
    let best = { server: 0, nodes: [] as string[] };
    for (let i = 0; i < 3; i++) {
      const here = nodes.filter((n) => on.get(n.name) === i).map((n) => n.name);
      if (here.length > best.nodes.length) best = { server: i, nodes: here };
    }
    return best;
  };
  const leaderOf = async (stream: string): Promise<number> => Number(/^nats-(\d+)$/.exec((await jsm.streams.info(stream)).cluster!.leader!)![1]);
  /** Every replica of the cluster's streams current (after a stall, before the next one). */
  const allCurrent = () =>
    waitFor(
      'every replica current',
      async () => {
        for (const s of [STATUS_STREAM, `KV_${NODES_BUCKET}`]) {
          const c = (await jsm.streams.info(s).catch(() => null))?.cluster;
          if (!c?.leader || c.replicas?.length !== 2 || !c.replicas.every((r) => r.current && !r.offline)) return undefined;
        }
        return true;
      },
      40_000,
    );

  beforeAll(async () => {
    env = await startClusterEnv({ seed: 'cluster-server-stall', slotMs: 100, names: ['a', 'b', 'c'] });
    nodes = env.cluster.nodes;
    nc = await connect({ servers: env.nats.urls, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    jsm = await jetstreamManager(nc);
    await waitFor('every node to see three live nodes', async () => ((await Promise.all(nodes.map((n) => n.health()))).every((h) => h.cluster?.nodes.length === 3) ? true : undefined), 20_000);
    for (const n of nodes) streams.set(n.name, await arrivals(n, env.key));
  }, 90_000);
  afterAll(async () => {
    for (const s of streams.values()) s.close();
    await nc?.close();
    await env?.close();
  });

  /**
   * Load on every node; freeze the server `pick` names for each of `stallsMs` in turn (2 s of
   * load between; chosen again each time: the nodes moved away from the last one); then the
   * checks of the file's comment. Prints the lag during and after the stalls.
   */
  async function stallUnderLoad(pick: () => Promise<{ server: number; label: string }>, stallsMs: number[]): Promise<void> {
    const load = new SendLoad(env, nodes, { workers: 1, gapMs: 40 });
    await sleep(2_000);
    const started = Date.now();
    const windows: [number, number][] = [];
    const labels: string[] = [];
    for (const ms of stallsMs) {
      const victim = await pick();
      labels.push(`${victim.label} frozen ${ms / 1000} s`);
      const from = Date.now();
      env.nats.pause(victim.server);
      try {
        await sleep(ms);
      } finally {
        env.nats.resume(victim.server);
      }
      windows.push([from, Date.now()]);
      await sleep(2_000);
    }
    const label = labels.join(', then ');
    await load.stop();
    const ended = windows[windows.length - 1]![1];
    allAcks.push(...load.acks.map((k) => k.signature));

    const during = load.acks.filter((k) => windows.some(([f, t]) => k.at >= f && k.at < t));
    const after = load.acks.filter((k) => k.at >= ended);
    const lagDuring = replicationLag(during, nodes, streams);
    const lagAfter = replicationLag(after, nodes, streams);
    const takeovers = takeoversSince(nodes, started);
    const lagOf = (k: Ack) => nodes.filter((n) => n.name !== k.node).map((n) => `${k.node}->${n.name} ${(streams.get(n.name)!.firstAt.get(k.signature) ?? NaN) - k.at} ms at +${k.at - windows[0]![0]}`);
    const slow = during.flatMap(lagOf).filter((x) => Number(/ (\d+) ms/.exec(x)?.[1]) > 2_000);
    const unsettled = await settledEverywhere(env, nodes, streams, load.acks.map((k) => k.signature), SETTLE_MS);
    const { missing } = replicationLag(load.acks, nodes, streams);
    const { views, chainConfirmed } = await ledgerEverywhere(env, nodes, allAcks);
    console.log(
      `${label}: ${load.acks.length} sends acknowledged (${load.errors} errors); takeovers: ${takeovers.length === 0 ? 'none' : takeovers.join('; ')}; ` +
        `replication lag during the stall ${lagSummary(lagDuring.lags)}, after it ${lagSummary(lagAfter.lags)}; usage on the nodes ${views[0]}, confirmed on the chain ${chainConfirmed}`,
    );
    console.log(`links: ${windows.map(([f, t]) => linkMoves(nodes, f, t + 2_000)).join(' | ')}; lag over 2 s: ${slow.length} (${slow.slice(0, 12).join(', ')})`);
    if (takeovers.length > 0) for (const n of nodes) console.log(n.name, n.output().split('\n').filter((l) => l.includes('cluster')).slice(-12).join('\n'));

    expect(takeovers).toEqual([]);
    expect(unsettled).toEqual([]);
    expect(missing).toEqual([]);
    expect(new Set(views).size).toBe(1);
    expect(load.errors).toBe(0);
    expect(JSON.parse(views[0]!).service_points).toBe(chainConfirmed * Math.floor(LOAD_TIP / LAMPORTS_PER_POINT));
    expect(during.length).toBeGreaterThan(0);
    expect(percentile(lagDuring.lags, 99)).toBeLessThanOrEqual(STALL_P99_BOUND_MS);
  }

  /** The server most nodes use now. */
  const mostUsed = async () => {
    const { server, nodes: on } = await busiest();
    return { server, label: `nats-${server} (used by ${on.join(', ')})` };
  };

  it('the server most nodes use, frozen for 10 s: no live node is taken over', async () => {
    await stallUnderLoad(mostUsed, [10_000]);
  }, 110_000);

  it('stalls of 3, 4 and 5 s (around the dead-after time): no live node is taken over', async () => {
    await allCurrent();
    await stallUnderLoad(mostUsed, [3_000, 4_000, 5_000]);
  }, 110_000);

  it('the server leading the node leases, frozen for 10 s: no live node is taken over', async () => {
    await allCurrent();
    await stallUnderLoad(async () => {
      const [leader, on] = [await leaderOf(`KV_${NODES_BUCKET}`), await serverOf()];
      return { server: leader, label: `nats-${leader} (the node leases' leader, used by ${nodes.filter((n) => on.get(n.name) === leader).map((n) => n.name).join(', ') || 'no node'})` };
    }, [10_000]);
  }, 110_000);
});

/**
 * Node leases and takeover (src/cluster/leases.ts) against a real nats-server with JetStream:
 * exactly one live node takes over a node that stops heartbeating, once per incarnation, and a
 * node cut off from NATS takes nobody over when it comes back. On a 3-server cluster, the server
 * leading the leases bucket is killed with SIGKILL: through the election (4-9 s without a leader,
 * every node's puts failing) no node is judged dead, and after it a node that stops is taken over
 * once. The clocks are shortened (heartbeat 100 ms, dead after 400 ms); every wait is bounded.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { Leases, NODES_BUCKET, openNodesBucket, type NodeLease } from '../../src/cluster/leases.js';
import { startNatsCluster, type NatsCluster } from '../../harness/nats-cluster.js';

const HEARTBEAT = 100;
const DEAD_AFTER = 400;

/** Poll `cond` every 50 ms until true; throws after `ms`. */
async function until(cond: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe('node leases on a real nats-server', () => {
  let server: NatsCluster;
  let nc: NatsConnection;
  let kv: KV;
  /** The connection's state, from its status events (what the cluster link's `up` reports). */
  let up = true;
  const running: Leases[] = [];
  const takenBy = new Map<string, NodeLease[]>();

  /** The two nodes that stay up through the first test. */
  let a: Leases;
  let b: Leases;
  /** Nodes whose link comes back later than the connection (a slower reconnect). */
  const lagging = new Set<string>();

  function node(name: string): Leases {
    const got: NodeLease[] = takenBy.get(name) ?? [];
    takenBy.set(name, got);
    const l = new Leases({ kv, node: name, up: () => up && !lagging.has(name), heartbeatMs: HEARTBEAT, deadAfterMs: DEAD_AFTER, onTakeover: (d) => void got.push(d) });
    l.start();
    running.push(l);
    return l;
  }
  /** Every takeover of `dead` by any node, oldest incarnation first. */
  const takeoversOf = (dead: string): NodeLease[] =>
    [...takenBy.values()]
      .flat()
      .filter((d) => d.node === dead)
      .sort((x, y) => x.started - y.started);

  beforeAll(async () => {
    server = await startNatsCluster(1);
    nc = await connect({ servers: server.urls[0], maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    kv = await openNodesBucket(nc, 1);
    void (async () => {
      for await (const st of nc.status()) {
        if (st.type === 'disconnect') up = false;
        if (st.type === 'reconnect') up = true;
      }
    })();
  });
  afterAll(async () => {
    for (const l of running) await l.stop();
    await nc?.close();
    await server?.close();
  });

  it('exactly one live node takes over a node that stops heartbeating, once per incarnation', async () => {
    a = node('a');
    b = node('b');
    let c = node('c');
    await until(() => a.liveNodes().join() === 'a,b,c' && b.liveNodes().join() === 'a,b,c', 5_000, 'all three live');

    await c.stop(); // as kill -9: its lease simply stops changing
    await until(() => takeoversOf('c').length > 0, 5_000, 'a takeover of c');
    await sleep(5 * HEARTBEAT); // more rounds: nobody takes the same incarnation again
    const first = takeoversOf('c');
    expect(first).toHaveLength(1);
    expect(takenBy.get('c')).toEqual([]);
    expect(a.liveNodes()).toEqual(['a', 'b']);

    // c comes back (a new incarnation), is live again, dies again: taken over again, once.
    c = node('c');
    await until(() => a.liveNodes().includes('c') && b.liveNodes().includes('c'), 5_000, 'c live again');
    await c.stop();
    await until(() => takeoversOf('c').length > 1, 5_000, 'a second takeover of c');
    await sleep(5 * HEARTBEAT);
    const all = takeoversOf('c');
    expect(all).toHaveLength(2);
    expect(all[1]!.started).toBeGreaterThan(all[0]!.started);
    expect(all[0]!.started).toBe(first[0]!.started);
  });

  it('after a NATS outage longer than the dead-after time, the first node back waits for the others before judging them', async () => {
    const before = [...takenBy.values()].flat().length;
    const live = [a, b];
    expect(live.map((l) => l.liveNodes().join())).toEqual(['a,b', 'a,b']);
    await server.kill(0);
    await until(() => live.every((l) => !l.healthy()), 5_000, 'the nodes to notice the outage');
    await sleep(3 * DEAD_AFTER); // every lease is now older than the dead-after time
    // b's link comes back half a dead-after time later than a's: a's first reads still show
    // b's lease as it was before the outage.
    lagging.add('b');
    await server.restart(0);
    await until(() => live.some((l) => l.healthy()), 15_000, 'a to reach NATS again');
    await sleep(DEAD_AFTER / 2);
    lagging.delete('b');
    await until(() => live.every((l) => l.healthy()), 15_000, 'b to reach NATS again');
    await sleep(3 * DEAD_AFTER); // long enough to judge, had a wrongly concluded anything
    expect([...takenBy.values()].flat().length).toBe(before);
    expect(live.map((l) => l.liveNodes().join())).toEqual(['a,b', 'a,b']);
  });
});

/** The bucket, once a fresh cluster's JetStream answers (it elects its meta leader first; bounded). */
async function openBucketWhenReady(nc: NatsConnection): Promise<KV> {
  for (const end = Date.now() + 20_000; ; await sleep(250)) {
    try {
      return await openNodesBucket(nc, 3);
    } catch (e) {
      if (Date.now() > end) throw e;
    }
  }
}

describe('node leases when the server leading their bucket is killed', () => {
  let servers: NatsCluster;
  const conns: NatsConnection[] = [];
  const running: Leases[] = [];
  const takeovers: NodeLease[] = [];

  /** A node with its own connection, to server `i` first (as nodes spread over the servers). */
  async function node(name: string, i: number): Promise<Leases> {
    const urls = [...servers.urls.slice(i), ...servers.urls.slice(0, i)];
    const nc = await connect({ servers: urls, noRandomize: true, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    conns.push(nc);
    let up = true;
    void (async () => {
      for await (const st of nc.status()) {
        if (st.type === 'disconnect') up = false;
        if (st.type === 'reconnect') up = true;
      }
    })();
    const kv = await openBucketWhenReady(nc);
    const l = new Leases({ kv, node: name, up: () => up, heartbeatMs: HEARTBEAT, deadAfterMs: DEAD_AFTER, onTakeover: (d) => void takeovers.push(d) });
    l.start();
    running.push(l);
    return l;
  }

  beforeAll(async () => {
    servers = await startNatsCluster(3);
  });
  afterAll(async () => {
    for (const l of running) await l.stop();
    for (const nc of conns) await nc.close();
    await servers?.close();
  });

  it('judges nobody dead through the election, and the one node that stops after it exactly once', async () => {
    const [a, b] = [await node('a', 0), await node('b', 1)];
    const c = await node('c', 2);
    await until(() => [a, b, c].every((l) => l.liveNodes().join() === 'a,b,c'), 10_000, 'all three live');
    await sleep(3 * DEAD_AFTER); // long enough to judge: the nodes judge from here on

    const jsm = await jetstreamManager(conns[0]!);
    const leader = (await jsm.streams.info(`KV_${NODES_BUCKET}`)).cluster!.leader!;
    await servers.kill(Number(/^nats-(\d+)$/.exec(leader)![1]));
    // Watch every node's view for 10 s: longer than the longest election (9 s).
    const views = new Set<string>();
    for (const end = Date.now() + 10_000; Date.now() < end; await sleep(50)) for (const l of [a, b, c]) views.add(l.liveNodes().join());
    expect([...views]).toEqual(['a,b,c']);
    expect(takeovers).toEqual([]);

    // Judging still works once the bucket has a leader again: c stops (as kill -9).
    await c.stop();
    // Each node judges on its own evidence (a node whose watch is still being made again judges later).
    await until(() => [a, b].every((l) => l.liveNodes().join() === 'a,b'), 15_000, 'a and b to judge c dead');
    await sleep(5 * HEARTBEAT); // more rounds: nobody takes the same incarnation again
    expect(takeovers.map((d) => d.node)).toEqual(['c']);
  }, 60_000);
});

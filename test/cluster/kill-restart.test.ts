/**
 * A `200` is a promise on a cluster too (issue 19): three nodes on a 3-server NATS cluster and
 * one local Solana cluster (a child process, so it outlives the nodes); a load sends to nodes a
 * and b; b is killed with SIGKILL the moment one of its acknowledgements arrives (others in
 * flight), then started again on its data directory. Every send any node acknowledged must be
 * readable on every node, end in the same terminal state everywhere, and count exactly once in
 * the account's usage and points on every node — including those b acknowledged in its last
 * milliseconds, whose records were only in its acknowledgement log and whose events never left.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLANS, pointsForTip } from '../../src/accounts/plans.js';
import { decodeStatus, signatureOfKey } from '../../src/store/status-codec.js';
import { Store } from '../../src/store/store.js';
import { accountOn, SendLoad, startClusterEnv, statusOn, waitTerminalEverywhere, type ClusterEnv } from '../../harness/cluster-load.js';
import type { ClusterNode } from '../../harness/cluster-nodes.js';
import { waitFor } from '../../harness/localnet.js';

const LAMPORTS_PER_POINT = 1000;
/** b is killed as the number of its acknowledgements passes this. */
const KILL_AFTER_ACKS = 60;

describe('kill -9 of a node and its restart', () => {
  let env: ClusterEnv;
  beforeAll(async () => {
    // A budget the load never reaches: b acknowledges steadily up to the kill.
    const plans = { ...DEFAULT_PLANS, whale: { ...DEFAULT_PLANS.whale, maxTps: 3_000, queryTps: 6_000 } };
    env = await startClusterEnv({ seed: 'cluster-kill-restart', slotMs: 100, names: ['a', 'b', 'c'], config: { lamportsPerPoint: LAMPORTS_PER_POINT, plans } });
  }, 90_000);
  afterAll(async () => {
    await env?.close();
  });

  /** A status read, again while the account's query budget refuses it (429: it is shared by every node). */
  const readStatus = (n: ClusterNode, signature: string) =>
    waitFor(`${signature} on ${n.name}`, async () => {
      const r = await statusOn(n, env.key, signature);
      return r.status === 429 ? undefined : r;
    }, 10_000);

  it('loses no acknowledged send: readable everywhere, one terminal state, usage and points once on every node', async () => {
    const [a, b, c] = env.cluster.nodes as [ClusterNode, ClusterNode, ClusterNode];
    const load = new SendLoad(env, [a, b], { workers: 4, gapMs: 5 });
    await load.waitAcks(b, KILL_AFTER_ACKS, 60_000);
    await b.kill();
    const killAt = Date.now();
    await new Promise((r) => setTimeout(r, 300));
    await load.stop();
    const acked = load.acks;
    const lastOnB = Math.max(...acked.filter((x) => x.node === 'b').map((x) => x.at));
    await b.restart();

    // Every acknowledged send readable on every node (replication after the restart: bounded wait).
    for (const n of [a, b, c]) {
      for (const x of acked) {
        await waitFor(`${x.signature} (acknowledged by ${x.node} ${killAt - x.at} ms before the kill) on ${n.name}`, async () => {
          const r = await statusOn(n, env.key, x.signature);
          if (r.status !== 200 && r.status !== 404 && r.status !== 429) throw new Error(`${r.status} ${JSON.stringify(r.body)}`);
          return r.status === 200 ? true : undefined;
        }, 20_000);
      }
    }
    const stuck = await waitTerminalEverywhere([a, b, c], env.key, acked.map((x) => x.signature), 60_000);
    expect(stuck).toEqual([]);
    for (const x of acked) {
      const views = await Promise.all([a, b, c].map(async (n) => (await readStatus(n, x.signature)).body));
      for (const v of views) expect({ status: v.status, slot: v.slot }).toEqual({ status: views[0].status, slot: views[0].slot });
    }

    // Usage and points: every record of the account once, every confirmed tip once, on every node.
    const store = Store.open(b.dataDir, { readOnly: true });
    let records = 0;
    let points = 0;
    try {
      store.root.resetReadTxn();
      for (const { key, value } of store.status.getRange()) {
        const r = decodeStatus(signatureOfKey(key), value);
        if (r.accountId !== env.accountId) continue;
        records++;
        if (r.status === 'confirmed') points += pointsForTip(r.tipLamports, LAMPORTS_PER_POINT);
      }
    } finally {
      await store.close();
    }
    expect(records).toBeGreaterThanOrEqual(new Set(acked.map((x) => x.signature)).size);
    for (const n of [a, b, c]) {
      await waitFor(`usage and points on ${n.name}`, async () => {
        const r = await accountOn(n, env.key);
        return r.status === 200 && r.body.usage.transactions_total === records && r.body.usage.service_points === points ? true : undefined;
      }, 20_000).catch(async (e: Error) => {
        throw new Error(`${e.message}: ${JSON.stringify((await accountOn(n, env.key)).body.usage)} != ${JSON.stringify({ records, points })}`);
      });
    }
    const replay = b.output().split('\n').find((l) => l.includes('acknowledgement logs replayed'));
    console.log(
      `kill -9 of b: ${acked.length} sends acknowledged (b's newest ${killAt - lastOnB} ms before the kill), ${records} records of the account, ` +
        `all readable and terminal on a, b and c; b's replay: ${replay ?? 'none'}`,
    );
  }, 240_000);
});

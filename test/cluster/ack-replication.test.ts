/**
 * `ackReplication: quorum` (issue 32, item 5): a node's machine lost for good. Three nodes on a
 * 3-server NATS cluster (JetStream R3) and one local Solana cluster; a load sends to a and b; b
 * is killed with SIGKILL while its acknowledgements flow and is NEVER started again (its disk is
 * gone with it). In `quorum` every send b acknowledged was stored by a JetStream quorum before
 * its 200, so every one must be known to a and c and become terminal there (c takes b's pending
 * transactions over). In `local` (the old behaviour) the sends b acknowledged in its last ~50 ms
 * (the status events' linger) are unknown to the survivors for good: this test fails there
 * (`ACK_REPLICATION=local npx vitest run test/cluster/ack-replication.test.ts` shows it).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLANS } from '../../src/accounts/plans.js';
import { SendLoad, startClusterEnv, statusOn, waitTerminalEverywhere, type ClusterEnv } from '../../harness/cluster-load.js';
import type { ClusterNode } from '../../harness/cluster-nodes.js';
import { waitFor } from '../../harness/localnet.js';

/** b is killed as the number of its acknowledgements passes this. */
const KILL_AFTER_ACKS = 80;
const MODE = process.env.ACK_REPLICATION ?? 'quorum';

describe(`a node lost for good, ackReplication: ${MODE}`, () => {
  let env: ClusterEnv;
  beforeAll(async () => {
    // A budget the load never reaches: b acknowledges steadily up to the kill.
    const plans = { ...DEFAULT_PLANS, whale: { ...DEFAULT_PLANS.whale, maxTps: 3_000, queryTps: 6_000 } };
    env = await startClusterEnv({ seed: 'cluster-ack-replication', slotMs: 100, names: ['a', 'b', 'c'], config: { plans, ackReplication: MODE } });
  }, 90_000);
  afterAll(async () => {
    await env?.close();
  });

  it('every send the lost node acknowledged is known to the survivors and terminal there', async () => {
    const [a, b, c] = env.cluster.nodes as [ClusterNode, ClusterNode, ClusterNode];
    const load = new SendLoad(env, [a, b], { workers: 6, gapMs: 2 });
    // Killed the moment its acknowledgements pass the mark: others are in flight, some just answered.
    await waitFor('b under load', () => (load.acks.filter((x) => x.node === 'b').length >= KILL_AFTER_ACKS ? true : undefined), 60_000);
    await b.kill();
    const killAt = Date.now();
    await new Promise((r) => setTimeout(r, 300));
    await load.stop();
    const onB = load.acks.filter((x) => x.node === 'b');
    const lastOnB = Math.max(...onB.map((x) => x.at));

    // Known on the survivors: JetStream holds each record (a bounded wait for the consumers).
    const unknown: string[] = [];
    for (const n of [a, c]) {
      for (const x of onB) {
        await waitFor(`${x.signature} on ${n.name}`, async () => {
          const r = await statusOn(n, env.key, x.signature);
          if (r.status !== 200 && r.status !== 404 && r.status !== 429) throw new Error(`${r.status} ${JSON.stringify(r.body)}`);
          return r.status === 200 ? true : undefined;
        }, 15_000).catch(() => unknown.push(`${x.signature} on ${n.name}, acknowledged by b ${killAt - x.at} ms before the kill`));
      }
    }
    expect(unknown).toEqual([]);
    const stuck = await waitTerminalEverywhere([a, c], env.key, onB.map((x) => x.signature), 60_000);
    expect(stuck).toEqual([]);
    console.log(`${MODE}: b acknowledged ${onB.length} sends (its newest ${killAt - lastOnB} ms before the kill), all known and terminal on a and c`);
  }, 200_000);
});

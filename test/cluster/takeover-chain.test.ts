/**
 * Issue 19, item 5: takeovers chain. Three nodes (child processes) on a 3-server NATS cluster and
 * one local Solana cluster. Node a accepts transactions that can never land (their fee payer has
 * no lamports: the chain drops them), so they stay pending until their blockhash expires. a is
 * killed with SIGKILL and one survivor takes it over; then that taker is killed too, before the
 * transactions expire. The last node must take over the taker and, with it, a's pending
 * transactions: it resumes every one of them (and is the only live node that does), and every one
 * reaches a terminal state (expired) there. Before the chain rule, the last node resumed only
 * the taker's own records and a's stayed pending for ever.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Keypair } from '@solana/web3.js';
import { LOAD_TIP, startClusterEnv, statusOn, waitTerminalEverywhere, type ClusterEnv } from '../../harness/cluster-load.js';
import { type ClusterNode } from '../../harness/cluster-nodes.js';
import { logLines } from '../../harness/log-lines.js';
import { waitFor } from '../../harness/localnet.js';
import { legacyTx, transfer, web3Base58 } from '../../harness/transactions.js';

const NEVER_LANDING = 12;
const TAKEOVER_MS = 20_000;

/** The `took over a dead node` log line of `node` for `dead`, if any. */
const takeoverOf = (node: ClusterNode, dead: string): Record<string, unknown> | undefined =>
  logLines(node.output()).find((l) => l.msg === 'cluster: took over a dead node' && l.dead === dead);

/** Every `took over a dead node` line of the running nodes. */
const takeoverLines = (nodes: ClusterNode[]) => nodes.flatMap((n) => logLines(n.output()).filter((l) => l.msg === 'cluster: took over a dead node').map((l) => ({ by: n.name, dead: l.dead, resumed: l.resumed })));

describe('a taker that dies too', () => {
  let env: ClusterEnv;
  beforeAll(async () => {
    env = await startClusterEnv({ seed: 'cluster-takeover-chain', slotMs: 100, names: ['a', 'b', 'c'] });
  }, 90_000);
  afterAll(async () => {
    await env?.close();
  });

  it('hands the first dead node’s pending transactions on: the last node resumes and settles every one', async () => {
    const [a, b, c] = env.cluster.nodes as [ClusterNode, ClusterNode, ClusterNode];
    await waitFor('every node to see three live nodes', async () => ((await Promise.all([a, b, c].map((n) => n.health()))).every((h) => h.cluster?.nodes.length === 3) ? true : undefined), 20_000);

    const { blockhash } = await env.connection.getLatestBlockhash('confirmed');
    const sigs: string[] = [];
    for (let i = 0; i < NEVER_LANDING; i++) {
      const payer = Keypair.generate(); // never funded: the chain drops its transaction
      const tx = legacyTx([transfer(payer.publicKey, env.tips[i % env.tips.length]!, LOAD_TIP)], { feePayer: payer, blockhash });
      const r = await fetch(`${a.url}/v1/send`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${env.key}` },
        body: JSON.stringify({ transaction: tx.base64 }),
      });
      expect(r.status, await r.text()).toBe(200);
      sigs.push(web3Base58(tx.signatures[0]!));
    }
    for (const n of [b, c]) {
      for (const s of sigs) await waitFor(`${s} pending on ${n.name}`, async () => ((await statusOn(n, env.key, s)).body?.status === 'sent' ? true : undefined), 10_000);
    }

    await a.kill();
    const { taker, first } = await waitFor(
      'a survivor to take over a',
      () => [b, c].map((n) => ({ taker: n, first: takeoverOf(n, 'a')! })).find((x) => x.first !== undefined),
      TAKEOVER_MS,
    );
    const last = taker === b ? c : b;
    expect(first.resumed).toBe(NEVER_LANDING);
    await taker.kill();

    const second = await waitFor(`${last.name} to take over ${taker.name}`, () => takeoverOf(last, taker.name), TAKEOVER_MS);
    console.log(`takeover chain: ${taker.name} took over a (${String(first.resumed)} resumed), ${last.name} took over ${taker.name} (${String(second.resumed)} resumed)`);
    expect(second.resumed).toBe(NEVER_LANDING); // a's transactions, held by the taker
    expect(await waitTerminalEverywhere([last], env.key, sigs, 40_000)).toEqual([]);
    // Exactly one live node resumed them: the last one, once (it lost the race for a).
    expect(takeoverLines([last])).toEqual([{ by: last.name, dead: taker.name, resumed: NEVER_LANDING }]);
  }, 120_000);
});

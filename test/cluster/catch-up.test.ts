/**
 * Issue 13, failure scenario 4: a node started later, with an empty data directory, catches up
 * from the cluster alone — the accounts bucket (accounts, keys, revocations, plans set by an
 * administrator) and the status stream from its first event (every record, and from them the
 * points and usage) — and then serves every account and status as the nodes that saw them happen.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterNode } from '../../harness/cluster-nodes.js';
import { accountOn, startClusterEnv, statusOn, waitTerminalEverywhere, type ClusterEnv } from '../../harness/cluster-load.js';
import { waitFor } from '../../harness/localnet.js';
import { legacyTx, transfer, web3Base58 } from '../../harness/transactions.js';

const SENDS = 8;

let env: ClusterEnv;

beforeAll(async () => {
  env = await startClusterEnv({ seed: 'cluster-catch-up', slotMs: 100, names: ['a', 'b'] });
}, 90_000);

afterAll(async () => {
  await env?.close();
});

async function send(node: ClusterNode, unique: number): Promise<string> {
  const { blockhash } = await env.connection.getLatestBlockhash('confirmed');
  const tx = legacyTx([transfer(env.payer.publicKey, env.payer.publicKey, unique), transfer(env.payer.publicKey, env.tips[unique % env.tips.length]!, 1_000_000 + unique * 777)], {
    feePayer: env.payer,
    blockhash,
  });
  const r = await fetch(`${node.url}/v1/send`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${env.key}` },
    body: JSON.stringify({ transaction: tx.base64 }),
  });
  expect(r.status, await r.clone().text()).toBe(200);
  return web3Base58(tx.signatures[0]!);
}

const cli = async (...args: string[]) => JSON.parse(await env.cluster.cli(...args, '--json'));

describe('a node started later with an empty data directory', () => {
  it('catches up on accounts, keys, plans, statuses, points and usage, and serves them', async () => {
    const [a, b] = env.cluster.nodes as [ClusterNode, ClusterNode];
    // A second account, moved to growth by an administrator, with a key revoked since.
    const other = (await cli('accounts', 'create', '--name', 'other')) as { account_id: string; api_key: string };
    const spare = (await cli('keys', 'create', '--account', other.account_id, '--name', 'spare')) as { api_key: string };
    await cli('keys', 'revoke', '--account', other.account_id, '--name', 'spare');
    await cli('accounts', 'set-plan', other.account_id, 'growth');

    const sigs: string[] = [];
    for (let i = 0; i < SENDS; i++) sigs.push(await send(i % 2 === 0 ? a : b, i + 1));
    expect(await waitTerminalEverywhere([a, b], env.key, sigs, 30_000)).toEqual([]);
    const before = new Map<string, unknown>();
    for (const s of sigs) before.set(s, (await statusOn(a, env.key, s)).body);
    const accountBefore = (await accountOn(a, env.key)).body;
    expect(accountBefore.usage.transactions_total).toBe(SENDS);

    const late = await env.cluster.add('late');
    // Every status, exactly as node a has it (replayed from the stream: wait, bounded).
    for (const s of sigs) {
      const view = await waitFor(`${s} on the late node`, async () => {
        const r = await statusOn(late, env.key, s);
        return r.status === 200 && r.body.status === (before.get(s) as { status: string }).status ? r.body : undefined;
      }, 20_000);
      expect(view).toEqual(before.get(s));
    }
    // Points and usage derived from the replayed records; the plan follows the points.
    const account = await waitFor('the late node to credit every confirmation', async () => {
      const r = await accountOn(late, env.key);
      return r.body.usage?.service_points === accountBefore.usage.service_points ? r.body : undefined;
    }, 20_000);
    expect(account.usage).toEqual(accountBefore.usage);
    expect(account.plan).toBe(accountBefore.plan);

    // The other account: its plan as set, its live key accepted, its revoked key refused.
    const otherView = await accountOn(late, other.api_key);
    expect(otherView.status).toBe(200);
    expect(otherView.body.plan).toBe('growth');
    expect((await accountOn(late, spare.api_key)).status).toBe(401);

    // And it is a full node: a send to it is readable on the others.
    const mine = await send(late, SENDS + 1);
    for (const n of [a, b]) await waitFor(`the late node's send on ${n.name}`, async () => ((await statusOn(n, env.key, mine)).status === 200 ? true : undefined), 10_000);
  }, 60_000);
});

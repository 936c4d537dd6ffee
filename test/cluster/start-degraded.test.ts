/**
 * A node started while every NATS server is down (issue 13: the hot path never waits on NATS):
 * it starts and serves at once, says so in /health (`nats: down`, `mode: degraded`), and joins
 * the cluster by itself when the servers come back — the accounts bucket mirrored, an account
 * created through it then usable on the node.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startChildLocalnet, type ChildLocalnet } from '../../harness/child-localnet.js';
import { startClusterNodes, type ClusterNodes } from '../../harness/cluster-nodes.js';
import { waitFor } from '../../harness/localnet.js';
import { startNatsCluster, type NatsCluster } from '../../harness/nats-cluster.js';

let chain: ChildLocalnet;
let nats: NatsCluster;
let nodes: ClusterNodes | undefined;

beforeAll(async () => {
  chain = await startChildLocalnet({ seed: 'cluster-start-degraded', slotMs: 100 });
  nats = await startNatsCluster(3);
}, 60_000);

afterAll(async () => {
  await nodes?.close();
  await nats?.close();
  await chain?.kill();
});

it('a node started with NATS down serves at once and joins when NATS returns', async () => {
  for (let i = 0; i < 3; i++) await nats.stop(i);
  nodes = await startClusterNodes(['early'], { nats: nats.urls, rpcUrl: chain.rpcUrl, wsUrl: chain.wsUrl });
  const node = nodes.nodes[0]!;
  const down = await node.health();
  expect(down.status).toBe('ok');
  expect(down.cluster).toMatchObject({ node: 'early', nats: 'down', mode: 'degraded', budget: 'local-share' });
  // Its banner tells the administrator to create keys through the cluster: a key written into
  // the node's data directory would not reach the other nodes.
  const createLine = /create an API key:\s+(.*)/.exec(node.output())?.[1];
  expect(createLine).toBe(`npx landfall accounts create --name my-bot --nats ${nats.urls.join(',')}`);

  await Promise.all([0, 1, 2].map((i) => nats.restart(i)));
  await waitFor('the node to join', async () => ((await node.health()).cluster?.mode === 'clustered' ? true : undefined), 30_000);
  const created = JSON.parse(await nodes.cli('accounts', 'create', '--name', 'late-account', '--json')) as { api_key: string };
  const account = await waitFor('the account on the node', async () => {
    const r = await fetch(`${node.url}/v1/account`, { headers: { authorization: `Bearer ${created.api_key}` } });
    return r.status === 200 ? ((await r.json()) as { plan: string }) : undefined;
  }, 10_000);
  expect(account.plan).toBe('starter');
}, 90_000);

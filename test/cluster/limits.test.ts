/**
 * Issue 13, failure test 1, the limits part: an account's send budget holds across nodes.
 * Three nodes (child processes, 3-server NATS cluster, one local Solana cluster), one account
 * at RATE sends/s (burst RATE), two of its keys, sends on every node well above the budget:
 * - over every 1-s window, what the three nodes acknowledged together ≤ 1.1 × (rate + burst);
 * - one node alone, the others idle: after one re-balance it gets ≥ 90 % of the rate.
 * Counted from the acknowledgements the clients received (what the nodes accepted).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_PLANS } from '../../src/accounts/plans.js';
import { SendLoad, startClusterEnv, type ClusterEnv } from '../../harness/cluster-load.js';
import { waitFor } from '../../harness/localnet.js';
import { maxInWindow, perWindow } from '../../harness/windows.js';

const RATE = 20;
const LOAD_MS = 5_000;
/** A share follows demand within one report period (200 ms) plus the 1-s demand window. */
const REBALANCE_MS = 1_500;

describe('per-account limits across three nodes', () => {
  let env: ClusterEnv;
  let keys: string[];
  beforeAll(async () => {
    env = await startClusterEnv({
      seed: 'cluster-limits',
      slotMs: 100,
      names: ['a', 'b', 'c'],
      plan: 'starter',
      config: { plans: { ...DEFAULT_PLANS, starter: { ...DEFAULT_PLANS.starter, maxTps: RATE, queryTps: 2 * RATE } } },
    });
    const second = JSON.parse(await env.cluster.cli('keys', 'create', '--account', env.accountId, '--name', 'second', '--json')) as { api_key: string };
    keys = [env.key, second.api_key];
    const nodes = env.cluster.nodes;
    await waitFor('every node to see three live nodes and the second key', async () => {
      const h = await Promise.all(nodes.map((n) => n.health()));
      if (!h.every((x) => x.cluster?.nodes.length === 3 && x.cluster.budget === 'shared')) return undefined;
      const r = await Promise.all(nodes.map((n) => fetch(`${n.url}/v1/account`, { headers: { authorization: `Bearer ${keys[1]}` } })));
      return r.every((x) => x.status === 200) ? true : undefined;
    }, 20_000);
  }, 90_000);
  afterAll(async () => {
    await env?.close();
  });

  it('all nodes together never accept more than 1.1 × (rate + burst) in any 1-s window', async () => {
    const t0 = Date.now();
    const load = new SendLoad(env, env.cluster.nodes, { workers: 2, gapMs: 5, keys });
    await sleep(LOAD_MS);
    await load.stop();
    const t1 = Date.now();
    expect(load.errors).toBe(0);
    expect(load.refused.get(429) ?? 0).toBeGreaterThan(0); // the load was over the budget
    expect([...load.refused.keys()].filter((s) => s !== 429)).toEqual([]);
    const times = load.acks.map((k) => k.at);
    const busiest = maxInWindow(times, 1000, t0, t1);
    console.log(`limits: all busy, per 1-s window ${perWindow(times, 1000, t0, t1).join(', ')}; busiest ${busiest} of ${2 * RATE} (rate + burst)`);
    expect(busiest).toBeLessThanOrEqual(1.1 * 2 * RATE);
    for (const n of env.cluster.nodes) expect(load.acks.some((k) => k.node === n.name), `${n.name} accepted some`).toBe(true);
  }, 60_000);

  it('one node alone uses ≥ 90 % of the budget', async () => {
    await sleep(2_000); // the others' demand leaves the 1-s window
    const t0 = Date.now();
    const load = new SendLoad(env, [env.cluster.nodes[0]!], { workers: 3, gapMs: 5, keys });
    await sleep(LOAD_MS);
    await load.stop();
    expect(load.refused.get(429) ?? 0).toBeGreaterThan(0); // it asked for more than the budget
    const steady = perWindow(
      load.acks.map((k) => k.at),
      1000,
      t0 + REBALANCE_MS,
      t0 + LOAD_MS,
    );
    const mean = steady.reduce((x, y) => x + y, 0) / steady.length;
    console.log(`limits: one node alone, per 1-s window after the re-balance ${steady.join(', ')} (rate ${RATE})`);
    expect(mean).toBeGreaterThanOrEqual(0.9 * RATE);
  }, 60_000);
});

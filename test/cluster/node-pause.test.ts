/**
 * Issue 32, item 2: a takeover is a lease with an end. Three Landfall nodes over three routed
 * JetStream servers (replicas 3), one local Solana cluster, sends on every node throughout:
 * - node a is frozen (SIGSTOP) for 10 s, longer than the dead-after time: one survivor takes it
 *   over; a runs again (SIGCONT) and what it accepts from then on is its own — the taker adopts
 *   none of it (it resent 16–18 of 21 such sends before);
 * - a is frozen again: taken over again (the same incarnation, a later lease), the same rules;
 * - a is killed (kill -9) and not restarted: taken over a third time, and its pending sends settle
 *   on the survivors (they stayed `sent` for good before: the incarnation counted as handled).
 * After each: every acknowledged send is terminal on every live node, the same points and usage
 * everywhere, matching the confirmations on the chain.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ClusterNode } from '../../harness/cluster-nodes.js';
import { LOAD_TIP, SendLoad, startClusterEnv, type ClusterEnv } from '../../harness/cluster-load.js';
import { arrivals, ledgerEverywhere, settledEverywhere, takeoversSince, type Arrivals } from '../../harness/cluster-faults.js';
import { logLines } from '../../harness/log-lines.js';
import { waitFor } from '../../harness/localnet.js';

const LAMPORTS_PER_POINT = 1_000;
/** Every acknowledged send is terminal everywhere this long after the fault ends (the promise). */
const SETTLE_MS = 30_000;
const PAUSE_MS = 10_000;

describe('a node frozen (SIGSTOP) and killed under load', () => {
  let env: ClusterEnv;
  let nodes: ClusterNode[];
  let a: ClusterNode;
  const streams = new Map<string, Arrivals>();
  const allAcks: string[] = [];

  beforeAll(async () => {
    env = await startClusterEnv({ seed: 'cluster-node-pause', slotMs: 100, names: ['a', 'b', 'c'] });
    nodes = env.cluster.nodes;
    a = nodes[0]!;
    await waitFor('every node to see three live nodes', async () => ((await Promise.all(nodes.map((n) => n.health()))).every((h) => h.cluster?.nodes.length === 3) ? true : undefined), 20_000);
    for (const n of nodes) streams.set(n.name, await arrivals(n, env.key));
  }, 90_000);
  afterAll(async () => {
    for (const s of streams.values()) s.close();
    await env?.close();
  });

  /** Signatures a node logged as adopted late (records of a node it took over). */
  const adoptedBy = (n: ClusterNode, since: number): string[] =>
    logLines(n.output())
      .filter((l) => l.msg === 'cluster: adopted late records of a node taken over' && (l.time as number) >= since)
      .flatMap((l) => l.signatures as string[]);

  /**
   * Delivery attempts `n` made for `signature` (its trace): a node sends only what it accepted
   * or resumed, so on another node than the origin, any attempt is a resend of an adopted record.
   */
  const attemptsOn = async (n: ClusterNode, signature: string): Promise<number> => {
    for (;;) {
      const r = await fetch(`${n.url}/v1/status/${signature}/trace`, { headers: { authorization: `Bearer ${env.key}` } });
      if (r.status === 429) {
        await sleep(100); // the account's query budget
        continue;
      }
      const body = (await r.json()) as { attempts?: unknown[] };
      return body.attempts?.length ?? 0;
    }
  };

  /** The end state every case checks on `live`: settled, one ledger, the chain's confirmations. */
  async function settled(load: SendLoad, live: ClusterNode[]): Promise<void> {
    const unsettled = await settledEverywhere(env, live, streams, load.acks.map((k) => k.signature), SETTLE_MS);
    expect(unsettled).toEqual([]);
    const { views, chainConfirmed } = await ledgerEverywhere(env, live, allAcks);
    console.log(`usage on ${live.map((n) => n.name).join(', ')}: ${views.join(' | ')}; confirmed on the chain ${chainConfirmed}`);
    expect(new Set(views).size).toBe(1);
    expect(JSON.parse(views[0]!).service_points).toBe(chainConfirmed * Math.floor(LOAD_TIP / LAMPORTS_PER_POINT));
  }

  /** Freeze a for PAUSE_MS under load, let it run, load 4 s more; a taken over once, none of its new sends adopted. */
  async function pauseOnce(label: string): Promise<void> {
    const load = new SendLoad(env, nodes, { workers: 1, gapMs: 40 });
    await sleep(2_000);
    const pausedAt = Date.now();
    a.pause();
    try {
      await waitFor('a survivor to take a over', () => (takeoversSince(nodes, pausedAt).length > 0 ? true : undefined), PAUSE_MS).catch(() => undefined);
      await sleep(Math.max(0, pausedAt + PAUSE_MS - Date.now()));
    } finally {
      a.resume();
    }
    const resumedAt = Date.now();
    await sleep(4_000);
    await load.stop();
    allAcks.push(...load.acks.map((k) => k.signature));

    const takeovers = takeoversSince(nodes, pausedAt);
    // What a accepted after it was frozen: requests sent once it was (it read them after SIGCONT).
    const fresh = new Set(load.acks.filter((k) => k.node === 'a' && k.sentAt > pausedAt).map((k) => k.signature));
    const adopted = nodes.flatMap((n) => adoptedBy(n, pausedAt));
    const adoptedFresh = adopted.filter((s) => fresh.has(s));
    const resent: string[] = [];
    for (const sig of fresh) for (const n of nodes.slice(1)) if ((await attemptsOn(n, sig)) > 0) resent.push(`${sig} by ${n.name}`);
    console.log(
      `${label}: ${load.acks.length} sends acknowledged; takeovers ${takeovers.join('; ') || 'none'}; a's sends accepted after it ran again: ${fresh.size}, ` +
        `adopted late by the taker: ${adoptedFresh.length} (all adopted late: ${adopted.length}), sent by another node: ${resent.length}; a ran again ${resumedAt - pausedAt} ms after it froze`,
    );
    expect(takeovers).toHaveLength(1);
    expect(takeovers[0]).toMatch(/^[bc] took over a /);
    expect(fresh.size).toBeGreaterThan(0);
    expect(adoptedFresh).toEqual([]);
    expect(resent).toEqual([]);
    await settled(load, nodes);
    // a is live again for everyone.
    await waitFor('every node to see three live nodes again', async () => ((await Promise.all(nodes.map((n) => n.health()))).every((h) => h.cluster?.nodes.length === 3) ? true : undefined), 20_000);
  }

  it('a node frozen for 10 s is taken over, and owns what it accepts once it runs again', async () => {
    await pauseOnce('a frozen 10 s');
  }, 100_000);

  it('the same node frozen a second time is taken over again', async () => {
    await pauseOnce('a frozen 10 s again');
  }, 100_000);

  it('then killed (kill -9, never restarted): taken over again, its pending sends settle on the survivors', async () => {
    const survivors = nodes.slice(1);
    const load = new SendLoad(env, nodes, { workers: 1, gapMs: 40 });
    await sleep(2_000);
    const killedAt = Date.now();
    await a.kill();
    await sleep(2_000);
    await load.stop();
    allAcks.push(...load.acks.map((k) => k.signature));
    await waitFor('a survivor to take a over', () => (takeoversSince(survivors, killedAt).length > 0 ? true : undefined), 20_000).catch(() => undefined);
    const takeovers = takeoversSince(survivors, killedAt);
    // What a acknowledged and replicated before it died (its last ~50 ms may be lost with it:
    // docs/durability.md); every one of them must settle on both survivors.
    const fromA = load.acks.filter((k) => k.node === 'a');
    const known = fromA.filter((k) => survivors.every((n) => streams.get(n.name)!.firstAt.has(k.signature)));
    console.log(`a killed: takeovers ${takeovers.join('; ') || 'none'}; a acknowledged ${fromA.length}, ${known.length} known on both survivors`);
    expect(takeovers).toHaveLength(1);
    expect(known.length).toBeGreaterThan(0);
    const unsettled = await settledEverywhere(env, survivors, streams, known.map((k) => k.signature), SETTLE_MS);
    expect(unsettled).toEqual([]);
    // The same points and usage on both survivors (the chain may hold sends of a they never heard of).
    const { views } = await ledgerEverywhere(env, survivors, []);
    expect(new Set(views).size).toBe(1);
  }, 100_000);
});

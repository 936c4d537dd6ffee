/**
 * What the cluster fault tests (stalls, partitions, a lost machine: issue 32) check after each
 * fault, on top of `cluster-load.ts`: each node's `/v1/stream` (when each send first reached the
 * node, and the last status it pushed for it), the takeovers the nodes logged, and the end state
 * — every acknowledged send terminal on every live node, the same points and usage everywhere,
 * and as many confirmations as the chain holds.
 */
import WebSocket from 'ws';
import type { ClusterNode } from './cluster-nodes.js';
import { accountOn, isTerminal, statusOn, type Ack, type ClusterEnv } from './cluster-load.js';
import { waitFor } from './localnet.js';
import { logLines } from './log-lines.js';

export interface Arrivals {
  /** When each signature first reached the node (its record written there). */
  firstAt: Map<string, number>;
  /** The last status the node pushed for each signature. */
  last: Map<string, string>;
  /** When the accepting node admitted each signature: its record's `submitted_at` (ms since epoch). */
  admittedAt: Map<string, number>;
  close(): void;
}

/** Follow `/v1/stream` on a node (resolves once the stream said `ready`). */
export function arrivals(node: ClusterNode, key: string): Promise<Arrivals> {
  const ws = new WebSocket(`${node.url.replace(/^http/, 'ws')}/v1/stream?api-key=${key}`);
  const firstAt = new Map<string, number>();
  const last = new Map<string, string>();
  const admittedAt = new Map<string, number>();
  let ready = false;
  ws.on('message', (d) => {
    const m = JSON.parse(String(d)) as { type: string; signature?: string; status?: string; expired?: boolean; submitted_at?: string };
    if (m.type === 'ready') ready = true;
    if (m.type !== 'status' || !m.signature) return;
    if (!firstAt.has(m.signature)) firstAt.set(m.signature, Date.now());
    last.set(m.signature, m.expired ? 'expired' : (m.status ?? ''));
    if (m.submitted_at && !admittedAt.has(m.signature)) admittedAt.set(m.signature, Date.parse(m.submitted_at));
  });
  ws.on('error', () => {});
  return waitFor(`the stream on ${node.name}`, () => (ready ? { firstAt, last, admittedAt, close: () => ws.close() } : undefined), 10_000);
}

export const percentile = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};
export const lagSummary = (xs: number[]): string => `p50 ${percentile(xs, 50)} ms, p99 ${percentile(xs, 99)} ms, max ${percentile(xs, 100)} ms (${xs.length} samples)`;

/**
 * Replication lag of `acks` (acknowledged on one node → first on another's stream), over the
 * pairs that arrived; `missing` lists the pairs that never did.
 */
export function replicationLag(acks: Ack[], nodes: ClusterNode[], streams: Map<string, Arrivals>): { lags: number[]; missing: string[] } {
  const lags: number[] = [];
  const missing: string[] = [];
  for (const k of acks) {
    for (const n of nodes) {
      if (n.name === k.node) continue;
      const at = streams.get(n.name)!.firstAt.get(k.signature);
      if (at === undefined) missing.push(`${k.signature} (from ${k.node}) not on ${n.name}`);
      else lags.push(Math.max(0, at - k.at));
    }
  }
  return { lags, missing };
}

/** The sends acknowledged (by any node) at or after `from` and before `to` (ms since epoch). */
export function ackedIn(acks: Ack[], from: number, to: number): Ack[] {
  return acks.filter((k) => k.at >= from && k.at < to);
}

/**
 * What the nodes accepted together from `from` to `to` (a fault's start and end): per second, as
 * `total (node's part)` for the one `node` the fault isolates, and the busiest `windowMs` window
 * (from 1 s in, sliding by 1 s) as a multiple of the plan's `rate` (sends per second) — the
 * measure of the partition and split tests.
 *
 * Each send is placed at the time its node admitted it (the record's `submitted_at`, from that
 * node's stream), which is when the plan's budget was charged, not when its 200 reached the
 * client: on a loaded machine answers admitted in one second can arrive in the next together
 * (a CI run counted 39 in one second, 115 % over two, from answers bunched that way); a send
 * whose record never reached the stream keeps the client's time.
 */
export function acceptedRate(
  acks: Ack[],
  from: number,
  to: number,
  o: { rate: number; windowMs: number; node: string; streams: Map<string, Arrivals> },
): { perSecond: string[]; ratio: number } {
  const admitted = acks.map((k) => ({ ...k, at: o.streams.get(k.node)?.admittedAt.get(k.signature) ?? k.at }));
  const perSecond: string[] = [];
  for (let t = from; t + 1_000 <= to; t += 1_000) {
    const w = ackedIn(admitted, t, t + 1_000);
    perSecond.push(`${w.length} (${o.node} ${w.filter((k) => k.node === o.node).length})`);
  }
  let ratio = 0;
  for (let t = from + 1_000; t + o.windowMs <= to; t += 1_000) ratio = Math.max(ratio, ackedIn(admitted, t, t + o.windowMs).length / (o.windowMs / 1_000) / o.rate);
  return { perSecond, ratio };
}

/** The takeovers `nodes` logged at or after `since` (ms since epoch), as readable strings. */
export function takeoversSince(nodes: ClusterNode[], since: number): string[] {
  return nodes.flatMap((n) =>
    logLines(n.output())
      .filter((l) => l.msg === 'cluster: taking over a dead node' && (l.time as number) >= since)
      .map((l) => `${n.name} took over ${String(l.dead)} at +${(l.time as number) - since} ms`),
  );
}

const TERMINAL = new Set(['confirmed', 'failed', 'expired']);

/**
 * Wait (bounded) until every signature is terminal on every node, by the nodes' streams first
 * (no query budget spent), then by `GET /v1/status` for what the streams did not show; returns
 * the ones that never were (with what the node last said).
 */
export async function settledEverywhere(env: ClusterEnv, nodes: ClusterNode[], streams: Map<string, Arrivals>, signatures: string[], timeoutMs: number): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  const byStream = () => signatures.flatMap((s) => nodes.filter((n) => !TERMINAL.has(streams.get(n.name)!.last.get(s) ?? '')).map((n) => ({ s, n })));
  await waitFor('every send terminal on every node (streams)', () => (byStream().length === 0 ? true : undefined), timeoutMs).catch(() => undefined);
  const out: string[] = [];
  for (let left = byStream(); left.length > 0; ) {
    const still: typeof left = [];
    for (const x of left) {
      const r = await statusOn(x.n, env.key, x.s).catch(() => ({ status: 0, body: null }));
      if (r.status === 200 && isTerminal(r.body)) continue;
      if (Date.now() > deadline) out.push(`${x.n.name} ${x.s}: ${r.status} ${JSON.stringify(r.body)}`);
      else still.push(x);
    }
    left = still;
    if (left.length > 0) await new Promise((r) => setTimeout(r, 250));
  }
  return out;
}

/**
 * Points and usage on every node (they must be equal), with the confirmations the chain holds of
 * `signatures` (every send of the account so far, when no send request failed midway).
 */
export async function ledgerEverywhere(env: ClusterEnv, nodes: ClusterNode[], signatures: string[]): Promise<{ views: string[]; chainConfirmed: number }> {
  const views = await Promise.all(
    nodes.map(async (n) => {
      const a = await waitFor(`the account on ${n.name}`, async () => {
        const r = await accountOn(n, env.key).catch(() => null);
        return r?.status === 200 ? r.body : undefined;
      }, 10_000);
      return JSON.stringify(a.usage);
    }),
  );
  let chainConfirmed = 0;
  for (let i = 0; i < signatures.length; i += 256) {
    const r = await env.connection.getSignatureStatuses(signatures.slice(i, i + 256), { searchTransactionHistory: true });
    chainConfirmed += r.value.filter((v) => v !== null && v.err === null).length;
  }
  return { views, chainConfirmed };
}

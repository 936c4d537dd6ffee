/**
 * Every core serves requests: the service with two ingress worker threads on one port
 * (SO_REUSEPORT), on the local cluster. Connections are spread over the threads by the kernel;
 * each response's `x-request-id` names the thread that made it (`<prefix>-<threadId>-<n>`), so
 * the tests check that both threads really served, then assert the shared invariants:
 * - an account's budgets hold across threads and keys (never more than capacity + rate × time);
 * - a revoked key is refused by the very next request on every thread;
 * - status pushes reach the account's streams on every thread;
 * - what each thread accepts reaches the main thread whole and in order (the native hand-off
 *   queue: `src/delivery/handoff-queue.ts`).
 */
import { randomBytes } from 'node:crypto';
import { ComputeBudgetProgram } from '@solana/web3.js';
import { Agent, request } from 'undici';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLANS } from '../../src/accounts/plans.js';
import { waitFor } from '../../harness/localnet.js';
import { threadNices } from '../../harness/thread-nice.mjs';
import { account, payer, startStack, tipped, type Stack } from '../../harness/stack.js';
import { web3Base58, web3Base58Decode } from '../../harness/transactions.js';
import type { Accepted } from '../../src/delivery/delivery.js';
import { sentRecord } from '../../src/store/records.js';

const CONNECTIONS = 16;
const INGRESS_NICE = 7;

let s: Stack;
/** One keep-alive connection each: each stays on the thread the kernel gave it. */
let agents: Agent[];

beforeAll(async () => {
  // A niceness nothing else in this process has: the ingress threads can be told apart by it.
  s = await startStack({ config: { ingressThreads: 2, ingressNice: INGRESS_NICE } });
  agents = Array.from({ length: CONNECTIONS }, () => new Agent({ connections: 1, pipelining: 1 }));
});

afterAll(async () => {
  await Promise.all(agents.map((a) => a.close()));
  await s.close();
});

/** The thread id inside a request id we generated (`<hex prefix>-<threadId>-<counter>`). */
function threadOf(requestId: string): number {
  const m = /^[0-9a-f]{8}-(\d+)-[0-9a-z]+$/.exec(requestId);
  if (!m) throw new Error(`not a generated request id: ${requestId}`);
  return Number(m[1]);
}

async function call(agent: Agent, method: 'GET' | 'POST', path: string, key: string, body?: unknown) {
  const r = await request(`${s.svc.url}${path}`, {
    method,
    dispatcher: agent,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.body.text();
  return { status: r.statusCode, body: text, thread: threadOf(String(r.headers['x-request-id'])) };
}

/** A well-formed signature nobody submitted: a status query for it takes a token and answers 404. */
const randomSignature = () => web3Base58(randomBytes(64));

describe('two ingress threads', () => {
  it('each runs at the niceness ingressNice asks for', () => {
    expect(threadNices().filter((n) => n === INGRESS_NICE)).toHaveLength(2);
  });

  it('serve on one port: connections land on both threads', async () => {
    const a = account(s, 'whale');
    const threads = new Set<number>();
    for (const agent of agents) threads.add((await call(agent, 'GET', `/v1/status/${randomSignature()}`, a.key)).thread);
    expect(threads.size).toBe(2);
    expect(s.svc.ingress).not.toBeNull();
  });

  it('hold an account query budget across threads and keys: never more than capacity + rate × elapsed', async () => {
    const a = account(s, 'starter');
    const second = s.svc.accounts.createKey(a.id, 'second').api_key;
    const budget = Math.min(2 * DEFAULT_PLANS.starter.maxTps, DEFAULT_PLANS.starter.queryTps);
    const t0 = performance.now();
    const results = await Promise.all(
      agents.flatMap((agent, i) => Array.from({ length: 4 }, () => call(agent, 'GET', `/v1/status/${randomSignature()}`, i % 2 ? second : a.key))),
    );
    const elapsedS = (performance.now() - t0) / 1000;
    const granted = results.filter((r) => r.status === 404).length;
    const refused = results.filter((r) => r.status === 429).length;
    expect(granted + refused).toBe(results.length);
    expect(new Set(results.map((r) => r.thread)).size).toBe(2);
    expect(granted).toBeGreaterThanOrEqual(budget);
    expect(granted).toBeLessThanOrEqual(budget + Math.ceil(budget * elapsedS));
  });

  it('hold an account send budget across threads and keys', async () => {
    const a = account(s, 'starter');
    const second = s.svc.accounts.createKey(a.id, 'second').api_key;
    const from = await payer(s);
    const txs = await Promise.all(Array.from({ length: 32 }, () => tipped(s, from, 1_000_000)));
    const t0 = performance.now();
    const results = await Promise.all(
      txs.map((tx, i) => call(agents[i % CONNECTIONS]!, 'POST', '/v1/send', i % 2 ? second : a.key, { transaction: tx.base64 })),
    );
    const elapsedS = (performance.now() - t0) / 1000;
    const rate = DEFAULT_PLANS.starter.maxTps;
    const sent = results.filter((r) => r.status === 200).length;
    expect(results.filter((r) => r.status !== 200 && r.status !== 429)).toEqual([]);
    expect(new Set(results.map((r) => r.thread)).size).toBe(2);
    expect(sent).toBeGreaterThanOrEqual(rate);
    expect(sent).toBeLessThanOrEqual(rate + Math.ceil(rate * elapsedS));
    // What every thread accepted is counted once, in one place.
    await waitFor('usage counted', () => (s.svc.accounts.usage(a.id).total === sent ? true : undefined));
  });

  it('refuse a revoked key on the very next request of every thread', async () => {
    const a = account(s, 'whale');
    const doomed = s.svc.accounts.createKey(a.id, 'doomed').api_key;
    const before = await Promise.all(agents.map((agent) => call(agent, 'GET', `/v1/status/${randomSignature()}`, doomed)));
    expect(before.map((r) => r.status)).toEqual(agents.map(() => 404)); // authenticated (and cached) on every thread
    expect(new Set(before.map((r) => r.thread)).size).toBe(2);
    // `POST /v1/send` resolves the key in its one native call, the thread's key table holding it
    // with its plan facts since the queries above: 400 for what is not a transaction, so the key
    // was accepted.
    const accepted = await Promise.all(agents.map((agent) => call(agent, 'POST', '/v1/send', doomed, { transaction: 'not base64!' })));
    expect(accepted.map((r) => r.status)).toEqual(agents.map(() => 400));
    s.svc.accounts.revokeKey(a.id, 'doomed');
    const after = await Promise.all(agents.map((agent) => call(agent, 'GET', `/v1/status/${randomSignature()}`, doomed)));
    expect(after.map((r) => r.status)).toEqual(agents.map(() => 401));
    // The send's one call too, whatever the body: the key is refused before the transaction.
    const sends = await Promise.all(agents.map((agent, i) => call(agent, 'POST', '/v1/send', doomed, i % 2 ? { transaction: 'not base64!' } : { transaction: 'x', options: { max_retries: -1 } })));
    expect(sends.map((r) => r.status)).toEqual(agents.map(() => 401));
  });

  it('push status changes to the account streams held by every thread', async () => {
    const a = account(s, 'whale');
    const streams: Array<{ ws: WebSocket; messages: any[] }> = [];
    const threadsWithStreams = () => s.svc.ingress!.streamsByThread(a.id).filter((n) => n > 0).length;
    // Open streams until both threads hold at least one (the kernel picks the thread per connection).
    while (threadsWithStreams() < 2 && streams.length < 10) {
      const ws = new WebSocket(`${s.svc.url.replace(/^http/, 'ws')}/v1/stream?api-key=${a.key}`);
      const messages: any[] = [];
      ws.on('message', (d) => messages.push(JSON.parse(String(d))));
      streams.push({ ws, messages });
      await waitFor('ready', () => (messages.some((m) => m.type === 'ready') ? true : undefined));
      await waitFor('stream counted', () => (s.svc.streamCount(a.id) === streams.length ? true : undefined));
    }
    expect(threadsWithStreams()).toBe(2);
    const from = await payer(s);
    const tx = await tipped(s, from, 1_000_000);
    expect((await call(agents[0]!, 'POST', '/v1/send', a.key, { transaction: tx.base64 })).status).toBe(200);
    for (const { messages } of streams) {
      await waitFor('sent pushed', () => (messages.some((m) => m.signature === tx.signature && m.status === 'sent') ? true : undefined));
      await waitFor('confirmed pushed', () => (messages.some((m) => m.signature === tx.signature && m.status === 'confirmed') ? true : undefined), 20_000);
    }
    for (const { ws } of streams) ws.close();
  });

  it("hand every thread's accepted sends to the main thread whole and in each thread's order, resends not again", async () => {
    const a = account(s, 'whale');
    // Two connections the kernel gave different threads.
    const byThread = new Map<number, Agent>();
    for (const agent of agents) {
      byThread.set((await call(agent, 'GET', `/v1/status/${randomSignature()}`, a.key)).thread, agent);
      if (byThread.size === 2) break;
    }
    expect(byThread.size).toBe(2);
    // What the main thread's engine is handed, in the order it is handed (recorded, then passed on).
    const handed: Accepted[] = [];
    const engine = s.svc.engine;
    const acceptedBatch = engine.acceptedBatch.bind(engine);
    engine.acceptedBatch = (batch) => {
      handed.push(...batch);
      acceptedBatch(batch);
    };
    try {
      const from = await payer(s);
      const PER_THREAD = 12;
      // Each thread's sends one after another (its order), both threads at once; the options vary.
      const sent = await Promise.all(
        [...byThread].map(async ([thread, agent], t) => {
          const mine: Array<{ signature: string; wire: Buffer; options: Record<string, unknown>; price: number; thread: number }> = [];
          for (let i = 0; i < PER_THREAD; i++) {
            const price = i % 3 === 0 ? 0 : 1_000 * (i + 1) + t;
            const tx = await tipped(s, from, 1_000_000 + i, price === 0 ? {} : { extra: [ComputeBudgetProgram.setComputeUnitPrice({ microLamports: price })] });
            const options = {
              skip_preflight: true,
              max_retries: i % 11,
              anti_mev: i % 2 === 0,
              rebroadcast_until_expiry: i % 4 === 1,
              ...(i % 5 === 2 && { deadline_slot: 1_000_000_000 + i }),
            };
            const r = await call(agent, 'POST', '/v1/send', a.key, { transaction: tx.base64, options });
            expect(r.status, r.body).toBe(200);
            expect(r.thread).toBe(thread);
            mine.push({ signature: tx.signature, wire: Buffer.from(tx.base64, 'base64'), options, price, thread });
          }
          // A resend of a known signature is answered, but neither recorded nor handed off again.
          const again = await call(agent, 'POST', '/v1/send', a.key, { transaction: mine[0]!.wire.toString('base64') });
          expect(again.status, again.body).toBe(200);
          return mine;
        }),
      );
      const all = sent.flat();
      await waitFor('all handed off', () => (all.every((x) => handed.some((h) => h.record.signature === x.signature)) ? true : undefined));
      const ours = handed.filter((h) => all.some((x) => x.signature === h.record.signature));
      // Exactly once each (the resends pushed nothing), each thread's in its own order.
      expect(ours.map((h) => h.record.signature).sort()).toEqual(all.map((x) => x.signature).sort());
      for (const mine of sent) {
        const sigs = new Set(mine.map((x) => x.signature));
        expect(ours.filter((h) => sigs.has(h.record.signature)).map((h) => h.record.signature)).toEqual(mine.map((x) => x.signature));
      }
      // Whole: every field as the accepting thread had it.
      for (const x of all) {
        const h = ours.find((o) => o.record.signature === x.signature)!;
        // The record as it was accepted (the store's may have moved on to confirmed since).
        const stored = s.svc.store.getStatus(x.signature)!;
        const { signature, accountId, keyName, tipLamports, recentBlockhash, durableNonce, submittedAt, submitSlot, lastValidBlockHeight, deadlineSlot } = stored;
        expect(h.record).toEqual(sentRecord({ signature, accountId, keyName, tipLamports, recentBlockhash, durableNonce, submittedAt, submitSlot, lastValidBlockHeight, deadlineSlot }));
        expect(h.record).toMatchObject({ signature: x.signature, accountId: a.id, status: 'sent', tipLamports: 1_000_000n + BigInt(all.filter((y) => y.thread === x.thread).indexOf(x)) });
        expect(h.record.deadlineSlot).toBe(x.options.deadline_slot);
        expect(Buffer.compare(h.wire, x.wire)).toBe(0);
        expect(h.options).toEqual({
          skipPreflight: true,
          maxRetries: x.options.max_retries,
          antiMev: x.options.anti_mev,
          rebroadcastUntilExpiry: x.options.rebroadcast_until_expiry,
          deadlineSlot: x.options.deadline_slot ?? null,
        });
        expect(h.computeUnitPrice).toBe(x.price);
        expect(h.signatureOffset).toBe(1);
        expect(Buffer.compare(h.wire.subarray(1, 65), Buffer.from(web3Base58Decode(x.signature)))).toBe(0);
        expect(h.blockhashOffset).toBeGreaterThan(65);
        expect(web3Base58(h.wire.subarray(h.blockhashOffset!, h.blockhashOffset! + 32))).toBe(h.record.recentBlockhash);
        expect(typeof h.receivedAt).toBe('bigint');
        expect(h.held).toBe(false);
        expect(h.sentSlot).toBe(h.record.submitSlot);
        expect(h.nonceAccount).toBeUndefined();
        // The first send's attempts, packed: (target, outcome, close code, µs, reason) each.
        expect(h.firstAttempts!.length).toBeGreaterThan(0);
        expect(h.firstAttempts!.length % 5).toBe(0);
        for (let i = 0; i < h.firstAttempts!.length; i += 5) {
          expect(h.firstAttempts![i]).toMatch(/^127\.0\.0\.1:\d+$/);
          expect(h.firstAttempts!.slice(i + 1, i + 4).every((n) => typeof n === 'number')).toBe(true);
          expect(typeof h.firstAttempts![i + 4]).toBe('string');
        }
      }
    } finally {
      engine.acceptedBatch = acceptedBatch;
    }
  });
});

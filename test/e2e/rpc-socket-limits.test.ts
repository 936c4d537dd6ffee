/**
 * The JSON-RPC WebSocket closed to an abusive account (issue 33 items 2–5 and the subscription
 * ids): the real service with one ingress thread (the routes are a worker's, as in production),
 * the local cluster, raw `ws` clients that check exact frames.
 */
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { base58Encode } from '../../src/native.js';
import { MAX_ACCOUNT_SUBSCRIPTIONS, MAX_REFUSED_STREAK, MAX_SLOT_SUBSCRIPTIONS, MAX_SUBSCRIPTIONS } from '../../src/http/rpc-subscriptions.js';
import { DEFAULT_PLANS } from '../../src/accounts/plans.js';
import { CLOSE } from '../../src/http/stream.js';
import { RPC_CODES } from '../../src/submission/refusals.js';
import { account, startStack, type Stack } from '../../harness/stack.js';

let s: Stack;
beforeAll(async () => {
  // The whale plan's query budget is raised so far that only the subscription caps can refuse
  // (the per-account cap needs more subscriptions than a real whale may ask for in a second);
  // the starter plan keeps its 16 queries a second for the budget tests.
  const plans = { ...DEFAULT_PLANS, whale: { ...DEFAULT_PLANS.whale, maxTps: 500_000, queryTps: 1_000_000 } };
  s = await startStack({ localnet: { slotMs: 100, seed: 'rpc-socket-limits' }, config: { ingressThreads: 1, plans } });
});
afterAll(async () => {
  await s?.close();
});

interface Frame {
  id?: number | null;
  result?: unknown;
  error?: { code: number; message: string };
  method?: string;
  params?: { result: unknown; subscription: number };
}

/** A raw socket that keeps every frame and its close. */
class Sock {
  readonly frames: Frame[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private id = 1;
  private waiters: Array<() => void> = [];
  private constructor(readonly ws: WebSocket) {
    ws.on('message', (d) => {
      this.frames.push(JSON.parse(String(d)) as Frame);
      for (const w of this.waiters.splice(0)) w();
    });
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })));
  }
  static open(key: string): Promise<Sock> {
    const ws = new WebSocket(`ws://127.0.0.1:${s.svc.port}/?api-key=${key}`);
    ws.on('error', () => {});
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new Sock(ws)));
      ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
    });
  }
  /** Send calls without waiting; resolves with their replies, in order. */
  async calls(method: string, params: unknown[], n = 1): Promise<Frame[]> {
    const ids = Array.from({ length: n }, () => this.id++);
    for (const id of ids) this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    return Promise.all(ids.map((id) => this.frame((f) => f.id === id)));
  }
  /**
   * `n` calls of `method`, each with its own params, without waiting; resolves with the next `n`
   * frames once they are all in (for thousands of calls, where matching each reply by id is quadratic).
   */
  async many(method: string, params: () => unknown[], n: number): Promise<Frame[]> {
    const from = this.frames.length;
    for (let i = 0; i < n; i++) this.ws.send(JSON.stringify({ jsonrpc: '2.0', id: this.id++, method, params: params() }));
    await this.frame(() => this.frames.length >= from + n);
    return this.frames.slice(from, from + n);
  }
  async call(method: string, params: unknown[] = []): Promise<Frame> {
    return (await this.calls(method, params))[0]!;
  }
  frame(match: (f: Frame) => boolean): Promise<Frame> {
    return new Promise((resolve) => {
      const look = () => {
        const f = this.frames.find(match);
        if (f) resolve(f);
        else this.waiters.push(look);
      };
      look();
    });
  }
}

const signature = () => base58Encode(randomBytes(64));

describe('the JSON-RPC WebSocket, against an abusive account', () => {
  it(`slotSubscribe: at most ${MAX_SLOT_SUBSCRIPTIONS} per socket; ids are random, not a counter`, async () => {
    const bot = account(s);
    const ws = await Sock.open(bot.key);
    const replies = await ws.calls('slotSubscribe', [], MAX_SLOT_SUBSCRIPTIONS + 2);
    const ids = replies.slice(0, MAX_SLOT_SUBSCRIPTIONS).map((r) => r.result as number);
    expect(ids.every((x) => Number.isSafeInteger(x) && x > 0)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    // A counter shared by the thread's sockets would give consecutive ids (and tell a client how
    // many others opened meanwhile).
    expect(ids.slice(1).every((x, i) => x === ids[i]! + 1)).toBe(false);
    for (const r of replies.slice(MAX_SLOT_SUBSCRIPTIONS)) {
      expect(r.error).toMatchObject({ code: RPC_CODES.invalidParams, message: `too many slot subscriptions on this socket (max ${MAX_SLOT_SUBSCRIPTIONS})` });
    }
    // One notification per subscription per slot, no more.
    const first = await ws.frame((f) => f.method === 'slotNotification');
    const slot = (first.params!.result as { slot: number }).slot;
    await ws.frame((f) => f.method === 'slotNotification' && (f.params!.result as { slot: number }).slot > slot + 1);
    const ofSlot = ws.frames.filter((f) => f.method === 'slotNotification' && (f.params!.result as { slot: number }).slot === slot + 1);
    expect(ofSlot.map((f) => f.params!.subscription).sort()).toEqual([...ids].sort());
    ws.ws.close();
  });

  it('signatureSubscribe takes only a signature (base58 of 64 bytes)', async () => {
    const bot = account(s);
    const ws = await Sock.open(bot.key);
    for (const bad of ['x'.repeat(15 * 1024), '1'.repeat(88), base58Encode(randomBytes(32)), base58Encode(randomBytes(65)), `${signature().slice(0, -1)}0`]) {
      expect((await ws.call('signatureSubscribe', [bad])).error).toMatchObject({ code: RPC_CODES.invalidParams, message: expect.stringMatching(/base58 of 64 bytes/) });
    }
    expect(typeof (await ws.call('signatureSubscribe', [signature()])).result).toBe('number');
    ws.ws.close();
  });

  it("every message draws the account's query budget; a socket that keeps going past it is closed with 4429", async () => {
    const bot = account(s, 'starter'); // 16 queries a second
    const ws = await Sock.open(bot.key);
    for (let i = 0; i < 40; i++) ws.ws.send(JSON.stringify({ jsonrpc: '2.0', id: i + 1, method: 'signatureSubscribe', params: [signature()] }));
    // Past the budget, the first message of the run is answered (id null: it was not parsed), the rest not.
    const limited = await ws.frame((f) => f.error?.code === RPC_CODES.rateLimited);
    expect(limited).toMatchObject({ id: null, error: { message: expect.stringMatching(/^Rate limit exceeded: query budget of 16\/s exhausted/) } });
    const granted = ws.frames.filter((f) => typeof f.result === 'number').length;
    expect(granted).toBeGreaterThanOrEqual(15);
    expect(granted).toBeLessThan(40);
    // The budget is the account's: the HTTP queries of the same account are refused meanwhile too
    // (forty at once, so the refill meanwhile, 16 a second, cannot cover them all).
    const http = await Promise.all(Array.from({ length: 40 }, () => fetch(`${s.svc.url}/v1/account`, { headers: { authorization: `Bearer ${bot.key}` } }).then((r) => r.status)));
    expect(http).toContain(429);
    // Then a flood: closed once MAX_REFUSED_STREAK messages in a row were past the budget.
    // (Many: a token refilled in the middle of a run starts the count again.)
    for (let i = 0; i < 40 * MAX_REFUSED_STREAK; i++) ws.ws.send('{"jsonrpc":"2.0","id":1,"method":"slotSubscribe"}');
    const closed = await ws.closed;
    expect(closed).toEqual({ code: CLOSE.rateLimited, reason: `${MAX_REFUSED_STREAK} messages in a row past the query budget` });
    // Opening a socket draws a token too: with the budget spent, upgrades are refused (forty at
    // once, so the refill meanwhile cannot cover them all).
    const opens = await Promise.allSettled(Array.from({ length: 40 }, () => Sock.open(bot.key)));
    for (const o of opens) if (o.status === 'fulfilled') o.value.ws.close();
    expect(opens.some((o) => o.status === 'rejected' && /upgrade refused: 429/.test(String(o.reason)))).toBe(true);
  });

  it(`signatureSubscribe: at most ${MAX_SUBSCRIPTIONS} per socket and ${MAX_ACCOUNT_SUBSCRIPTIONS} per account, given back when a socket closes`, async () => {
    const bot = account(s, 'whale');
    const perSocket = Math.ceil(MAX_ACCOUNT_SUBSCRIPTIONS / MAX_SUBSCRIPTIONS) + 1;
    const socks = await Promise.all(Array.from({ length: perSocket }, () => Sock.open(bot.key)));
    // The first socket past its own cap: the per-socket refusal.
    const first = await socks[0]!.many('signatureSubscribe', () => [signature()], MAX_SUBSCRIPTIONS + 1);
    expect(first.filter((f) => typeof f.result === 'number')).toHaveLength(MAX_SUBSCRIPTIONS);
    expect(first.at(-1)!.error).toMatchObject({ code: RPC_CODES.invalidParams, message: `too many signature subscriptions on this socket (max ${MAX_SUBSCRIPTIONS})` });
    // The others fill up to the account's cap, each below its own: then every socket is refused.
    let granted = MAX_SUBSCRIPTIONS;
    for (const ws of socks.slice(1)) {
      const want = Math.min(MAX_SUBSCRIPTIONS - 1, MAX_ACCOUNT_SUBSCRIPTIONS - granted);
      const r = await ws.many('signatureSubscribe', () => [signature()], want);
      expect(r.every((f) => typeof f.result === 'number')).toBe(true);
      granted += want;
    }
    expect(granted).toBe(MAX_ACCOUNT_SUBSCRIPTIONS);
    const over = socks.at(-1)!;
    expect((await over.call('signatureSubscribe', [signature()])).error).toMatchObject({
      code: RPC_CODES.invalidParams,
      message: `too many subscriptions of this account (max ${MAX_ACCOUNT_SUBSCRIPTIONS})`,
    });
    // Another account is not affected by this one's subscriptions.
    const other = await Sock.open(account(s, 'whale').key);
    expect(typeof (await other.call('signatureSubscribe', [signature()])).result).toBe('number');
    // Closing the full socket gives its subscriptions back to the account.
    socks[0]!.ws.close();
    await socks[0]!.closed;
    // (The server's close handler has run once the close handshake is answered.)
    expect(typeof (await over.call('signatureSubscribe', [signature()])).result).toBe('number');
    for (const ws of [...socks.slice(1), other]) ws.ws.close();
  });

  it("a revoked key's socket is closed with 4001, slot notifications or not", async () => {
    const bot = account(s);
    const ws = await Sock.open(bot.key);
    await ws.call('slotSubscribe');
    await ws.frame((f) => f.method === 'slotNotification');
    s.svc.accounts.revokeKey(bot.id, 'default');
    expect(await ws.closed).toEqual({ code: CLOSE.unauthorized, reason: 'API key revoked' });
    await expect(Sock.open(bot.key)).rejects.toThrow(/401/);
  });
});

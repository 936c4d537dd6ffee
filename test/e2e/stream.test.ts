/**
 * `/v1/stream` against the running service on the local cluster, with the `ws` package as the
 * client: pushes without polling, only the owner's transactions, the three ways to
 * authenticate, refusals with their close codes, the per-account cap, and a slow consumer
 * dropped with a reason while the server carries on.
 */
import { Keypair } from '@solana/web3.js';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_TIMEOUT_MS, CLOSE, MAX_MESSAGE_BYTES, MAX_STREAMS_PER_ACCOUNT, UWS_MAX_PAYLOAD } from '../../src/http/stream.js';
import { waitFor } from '../../harness/localnet.js';
import { account, payer, send, startStack, tipped, type Stack } from '../../harness/stack.js';

interface Client {
  ws: WebSocket;
  messages: any[];
  /** Resolves with the first message (already received or later) matching `match`. */
  next(match: (m: any) => boolean, what: string): Promise<any>;
  closed: Promise<{ code: number; reason: string }>;
}

function connect(s: Stack, opts: { query?: string; headers?: Record<string, string> } = {}): Client {
  const url = `${s.svc.url.replace(/^http/, 'ws')}/v1/stream${opts.query ? `?${opts.query}` : ''}`;
  const ws = new WebSocket(url, { headers: opts.headers });
  const messages: any[] = [];
  const waiters = new Set<() => void>();
  ws.on('message', (data) => {
    messages.push(JSON.parse(String(data)));
    for (const w of waiters) w();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    ws.on('close', (code, reason) => resolve({ code, reason: String(reason) }));
  });
  ws.on('error', () => {}); // surfaced through `closed`
  const next = (match: (m: any) => boolean, what: string) =>
    new Promise<any>((resolve, reject) => {
      const check = () => {
        const m = messages.find(match);
        if (m) {
          waiters.delete(check);
          clearTimeout(timer);
          resolve(m);
        }
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`timed out waiting for ${what}; got ${JSON.stringify(messages)}`));
      }, 20_000);
      waiters.add(check);
      check();
    });
  return { ws, messages, next, closed };
}

const ready = (c: Client) => c.next((m) => m.type === 'ready', 'ready');
const statusOf = (c: Client, sig: string, status: string) =>
  c.next((m) => m.type === 'status' && m.signature === sig && m.status === status, `${status} of ${sig}`);

describe('live status stream', () => {
  let s: Stack;
  let bot: { id: string; key: string };
  let from: Keypair;
  const open: Client[] = [];
  const track = (c: Client) => (open.push(c), c);

  beforeAll(async () => {
    s = await startStack({ localnet: { slotMs: 100, seed: 'stream-e2e' } });
    bot = account(s);
    from = await payer(s);
  });
  afterAll(async () => {
    for (const c of open) c.ws.terminate();
    await s?.close();
  });

  it('pushes sent, then confirmed, of its own transaction: the status record, no polling', async () => {
    const c = track(connect(s, { query: `api-key=${bot.key}` }));
    await ready(c);
    const tx = await tipped(s, from, 300_000);
    expect((await send(s, bot.key, tx.base64)).status).toBe(200);
    const sent = await statusOf(c, tx.signature, 'sent');
    expect(sent).toEqual({
      type: 'status',
      signature: tx.signature,
      status: 'sent',
      submitted_at: expect.any(String),
      confirmed_at: null,
      latency_ms: null,
      slot: null,
      api_key_name: 'default',
      tip_lamports: 300_000,
      submit_slot: expect.any(Number),
    });
    const confirmed = await statusOf(c, tx.signature, 'confirmed');
    expect(confirmed.latency_ms).toBeGreaterThanOrEqual(0);
    expect(confirmed.slot).toBeGreaterThan(0);
    expect(confirmed.submitted_at).toBe(sent.submitted_at);
    expect(confirmed.submit_slot).toBe(sent.submit_slot);
    expect(confirmed.slot).toBeGreaterThanOrEqual(confirmed.submit_slot);
    // The record the status endpoint serves, plus the tip and the slot at acceptance.
    const r = await fetch(`${s.svc.url}/v1/status/${tx.signature}?api-key=${bot.key}`);
    const { type: _type, tip_lamports: _tip, submit_slot: _slot, ...record } = confirmed;
    expect(await r.json()).toEqual(record);
  });

  it("never carries another account's transactions", async () => {
    const other = account(s);
    const mine = track(connect(s, { query: `api_key=${bot.key}` }));
    const theirs = track(connect(s, { headers: { authorization: `Bearer ${other.key}` } }));
    await Promise.all([ready(mine), ready(theirs)]);
    const a = await tipped(s, from, 300_000);
    expect((await send(s, bot.key, a.base64)).status).toBe(200);
    await statusOf(mine, a.signature, 'confirmed');
    // Everything pushed for `a` was written before anything pushed for `b`; TCP keeps that
    // order, so once `b` has arrived on `theirs`, `a` would have too.
    const b = await tipped(s, from, 300_000);
    expect((await send(s, other.key, b.base64)).status).toBe(200);
    await statusOf(theirs, b.signature, 'confirmed');
    expect(theirs.messages.filter((m) => m.signature === a.signature)).toEqual([]);
    expect(mine.messages.filter((m) => m.signature === b.signature)).toEqual([]);
  });

  it('authenticates by a first message', async () => {
    const c = track(connect(s));
    c.ws.on('open', () => c.ws.send(JSON.stringify({ type: 'auth', api_key: bot.key })));
    await ready(c);
    const tx = await tipped(s, from, 300_000);
    expect((await send(s, bot.key, tx.base64)).status).toBe(200);
    await statusOf(c, tx.signature, 'confirmed');
  });

  it('refuses a bad key, in the query or in the auth message, with 4001 and the reason', async () => {
    const byQuery = connect(s, { query: 'api-key=lf_not-a-key' });
    expect(await byQuery.closed).toEqual({ code: CLOSE.unauthorized, reason: 'invalid or revoked API key' });
    const byMessage = connect(s);
    byMessage.ws.on('open', () => byMessage.ws.send(JSON.stringify({ type: 'auth', api_key: 'lf_not-a-key' })));
    expect(await byMessage.closed).toEqual({ code: CLOSE.unauthorized, reason: 'invalid or revoked API key' });
    expect(byQuery.messages.concat(byMessage.messages)).toEqual([]);
  });

  it('refuses a first message that is not auth with 4000, and silence with 4001 after the auth window', async () => {
    const wrong = connect(s);
    wrong.ws.on('open', () => wrong.ws.send('{"type":"subscribe"}'));
    expect(await wrong.closed).toEqual({ code: CLOSE.badMessage, reason: 'the first message must be {"type":"auth","api_key":"<key>"}' });
    const silent = connect(s);
    const closed = await silent.closed;
    expect(closed.code).toBe(CLOSE.unauthorized);
    expect(closed.reason).toContain(`within ${AUTH_TIMEOUT_MS / 1000} s`);
  });

  it('closes a message over the size limit with 1009 and a close frame, before and after auth', async () => {
    const tooBig = JSON.stringify({ type: 'auth', api_key: 'x'.repeat(MAX_MESSAGE_BYTES) });
    const unauthenticated = connect(s);
    unauthenticated.ws.on('open', () => unauthenticated.ws.send(tooBig));
    // A close frame with its reason (uWS's own drop would be 1006, no frame, no reason).
    expect(await unauthenticated.closed).toEqual({ code: 1009, reason: `message of ${tooBig.length} bytes exceeds the ${MAX_MESSAGE_BYTES}-byte limit` });
    const bot = account(s);
    const authenticated = connect(s, { query: `api-key=${bot.key}` });
    await ready(authenticated);
    // Up to uWS's own cap (what a socket may make the server buffer).
    authenticated.ws.send(Buffer.alloc(UWS_MAX_PAYLOAD, 1));
    expect(await authenticated.closed).toEqual({ code: CLOSE.messageTooBig, reason: `message of ${UWS_MAX_PAYLOAD} bytes exceeds the ${MAX_MESSAGE_BYTES}-byte limit` });
    await waitFor('stream slot freed', () => s.svc.streamCount(bot.id) === 0 || undefined);
  });

  it(`caps streams per account at ${MAX_STREAMS_PER_ACCOUNT} (4029) and frees a slot when one closes`, async () => {
    const capped = account(s);
    const streams = Array.from({ length: MAX_STREAMS_PER_ACCOUNT }, () => track(connect(s, { query: `api-key=${capped.key}` })));
    await Promise.all(streams.map(ready));
    const extra = connect(s, { query: `api-key=${capped.key}` });
    expect(await extra.closed).toEqual({ code: CLOSE.tooManyStreams, reason: `this account already has ${MAX_STREAMS_PER_ACCOUNT} streams open` });
    streams[0]!.ws.close();
    await streams[0]!.closed;
    await waitFor('slot freed', () => s.svc.streamCount(capped.id) < MAX_STREAMS_PER_ACCOUNT || undefined);
    await ready(track(connect(s, { query: `api-key=${capped.key}` })));
  });

  it('drops a consumer that stops reading with 4008 "slow consumer", and the server carries on', async () => {
    const watcher = account(s);
    const slow = connect(s, { query: `api-key=${watcher.key}` });
    const healthy = track(connect(s, { query: `api-key=${watcher.key}` }));
    await Promise.all([ready(slow), ready(healthy)]);
    // The slow client stops reading but keeps sending pings (as a heartbeat would). Every pong
    // the server owes it queues behind the unread data: first in the kernel's socket buffers
    // (about 4 MiB on loopback), then in uWS. Status pushes are a few hundred bytes each, so
    // the pongs are what fills the pipe here; bounded at 50 MiB in case nothing ever trips.
    slow.ws.pause();
    const payload = Buffer.alloc(125, 7);
    for (let sent = 0; s.svc.streamCount(watcher.id) === 2; sent += 2000 * payload.length) {
      expect(sent).toBeLessThan(50 * 1024 * 1024);
      for (let i = 0; i < 2000; i++) slow.ws.ping(payload);
      await new Promise((r) => setTimeout(r, 5));
    }
    // Dropped on the server; once it reads again the client gets the reason behind the backlog.
    slow.ws.resume();
    const closed = await slow.closed;
    expect(closed.code).toBe(CLOSE.slowConsumer);
    expect(closed.reason).toMatch(/^slow consumer: \d+ bytes unread \(limit \d+\)$/);
    // Same account, other stream: still served; the service is healthy.
    const tx = await tipped(s, from, 300_000);
    expect((await send(s, watcher.key, tx.base64)).status).toBe(200);
    await statusOf(healthy, tx.signature, 'confirmed');
    expect((await fetch(`${s.svc.url}/health`)).status).toBe(200);
    expect(s.svc.streamCount(watcher.id)).toBe(1);
  });
});

/**
 * Defect: a revoked key's open `/v1/stream` kept receiving pushes (seen 17 s after the revoke).
 * Now every thread looks for revoked keys among its open streams every REVOCATION_CHECK_MS and
 * closes them with 4001, so the promise is: closed within 1 s of the revocation, on every thread,
 * for streams opened by header, by query and by auth message — whether the key was revoked in
 * this process or by the admin CLI in another one. The account's other keys keep their streams.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import WebSocket from 'ws';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CLOSE } from '../../src/http/stream.js';
import { waitFor } from '../../harness/localnet.js';
import { account, startStack, type Stack } from '../../harness/stack.js';

const BIN = join(new URL('../../', import.meta.url).pathname, 'bin/landfall.js');
/** The promise of docs/failure-behaviour.md. */
const CLOSED_WITHIN_MS = 1_000;

let s: Stack;
beforeAll(async () => {
  s = await startStack({ config: { ingressThreads: 2 } });
});
afterAll(() => s.close());

interface Stream {
  ws: WebSocket;
  ready: Promise<void>;
  closed: Promise<{ code: number; reason: string; at: number }>;
}

function open(key: string, how: 'header' | 'query' | 'message'): Stream {
  const base = `${s.svc.url.replace(/^http/, 'ws')}/v1/stream`;
  const ws =
    how === 'header' ? new WebSocket(base, { headers: { authorization: `Bearer ${key}` } }) : new WebSocket(how === 'query' ? `${base}?api-key=${key}` : base);
  if (how === 'message') ws.on('open', () => ws.send(JSON.stringify({ type: 'auth', api_key: key })));
  ws.on('error', () => {});
  const ready = new Promise<void>((resolve) => ws.on('message', (d) => JSON.parse(String(d)).type === 'ready' && resolve()));
  const closed = new Promise<{ code: number; reason: string; at: number }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: String(reason), at: performance.now() })),
  );
  return { ws, ready, closed };
}

/**
 * Nine streams of `key`, opened every way, held by both ingress threads. The kernel deals each
 * connection to one thread's socket by a hash of its addresses (SO_REUSEPORT), so all nine can
 * land on one thread (2 × 2^-9 of the time: a stress-ng run saw it): then they are closed and
 * opened again, up to ROUNDS times, so the test always checks both threads.
 */
async function openEverywhere(accountId: string, key: string): Promise<Stream[]> {
  const ways = ['header', 'query', 'message'] as const;
  const before = s.svc.streamCount(accountId);
  for (let round = 0; round < ROUNDS; round++) {
    const streams: Stream[] = [];
    while (streams.length < 9) {
      const st = open(key, ways[streams.length % 3]!);
      streams.push(st);
      await st.ready;
    }
    await waitFor('streams counted', () => (s.svc.streamCount(accountId) >= before + streams.length ? true : undefined));
    if (s.svc.ingress!.streamsByThread(accountId).filter((n) => n > 0).length === 2) return streams;
    for (const st of streams) st.ws.close();
    await Promise.all(streams.map((st) => st.closed));
    await waitFor('streams released', () => (s.svc.streamCount(accountId) <= before ? true : undefined));
  }
  throw new Error(`${ROUNDS} rounds of nine streams all landed on one ingress thread`);
}

/** Rounds of nine streams `openEverywhere` tries before it gives up (all on one thread each time: 2^-40). */
const ROUNDS = 5;

async function expectClosedSoon(streams: Stream[], revokedAt: number): Promise<void> {
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`a stream was still open ${CLOSED_WITHIN_MS} ms after the revocation`)), CLOSED_WITHIN_MS + 250));
  const closes = await Promise.race([Promise.all(streams.map((x) => x.closed)), timeout]);
  for (const c of closes) {
    expect(c.code).toBe(CLOSE.unauthorized);
    expect(c.reason).toBe('API key revoked');
    expect(c.at - revokedAt).toBeLessThanOrEqual(CLOSED_WITHIN_MS);
  }
}

it('closes every stream of a key revoked in this process with 4001, on every thread, and keeps the others', async () => {
  const a = account(s);
  const doomed = s.svc.accounts.createKey(a.id, 'doomed').api_key;
  // The default key's streams fill the other half of the account's 10 stream slots.
  const kept = [open(a.key, 'header')];
  await kept[0]!.ready;
  const streams = await openEverywhere(a.id, doomed);
  const t0 = performance.now();
  s.svc.accounts.revokeKey(a.id, 'doomed');
  await expectClosedSoon(streams, t0);
  expect(kept[0]!.ws.readyState).toBe(WebSocket.OPEN);
  kept[0]!.ws.close();
});

it('closes them when the admin CLI revokes the key from another process', async () => {
  const a = account(s);
  const doomed = s.svc.accounts.createKey(a.id, 'doomed').api_key;
  const streams = await openEverywhere(a.id, doomed);
  const t0 = performance.now();
  execFileSync(process.execPath, [BIN, 'keys', 'revoke', '--account', a.id, '--name', 'doomed', '--data', s.dir], { encoding: 'utf8' });
  await expectClosedSoon(streams, t0);
});

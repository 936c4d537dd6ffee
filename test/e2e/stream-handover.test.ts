/**
 * A push subscription on an ingress thread and the main thread's changes. The main thread
 * forwards an account's status changes only to the threads that told it they hold a stream of
 * that account; until it has read that message, a change it makes is not forwarded. A stream
 * that said `ready`, or a `signatureSubscribe` that read the status, in that moment missed the
 * change for good — a bot waiting on it timed out after 60 s although its transaction had
 * confirmed (seen once in a whole-suite run on a loaded machine).
 *
 * Here the main thread is played by the test: the API runs on a real port with a status hub
 * that, like an ingress thread's, tells "the main thread" of each stream and waits for its answer
 * (`seenUpTo`). The test answers when it chooses, so the moment that was a race is held open.
 */
import { Keypair } from '@solana/web3.js';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StatusHub } from '../../src/http/stream.js';
import { sentRecord, type StatusRecord } from '../../src/store/records.js';
import { startBareApp, type BareApp } from '../../harness/bare-app.js';
import { waitFor } from '../../harness/localnet.js';
import { makeTipAddresses, web3Base58 } from '../../harness/transactions.js';

/** How long the test holds "the main thread" busy before answering (it plays a slow main thread). */
const BUSY_MS = 300;

let app: BareApp;
const hub = new StatusHub();
/** What "the ingress thread" told "the main thread", in order. */
const told: Array<{ streams: Map<string, number>; seq: number }> = [];
hub.onAccountsChange = (streams, seq) => void told.push({ streams: new Map(streams), seq });

beforeAll(async () => {
  app = await startBareApp(makeTipAddresses(2).map((k) => k.toBase58()), { statusHub: hub });
});
afterAll(async () => {
  await app?.close();
});

/** A `sent` record of `accountId` in the store; its signature. */
function record(accountId: string): StatusRecord {
  const rec = sentRecord({
    signature: web3Base58(Keypair.generate().secretKey),
    accountId,
    keyName: 'default',
    submittedAt: Date.now(),
    submitSlot: 77,
    tipLamports: 1_000_000n,
    recentBlockhash: web3Base58(Keypair.generate().publicKey.toBytes()),
    durableNonce: false,
    lastValidBlockHeight: null,
  });
  app.store.insertStatus(rec);
  return rec;
}

/** The main thread's change, written to the store (what every thread reads) and not forwarded here. */
async function confirmUnforwarded(rec: StatusRecord): Promise<void> {
  const now = Date.now();
  await app.store.updateStatus({ ...rec, status: 'confirmed', confirmedAt: now, latencyMs: now - rec.submittedAt, slot: 80 });
}

/** Wait until "the main thread" has been told that `accountId` has a stream here; the message's number. */
function toldOf(accountId: string): Promise<number> {
  return waitFor(`the main thread told of ${accountId}'s stream`, () => told.find((t) => (t.streams.get(accountId) ?? 0) > 0)?.seq);
}

function open(url: string): Promise<{ ws: WebSocket; messages: unknown[]; at: Map<unknown, number> }> {
  const ws = new WebSocket(url);
  const messages: unknown[] = [];
  const at = new Map<unknown, number>();
  ws.on('message', (d) => {
    const m: unknown = JSON.parse(String(d));
    messages.push(m);
    at.set(m, Date.now());
  });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, messages, at }));
    ws.once('error', reject);
  });
}

describe('a push subscription made on an ingress thread', () => {
  it('/v1/stream says ready only once the main thread forwards the account’s changes there', async () => {
    const a = app.newAccount();
    const s = await open(`${app.base.replace('http', 'ws')}/v1/stream?api-key=${a.key}`);
    try {
      const seq = await toldOf(a.id);
      // A main thread busy for a while: the stream must not promise anything yet.
      await new Promise((r) => setTimeout(r, BUSY_MS));
      expect(s.messages).toEqual([]);
      const answeredAt = Date.now();
      hub.seenUpTo(seq);
      const ready = await waitFor('ready', () => s.messages.find((m) => (m as { type?: string }).type === 'ready'));
      expect(s.at.get(ready)).toBeGreaterThanOrEqual(answeredAt);
    } finally {
      s.ws.close();
    }
  });

  it('signatureSubscribe reads the status again once the main thread forwards: a change made in between is notified', async () => {
    const a = app.newAccount();
    const rec = record(a.id);
    await app.store.flushed();
    const s = await open(`${app.base.replace('http', 'ws')}/?api-key=${a.key}`);
    try {
      const seq = await toldOf(a.id);
      s.ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'signatureSubscribe', params: [rec.signature, { commitment: 'confirmed' }] }));
      const answer = await waitFor('the subscription id', () => s.messages.find((m) => (m as { id?: number }).id === 1) as { result: number } | undefined);
      expect(typeof answer.result).toBe('number');
      // The transaction confirms on the main thread before it has read this thread's message:
      // the change is stored but not forwarded here.
      await confirmUnforwarded(rec);
      expect(s.messages.filter((m) => (m as { method?: string }).method === 'signatureNotification')).toEqual([]);
      hub.seenUpTo(seq);
      const note = await waitFor('the notification', () => s.messages.find((m) => (m as { method?: string }).method === 'signatureNotification') as { params: { result: { value: { err: unknown } }; subscription: number } } | undefined);
      expect(note.params.subscription).toBe(answer.result);
      expect(note.params.result.value.err).toBeNull();
    } finally {
      s.ws.close();
    }
  });
});

/**
 * The hot path's QUIC sends through JavaScript (`QuicClient.sendFirst`, `sendMany`,
 * `drainOutcomes` from native/index.js) against real `QuicServer`s over loopback.
 *
 * A dead leader is a UDP socket that never answers (its handshake times out) or the
 * undialable "127.0.0.1:0" (it fails at once). Every test uses fresh random identities: clients
 * are shared per identity across the whole process.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Worker } from 'node:worker_threads';
import { createSocket, type Socket } from 'node:dgram';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { QuicClient, QuicServer, sendOutcomeReasons, TpuTargets, type ReceivedTransaction } from '../../native/index.js';
import type { FirstSend, OutcomeCount } from '../../src/native.js';
import { expectCode } from '../../harness/expect-code.js';

const MAX_TX = 1232;
const UNDIALABLE = '127.0.0.1:0';

const servers: QuicServer[] = [];
const sockets: Socket[] = [];
const clients: QuicClient[] = [];
afterEach(async () => {
  clients.splice(0).forEach((c) => c.close());
  sockets.splice(0).forEach((s) => s.close());
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function startServer(): { addr: string; received: ReceivedTransaction[]; next: (n: number) => Promise<ReceivedTransaction[]> } {
  const received: ReceivedTransaction[] = [];
  let wake = (): void => {};
  const server = new QuicServer({ bind: '127.0.0.1:0', identity: randomBytes(32), maxStreamsPer100ms: 0 }, (tx) => {
    received.push(tx);
    wake();
  });
  servers.push(server);
  const next = async (n: number): Promise<ReceivedTransaction[]> => {
    while (received.length < n) await new Promise<void>((r) => (wake = r));
    return received.slice(0, n);
  };
  return { addr: server.localAddr, received, next };
}

/** A bound UDP socket that never answers: a leader that is down. */
async function deadTarget(): Promise<string> {
  const s = createSocket('udp4');
  sockets.push(s);
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', r));
  return `127.0.0.1:${s.address().port}`;
}

function newClient(opts: { handshakeTimeoutMs?: number } = {}): QuicClient {
  const c = new QuicClient({ identity: randomBytes(32), ...opts });
  clients.push(c);
  return c;
}

function tx(tag: number, len = 200): Buffer {
  const b = Buffer.alloc(len, 0x5a);
  b.writeUInt32LE(tag >>> 0, 0);
  return b;
}

/** Drained counts as "target reason" → count. */
function counted(drained: OutcomeCount[], into = new Map<string, number>()): Map<string, number> {
  for (const o of drained) into.set(`${o.target} ${o.reason}`, (into.get(`${o.target} ${o.reason}`) ?? 0) + o.count);
  return into;
}

describe('sendFirst', () => {
  it('resolves with the live target while the dead one is still handshaking; the late failure is counted', async () => {
    const live = startServer();
    const dead = await deadTarget();
    const client = newClient({ handshakeTimeoutMs: 2000 });
    const wire = tx(1, 600);

    const first: FirstSend = await client.sendFirst([dead, live.addr], wire);
    expect(first.target).toBe(live.addr);
    expect(first.failures).toEqual([]);
    expect(first.elapsedUs).toBeGreaterThan(0);
    // Ordering, not wall clock: when the promise resolved, the dead target had no outcome yet.
    const peers = new Map(client.peerStats().map((p) => [p.target, p]));
    expect(peers.get(dead)).toMatchObject({ sent: 0, failed: 0, connected: false });
    expect(peers.get(live.addr)).toMatchObject({ sent: 1 });
    expect((await live.next(1))[0]!.bytes.equals(wire)).toBe(true);

    // Nobody awaits the dead target's outcome any more, yet it is counted when it comes.
    const counts = counted(client.drainOutcomes());
    for (let i = 0; i < 400 && !counts.has(`${dead} handshake_timeout`); i++) {
      await sleep(25);
      counted(client.drainOutcomes(), counts);
    }
    expect(Object.fromEntries(counts)).toEqual({ [`${live.addr} ok`]: 1, [`${dead} handshake_timeout`]: 1 });
  });

  it('resolves with target null and every failure when no target can be written', async () => {
    const dead = await deadTarget();
    const client = newClient({ handshakeTimeoutMs: 300 });
    const first = await client.sendFirst([dead, UNDIALABLE], tx(2));
    expect(first.target).toBeNull();
    // In the order they became known: the undialable one at once, the silent one at its timeout.
    expect(first.failures.map((f) => [f.target, f.ok, f.reason])).toEqual([
      [UNDIALABLE, false, 'connect_failed'],
      [dead, false, 'handshake_timeout'],
    ]);
    expect(first.elapsedUs).toBeGreaterThanOrEqual(first.failures[1]!.elapsedUs);
    expect(await client.sendFirst([], tx(3))).toMatchObject({ target: null, failures: [] });
  });

  it('with deadlineMs, resolves by the deadline with the targets still handshaking failed as `deadline`', async () => {
    const dead = await deadTarget();
    const client = newClient({ handshakeTimeoutMs: 10_000 });
    const first = await client.sendFirst([dead], tx(4), 150);
    expect(first.target).toBeNull();
    expect(first.failures.map((f) => [f.target, f.ok, f.reason])).toEqual([[dead, false, 'deadline']]);
    expect(first.failures[0]!.detail).toBe('not written within the 150 ms deadline');
    // Ordering, not speed: it settled at its deadline, long before the handshake could time out.
    expect(first.elapsedUs).toBeGreaterThanOrEqual(150_000);
    expect(first.elapsedUs).toBeLessThan(10_000_000);
    // A live target under a deadline is written as usual.
    const live = startServer();
    expect((await client.sendFirst([live.addr], tx(5), 5_000)).target).toBe(live.addr);
    for (const bad of [0, 1.5, -1, 60_001, Number.NaN]) expectCode(() => client.sendFirst([live.addr], tx(6), bad), 'QUIC_INVALID_OPTION');
  });
});

describe('sendMany', () => {
  it('carries every transaction to every target with one outcome word per (tx, target); a dead target gives its failure reasons', async () => {
    const a = startServer();
    const b = startServer();
    const targets = [a.addr, UNDIALABLE, b.addr];
    const client = newClient();
    const txs = [tx(10, 100), tx(11, MAX_TX), Buffer.from([7]), tx(13, 700)];

    const words = await client.sendMany(targets, txs);
    expect(words).toBeInstanceOf(Uint16Array);
    // Written: 1. A failure: 2 + the reason's index; no close code behind these (high byte 0).
    const failed = (reason: string): number => 2 + sendOutcomeReasons().indexOf(reason);
    expect(Array.from(words)).toEqual(txs.flatMap((_, i) => [1, failed(i === 0 ? 'connect_failed' : 'backoff'), 1]));

    for (const s of [a, b]) {
      const got = await s.next(txs.length);
      const hex = (x: Uint8Array): string => Buffer.from(x).toString('hex');
      expect(new Set(got.map((t) => hex(t.bytes)))).toEqual(new Set(txs.map(hex)));
    }
    const counts = Object.fromEntries(counted(client.drainOutcomes()));
    // The dead target: the first fails to connect, the rest meet its back-off.
    expect(counts).toEqual({
      [`${a.addr} ok`]: 4,
      [`${b.addr} ok`]: 4,
      [`${UNDIALABLE} connect_failed`]: 1,
      [`${UNDIALABLE} backoff`]: 3,
    });
    expect(client.drainOutcomes()).toEqual([]);
  });

  it('checks every transaction and target before queueing anything', async () => {
    const s = startServer();
    const client = newClient();
    expectCode(() => client.sendMany([s.addr], [tx(1), tx(2), Buffer.alloc(0)]), 'QUIC_TX_EMPTY');
    expectCode(() => client.sendMany([s.addr], [tx(1), Buffer.alloc(MAX_TX + 1)]), 'QUIC_TX_TOO_LARGE');
    expectCode(() => client.sendMany([s.addr, 'nope'], [tx(1)]), 'QUIC_INVALID_ADDRESS');
    expectCode(() => client.sendFirst([s.addr], Buffer.alloc(0)), 'QUIC_TX_EMPTY');
    expectCode(() => client.sendFirst([s.addr], Buffer.alloc(MAX_TX + 1)), 'QUIC_TX_TOO_LARGE');
    expectCode(() => client.sendFirst(['127.0.0.1'], tx(1)), 'QUIC_INVALID_ADDRESS');
    // Nothing was queued: no peer, no outcome, nothing received.
    expect(client.peerStats()).toEqual([]);
    expect(client.drainOutcomes()).toEqual([]);
    expect(s.received).toEqual([]);
    expect(await client.sendMany([s.addr], [])).toEqual(new Uint16Array(0));
    expect(await client.sendMany([], [tx(1)])).toEqual(new Uint16Array(0));

    client.close();
    expectCode(() => client.sendFirst([s.addr], tx(1)), 'QUIC_CLOSED');
    expectCode(() => client.sendMany([s.addr], [tx(1)]), 'QUIC_CLOSED');
    expectCode(() => client.drainOutcomes(), 'QUIC_CLOSED');
  });
});

describe('TpuTargets', () => {
  it('parses targets once and every send call takes it in place of the strings, naming targets as given', async () => {
    const a = startServer();
    const b = startServer();
    const client = newClient();
    expectCode(() => new TpuTargets([a.addr, 'nope']), 'QUIC_INVALID_ADDRESS');
    const targets = new TpuTargets([a.addr, UNDIALABLE, b.addr]);
    expect(targets.length).toBe(3);
    expect(targets.targets()).toEqual([a.addr, UNDIALABLE, b.addr]);
    client.prewarm(targets);

    const first = await client.sendFirst(targets, tx(1), 2000);
    expect([a.addr, b.addr]).toContain(first.target);
    expect(first.failures.map((f) => f.target)).not.toContain(first.target);
    const words = await client.sendMany(targets, [tx(2)]);
    expect([words[0]! & 0xff, words[2]! & 0xff]).toEqual([1, 1]);
    expect(words[1]! & 0xff).not.toBe(1);
    const results = await client.send(targets, tx(3));
    expect(results.map((r) => [r.target, r.ok])).toEqual([
      [a.addr, true],
      [UNDIALABLE, false],
      [b.addr, true],
    ]);
    // tx 1 (at least one of the two), tx 2 and tx 3 reached each live server.
    expect((await a.next(2)).length + (await b.next(2)).length).toBeGreaterThanOrEqual(4);
  });
});

describe('drainOutcomes', () => {
  it('counts the sends of every thread sharing the identity, once', async () => {
    const s = startServer();
    const identity = randomBytes(32);
    const mine = new QuicClient({ identity });
    clients.push(mine);
    const worker = new Worker(new URL('./fixtures/quic-worker.mjs', import.meta.url), {
      workerData: { identity, target: s.addr, count: 5, tag: 3 },
    });
    try {
      const inbox: Record<string, unknown>[] = [];
      const next = async (key: string): Promise<Record<string, unknown>> => {
        for (;;) {
          const m = inbox.find((x) => key in x);
          if (m) return m;
          await new Promise<void>((r) => worker.once('message', (x: Record<string, unknown>) => (inbox.push(x), r())));
        }
      };
      await next('ready');
      worker.postMessage('send');
      await next('results');
      expect((await mine.sendFirst([s.addr], tx(99))).target).toBe(s.addr);
      expect(await mine.sendMany([s.addr], [tx(100), tx(101)])).toEqual(new Uint16Array([1, 1]));
      // The worker's 5 `send`s and this thread's 3 sends, drained from this thread.
      expect(mine.drainOutcomes()).toEqual([{ target: s.addr, reason: 'ok', count: 8 }]);
      expect(mine.drainOutcomes()).toEqual([]);
      await s.next(8);
    } finally {
      await worker.terminate();
    }
  });
});

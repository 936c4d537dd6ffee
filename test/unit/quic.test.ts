/**
 * The native QUIC TPU endpoint through its JavaScript classes (`QuicClient`, `QuicServer` from
 * native/index.js): real QUIC over loopback, client and server in this process, plus worker
 * threads and a child process where sharing and process lifetime are the point.
 *
 * Every test uses fresh random identities: clients are shared per identity across the whole
 * process, so two tests with one identity would share a client.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { QuicClient, QuicServer, setQuicFirstSendNice, setQuicThreads, type ReceivedTransaction, type SendResult } from '../../native/index.js';
import { expectCode } from '../../harness/expect-code.js';
import { startWorker } from '../../harness/worker.js';

const MAX_TX = 1232;

/** Servers started by a test, closed after it whatever happens. */
const open: QuicServer[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

/** A server on an OS-assigned loopback port and the transactions it receives, as they arrive. */
function startServer(opts: { maxStreamsPer100ms?: number; maxConnectionsPerPeer?: number } = {}): {
  server: QuicServer;
  received: ReceivedTransaction[];
  next: (n: number) => Promise<ReceivedTransaction[]>;
} {
  const received: ReceivedTransaction[] = [];
  let wake = (): void => {};
  const server = new QuicServer({ bind: '127.0.0.1:0', identity: randomBytes(32), ...opts }, (tx) => {
    received.push(tx);
    wake();
  });
  open.push(server);
  /** Resolve once `n` transactions have arrived in total (bounded by the test timeout). */
  const next = async (n: number): Promise<ReceivedTransaction[]> => {
    while (received.length < n) await new Promise<void>((r) => (wake = r));
    return received.slice(0, n);
  };
  return { server, received, next };
}

/** A `len`-byte transaction stand-in starting with `tag` (as much of it as fits). */
function tx(tag: number, len = 200): Buffer {
  const b = Buffer.alloc(len, tag & 0xff);
  const head = Buffer.alloc(4);
  head.writeUInt32LE(tag >>> 0, 0);
  head.copy(b, 0, 0, Math.min(4, len));
  return b;
}

describe('QuicClient → QuicServer', () => {
  it('delivers a transaction intact with the sender identity, then reuses the connection', async () => {
    const { server, next } = startServer();
    const client = new QuicClient({ identity: randomBytes(32) });
    try {
      const first = tx(1, MAX_TX);
      const sentFrom = Date.now();
      const [r1] = await client.send([server.localAddr], first);
      const [r2] = await client.send([server.localAddr], tx(2, 1));
      expect(r1).toMatchObject({ target: server.localAddr, ok: true, reused: false });
      expect(r2).toMatchObject({ target: server.localAddr, ok: true, reused: true });
      expect(r1!.reason).toBeUndefined();
      expect(r1!.elapsedUs).toBeGreaterThan(0);

      const [a, b] = await next(2);
      const readBy = Date.now();
      expect(Buffer.compare(a!.bytes, first)).toBe(0);
      expect(Buffer.compare(b!.bytes, tx(2, 1))).toBe(0);
      expect(a!.peer).toBe(client.identity);
      expect(a!.remoteAddr).toMatch(/^127\.0\.0\.1:\d+$/);
      // Stamped by the server (a fractional ms) between the send and the moment the test read it;
      // the server may read the stream after the client's write resolved, so only that window
      // bounds it (Date.now() truncates: ±1 ms).
      expect(a!.arrivalMs).toBeGreaterThanOrEqual(sentFrom - 1);
      expect(a!.arrivalMs).toBeLessThanOrEqual(readBy + 1);

      const stats = server.stats();
      expect(stats).toMatchObject({ connectionsAccepted: 1, connectionsOpen: 1, acceptedTxs: 2 });
      const [peer] = client.peerStats();
      expect(peer).toMatchObject({ target: server.localAddr, connected: true, sent: 2, failed: 0, connects: 1 });
      expect(peer!.rttUs).toBeGreaterThan(0);
    } finally {
      client.close();
    }
  });

  it('sends to several servers at once, one result per target in order', async () => {
    const servers = [startServer(), startServer(), startServer()];
    const client = new QuicClient({ identity: randomBytes(32) });
    try {
      const targets = servers.map((s) => s.server.localAddr);
      const results = await client.send(targets, tx(7));
      expect(results.map((r) => [r.target, r.ok])).toEqual(targets.map((t) => [t, true]));
      for (const s of servers) expect((await s.next(1))[0]!.bytes.equals(tx(7))).toBe(true);
    } finally {
      client.close();
    }
  });

  it('prewarm connects both lanes (first sends, the rest) before the first send', async () => {
    const { server, next } = startServer();
    const client = new QuicClient({ identity: randomBytes(32) });
    try {
      client.prewarm([server.localAddr]);
      for (let i = 0; i < 500 && server.stats().connectionsOpen < 2; i++) await sleep(10);
      expect(server.stats().connectionsOpen).toBe(2);
      for (let i = 0; i < 500 && client.peerStats()[0]?.connects !== 2; i++) await sleep(10);
      const [r] = await client.send([server.localAddr], tx(3));
      expect(r).toMatchObject({ ok: true, reused: true });
      await next(1);
      expect(server.stats().connectionsAccepted).toBe(2);
    } finally {
      client.close();
    }
  });

  it('a refusing server gets its close code back; then sends fail fast in back-off', async () => {
    const { server } = startServer();
    server.setFaults({ refuseCode: 4 });
    const client = new QuicClient({ identity: randomBytes(32) });
    try {
      let failure: SendResult | undefined;
      for (let i = 0; i < 50 && !failure; i++) {
        const [r] = await client.send([server.localAddr], tx(i));
        if (!r!.ok) failure = r;
        else await sleep(20);
      }
      expect(failure, 'a refusing server must make sends fail').toBeDefined();
      expect(failure!.code).toBe(4);
      const [again] = await client.send([server.localAddr], tx(99));
      expect(again).toMatchObject({ ok: false, reason: 'backoff', code: 4 });
      const [peer] = client.peerStats();
      expect(peer!.lastCloseCode).toBe(4);
      expect(peer!.backoffRemainingMs).toBeGreaterThan(0);
      expect(server.stats().refused).toBe(server.stats().connectionsAccepted);
    } finally {
      client.close();
    }
  });

  it('packet loss is real: datagrams are dropped and QUIC still delivers everything', async () => {
    const { server, next } = startServer({ maxStreamsPer100ms: 0 });
    const client = new QuicClient({ identity: randomBytes(32), sendTimeoutMs: 15_000 });
    try {
      expect((await client.send([server.localAddr], tx(0)))[0]!.ok).toBe(true);
      server.setFaults({ packetLossPct: 30 });
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => client.send([server.localAddr], tx(i + 1, 600))));
      expect(results.flat().every((r) => r.ok)).toBe(true);
      const got = await next(21);
      const tags = new Set(got.map((t) => t.bytes.readUInt32LE(0)));
      expect(tags.size).toBe(21);
      expect(server.stats().datagramsDropped).toBeGreaterThan(0);
    } finally {
      server.setFaults({});
      client.close();
    }
  });
});

describe('argument checks', () => {
  it('refuses bad identities, addresses, transactions and options with a code, never a crash', async () => {
    expectCode(() => new QuicClient({ identity: randomBytes(31) }), 'QUIC_INVALID_IDENTITY');
    expectCode(() => new QuicServer({ bind: '127.0.0.1:0', identity: randomBytes(33) }, () => {}), 'QUIC_INVALID_IDENTITY');
    expectCode(() => new QuicServer({ bind: 'localhost:0', identity: randomBytes(32) }, () => {}), 'QUIC_INVALID_ADDRESS');
    expectCode(() => new QuicServer({ bind: '127.0.0.1:70000', identity: randomBytes(32) }, () => {}), 'QUIC_INVALID_ADDRESS');
    expectCode(() => new QuicClient({ identity: randomBytes(32), idleTimeoutMs: 30_000 }), 'QUIC_INVALID_OPTION');
    expectCode(() => new QuicClient({ identity: randomBytes(32), maxQueuePerPeer: 1.5 }), 'QUIC_INVALID_OPTION');
    expectCode(() => new QuicClient({ identity: randomBytes(32), keepAliveMs: -1 }), 'QUIC_INVALID_OPTION');
    expectCode(
      () => new QuicServer({ bind: '127.0.0.1:0', identity: randomBytes(32), maxConnectionsPerPeer: 0 }, () => {}),
      'QUIC_INVALID_OPTION',
    );
    // Not a byte array at all: napi's own conversion error, still a thrown Error.
    expect(() => new QuicClient({ identity: 'seed' as unknown as Uint8Array })).toThrow();

    const { server } = startServer();
    expectCode(() => server.setFaults({ packetLossPct: 101 }), 'QUIC_INVALID_OPTION');
    expectCode(() => server.setFaults({ refuseCode: -1 }), 'QUIC_INVALID_OPTION');
    const taken = server.localAddr;
    expectCode(() => new QuicServer({ bind: taken, identity: randomBytes(32) }, () => {}), 'QUIC_BIND_FAILED');

    const client = new QuicClient({ identity: randomBytes(32) });
    expectCode(() => client.send(['127.0.0.1'], tx(1)), 'QUIC_INVALID_ADDRESS');
    expectCode(() => client.send([server.localAddr, 'not an address'], tx(1)), 'QUIC_INVALID_ADDRESS');
    expectCode(() => client.send([server.localAddr], Buffer.alloc(MAX_TX + 1)), 'QUIC_TX_TOO_LARGE');
    expectCode(() => client.send([server.localAddr], Buffer.alloc(0)), 'QUIC_TX_EMPTY');
    expectCode(() => client.prewarm(['::1']), 'QUIC_INVALID_ADDRESS');
    expect(await client.send([], tx(1))).toEqual([]);
    client.close();
    client.close();
    expectCode(() => client.send([server.localAddr], tx(1)), 'QUIC_CLOSED');
    expectCode(() => client.peerStats(), 'QUIC_CLOSED');
  });

  it('closing a server twice is harmless and its port is free again at once', async () => {
    const { server } = startServer();
    const addr = server.localAddr;
    await server.close();
    await server.close();
    expect(server.stats().connectionsOpen).toBe(0);
    const again = new QuicServer({ bind: addr, identity: randomBytes(32) }, () => {});
    open.push(again);
    expect(again.localAddr).toBe(addr);
  });
});

// ---- process-wide sharing and lifetime ---------------------------------------------------------

const WORKER = new URL('./fixtures/quic-worker.mjs', import.meta.url);

describe('process-wide sharing', () => {
  it('two worker threads with the same identity share one endpoint: the server sees one connection', async () => {
    const { server, next } = startServer({ maxStreamsPer100ms: 0 });
    const identity = randomBytes(32);
    const workers = [1, 2].map((tag) => startWorker(WORKER, { identity, target: server.localAddr, count: 10, tag }));
    try {
      await Promise.all(workers.map((w) => w.message('ready')));
      workers.forEach((w) => w.worker.postMessage('send'));
      const done = await Promise.all(workers.map((w) => w.message<{ results: SendResult[]; identity: string }>('results')));
      for (const d of done) expect(d.results.every((r) => r.ok)).toBe(true);
      expect(done[0]!.identity).toBe(done[1]!.identity);
      // The main thread's handle for the identity is the same client too.
      const mine = new QuicClient({ identity });
      expect(mine.peerStats()).toMatchObject([{ target: server.localAddr, connects: 1, sent: 20 }]);
      mine.close();

      const got = await next(20);
      expect(new Set(got.map((t) => t.peer))).toEqual(new Set([done[0]!.identity]));
      expect(server.stats()).toMatchObject({ connectionsAccepted: 1, acceptedTxs: 20 });
      workers.forEach((w) => w.worker.postMessage('close'));
      await Promise.all(workers.map((w) => w.message('closed')));
      // The last handle is gone: the shared connection closes.
      for (let i = 0; i < 500 && server.stats().connectionsOpen > 0; i++) await sleep(10);
      expect(server.stats().connectionsOpen).toBe(0);
    } finally {
      await Promise.all(workers.map((w) => w.worker.terminate()));
    }
  });

  it('a closed server does not keep the process alive', async () => {
    const fixture = new URL('./fixtures/quic-exit.mjs', import.meta.url);
    const child = spawn(process.execPath, [fixture.pathname], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    const timedOut = sleep(20_000).then(() => 'still running' as const);
    const result = await Promise.race([exited, timedOut]);
    if (result === 'still running') child.kill('SIGKILL');
    expect(result, out).toBe(0);
    expect(out).toContain('received hello');
  });

  /** Runs `fixtures/<name>` in a process of its own (the runtimes are process-wide) and parses the one JSON line it prints. */
  async function fixtureResult<T>(name: string, arg: string): Promise<T> {
    const fixture = new URL(`./fixtures/${name}`, import.meta.url);
    const child = spawn(process.execPath, [fixture.pathname, arg], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code, out).toBe(0);
    return JSON.parse(out) as T;
  }

  it('the runtime runs the threads set before it starts (default 1); another count afterwards is refused, naming the one it runs with', async () => {
    for (const [arg, expected] of [['default', 1], ['2', 2]] as const) {
      const r = await fixtureResult<{ threads: number; again: string }>('quic-threads.mjs', arg);
      expect(r.threads).toBe(expected);
      expect(r.again).toBe(`QUIC_INVALID_OPTION: invalid option: quicThreads: the QUIC runtime already runs with ${expected} threads (set it before the first client starts)`);
    }
    expectCode(() => setQuicThreads(0), 'QUIC_INVALID_OPTION');
  });

  it('first sends run on a thread of their own at the niceness asked for; another afterwards is refused', async () => {
    type FirstThread = { set: unknown; reported: { nice?: number; error?: string }; nices: number[]; written: boolean; again: string };
    const run = (arg: string) => fixtureResult<FirstThread>('quic-first.mjs', arg);
    // Raising a thread's niceness needs no privilege: this one is exact everywhere.
    const five = await run('5');
    expect(five).toMatchObject({ set: { nice: 5 }, reported: { nice: 5 }, nices: [5], written: true });
    expect(five.again).toBe('QUIC_INVALID_OPTION: invalid option: quicFirstSendNice: the first sends\' thread already runs with 5 asked for (set it before the first client starts)');
    // The default, -10, started by the first send itself: lowering niceness needs CAP_SYS_NICE
    // (root here and in CI); without it the thread says why and runs at the process's.
    const dflt = await run('default');
    expect(dflt.set).toBeNull();
    expect(dflt.written).toBe(true);
    if (dflt.reported.nice !== undefined) {
      expect(dflt).toMatchObject({ reported: { nice: -10 }, nices: [-10] });
    } else {
      expect(dflt.reported.error).toMatch(/cannot set the first sends' thread to nice -10: .*CAP_SYS_NICE/);
      expect(dflt.nices).toEqual([0]);
    }
    expectCode(() => setQuicFirstSendNice(20), 'QUIC_INVALID_OPTION');
  });
});

/**
 * The HTTP edges a hostile or unlucky client finds, against the real service (an ingress thread,
 * real LMDB, the local cluster), over raw sockets where a client library would hide the bytes:
 * - framing headers given twice or in conflict: 400 and the connection closed, so the bytes
 *   after the first length are never served as a second (smuggled) request;
 * - a body over the limit: 413 answered at once, then the rest drained (bounded), so a client
 *   that reads only after sending (node:http, fetch with a 5 MB body, a raw socket) gets the 413
 *   instead of EPIPE;
 * - a plain GET of the WebSocket endpoint: 426; a broken handshake: 400;
 * - `Keep-Alive: timeout=5` on every kept connection, below uWS's real idle close;
 * - a header with a control character: uWS's parser never hands it to a handler (no response
 *   can be written from JavaScript; see docs/failure-behaviour.md);
 * - keys put where keys do not belong (a path, a JSON-RPC parameter, an option name, a request
 *   id, a content type) are redacted in the log file;
 * - `/metrics` and `/health` details behind `metricsToken`, and on the admin listener.
 */
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Accounts } from '../../src/accounts/accounts.js';
import { DEFAULT_PLANS } from '../../src/accounts/plans.js';
import { RateLimiter } from '../../src/accounts/rate-limiter.js';
import { DEFAULT_CONFIG } from '../../src/config.js';
import { buildApp, SEND_BODY_LIMIT } from '../../src/http/api.js';
import { LINGER_BYTES, LINGER_MS } from '../../src/http/request.js';
import { listen } from '../../src/http/server.js';
import { TipSet } from '../../src/native.js';
import { Store } from '../../src/store/store.js';
import { unreachableDelivery } from '../../harness/guard-delivery.js';
import { waitFor } from '../../harness/localnet.js';
import { account, startStack, type Stack } from '../../harness/stack.js';
import { logLines } from '../../harness/log-lines.js';
import { tempDir } from '../../harness/tmp.js';
import { makeTipAddresses } from '../../harness/transactions.js';

const TOKEN = 'metrics-token-for-the-test-0123456789';
/** uWS closes an idle connection 8–12 s after its last response (measured); a wait bound above it. */
const IDLE_CLOSE_BOUND_MS = 15_000;

let s: Stack;
let logDir: ReturnType<typeof tempDir>;
let logFile: string;
let port: number;

beforeAll(async () => {
  logDir = tempDir();
  logFile = join(logDir.dir, 'landfall.log');
  s = await startStack({
    localnet: { slotMs: 100, seed: 'http-edges' },
    config: { ingressThreads: 1, logLevel: 'info', logFile, metricsToken: TOKEN, adminPort: 0 },
  });
  port = s.svc.port;
}, 60_000);
afterAll(async () => {
  await s?.close();
  logDir?.cleanup();
});

interface Exchange {
  /** Everything the server sent. */
  text: string;
  /** The socket's error code (EPIPE, ECONNRESET), if any. */
  error: string | null;
  /** The server closed the connection (before `waitMs` ran out). */
  closed: boolean;
}

/**
 * Write `data` on a fresh connection and collect what comes back until the server closes it or
 * `waitMs` passes. `readAfterWrite`: do not read until everything was written (as node:http and
 * many HTTP libraries do with a request body), so an early reset would lose the response.
 */
function exchange(data: Array<string | Buffer>, opts: { waitMs: number; readAfterWrite?: boolean; until?: (text: string) => boolean }): Promise<Exchange> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    let error: string | null = null;
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, error, closed });
    };
    const timer = setTimeout(() => finish(false), opts.waitMs);
    if (opts.readAfterWrite) socket.pause();
    socket.on('data', (d) => {
      text += d.toString('latin1');
      if (opts.until?.(text)) finish(false);
    });
    socket.on('error', (e: NodeJS.ErrnoException) => (error ??= e.code ?? e.message));
    socket.on('close', () => finish(true));
    let i = 0;
    const next = () => {
      if (i === data.length) {
        if (opts.readAfterWrite) setTimeout(() => socket.resume(), 50);
        return;
      }
      socket.write(data[i++]!, (e) => (e ? undefined : next()));
    };
    next();
  });
}

/** The status lines in what the server sent (one per response). */
const statusLines = (text: string) => text.split('\r\n').filter((l) => l.startsWith('HTTP/1.1 '));
/** The JSON body of the last response in `text` (Content-Length or chunked). */
function lastBody(text: string): any {
  const response = text.slice(text.lastIndexOf('HTTP/1.1 '));
  const at = response.indexOf('\r\n\r\n');
  let body = response.slice(at + 4);
  if (/transfer-encoding: chunked/i.test(response.slice(0, at))) body = body.split('\r\n').filter((_, i) => i % 2 === 1).join('');
  return JSON.parse(body);
}

/** Requests one after another on one connection, each sent once the previous answer is complete. */
function sequential(requests: string[]): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const answers: string[] = [];
    let text = '';
    socket.on('data', (d) => {
      text += d.toString('latin1');
      const head = text.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: (\d+)\r\n/i.exec(text.slice(0, head + 2));
      if (head === -1 || !length || text.length < head + 4 + Number(length[1])) return;
      answers.push(text.slice(0, head + 4 + Number(length[1])));
      text = '';
      if (answers.length === requests.length) {
        socket.destroy();
        resolve(answers);
      } else socket.write(requests[answers.length]!);
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`closed after ${answers.length} answers: ${JSON.stringify(answers)}`)));
    socket.write(requests[0]!);
  });
}

/** The service's log lines so far. */
function logged(): any[] {
  return logLines(readFileSync(logFile, 'utf8'));
}

describe('framing headers (defect 7: request smuggling)', () => {
  const smuggled = 'GET /v1/tip-addresses HTTP/1.1\r\nHost: x\r\n\r\n';
  const cases: Array<[string, string]> = [
    ['two Content-Length lines', 'Content-Length: 2\r\nContent-Length: 60\r\n'],
    ['two equal Content-Length lines', 'Content-Length: 2\r\nContent-Length: 2\r\n'],
    ['two Transfer-Encoding lines', 'Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n'],
    ['a Transfer-Encoding other than chunked', 'Transfer-Encoding: xchunked\r\n'],
  ];
  for (const [what, headers] of cases) {
    const body = headers.includes('Transfer-Encoding') ? '2\r\n{}\r\n0\r\n\r\n' : '{}';
    const request = `POST /v1/send HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${headers}\r\n${body}`;

    it(`${what}: 400 Invalid request (before auth), then the connection is closed`, async () => {
      const r = await exchange([request], { waitMs: 5_000 });
      expect(r.closed, r.text).toBe(true);
      expect(statusLines(r.text)).toEqual(['HTTP/1.1 400 Bad Request']);
      expect(r.text).toMatch(/\r\nConnection: close\r\n/i);
      const e = lastBody(r.text).error;
      expect(e).toMatchObject({ code: 400, message: 'Invalid request' });
      expect(e.reason).toMatch(/Content-Length is given 2 times|Transfer-Encoding is given 2 times|Transfer-Encoding must be chunked/);
    });

    it(`${what}, with a request smuggled behind it: the smuggled request is never served`, async () => {
      const r = await exchange([request + smuggled], { waitMs: 5_000 });
      expect(r.closed, r.text).toBe(true);
      // The connection ends with the 400 or without an answer; never a 200 for the GET.
      expect(statusLines(r.text).filter((l) => l !== 'HTTP/1.1 400 Bad Request'), r.text).toEqual([]);
      expect(r.text).not.toContain('tip_addresses');
    });
  }

  it('one Content-Length, or one chunked Transfer-Encoding, is served as before (on one kept connection)', async () => {
    const answers = await sequential([
      `POST /v1/rpc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`,
      `POST /v1/rpc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: Chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`,
      'GET /ping HTTP/1.1\r\nHost: x\r\n\r\n',
    ]);
    expect(answers.map((a) => statusLines(a)[0])).toEqual(['HTTP/1.1 200 OK', 'HTTP/1.1 200 OK', 'HTTP/1.1 200 OK']);
    // `{}` is not a JSON-RPC request: answered in the protocol, so the body was read as sent.
    expect(lastBody(answers[1]!).error.code).toBe(-32600);
  });
});

describe('a body over the limit (defect 8: 413 then lingering close)', () => {
  const big = Buffer.alloc(5 * 1024 * 1024, 0x61);
  const head = (length: number | null, key = 'lf_nokey') =>
    `POST /v1/send HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
    (length === null ? 'Transfer-Encoding: chunked\r\n' : `Content-Length: ${length}\r\n`) +
    '\r\n';

  it('a client that reads only after sending 5 MB gets the 413, not EPIPE', async () => {
    const { key } = account(s);
    // Done once the chunked response's last chunk is in (the connection then stays until the
    // client closes it, as it was told to, or uWS's idle timeout does).
    const r = await exchange([head(big.length, key), big], { waitMs: 20_000, readAfterWrite: true, until: (t) => t.endsWith('\r\n0\r\n\r\n') });
    expect(r.error).toBeNull();
    expect(statusLines(r.text)).toEqual(['HTTP/1.1 413 Payload Too Large']);
    expect(r.text).toMatch(/\r\nConnection: close\r\n/i);
    expect(r.text).not.toMatch(/keep-alive:/i);
    expect(lastBody(r.text).error).toMatchObject({ code: 413, message: 'Payload too large' });
    expect(lastBody(r.text).error.reason).toBe(`body of ${big.length} bytes exceeds the ${SEND_BODY_LIMIT}-byte limit`);
  });

  it('fetch (undici) and node:http sending 5 MB get the 413', async () => {
    const { key } = account(s);
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
    const r = await fetch(`${s.svc.url}/v1/send`, { method: 'POST', headers, body: big });
    expect(r.status).toBe(413);
    expect(((await r.json()) as any).error.message).toBe('Payload too large');

    const viaHttp = await new Promise<{ status: number; body: string; error: string | null }>((resolve) => {
      let error: string | null = null;
      const req = httpRequest(`${s.svc.url}/v1/send`, { method: 'POST', headers: { ...headers, 'content-length': big.length } }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => setTimeout(() => resolve({ status: res.statusCode!, body, error }), 50));
      });
      req.on('error', (e: NodeJS.ErrnoException) => {
        error = e.code ?? e.message;
        resolve({ status: 0, body: '', error });
      });
      req.end(big);
    });
    expect(viaHttp.error).toBeNull();
    expect(viaHttp.status).toBe(413);
    expect(JSON.parse(viaHttp.body).error.code).toBe(413);
  });

  it('a chunked upload that streams past the limit gets the 413 once it is drained', async () => {
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    let sent = 0;
    const body = new ReadableStream({
      pull(c) {
        if (sent >= big.length) return c.close();
        sent += chunk.length;
        c.enqueue(chunk);
      },
    });
    const r = await fetch(`${s.svc.url}/v1/rpc`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, duplex: 'half' } as RequestInit);
    expect(r.status).toBe(413);
    // JSON-RPC renders it in its own dialect, with the REST error as data.
    expect(((await r.json()) as any).error.data).toMatchObject({ status: 413, message: 'Payload too large' });
    expect(sent).toBe(big.length);
  });

  it(`a client that keeps sending past ${LINGER_BYTES / 1024 / 1024} MiB is cut off, after the 413`, async () => {
    const { key } = account(s);
    const declared = 1024 * 1024 * 1024;
    const r = await new Promise<{ text: string; written: number; closed: boolean }>((resolve) => {
      const socket: Socket = connect(port, '127.0.0.1');
      let text = '';
      let written = 0;
      const piece = Buffer.alloc(1024 * 1024, 0x61);
      socket.on('data', (d) => (text += d.toString('latin1')));
      socket.on('error', () => {});
      socket.on('close', () => resolve({ text, written, closed: written < declared }));
      socket.write(head(declared, key));
      // One piece an event-loop turn, as a client that reads while it sends does. Writes the
      // kernel takes at once complete synchronously and their 'drain' comes on the next tick,
      // so a write-on-drain loop never reaches the poll phase: it reads nothing, and loses the
      // 413 in its receive buffer when the cut makes its next write fail (seen in CI: no
      // status line at all).
      const pump = () => {
        if (written >= declared || socket.destroyed) return;
        written += piece.length;
        if (socket.write(piece)) setImmediate(pump);
        else socket.once('drain', () => setImmediate(pump));
      };
      pump();
    });
    expect(statusLines(r.text)).toEqual(['HTTP/1.1 413 Payload Too Large']);
    expect(r.closed).toBe(true);
    // It was allowed to send at least the drain allowance before the server cut it off.
    expect(r.written).toBeGreaterThanOrEqual(LINGER_BYTES);
  });

  it(`a client that stops sending mid-body is closed within ${LINGER_MS / 1000} s of the 413`, { timeout: LINGER_MS + 20_000 }, async () => {
    const { key } = account(s);
    const r = await exchange([head(10 * 1024 * 1024, key), Buffer.alloc(1024 * 1024, 0x61)], { waitMs: LINGER_MS + 10_000 });
    expect(statusLines(r.text)).toEqual(['HTTP/1.1 413 Payload Too Large']);
    expect(r.closed).toBe(true);
  });
});

describe('the WebSocket endpoint without a WebSocket', () => {
  it('a plain GET /v1/stream is 426 Upgrade Required with Upgrade: websocket', async () => {
    const r = await fetch(`${s.svc.url}/v1/stream`);
    expect(r.status).toBe(426);
    expect(r.headers.get('upgrade')).toBe('websocket');
    expect(((await r.json()) as any).error).toMatchObject({ code: 426, message: 'Upgrade required' });
  });

  it('a handshake without a usable key is 400; another method is 405; a real client still connects', async () => {
    // fetch refuses to send an Upgrade header: a raw request.
    const broken = await exchange(['GET /v1/stream HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: short\r\n\r\n'], { waitMs: 1_000 });
    expect(statusLines(broken.text)).toEqual(['HTTP/1.1 400 Bad Request']);
    expect(lastBody(broken.text).error.reason).toMatch(/Sec-WebSocket-Key must be 24 characters/);
    const post = await fetch(`${s.svc.url}/v1/stream`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET');
    const { key } = account(s);
    const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/stream`, { headers: { authorization: `Bearer ${key}` } });
    const first = await new Promise<string>((resolve, reject) => {
      ws.once('message', (m) => resolve(String(m)));
      ws.once('error', reject);
    });
    expect(JSON.parse(first)).toEqual({ type: 'ready' });
    ws.close();
  });
});

// Both wait on the server's idle timer (5.5 s, then up to IDLE_CLOSE_BOUND_MS), each on a
// connection of its own: run side by side, the file waits for that timer once.
describe('connections the server closes on its idle timer', { concurrent: true }, () => {
  it('idle keep-alive: every kept response says Keep-Alive: timeout=5, and a connection idle that long is still served', { timeout: 40_000 }, async () => {
    const r = await fetch(`${s.svc.url}/v1/tip-addresses`);
    expect(r.headers.get('keep-alive')).toBe('timeout=5');
    await r.arrayBuffer();

    const result = await new Promise<{ first: string; second: string; closedAfterMs: number }>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      let first = '';
      let second = '';
      let secondAt = 0;
      socket.on('data', (d) => {
        text += d.toString('latin1');
        if (first === '' && text.includes('pong')) {
          first = text;
          text = '';
          // Idle for the hinted 5 s (and a little), then reuse the connection.
          setTimeout(() => socket.write('GET /ping HTTP/1.1\r\nHost: x\r\n\r\n'), 5_500);
        } else if (first !== '' && second === '' && text.includes('pong')) {
          second = text;
          secondAt = Date.now();
        }
      });
      socket.on('error', reject);
      socket.on('close', () => resolve({ first, second, closedAfterMs: Date.now() - secondAt }));
      setTimeout(() => reject(new Error(`not closed: ${JSON.stringify({ first, second })}`)), 5_500 + IDLE_CLOSE_BOUND_MS + 5_000);
      socket.write('GET /ping HTTP/1.1\r\nHost: x\r\n\r\n');
    });
    expect(result.first).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(result.first).toMatch(/\r\nKeep-Alive: timeout=5\r\n/i);
    expect(result.second).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    // Then the server's own idle close comes, within its bound.
    expect(result.closedAfterMs).toBeLessThan(IDLE_CLOSE_BOUND_MS);
  });

  it('a header with a control character is never served: no handler runs, no 2xx, the connection is closed', { timeout: IDLE_CLOSE_BOUND_MS + 10_000 }, async () => {
    const id = `ctl-${Date.now()}`;
    const r = await exchange([`GET /v1/tip-addresses HTTP/1.1\r\nHost: x\r\nx-request-id: ${id}\r\nX-Bad: a\x01b\r\n\r\n`], { waitMs: IDLE_CLOSE_BOUND_MS + 5_000 });
    expect(r.closed).toBe(true);
    expect(statusLines(r.text).filter((l) => l.startsWith('HTTP/1.1 2'))).toEqual([]);
    // A request a handler saw gets a log line with its id: this one got none.
    const probe = await fetch(`${s.svc.url}/nope`, { headers: { 'x-request-id': `${id}-after` } });
    await probe.arrayBuffer();
    await waitFor('the probe request logged', () => (logged().some((l) => l.req === `${id}-after`) ? true : undefined));
    expect(logged().filter((l) => l.req === id)).toEqual([]);
  });
});

describe('keys where keys do not belong', () => {
  it('are redacted in the log: path, JSON-RPC encoding, option name, request id, content type', async () => {
    const { key } = account(s);
    const auth = { authorization: `Bearer ${key}` };
    const ids: string[] = [];
    const call = async (path: string, init: RequestInit & { headers?: Record<string, string> }) => {
      const r = await fetch(`${s.svc.url}${path}`, init);
      await r.arrayBuffer();
      ids.push(r.headers.get('x-request-id')!);
      return r.status;
    };
    expect(await call(`/nope/${key}`, {})).toBe(404);
    expect(await call(`/v1/status/${key}`, { headers: auth })).toBe(400);
    expect(
      await call('/v1/rpc', {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'sendTransaction', params: ['AQAB', { encoding: key }] }),
      }),
    ).toBe(200);
    expect(await call('/v1/send', { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ transaction: 'AQAB', options: { [key]: true } }) })).toBe(400);
    expect(await call('/v1/send', { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ transaction: 'AQAB', [key]: true }) })).toBe(400);
    expect(await call('/v1/send', { method: 'POST', headers: { ...auth, 'content-type': `application/${key}` }, body: '{}' })).toBe(415);
    // A request id that is a key: echoed to the caller (it sent it), never written to the log.
    const echoed = await fetch(`${s.svc.url}/nope`, { headers: { 'x-request-id': key } });
    await echoed.arrayBuffer();
    expect(echoed.headers.get('x-request-id')).toBe(key);

    const lines = await waitFor('the request lines', () => {
      const all = logged().filter((l) => l.req !== undefined);
      const mine = all.filter((l) => ids.includes(l.req) || l.req === 'lf_[REDACTED]');
      return mine.length === ids.length + 1 ? mine : undefined;
    });
    expect(readFileSync(logFile, 'utf8')).not.toContain(key.slice(3));
    for (const l of lines) expect(JSON.stringify(l)).toContain('lf_[REDACTED]');
    expect(lines.find((l) => l.status === 404).path).toBe('/nope/lf_[REDACTED]');
    expect(lines.some((l) => /unsupported encoding: lf_\[REDACTED\]/.test(l.reason ?? ''))).toBe(true);
  });
});

describe('key secrets where keys do not belong', () => {
  it('are redacted in the log after a letter, percent-encoded, or without the lf_ prefix (path, request id, body field name)', async () => {
    const { key } = account(s);
    const secret = key.slice(3);
    const everyByteEncoded = [...secret].map((c) => '%' + c.charCodeAt(0).toString(16).toUpperCase()).join('');
    const auth = { authorization: `Bearer ${key}` };
    const ids: string[] = [];
    const call = async (path: string, init: RequestInit & { headers?: Record<string, string> } = {}) => {
      const r = await fetch(`${s.svc.url}${path}`, init);
      await r.arrayBuffer();
      ids.push(r.headers.get('x-request-id')!);
      return r.status;
    };
    expect(await call(`/nope/x${key}`)).toBe(404);
    expect(await call(`/nope/%6Cf_${secret}`)).toBe(404);
    expect(await call(`/nope/%6C%66%5F${secret}`)).toBe(404);
    expect(await call(`/nope/${everyByteEncoded}`)).toBe(404);
    expect(await call(`/v1/status/${secret}`, { headers: auth })).toBe(400);
    expect(await call('/v1/send', { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ transaction: 'AQAB', [secret]: true }) })).toBe(400);
    const glued = await fetch(`${s.svc.url}/nope`, { headers: { 'x-request-id': `Bearer${key}` } });
    await glued.arrayBuffer();
    expect(glued.headers.get('x-request-id')).toBe(`Bearer${key}`);

    const lines = await waitFor('the request lines', () => {
      const mine = logged().filter((l) => ids.includes(l.req) || l.req === 'Bearerlf_[REDACTED]');
      return mine.length === ids.length + 1 ? mine : undefined;
    });
    const text = readFileSync(logFile, 'utf8');
    expect(text).not.toContain(secret);
    expect(text).not.toContain(everyByteEncoded);
    for (const l of lines) expect(JSON.stringify(l)).toContain('[REDACTED]');
    expect(lines.find((l) => l.route === '/v1/status/:signature').path).toBe('/v1/status/[REDACTED]');
    expect(lines.find((l) => l.route === '/v1/send').reason).toMatch(/^unknown field "\[REDACTED\]"/);
  });
});

describe('/metrics and /health details behind metricsToken and on the admin listener', () => {
  it('the API port serves no /metrics and a bare /health; the admin listener serves both with the token', async () => {
    expect((await fetch(`${s.svc.url}/metrics`)).status).toBe(404);
    const bare = await fetch(`${s.svc.url}/health`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(bare.status).toBe(200);
    expect(await bare.json()).toEqual({ status: 'ok' });

    const admin = s.svc.adminUrl!;
    expect(admin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await fetch(`${admin}/metrics`)).status).toBe(401);
    expect((await fetch(`${admin}/metrics`, { headers: { authorization: 'Bearer wrong-token-wrong-token' } })).status).toBe(401);
    // Requests the ingress thread served are counted in the admin listener's (aggregated) scrape.
    for (let i = 0; i < 3; i++) await (await fetch(`${s.svc.url}/v1/tip-addresses`)).arrayBuffer();
    const m = await fetch(`${admin}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(m.status).toBe(200);
    const text = await m.text();
    const sample = /landfall_http_requests_total\{route="\/v1\/tip-addresses",code="200"\} (\d+)/.exec(text);
    expect(Number(sample?.[1])).toBeGreaterThanOrEqual(3);
    expect(await (await fetch(`${admin}/health`)).json()).toEqual({ status: 'ok' });
    const detailed = (await (await fetch(`${admin}/health`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as any;
    expect(detailed).toMatchObject({ status: 'ok', chain: { synced: true } });
    expect(Object.keys(detailed)).toEqual(expect.arrayContaining(['status', 'uptime_s', 'chain']));
    expect(typeof detailed.uptime_s).toBe('number');
    expect((await fetch(`${admin}/v1/send`, { method: 'POST' })).status).toBe(404);
    // The dashboard is there too (its operator view reads /metrics and /health on the same origin).
    const root = await fetch(`${admin}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/dashboard/');
    const page = await fetch(`${admin}/dashboard/`);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toContain("connect-src 'self'");
    expect(await page.text()).toContain('id="operator"');
    const wrong = await fetch(`${admin}/dashboard/`, { method: 'POST' });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('GET');
  });

  /** An API app built with `config` (no chain: the operations routes only), served on loopback. */
  async function operationsApp(config: Partial<typeof DEFAULT_CONFIG>): Promise<{ base: string; close(): Promise<void> }> {
    const tmp = tempDir();
    const store = Store.open(tmp.dir);
    const accounts = new Accounts(store, { plans: DEFAULT_PLANS, lamportsPerPoint: 1000 });
    const app = buildApp({
      config: { ...DEFAULT_CONFIG, dataDir: tmp.dir, ...config },
      accounts,
      store,
      limiter: new RateLimiter(DEFAULT_PLANS),
      tips: new TipSet(makeTipAddresses(8).map((t) => t.toBase58())),
      delivery: unreachableDelivery,
    });
    const server = await listen(app, '127.0.0.1', 0);
    return {
      base: `http://127.0.0.1:${server.port}`,
      async close() {
        server.close();
        await store.close();
        tmp.cleanup();
      },
    };
  }

  describe('a token without an admin listener', () => {
    let ops: Awaited<ReturnType<typeof operationsApp>>;
    beforeAll(async () => {
      ops = await operationsApp({ metricsToken: TOKEN });
    });
    afterAll(() => ops?.close());

    it('/metrics on the API port needs the token; /health keeps its status code and drops the details without it', async () => {
      const base = ops.base;
      const denied = await fetch(`${base}/metrics`);
      expect(denied.status).toBe(401);
      expect(((await denied.json()) as any).error.message).toBe('Unauthorized');
      expect((await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
      // unreachableDelivery reports the chain view unsynced: 503 either way.
      const bare = await fetch(`${base}/health`);
      expect(bare.status).toBe(503);
      expect(await bare.json()).toEqual({ status: 'unsynced' });
      const full = await fetch(`${base}/health`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(full.status).toBe(503);
      expect(Object.keys((await full.json()) as object)).toEqual(expect.arrayContaining(['status', 'uptime_s', 'chain']));
    });
  });

  it('configured for a non-loopback host without a token, /metrics is not served (open by default only on loopback)', async () => {
    // Built for host 0.0.0.0 but served on loopback here: the tests reach nothing else.
    const exposed = await operationsApp({ host: '0.0.0.0' });
    const withToken = await operationsApp({ host: '0.0.0.0', metricsToken: TOKEN });
    const loopback = await operationsApp({ host: '127.0.0.1' });
    try {
      const refused = await fetch(`${exposed.base}/metrics`);
      expect(refused.status).toBe(404);
      expect(((await refused.json()) as any).error.reason).toMatch(/^\/metrics is served on a non-loopback address only with metricsToken set/);
      expect((await fetch(`${withToken.base}/metrics`)).status).toBe(401);
      expect((await fetch(`${withToken.base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
      expect((await fetch(`${loopback.base}/metrics`)).status).toBe(200);
    } finally {
      await Promise.all([exposed.close(), withToken.close(), loopback.close()]);
    }
  });
});

/**
 * The JSON-RPC client (`src/chain/rpc.ts`) over its own keep-alive agent: what it returns and
 * throws for each kind of answer is what it did over `fetch` — a result, the node's JSON-RPC
 * error with its code, a body that is not JSON, a compressed answer, a redirect followed, a
 * node that does not answer in time, one that is not there — and its calls share a connection.
 * A real HTTP server on loopback plays the node: each test says how it answers. (Over `fetch`
 * the same tests pass but for two: a body of `null` threw a `TypeError`, and calls one after
 * another were not all on one connection.)
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync, brotliCompressSync, deflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rpc, RpcError } from '../../src/chain/rpc.js';

type Handler = (body: { id: number; method: string; params: unknown[] }, req: IncomingMessage, res: ServerResponse) => void;

let server: Server;
let base = '';
let handler: Handler = () => {};

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      handler(text === '' ? { id: 0, method: '', params: [] } : JSON.parse(text), req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function json(res: ServerResponse, value: unknown, status = 200): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

/** The error `p` rejects with (fails the test if it resolves). */
async function rejection(p: Promise<unknown>): Promise<RpcError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(RpcError);
    return e as RpcError;
  }
  throw new Error('resolved');
}

describe('Rpc over its keep-alive agent', () => {
  it('returns the result of the call it posted, with the method and params as given', async () => {
    let seen: { method: string; params: unknown[]; contentType: string | undefined } | null = null;
    handler = (body, req, res) => {
      seen = { method: body.method, params: body.params, contentType: req.headers['content-type'] };
      json(res, { jsonrpc: '2.0', id: body.id, result: { context: { slot: 7 }, value: [null, { slot: 5, confirmations: null, err: null, confirmationStatus: 'finalized' }] } });
    };
    const r = await new Rpc(base).getSignatureStatuses(['a', 'b']);
    expect(r).toEqual({ context: { slot: 7 }, value: [null, { slot: 5, confirmations: null, err: null, confirmationStatus: 'finalized' }] });
    expect(seen).toEqual({ method: 'getSignatureStatuses', params: [['a', 'b'], { searchTransactionHistory: false }], contentType: 'application/json' });
  });

  it("throws the node's JSON-RPC error with its code, message and data", async () => {
    handler = (body, _req, res) => json(res, { jsonrpc: '2.0', id: body.id, error: { code: -32002, message: 'simulation failed', data: { logs: ['x'] } } });
    const e = await rejection(new Rpc(base).getSlot());
    expect(e.code).toBe(-32002);
    expect(e.message).toBe('getSlot: simulation failed');
    expect(e.data).toEqual({ logs: ['x'] });
  });

  it('says "not JSON" with the status for a body that is not JSON, and "no result" for one without a result', async () => {
    handler = (_body, _req, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html>bad gateway</html>');
    };
    const bad = await rejection(new Rpc(base).getSlot());
    expect(bad.code).toBeNull();
    expect(bad.message).toBe(`getSlot: HTTP 502 from ${base}, not JSON`);
    handler = (body, _req, res) => json(res, { jsonrpc: '2.0', id: body.id });
    expect((await rejection(new Rpc(base).getSlot())).message).toBe('getSlot: HTTP 200: no result in response');
    handler = (_body, _req, res) => json(res, null);
    expect((await rejection(new Rpc(base).getSlot())).message).toBe('getSlot: HTTP 200: no result in response');
  });

  it('decompresses a gzip, deflate or brotli answer', async () => {
    for (const [encoding, compress] of [
      ['gzip', gzipSync],
      ['deflate', deflateSync],
      ['br', brotliCompressSync],
    ] as const) {
      let asked: string | undefined;
      handler = (body, req, res) => {
        asked = req.headers['accept-encoding'];
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': encoding });
        res.end(compress(Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: 4242 }))));
      };
      expect(await new Rpc(base).getSlot()).toBe(4242);
      expect(asked).toBe('gzip, deflate'); // as `fetch` asked
    }
  });

  it('follows a redirect to where the node answers', async () => {
    handler = (body, req, res) => {
      if (req.url === '/moved') {
        res.writeHead(307, { location: '/here' });
        return res.end();
      }
      json(res, { jsonrpc: '2.0', id: body.id, result: req.url });
    };
    expect(await new Rpc(`${base}/moved`).call('getSlot')).toBe('/here');
  });

  it('fails a call the node does not answer within the timeout, and one to a port nobody listens on', async () => {
    handler = () => {}; // never answers
    const slow = await rejection(new Rpc(base, 200).getSlot());
    expect(slow.code).toBeNull();
    expect(slow.message).toBe(`getSlot: request to ${base} failed: The operation was aborted due to timeout`);
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const closed = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const refused = await rejection(new Rpc(closed).getSlot());
    expect(refused.code).toBeNull();
    expect(refused.message).toMatch(new RegExp(`^getSlot: request to ${closed} failed: `));
  });

  it('keeps the connection open between calls (one connection for calls one after another)', async () => {
    // A server of its own: no pooled connection to it from the tests above.
    let opened = 0;
    const own = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => json(res, { jsonrpc: '2.0', id: 1, result: 11 }));
    });
    own.on('connection', () => opened++);
    await new Promise<void>((resolve) => own.listen(0, '127.0.0.1', resolve));
    try {
      const rpc = new Rpc(`http://127.0.0.1:${(own.address() as AddressInfo).port}`);
      for (let i = 0; i < 5; i++) expect(await rpc.getSlot()).toBe(11);
      expect(opened).toBe(1);
    } finally {
      own.closeAllConnections();
      await new Promise<void>((resolve) => own.close(() => resolve()));
    }
  });

  it('redacts the secrets of the URL in its errors', async () => {
    handler = (_body, _req, res) => {
      res.writeHead(500);
      res.end('oops');
    };
    const e = await rejection(new Rpc(`${base}/?api-key=secret123`).getSlot());
    expect(e.message).not.toContain('secret123');
    expect(e.message).toMatch(/HTTP 500 from .*, not JSON$/);
  });
});

/**
 * The JSON-RPC HTTP endpoint (node:http: the local cluster is not a hot path). Mirrors Agave's
 * server at the HTTP level too: `POST /` with `Content-Type: application/json` (else 415), a
 * 50 KiB body limit (413), `GET /health` → `ok`, anything else 405.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MAX_REQUEST_BODY } from './constants.js';
import { toJson } from './encode.js';
import { handlePayload, respond, type Request, type Response } from './jsonrpc.js';
import { METHODS, type RpcEnv } from './rpc-methods.js';

function reply(res: ServerResponse, status: number, body: string, type = 'application/json'): void {
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function handle(req: IncomingMessage, res: ServerResponse, env: () => RpcEnv): void {
  if (req.method === 'GET' && req.url === '/health') return reply(res, 200, 'ok', 'text/plain');
  if (req.method !== 'POST') return reply(res, 405, 'Method Not Allowed', 'text/plain');
  const type = req.headers['content-type'] ?? '';
  if (!/^application\/json\b/i.test(type)) {
    return reply(res, 415, 'Supplied content type is not allowed. Content-Type: application/json is required', 'text/plain');
  }
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_REQUEST_BODY) {
    res.setHeader('Connection', 'close');
    return reply(res, 413, 'Payload Too Large', 'text/plain');
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let refused = false;
  req.on('data', (chunk: Buffer) => {
    if (refused) return;
    size += chunk.length;
    if (size > MAX_REQUEST_BODY) {
      refused = true;
      res.setHeader('Connection', 'close');
      reply(res, 413, 'Payload Too Large', 'text/plain');
      req.resume();
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    if (refused) return;
    const e = env();
    const call = (r: Request): Response | null =>
      respond(r, Object.hasOwn(METHODS, r.method) ? () => METHODS[r.method]!(r.params, e) : undefined);
    const out = handlePayload(Buffer.concat(chunks).toString('utf8'), call);
    reply(res, 200, out === null ? '' : toJson(out));
  });
  req.on('error', () => res.destroy());
}

export class RpcServer {
  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  /** Listen on `host:port` (0 = any free port). `env` is read per request (addresses are known after listening). */
  static listen(host: string, port: number, env: () => RpcEnv): Promise<RpcServer> {
    const server = createServer((req, res) => handle(req, res, env));
    server.keepAliveTimeout = 5_000;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve(new RpcServer(server, (server.address() as AddressInfo).port));
      });
    });
  }

  /** Stop listening and drop every open connection (keep-alive sockets included). */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

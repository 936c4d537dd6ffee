/**
 * One base URL of the service and its kept-alive connections: the HTTP exchange the client makes
 * against it. The client holds one per URL it was given and fails over between them.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { LandfallApiError, LandfallTimeoutError } from './types.js';

export interface Response {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

export interface EndpointOptions {
  apiKey: string;
  timeoutMs: number;
  maxSockets: number;
  keepAliveMs: number;
  /** Counters shared by every endpoint of a client. */
  stats: { requests: number; connections: number };
}

/**
 * Errors that say the service could not be reached or dropped the connection before answering:
 * worth trying again (later, or at another URL). Every Landfall request is idempotent (a send is
 * keyed by its signature), so repeating one never sends a transaction twice.
 */
const NETWORK_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED']);

/** True for a failure to reach the service or a lost connection (not for an answer it gave). */
export function isNetworkError(e: unknown): boolean {
  if (e instanceof LandfallTimeoutError) return true;
  const code = (e as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' && NETWORK_ERRORS.has(code);
}

export class Endpoint {
  readonly base: URL;
  private readonly prefix: string;
  private readonly agent: http.Agent;
  private readonly transport: typeof http.request;

  constructor(
    url: string,
    private readonly o: EndpointOptions,
  ) {
    this.base = new URL(url);
    if (this.base.protocol !== 'http:' && this.base.protocol !== 'https:') {
      throw new TypeError(`url must be http:// or https://, got ${url}`);
    }
    this.prefix = this.base.pathname.replace(/\/+$/, '');
    const secure = this.base.protocol === 'https:';
    const agentOptions = { keepAlive: true, maxSockets: o.maxSockets, timeout: o.keepAliveMs };
    this.agent = secure ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
    this.transport = secure ? https.request : http.request;
  }

  /** The `ws://` / `wss://` address of `path` (a path prefix of the base kept). */
  wsUrl(path: string): string {
    const url = new URL(`${this.prefix}${path}`, this.base);
    url.protocol = this.base.protocol === 'https:' ? 'wss:' : 'ws:';
    return url.toString();
  }

  /**
   * One HTTP exchange on a kept-alive connection. A reused connection the server closed while
   * it sat idle fails before any response; that one case is retried at once on a fresh
   * connection (it says nothing about the service).
   */
  async request(method: string, path: string, payload: Buffer | undefined): Promise<Response> {
    try {
      return await this.exchange(method, path, payload);
    } catch (e) {
      if ((e as { reusedSocket?: boolean }).reusedSocket) return this.exchange(method, path, payload);
      throw e;
    }
  }

  close(): void {
    this.agent.destroy();
  }

  private exchange(method: string, path: string, payload: Buffer | undefined): Promise<Response> {
    this.o.stats.requests++;
    return new Promise((resolve, reject) => {
      const headers: http.OutgoingHttpHeaders = { authorization: `Bearer ${this.o.apiKey}`, accept: 'application/json' };
      if (payload) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = payload.length;
      }
      const url = new URL(this.prefix + path, this.base);
      const req = this.transport(url, { method, headers, agent: this.agent, timeout: this.o.timeoutMs }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = text;
          if ((res.headers['content-type'] ?? '').includes('json')) {
            try {
              body = JSON.parse(text);
            } catch {
              return reject(new LandfallApiError(res.statusCode ?? 0, 'Invalid response', `unparseable JSON from ${method} ${path}: ${text.slice(0, 200)}`));
            }
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
        });
      });
      req.on('socket', () => {
        if (!req.reusedSocket) this.o.stats.connections++;
      });
      req.on('timeout', () => req.destroy(new LandfallTimeoutError(`${method} ${url.origin}${path} got no response within ${this.o.timeoutMs} ms`)));
      req.on('error', (e: Error) => {
        const code = (e as NodeJS.ErrnoException).code;
        const reused = req.reusedSocket && (code === 'ECONNRESET' || code === 'EPIPE');
        reject(reused ? Object.assign(e, { reusedSocket: true }) : e);
      });
      req.end(payload);
    });
  }
}

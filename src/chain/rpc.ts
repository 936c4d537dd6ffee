/**
 * A small Solana JSON-RPC client: one POST per call over `node:http`/`node:https` with a
 * keep-alive agent of its own, a timeout on every call, and JSON-RPC errors surfaced as
 * `RpcError` with the node's code and message.
 *
 * Only what delivery and the tracker need; the shapes are those of a real Agave RPC node, so the
 * same code talks to mainnet and to the local cluster.
 *
 * Why not `fetch`: it was, and on the main thread it was the tracker's largest cost. Under load
 * the tracker's poll makes dozens of `getSignatureStatuses` calls a second (256 signatures each;
 * on a node where nothing lands every transaction is polled about four times in its first 8 s),
 * and undici's `fetch` builds a `Request`, `Headers`, an `AbortSignal`, web streams and their
 * transfer hooks for each: ~700 µs of CPU a call against ~250 over `http.request`, measured with
 * the same 256-signature body and answer on one machine (docs/performance.md, "The main thread's
 * share, profiled"). What `fetch` did beyond the POST is kept: it asks for a compressed answer
 * (`gzip, deflate`, as `fetch` asked) and decompresses it (and `br`, unasked); a redirect, or a URL this client does
 * not handle itself (credentials in it, another scheme), goes through `fetch` as before.
 */
import http from 'node:http';
import https from 'node:https';
import zlib from 'node:zlib';
import { redactUrlSecrets } from './redact-url.js';

export class RpcError extends Error {
  override readonly name = 'RpcError';
  constructor(
    readonly method: string,
    /** JSON-RPC error code, or null for a transport failure. */
    readonly code: number | null,
    message: string,
    /** The node's `error.data`, when it sent one (e.g. a simulation's logs). */
    readonly data?: unknown,
  ) {
    super(`${method}: ${message}`);
  }
}

export interface Context<T> {
  context: { slot: number };
  value: T;
}

export interface ClusterNode {
  pubkey: string;
  tpuQuic?: string | null;
  tpu?: string | null;
}

export interface EpochInfo {
  epoch: number;
  slotIndex: number;
  slotsInEpoch: number;
  absoluteSlot: number;
  blockHeight: number;
}

export interface SignatureStatus {
  slot: number;
  confirmations: number | null;
  err: unknown;
  confirmationStatus?: 'processed' | 'confirmed' | 'finalized' | null;
}

/** `getMultipleAccounts` limit of an Agave node (`MAX_MULTIPLE_ACCOUNTS`). */
export const MAX_MULTIPLE_ACCOUNTS = 100;

/** An account as `getMultipleAccounts` returns it with `encoding: 'base64'`. */
export interface AccountInfo {
  lamports: number;
  owner: string;
  data: [string, 'base64'];
  executable: boolean;
}

/** `simulateTransaction`'s value: `err` and `logs`, and the node's other fields (`unitsConsumed`, …) as sent. */
export interface SimulationResult {
  err: unknown;
  logs: string[] | null;
  [field: string]: unknown;
}

export type Commitment = 'processed' | 'confirmed' | 'finalized';

export class Rpc {
  private nextId = 1;
  /** The URL as `http.request` takes it, or null when every call goes through `fetch` (see the file's comment). */
  private readonly direct: { url: URL; agent: http.Agent; request: typeof http.request } | null;

  constructor(
    readonly url: string,
    private readonly timeoutMs = 5_000,
  ) {
    this.direct = directTarget(url);
  }

  async call<T>(method: string, params: unknown[] = []): Promise<T> {
    const id = this.nextId++;
    const payload = JSON.stringify({ jsonrpc: '2.0', id, method, params });
    const answer = this.direct === null ? null : await this.post(method, payload);
    const { status, text } = answer ?? (await this.viaFetch(method, payload));
    let body: { result?: T; error?: { code: number; message: string; data?: unknown } };
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      throw new RpcError(method, null, `HTTP ${status} from ${redactUrlSecrets(this.url)}, not JSON`);
    }
    // `null` or a number parse too: as with `fetch`'s `json()`, such a body is no answer.
    if (body === null || typeof body !== 'object') throw new RpcError(method, null, `HTTP ${status}: no result in response`);
    if (body.error) throw new RpcError(method, body.error.code, body.error.message, body.error.data);
    if (!('result' in body)) throw new RpcError(method, null, `HTTP ${status}: no result in response`);
    return body.result as T;
  }

  /**
   * POST `payload` over the keep-alive agent; the answer's status and text (null text: the body
   * could not be read, which the caller reports as "not JSON"), or null on a redirect (the caller
   * asks `fetch`, which follows it). A transport failure or the timeout rejects with an `RpcError`.
   */
  private post(method: string, payload: string): Promise<{ status: number; text: string } | null> {
    const { url, agent, request } = this.direct!;
    return new Promise((resolve, reject) => {
      let done = false;
      const fail = (e: Error): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        reject(new RpcError(method, null, `request to ${redactUrlSecrets(this.url)} failed: ${e.message}`));
      };
      // The answer, once: its status and text, or null for a redirect.
      const settle = (answer: { status: number; text: string } | null): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        resolve(answer);
      };
      // Read as `fetch` read it: a body cut off or undecodable is "not JSON", with the status.
      const answer = (status: number, text: string): void => settle({ status, text });
      const req = request(
        url,
        { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), 'accept-encoding': 'gzip, deflate' } },
        (res) => {
          const status = res.statusCode ?? 0;
          if (status >= 300 && status < 400 && res.headers.location !== undefined) {
            res.resume();
            return settle(null);
          }
          const decoded = decoderOf(res.headers['content-encoding']);
          const stream = decoded === null ? res : res.pipe(decoded);
          if (decoded !== null) res.on('error', (e) => decoded.destroy(e));
          const chunks: Buffer[] = [];
          stream.on('data', (c: Buffer) => chunks.push(c));
          stream.on('end', () => answer(status, textOf(chunks)));
          stream.on('error', () => answer(status, ''));
          res.on('close', () => {
            if (!res.complete) answer(status, '');
          });
        },
      );
      // As `AbortSignal.timeout`: the whole call, from the request to its body's last byte.
      const timer = setTimeout(() => {
        const e = new Error('The operation was aborted due to timeout');
        fail(e);
        req.destroy(e);
      }, this.timeoutMs);
      timer.unref();
      req.on('error', fail);
      req.end(payload);
    });
  }

  /** The call through `fetch` (a URL `post` does not handle, or a redirect it does not follow). */
  private async viaFetch(method: string, payload: string): Promise<{ status: number; text: string }> {
    let res: Response;
    try {
      res = await fetch(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: payload,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (e) {
      throw new RpcError(method, null, `request to ${redactUrlSecrets(this.url)} failed: ${(e as Error).message}`);
    }
    try {
      return { status: res.status, text: await res.text() };
    } catch {
      return { status: res.status, text: '' };
    }
  }

  getSlot(commitment: Commitment = 'processed'): Promise<number> {
    return this.call('getSlot', [{ commitment }]);
  }

  getEpochInfo(commitment: Commitment = 'processed'): Promise<EpochInfo> {
    return this.call('getEpochInfo', [{ commitment }]);
  }

  /** Leaders of `limit` slots from `start` (identity pubkeys, base58). */
  getSlotLeaders(start: number, limit: number): Promise<string[]> {
    return this.call('getSlotLeaders', [start, limit]);
  }

  getClusterNodes(): Promise<ClusterNode[]> {
    return this.call('getClusterNodes');
  }

  getLatestBlockhash(commitment: Commitment = 'confirmed'): Promise<Context<{ blockhash: string; lastValidBlockHeight: number }>> {
    return this.call('getLatestBlockhash', [{ commitment }]);
  }

  getBlockHeight(commitment: Commitment = 'confirmed'): Promise<number> {
    return this.call('getBlockHeight', [{ commitment }]);
  }

  isBlockhashValid(blockhash: string, commitment: Commitment = 'processed'): Promise<Context<boolean>> {
    return this.call('isBlockhashValid', [blockhash, { commitment }]);
  }

  getSignatureStatuses(signatures: string[], searchTransactionHistory = false): Promise<Context<(SignatureStatus | null)[]>> {
    return this.call('getSignatureStatuses', [signatures, { searchTransactionHistory }]);
  }

  /** Lamports an account of `bytes` data needs to be rent-exempt. */
  getMinimumBalanceForRentExemption(bytes: number): Promise<number> {
    return this.call('getMinimumBalanceForRentExemption', [bytes]);
  }

  /** Accounts at `addresses` (at most `MAX_MULTIPLE_ACCOUNTS`), in order, null where none exists; data in base64. */
  getMultipleAccounts(addresses: string[], commitment: Commitment = 'processed'): Promise<Context<(AccountInfo | null)[]>> {
    return this.call('getMultipleAccounts', [addresses, { encoding: 'base64', commitment }]);
  }

  simulateTransaction(wire: Buffer): Promise<Context<SimulationResult>> {
    return this.call('simulateTransaction', [
      wire.toString('base64'),
      { encoding: 'base64', sigVerify: false, replaceRecentBlockhash: false, commitment: 'processed' },
    ]);
  }

  /** Preflight: the node's simulation result, as it sent it, if the transaction fails; null if it would succeed. */
  async simulationFailure(wire: Buffer): Promise<SimulationResult | null> {
    const { value } = await this.simulateTransaction(wire);
    return value.err === null || value.err === undefined ? null : value;
  }
}

/** Keep-alive agents, one per scheme for every `Rpc` of this thread (as `fetch`'s one pool was). */
const agents = {
  // `timeout`: an idle pooled socket is closed after 4 s, before a server's usual 5 s keep-alive
  // (Node's own) closes it under a request about to reuse it.
  http: new http.Agent({ keepAlive: true, scheduling: 'lifo', timeout: 4_000 }),
  https: new https.Agent({ keepAlive: true, scheduling: 'lifo', timeout: 4_000 }),
};

/** How `post` reaches `url`, or null for a URL left to `fetch` (not http(s), or with credentials, which `fetch` refuses). */
function directTarget(url: string): { url: URL; agent: http.Agent; request: typeof http.request } | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.username !== '' || u.password !== '') return null;
  if (u.protocol === 'http:') return { url: u, agent: agents.http, request: http.request };
  if (u.protocol === 'https:') return { url: u, agent: agents.https, request: https.request };
  return null;
}

/** A decompressor for the answer's `content-encoding` (null: none, or one to read as is). */
function decoderOf(encoding: string | undefined): zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | null {
  switch (encoding?.trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return zlib.createGunzip();
    case 'deflate':
      return zlib.createInflate();
    case 'br':
      return zlib.createBrotliDecompress();
    default:
      return null;
  }
}

/** The body's UTF-8 text, a leading byte-order mark dropped (as `fetch`'s `text()` drops it). */
function textOf(chunks: Buffer[]): string {
  const text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/**
 * uWebSockets.js request plumbing: capture what a handler needs while `req` is valid (it is
 * only valid synchronously), read the body with a hard size limit *while it streams*, and
 * write exactly one response, never to an aborted socket.
 *
 * Fast path: a request allocates this object, one abort closure and (for a body) one promise;
 * no regex, no UUID (a request id is made from a per-thread counter, only when the client sent
 * none), and the query string is parsed only by the routes that read it. Only a request that
 * declares a body (Content-Length or Transfer-Encoding) walks its header lines, once, to count
 * the framing headers (about 1.5 µs for 10 header lines, see `framingError`).
 *
 * Closing: uWS's own `end(body, true)` shuts the socket down at once. With request bytes still
 * unread the kernel then answers them with a reset, and a client still sending its body (one that
 * reads the answer only after sending, as node:http and many HTTP libraries do) gets `EPIPE`
 * and never sees the response. So an oversize body is answered at once and then *drained*:
 * read and discarded until it ends, for at most {@link LINGER_MS} and {@link LINGER_BYTES}
 * (nginx's lingering close), before the connection is closed.
 */
import { randomBytes } from 'node:crypto';
import { threadId } from 'node:worker_threads';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { Refusal } from '../submission/refusals.js';
import { errorBody, STATUS_LINE } from './errors.js';
import { refusalHeaders } from './rate-headers.js';
import type { RequestObserver } from '../telemetry/request-facts.js';

export interface Reply {
  status: number;
  /** Serialised as JSON, unless `contentType` is set: then it is a string written as is. */
  body: unknown;
  headers?: Record<string, string>;
  contentType?: string;
  /** For a refusal rendered in the body (JSON-RPC errors): the cause, for the log line. */
  reason?: string;
}

/**
 * Request ids made here: a random prefix per process and thread, then a counter — unique, cheap,
 * and nothing a client can predict across restarts.
 */
const ID_PREFIX = `${randomBytes(4).toString('hex')}-${threadId}-`;
let idCounter = 0;

/**
 * After an oversize body was refused, the rest of it is read and discarded for at most this long
 * after the response was written, and at most {@link LINGER_BYTES}; past either bound the
 * connection is dropped (nginx: `lingering_time`).
 */
export const LINGER_MS = 10_000;
/**
 * Bytes of a refused body discarded at most, counted from when the response was written, before
 * the connection is dropped. Counted from the response, not from the refusal: an answer that
 * waits on the key check can follow tens of megabytes on loopback, and a client cut off the
 * moment the answer leaves never reads it (its next write fails and Node drops the socket with
 * the 413 unread in its buffer: seen once in CI, on a loaded machine).
 */
export const LINGER_BYTES = 64 * 1024 * 1024;

/**
 * `Keep-Alive: timeout=N` on every response that keeps the connection: uWS closes an idle
 * keep-alive connection after 10 s on a 4 s timer tick, measured 8.1–12.0 s after the last
 * response (16 connections). A pooled client told 5 s (as Node's own http server tells it) stops
 * reusing a socket well before the server drops it, instead of sending a request into a socket
 * that is being closed.
 */
export const KEEP_ALIVE_HINT = 'timeout=5';

/**
 * Why a request's framing is unsafe to serve, or null. A request whose body length two parsers
 * could read differently is how requests are smuggled past a proxy: uWS takes the first of two
 * `Content-Length` lines (a proxy may take the last) and treats any `Transfer-Encoding` as
 * chunked (a proxy may not). So a repeated `Content-Length` or `Transfer-Encoding`, or a
 * `Transfer-Encoding` other than exactly `chunked`, is refused with 400 and the connection
 * closed (uWS itself refuses `Content-Length` with `Transfer-Encoding`, and a malformed length).
 *
 * Called only for requests that declare a body. Cost: one `forEach` over the header lines, about
 * 1.5 µs for the 10 lines a fetch() POST carries (`bench/http-edges.ts`).
 */
export function framingError(req: HttpRequest, transferEncoding: string): string | null {
  let lengths = 0;
  let encodings = 0;
  req.forEach((key) => {
    if (key === 'content-length') lengths++;
    else if (key === 'transfer-encoding') encodings++;
  });
  if (lengths > 1) return `Content-Length is given ${lengths} times; send it once`;
  if (encodings > 1) return `Transfer-Encoding is given ${encodings} times; send it once`;
  if (encodings === 1 && transferEncoding.trim().toLowerCase() !== 'chunked') {
    return `Transfer-Encoding must be chunked, got ${JSON.stringify(transferEncoding.slice(0, 64))}`;
  }
  return null;
}

/**
 * The paths existing sender clients post JSON-RPC to (Jito's block-engine layout, Helius Sender):
 * there the API key is also read where those clients put their credential (docs/decisions.md,
 * "Client compatibility").
 */
export const DROP_IN_ROUTES: ReadonlySet<string> = new Set(['/api/v1/transactions', '/api/v1/bundles', '/fast']);

/** 1–128 visible ASCII characters (a caller's `x-request-id` is kept only then). */
function visibleAscii(s: string): boolean {
  if (s.length === 0 || s.length > 128) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

export class Ctx {
  aborted = false;
  private done = false;
  readonly authorization: string;
  readonly contentType: string;
  readonly contentLength: string;
  /** `Upgrade` and `Sec-WebSocket-Key`: read only by the WebSocket route's fallback (`/v1/stream`). */
  readonly upgrade: string;
  readonly webSocketKey: string;
  /** `x-jito-auth`: read only on the drop-in paths, where Jito's clients put their credential. */
  readonly jitoAuth: string;
  /** Why the body's framing is unsafe (repeated or conflicting headers), or null; `route` refuses it. */
  readonly framingError: string | null;
  readonly params: string[];
  /** Raw query string (without '?'). */
  readonly query: string;
  readonly url: string;
  readonly method: string;
  /** The `Host` header, on `/health` and `/metrics` only ('' elsewhere). */
  readonly host: string;
  /** process.hrtime.bigint() at arrival. */
  readonly receivedAt = process.hrtime.bigint();
  private readonly clientRequestId: string;
  private madeRequestId: string | null = null;
  /** The authenticated account, once known (for the log line; never the key). */
  accountId: string | null = null;
  /** The transaction's signature, once verified (for the log line; never the bytes). */
  signature: string | null = null;
  /**
   * The client's address, read as the response is written and only for a request without an
   * account: the log bounds the lines of each such client (`request-log.ts`).
   */
  peer = 'unknown';
  private bodyPromise: Promise<Buffer> | undefined;
  private queryParams: URLSearchParams | undefined;
  /** The body went over its limit: the rest is read and discarded, never kept. */
  private oversize = false;
  /** The body's last chunk has arrived. */
  private bodyEnded = false;
  /** Bytes discarded since the response was written (before it: since the body went over its limit). */
  private discarded = 0;
  /** Set while the response is written and the refused body is being drained. */
  private linger: NodeJS.Timeout | null = null;

  /**
   * @param route the route pattern (`/v1/status/:signature`): the metrics label, bounded, unlike the URL
   * @param observer told when the response is written
   */
  constructor(
    readonly res: HttpResponse,
    req: HttpRequest,
    paramCount: number,
    readonly route: string,
    private readonly observer: RequestObserver,
  ) {
    const id = req.getHeader('x-request-id');
    this.clientRequestId = visibleAscii(id) ? id : '';
    this.authorization = req.getHeader('authorization');
    this.contentType = req.getHeader('content-type');
    this.contentLength = req.getHeader('content-length');
    const transferEncoding = req.getHeader('transfer-encoding');
    // Fast path: no body declared, no framing to check.
    this.framingError = this.contentLength === '' && transferEncoding === '' ? null : framingError(req, transferEncoding);
    // Two header lookups only on the one route that reads them (`/v1/stream` without an upgrade).
    this.upgrade = route === '/v1/stream' ? req.getHeader('upgrade') : '';
    this.webSocketKey = route === '/v1/stream' ? req.getHeader('sec-websocket-key') : '';
    this.jitoAuth = DROP_IN_ROUTES.has(route) ? req.getHeader('x-jito-auth') : '';
    // Only where it is checked: what is served open on loopback (`isLoopbackHostHeader`).
    this.host = route === '/health' || route === '/metrics' ? req.getHeader('host') : '';
    this.query = req.getQuery() ?? '';
    this.url = req.getUrl();
    this.method = req.getCaseSensitiveMethod();
    this.params = paramCount === 0 ? [] : paramCount === 1 ? [req.getParameter(0) ?? ''] : Array.from({ length: paramCount }, (_, i) => req.getParameter(i) ?? '');
    res.onAborted(() => {
      this.aborted = true;
      if (this.linger !== null) clearTimeout(this.linger);
    });
  }

  /** Echoed in the `x-request-id` response header and in the request's log line. */
  get requestId(): string {
    if (this.clientRequestId !== '') return this.clientRequestId;
    return (this.madeRequestId ??= ID_PREFIX + (idCounter++).toString(36));
  }

  /** A query parameter, URL-decoded ('' if present and empty, undefined if absent). */
  queryParam(name: string): string | undefined {
    if (!this.query) return undefined;
    return (this.queryParams ??= new URLSearchParams(this.query)).get(name) ?? undefined;
  }

  /**
   * Start reading the body, refusing more than `limit` bytes. Must be called synchronously in
   * the route handler (uWS delivers data only to a handler attached in that tick).
   */
  startBody(limit: number): void {
    const declared = this.contentLength === '' ? NaN : Number(this.contentLength);
    this.bodyPromise = new Promise<Buffer>((resolve, reject) => {
      if (declared > limit) {
        // Refuse before keeping a byte; what arrives is discarded (see `drain`).
        this.oversize = true;
        reject(new Refusal('REQUEST_TOO_LARGE', `body of ${declared} bytes exceeds the ${limit}-byte limit`));
      }
      let chunks: Buffer[] | null = null;
      let size = 0;
      this.res.onData((chunk, isLast) => {
        if (this.oversize) return this.drain(chunk.byteLength, isLast);
        size += chunk.byteLength;
        if (size > limit) {
          this.oversize = true;
          chunks = null;
          reject(new Refusal('REQUEST_TOO_LARGE', `body exceeds the ${limit}-byte limit`));
          return this.drain(0, isLast);
        }
        // The ArrayBuffer is only valid during this callback: copy it.
        const copy = Buffer.from(chunk.slice(0));
        if (isLast && chunks === null) return resolve(copy); // fast path: the whole body in one chunk
        (chunks ??= []).push(copy);
        if (isLast) resolve(Buffer.concat(chunks, size));
      });
    });
    // A rejection nobody awaited yet (e.g. 401 answered first) must not crash the process.
    this.bodyPromise.catch(() => {});
  }

  body(): Promise<Buffer> {
    if (!this.bodyPromise) throw new Error('startBody() was not called');
    return this.bodyPromise;
  }

  /** Write the one response (no-op if the client went away or a response was written). */
  reply(r: Reply): void {
    const text = r.contentType === undefined ? JSON.stringify(r.body) : (r.body as string);
    this.write(r.status, text, r.headers, r.contentType ?? 'application/json', r.reason ?? null);
  }

  replyError(e: Refusal): void {
    this.write(e.status, errorBody(e.status, e.message, e.reason), refusalHeaders(e), 'application/json', e.reason);
  }

  private write(status: number, text: string, headers: Record<string, string> | undefined, contentType: string, reason: string | null): void {
    if (this.done) return;
    this.done = true;
    if (this.accountId === null && !this.aborted) this.peer = Buffer.from(this.res.getRemoteAddressAsText()).toString();
    if (this.framingError !== null) {
      // Bad framing: the bytes after this request cannot be trusted (they may be a smuggled
      // request). Answered on the next turn, not now: uWS serves a request pipelined behind a
      // response ended in its handler, even one ended with `end(…, true)` (measured), but it
      // drops the connection when a request arrives while the previous response is pending. So
      // whatever follows in the same read only ends the connection; a client that sent nothing
      // more gets the 400, and then the connection is closed ("Connection: close").
      setImmediate(() => {
        if (this.aborted) return;
        this.res.cork(() => {
          this.res.writeStatus(STATUS_LINE[status] ?? String(status));
          this.res.writeHeader('content-type', contentType);
          this.res.writeHeader('x-request-id', this.requestId);
          if (headers !== undefined) for (const k in headers) this.res.writeHeader(k, headers[k]!);
          this.res.end(text, true);
        });
      });
    } else if (!this.aborted) {
      this.res.cork(() => {
        this.res.writeStatus(STATUS_LINE[status] ?? String(status));
        this.res.writeHeader('content-type', contentType);
        this.res.writeHeader('x-request-id', this.requestId);
        if (headers !== undefined) for (const k in headers) this.res.writeHeader(k, headers[k]!);
        if (!this.oversize) {
          this.res.writeHeader('Keep-Alive', KEEP_ALIVE_HINT); // fast path
          this.res.end(text);
        } else if (this.bodyEnded) {
          this.res.end(text, true); // the whole refused body was read: nothing left to reset
        } else {
          // Answer now (a client that reads while it sends sees the status at once), then drain.
          // uWS can only close a connection after a response by `end(…, true)`, which would reset
          // it now, and a response can no longer be touched after `end`: so the body goes out
          // as one chunk (chunked encoding), and `endLinger` writes the last chunk once the
          // refused body has been read to its end.
          this.res.writeHeader('Connection', 'close');
          this.res.write(text);
          this.discarded = 0;
          this.linger = setTimeout(() => this.endLinger(true), LINGER_MS);
        }
      });
    }
    // Counted and logged even when the client went away: the work was done.
    this.observer.finished(this, status, reason);
  }

  /** A chunk of a refused body: discarded; ends the lingering close at its end or past the bound. */
  private drain(bytes: number, isLast: boolean): void {
    this.discarded += bytes;
    if (isLast) this.bodyEnded = true;
    if (this.linger === null) return; // not answered yet: `write` decides
    if (isLast) this.endLinger(false);
    else if (this.discarded > LINGER_BYTES) this.endLinger(true);
  }

  /**
   * End a lingering close. `cut`: a bound was reached before the body ended, so the connection
   * is dropped (the client has the status and the body, without the final empty chunk).
   * Otherwise the response is completed; the client closes the connection as it was told
   * (`Connection: close`), or uWS's idle timeout does.
   */
  private endLinger(cut: boolean): void {
    if (this.linger === null) return;
    clearTimeout(this.linger);
    this.linger = null;
    if (this.aborted) return;
    this.aborted = true; // nothing more may be written
    if (cut) this.res.close();
    else this.res.cork(() => this.res.end());
  }
}

/** True for `application/json`, with or without parameters such as charset. */
export function isJson(contentType: string): boolean {
  if (contentType === 'application/json') return true; // fast path
  const t = contentType.split(';', 1)[0]!.trim().toLowerCase();
  return t === 'application/json';
}

/** 415 unless the request says its body is JSON. */
export function requireJson(ctx: Ctx): void {
  if (!isJson(ctx.contentType)) {
    throw new Refusal(
      'REQUEST_MEDIA_TYPE',
      ctx.contentType ? `Content-Type must be application/json, got ${ctx.contentType}` : 'Content-Type: application/json is required',
    );
  }
}

/** Parse a JSON body; a clear 400 (with `code`) otherwise. */
export function parseJson(body: Buffer, code: 'TX_INVALID' | 'REQUEST_INVALID'): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (e) {
    throw new Refusal(code, `body is not valid JSON: ${(e as Error).message}`);
  }
}

/**
 * uWebSockets.js request plumbing: capture what a handler needs while `req` is valid (it is
 * only valid synchronously), read the body with a hard size limit *while it streams*, and
 * write exactly one response, never to an aborted socket.
 *
 * Fast path: a request allocates this object, one abort closure and (for a body) one promise;
 * no regex, no UUID (a request id is made from a per-thread counter, only when the client sent
 * none), and the query string is parsed only by the routes that read it.
 */
import { randomBytes } from 'node:crypto';
import { threadId } from 'node:worker_threads';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { Refusal } from '../submission/refusals.js';
import { errorBody, STATUS_LINE } from './errors.js';

export interface Reply {
  status: number;
  /** Serialised as JSON, unless `contentType` is set: then it is a string written as is. */
  body: unknown;
  headers?: Record<string, string>;
  contentType?: string;
  /** For a refusal rendered in the body (JSON-RPC errors): the cause, for the log line. */
  reason?: string;
}

/** Told once per request, after its response is written (metrics, the request log line). */
export interface RequestObserver {
  finished(ctx: Ctx, status: number, reason: string | null): void;
}

/**
 * Request ids made here: a random prefix per process and thread, then a counter — unique, cheap,
 * and nothing a client can predict across restarts.
 */
const ID_PREFIX = `${randomBytes(4).toString('hex')}-${threadId}-`;
let idCounter = 0;

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
  readonly params: string[];
  /** Raw query string (without '?'). */
  readonly query: string;
  readonly url: string;
  readonly method: string;
  /** process.hrtime.bigint() at arrival. */
  readonly receivedAt = process.hrtime.bigint();
  private readonly clientRequestId: string;
  private madeRequestId: string | null = null;
  /** The authenticated account, once known (for the log line; never the key). */
  accountId: string | null = null;
  /** The transaction's signature, once verified (for the log line; never the bytes). */
  signature: string | null = null;
  private bodyPromise: Promise<Buffer> | undefined;
  private queryParams: URLSearchParams | undefined;

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
    this.query = req.getQuery() ?? '';
    this.url = req.getUrl();
    this.method = req.getCaseSensitiveMethod();
    this.params = paramCount === 0 ? [] : paramCount === 1 ? [req.getParameter(0) ?? ''] : Array.from({ length: paramCount }, (_, i) => req.getParameter(i) ?? '');
    res.onAborted(() => {
      this.aborted = true;
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
        // Refuse before reading a byte.
        reject(new Refusal('REQUEST_TOO_LARGE', `body of ${declared} bytes exceeds the ${limit}-byte limit`));
        return;
      }
      let chunks: Buffer[] | null = null;
      let size = 0;
      let over = false;
      this.res.onData((chunk, isLast) => {
        if (over) return;
        size += chunk.byteLength;
        if (size > limit) {
          over = true;
          reject(new Refusal('REQUEST_TOO_LARGE', `body exceeds the ${limit}-byte limit`));
          return;
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
    this.write(e.status, errorBody(e.status, e.message, e.reason), e.headers, 'application/json', e.reason);
  }

  private write(status: number, text: string, headers: Record<string, string> | undefined, contentType: string, reason: string | null): void {
    if (this.done) return;
    this.done = true;
    if (!this.aborted) {
      // After refusing an oversize upload, do not keep reading it: close the connection.
      const close = status === 413;
      this.res.cork(() => {
        this.res.writeStatus(STATUS_LINE[status] ?? String(status));
        this.res.writeHeader('content-type', contentType);
        this.res.writeHeader('x-request-id', this.requestId);
        if (headers !== undefined) for (const k in headers) this.res.writeHeader(k, headers[k]!);
        this.res.end(text, close);
      });
    }
    // Counted and logged even when the client went away: the work was done.
    this.observer.finished(this, status, reason);
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

/**
 * uWebSockets.js request plumbing: capture what a handler needs while `req` is valid (it is
 * only valid synchronously), read the body with a hard size limit *while it streams*, and
 * write exactly one response, never to an aborted socket.
 */
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { ApiError, errorBody, MSG, STATUS_LINE } from './errors.js';

export interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
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
  private bodyPromise: Promise<Buffer> | undefined;

  constructor(
    readonly res: HttpResponse,
    req: HttpRequest,
    paramCount: number,
  ) {
    this.authorization = req.getHeader('authorization');
    this.contentType = req.getHeader('content-type');
    this.contentLength = req.getHeader('content-length');
    this.query = req.getQuery() ?? '';
    this.url = req.getUrl();
    this.method = req.getCaseSensitiveMethod();
    this.params = Array.from({ length: paramCount }, (_, i) => req.getParameter(i) ?? '');
    res.onAborted(() => {
      this.aborted = true;
    });
  }

  /** A query parameter, URL-decoded ('' if present and empty, undefined if absent). */
  queryParam(name: string): string | undefined {
    if (!this.query) return undefined;
    return new URLSearchParams(this.query).get(name) ?? undefined;
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
        reject(new ApiError(413, MSG.payloadTooLarge, `body of ${declared} bytes exceeds the ${limit}-byte limit`));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      let over = false;
      this.res.onData((chunk, isLast) => {
        if (over) return;
        size += chunk.byteLength;
        if (size > limit) {
          over = true;
          reject(new ApiError(413, MSG.payloadTooLarge, `body exceeds the ${limit}-byte limit`));
          return;
        }
        // The ArrayBuffer is only valid during this callback: copy it.
        chunks.push(Buffer.from(chunk.slice(0)));
        if (isLast) resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
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
    this.write(r.status, JSON.stringify(r.body), r.headers ?? {}, false);
  }

  replyError(e: ApiError): void {
    // After refusing an oversize upload, do not keep reading it.
    this.write(e.status, errorBody(e.status, e.message, e.reason), e.headers, e.status === 413);
  }

  private write(status: number, text: string, headers: Record<string, string>, close: boolean): void {
    if (this.aborted || this.done) return;
    this.done = true;
    this.res.cork(() => {
      this.res.writeStatus(STATUS_LINE[status] ?? String(status));
      this.res.writeHeader('content-type', 'application/json');
      for (const [k, v] of Object.entries(headers)) this.res.writeHeader(k, v);
      this.res.end(text, close);
    });
  }
}

/** True for `application/json`, with or without parameters such as charset. */
export function isJson(contentType: string): boolean {
  const t = contentType.split(';', 1)[0]!.trim().toLowerCase();
  return t === 'application/json';
}

/** Parse a JSON body; a clear 400 otherwise. */
export function parseJson(body: Buffer, message: string): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (e) {
    throw new ApiError(400, message, `body is not valid JSON: ${(e as Error).message}`);
  }
}

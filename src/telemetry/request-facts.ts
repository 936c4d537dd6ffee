/**
 * What telemetry reads of a request. The HTTP layer's request context (`Ctx` in
 * `src/http/request.ts`) has these fields; telemetry names only them, so it never imports the
 * HTTP layer that uses it.
 */
export interface RequestFacts {
  /** The route pattern (`/v1/status/:signature`): the metrics label, bounded, unlike the URL. */
  readonly route: string;
  readonly method: string;
  readonly url: string;
  /** process.hrtime.bigint() at arrival. */
  readonly receivedAt: bigint;
  /** The request id the response carries (the client's, or one made for it). */
  readonly requestId: string;
  /** The authenticated account, once known (never the key). */
  readonly accountId: string | null;
  /** The transaction's signature, once verified. */
  readonly signature: string | null;
  /** The client's address, for a request without an account. */
  readonly peer: string;
}

/** Told once per request, after its response is written (metrics, the request log line). */
export interface RequestObserver {
  finished(req: RequestFacts, status: number, reason: string | null): void;
}

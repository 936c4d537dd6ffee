/**
 * HTTP error mapping: the one place status codes, messages and the error body are decided
 * (DECISIONS.md "Error body").
 */

export const STATUS_LINE: Record<number, string> = {
  200: '200 OK',
  204: '204 No Content',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  402: '402 Payment Required',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  413: '413 Payload Too Large',
  415: '415 Unsupported Media Type',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
};

/** The spec's messages (§4), one constant each. */
export const MSG = {
  invalidTransaction: 'Invalid transaction',
  invalidRequest: 'Invalid request',
  invalidSignature: 'Invalid signature',
  unauthorized: 'Unauthorized',
  tipRequired: 'Tip required',
  tipInsufficient: 'Tip insufficient',
  rateLimited: 'Rate limit exceeded',
  queryRateLimited: 'Query rate limit exceeded',
  notFound: 'Not found',
  deliveryFailed: 'Delivery failed',
  internal: 'Internal error',
  methodNotAllowed: 'Method not allowed',
  payloadTooLarge: 'Payload too large',
  unsupportedMediaType: 'Unsupported media type',
} as const;

/** An error that becomes an HTTP response. Thrown by handlers, rendered by `respondError`. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    message: string,
    readonly reason: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/**
 * The native core refused the transaction (`code`: `SIGNATURE_INVALID`, `MALFORMED`, …). A 400
 * `Invalid transaction` to the REST API; JSON-RPC tells signature failures apart (-32003).
 */
export class TransactionRefused extends ApiError {
  constructor(
    readonly code: string,
    detail: string,
  ) {
    super(400, MSG.invalidTransaction, `${code}: ${detail}`);
  }
}

/**
 * Preflight simulation failed. A 400 `Invalid transaction` to the REST API; JSON-RPC answers
 * -32002 with `simulation` (the node's result: `err`, `logs`, …) as `data`, as Agave does.
 */
export class PreflightFailed extends ApiError {
  constructor(readonly simulation: { err: unknown; logs: string[] | null }) {
    super(400, MSG.invalidTransaction, `preflight simulation failed: ${JSON.stringify(simulation.err)}${preflightDetail(simulation.logs)}`);
  }
}

/** The last log line that says what went wrong, if any, in parentheses. */
function preflightDetail(logs: string[] | null): string {
  const line = (logs ?? []).filter((l) => /failed|error|insufficient/i.test(l)).slice(-1)[0];
  return line ? ` (${line})` : '';
}

export function errorBody(status: number, message: string, reason: string): string {
  return JSON.stringify({ success: false, error: { code: status, message, reason } });
}

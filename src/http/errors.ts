/**
 * HTTP error mapping: the one place status codes, messages and the error body are decided
 * (DECISIONS.md "Error body").
 */

export const STATUS_LINE: Record<number, string> = {
  200: '200 OK',
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

export function errorBody(status: number, message: string, reason: string): string {
  return JSON.stringify({ success: false, error: { code: status, message, reason } });
}

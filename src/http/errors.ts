/**
 * HTTP rendering of refusals: status lines and the error body (docs/decisions.md, "Error body").
 * Which status and message a refusal gets is decided in `submission/refusals.ts`, not here.
 */
import type { ErrorBody } from '../client/wire.js';

export const STATUS_LINE: Record<number, string> = {
  200: '200 OK',
  302: '302 Found',
  204: '204 No Content',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  402: '402 Payment Required',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  413: '413 Payload Too Large',
  415: '415 Unsupported Media Type',
  426: '426 Upgrade Required',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
};

export function errorBody(status: number, message: string, reason: string): string {
  return JSON.stringify({ success: false, error: { code: status, message, reason } } satisfies ErrorBody);
}

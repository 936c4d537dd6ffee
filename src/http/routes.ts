/**
 * The routes table: every HTTP route the API serves, keyed by its OpenAPI `operationId`, with
 * its body limit and the refusals its handler can answer (codes of `submission/refusals.ts`).
 * `buildApp` (`api.ts`) attaches a handler to each entry (the compiler wants one for every entry),
 * and the OpenAPI document (`openapi.ts`) takes its paths, methods, error statuses and error
 * messages from here and from the refusal table, so a route's refusals are listed once.
 *
 * Not listed per route, as they can answer on any path: `ROUTE_NOT_FOUND` (no such route),
 * `REQUEST_METHOD` (405, a listed path with another method) and `REQUEST_FRAMING` (400, bad
 * framing headers); the document describes them once (components `NotFound`, `MethodNotAllowed`,
 * `BadFraming`).
 */
import type { RefusalCode } from '../submission/refusals.js';

export const SEND_BODY_LIMIT = 8 * 1024;
export const BATCH_BODY_LIMIT = 256 * 1024;

export interface RouteEntry {
  method: 'get' | 'post';
  /** uWS pattern (`:name` for a path parameter); doubles as the metrics label. */
  pattern: string;
  /** Body size limit; null for routes without a body. */
  body: number | null;
  /**
   * How refusals are rendered: `rest` as the error body `{success: false, error}`, `json-rpc` as a
   * JSON-RPC error object (only those refusing the whole request change the HTTP status).
   */
  dialect: 'rest' | 'json-rpc';
  /** Every refusal the handler can answer, in the order the document lists their messages. */
  refusals: readonly RefusalCode[];
}

const KEY = 'AUTH_UNAUTHORIZED';
/** What a route with a JSON body refuses before its handler reads it. */
const BODY = ['REQUEST_TOO_LARGE', 'REQUEST_MEDIA_TYPE'] as const;
/** A single JSON-RPC call refused as the whole request (HTTP 401, 413, 415, 429; `json-rpc.ts`). */
const RPC_WHOLE: readonly RefusalCode[] = [KEY, ...BODY, 'SEND_RATE_LIMITED', 'QUERY_RATE_LIMITED'];
/** The status and the trace of one of the account's transactions (spec §4.3). */
const BY_SIGNATURE: readonly RefusalCode[] = [KEY, 'STATUS_SIGNATURE_INVALID', 'STATUS_NOT_FOUND', 'QUERY_RATE_LIMITED', 'INTERNAL'];

const get = (pattern: string, refusals: readonly RefusalCode[] = []): RouteEntry => ({ method: 'get', pattern, body: null, dialect: 'rest', refusals });
const rpc = (pattern: string): RouteEntry => ({ method: 'post', pattern, body: BATCH_BODY_LIMIT, dialect: 'json-rpc', refusals: RPC_WHOLE });

/** Every route, in the order the document lists them. */
export const ROUTES = {
  send: {
    method: 'post',
    pattern: '/v1/send',
    body: SEND_BODY_LIMIT,
    dialect: 'rest',
    refusals: [
      'TX_INVALID',
      'TX_SIGNATURE',
      'TX_BLOCKHASH_EXPIRED',
      'TX_OPTIONS',
      'TX_PREFLIGHT',
      KEY,
      'TIP_REQUIRED',
      'TIP_INSUFFICIENT',
      ...BODY,
      'SEND_RATE_LIMITED',
      'DELIVERY_FAILED',
      'INTERNAL',
    ],
  },
  sendBatch: {
    method: 'post',
    pattern: '/v1/send/batch',
    body: BATCH_BODY_LIMIT,
    dialect: 'rest',
    refusals: ['REQUEST_INVALID', 'TX_OPTIONS', KEY, ...BODY, 'SEND_RATE_LIMITED', 'INTERNAL'],
  },
  status: get('/v1/status/:signature', BY_SIGNATURE),
  trace: get('/v1/status/:signature/trace', BY_SIGNATURE),
  transactions: get('/v1/transactions', ['REQUEST_INVALID', KEY, 'QUERY_RATE_LIMITED', 'INTERNAL']),
  account: get('/v1/account', [KEY, 'QUERY_RATE_LIMITED', 'INTERNAL']),
  analytics: get('/v1/analytics', ['REQUEST_INVALID', KEY, 'QUERY_RATE_LIMITED']),
  tipAddresses: get('/v1/tip-addresses'),
  tipFloor: get('/v1/tip-floor', [KEY]),
  jsonRpc: rpc('/'),
  rootToDashboard: get('/'),
  dashboardNoSlash: get('/dashboard'),
  dashboard: get('/dashboard/'),
  dashboardScript: get('/dashboard/app.js'),
  dashboardStyle: get('/dashboard/app.css'),
  jsonRpcV1: rpc('/v1/rpc'),
  jitoTransactions: rpc('/api/v1/transactions'),
  jitoBundles: rpc('/api/v1/bundles'),
  heliusSender: rpc('/fast'),
  /** The plain GET uWS did not upgrade; the WebSocket itself is `stream.ts`. */
  stream: get('/v1/stream', ['REQUEST_INVALID', 'STREAM_UPGRADE_REQUIRED']),
  health: get('/health'),
  ping: get('/ping'),
  metrics: get('/metrics', [KEY, 'QUERY_RATE_LIMITED']),
  openapi: get('/v1/openapi.json'),
} as const satisfies Record<string, RouteEntry>;

export type RouteId = keyof typeof ROUTES;

/** The OpenAPI path of a uWS pattern: `/v1/status/:signature` → `/v1/status/{signature}`. */
export function openApiPath(pattern: string): string {
  return pattern.replace(/:([A-Za-z_]\w*)/g, '{$1}');
}

/**
 * Every refusal the service can answer, as a stable code, and what each dialect makes of it:
 * the HTTP status and the spec's message (REST), and the JSON-RPC error code. A refusal is
 * thrown as a `Refusal` carrying its code and a precise reason; the front ends look the code up
 * here. Nothing anywhere matches on message text. When to come back (`retryAfterS`) and the
 * budget that refused it (`rate`) are numbers here: `src/http/rate-headers.ts` renders them as
 * `Retry-After` and `RateLimit-*`.
 *
 * Naming rule: `<SUBJECT>_<WHAT>`, upper snake case. JSON-RPC codes: the protocol's own
 * (-32600…-32603), Agave's where a Solana client expects them (-32002 preflight, -32003
 * signature), and Landfall's in the server-error range -32050…-32099.
 */
import { isTransactionErrorCode, TRANSACTION_ERRORS } from '../errors.js';

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
  upgradeRequired: 'Upgrade required',
} as const;

/** JSON-RPC error codes: the protocol's, Agave's, and Landfall's own (in the server-error range). */
export const RPC_CODES = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  /** Agave: `Transaction simulation failed: …`, `data` = the simulation result. */
  preflightFailure: -32002,
  /** Agave: `Transaction signature verification failure`. */
  signatureVerificationFailure: -32003,
  unauthorized: -32050,
  tipRequired: -32051,
  tipInsufficient: -32052,
  rateLimited: -32053,
  deliveryFailed: -32054,
} as const;

interface Dialects {
  /** HTTP status of the REST answer. */
  status: number;
  /** The spec's message for it. */
  message: string;
  /** JSON-RPC error code. */
  rpc: number;
}

/** The one table. */
export const REFUSALS = {
  /** Malformed, badly framed or otherwise invalid transaction (native codes other than signatures). */
  TX_INVALID: { status: 400, message: MSG.invalidTransaction, rpc: RPC_CODES.invalidParams },
  /** Signatures missing or not verifying. */
  TX_SIGNATURE: { status: 400, message: MSG.invalidTransaction, rpc: RPC_CODES.signatureVerificationFailure },
  /** The blockhash is known to be expired. */
  TX_BLOCKHASH_EXPIRED: { status: 400, message: MSG.invalidTransaction, rpc: RPC_CODES.invalidParams },
  /** A send option is of the wrong type or unknown. */
  TX_OPTIONS: { status: 400, message: MSG.invalidTransaction, rpc: RPC_CODES.invalidParams },
  /** Preflight simulation failed (`skip_preflight: false`). */
  TX_PREFLIGHT: { status: 400, message: MSG.invalidTransaction, rpc: RPC_CODES.preflightFailure },
  TIP_REQUIRED: { status: 402, message: MSG.tipRequired, rpc: RPC_CODES.tipRequired },
  TIP_INSUFFICIENT: { status: 402, message: MSG.tipInsufficient, rpc: RPC_CODES.tipInsufficient },
  SEND_RATE_LIMITED: { status: 429, message: MSG.rateLimited, rpc: RPC_CODES.rateLimited },
  QUERY_RATE_LIMITED: { status: 429, message: MSG.queryRateLimited, rpc: RPC_CODES.rateLimited },
  /** The first send reached no leader. */
  DELIVERY_FAILED: { status: 500, message: MSG.deliveryFailed, rpc: RPC_CODES.deliveryFailed },
  AUTH_UNAUTHORIZED: { status: 401, message: MSG.unauthorized, rpc: RPC_CODES.unauthorized },
  REQUEST_INVALID: { status: 400, message: MSG.invalidRequest, rpc: RPC_CODES.invalidRequest },
  REQUEST_TOO_LARGE: { status: 413, message: MSG.payloadTooLarge, rpc: RPC_CODES.invalidRequest },
  REQUEST_MEDIA_TYPE: { status: 415, message: MSG.unsupportedMediaType, rpc: RPC_CODES.invalidRequest },
  REQUEST_METHOD: { status: 405, message: MSG.methodNotAllowed, rpc: RPC_CODES.invalidRequest },
  /** Repeated or conflicting framing headers (Content-Length, Transfer-Encoding): answered, then the connection is closed. */
  REQUEST_FRAMING: { status: 400, message: MSG.invalidRequest, rpc: RPC_CODES.invalidRequest },
  /** A plain GET of the WebSocket endpoint `/v1/stream`, without `Upgrade: websocket`. */
  STREAM_UPGRADE_REQUIRED: { status: 426, message: MSG.upgradeRequired, rpc: RPC_CODES.invalidRequest },
  ROUTE_NOT_FOUND: { status: 404, message: MSG.notFound, rpc: RPC_CODES.methodNotFound },
  STATUS_SIGNATURE_INVALID: { status: 400, message: MSG.invalidSignature, rpc: RPC_CODES.invalidParams },
  STATUS_NOT_FOUND: { status: 404, message: MSG.notFound, rpc: RPC_CODES.invalidParams },
  INTERNAL: { status: 500, message: MSG.internal, rpc: RPC_CODES.internalError },
} as const satisfies Record<string, Dialects>;

export type RefusalCode = keyof typeof REFUSALS;

/** A budget as a take left it (`RateDecision`'s numbers): what `RateLimit-*` says. */
export interface RateLimitState {
  /** Requests per second of the budget (or the cap that refused). */
  limit: number;
  remaining: number;
  /** ms until the budget is full again. */
  resetMs: number;
}

export interface RefusalExtras {
  /** Seconds the client should wait before trying again (HTTP: `Retry-After`). */
  retryAfterS?: number;
  /** The budget that refused it (a 429; HTTP: `RateLimit-*`). */
  rate?: RateLimitState;
  /** HTTP headers of a refusal made by an HTTP route itself (`Allow`, `Upgrade`). */
  headers?: Record<string, string>;
  /** The chain node's simulation result, for a failed preflight (JSON-RPC `data`). */
  simulation?: { err: unknown; logs: string[] | null };
}

/** A refusal: thrown by the submission core and the routes, rendered by each front end. */
export class Refusal extends Error {
  override readonly name = 'Refusal';
  readonly status: number;
  readonly retryAfterS: number | undefined;
  readonly rate: RateLimitState | undefined;
  readonly headers: Record<string, string>;
  readonly simulation: RefusalExtras['simulation'];
  constructor(
    readonly code: RefusalCode,
    /** Specific, human-readable cause (never a key, never transaction bytes). */
    readonly reason: string,
    extras: RefusalExtras = {},
  ) {
    super(REFUSALS[code].message);
    this.status = REFUSALS[code].status;
    this.retryAfterS = extras.retryAfterS;
    this.rate = extras.rate;
    this.headers = extras.headers ?? {};
    this.simulation = extras.simulation;
  }

  /** JSON-RPC error code of this refusal. */
  get rpcCode(): number {
    return REFUSALS[this.code].rpc;
  }
}

/**
 * The refusal of a transaction the native core rejected with `nativeCode`: a signature code
 * (`TRANSACTION_ERRORS`, the one list of the native codes) is what Agave reports as a signature
 * verification failure.
 */
export function invalidTransaction(nativeCode: string, detail: string): Refusal {
  const signature = isTransactionErrorCode(nativeCode) && TRANSACTION_ERRORS[nativeCode] === 'signature';
  return new Refusal(signature ? 'TX_SIGNATURE' : 'TX_INVALID', `${nativeCode}: ${detail}`);
}

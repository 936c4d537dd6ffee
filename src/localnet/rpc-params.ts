/**
 * JSON-RPC errors and parameter checks, shared by the HTTP methods and the WebSocket ones. Codes
 * and texts follow Agave (`jsonrpc-core` standard codes, `RpcCustomError` server codes); every bad
 * parameter becomes -32602 with a message naming it, never an exception out of a handler.
 */
import type { Commitment } from './ledger.js';
import { isBase58Of } from './transaction.js';

export class RpcError extends Error {
  override readonly name = 'RpcError';
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;
export const SEND_TRANSACTION_PREFLIGHT_FAILURE = -32002;
export const TRANSACTION_SIGNATURE_VERIFICATION_FAILURE = -32003;
export const UNSUPPORTED_TRANSACTION_VERSION = -32015;
export const MIN_CONTEXT_SLOT_NOT_REACHED = -32016;

export function invalidParams(message: string): RpcError {
  return new RpcError(INVALID_PARAMS, message);
}

/** Positional parameters: absent → [], an array of at most `max` → itself. */
export function positional(params: unknown, max: number): unknown[] {
  if (params === undefined || params === null) return [];
  if (!Array.isArray(params)) throw invalidParams('Invalid params: expected an array of parameters');
  if (params.length > max) {
    throw invalidParams(`Invalid params: expected at most ${max} parameter${max === 1 ? '' : 's'}, got ${params.length}`);
  }
  return params;
}

/** The configuration object at `params[i]` (absent or null → {}). */
export function config(params: unknown[], i: number): Record<string, unknown> {
  const v = params[i];
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw invalidParams(`Invalid params: parameter ${i + 1} must be a configuration object`);
  return v as Record<string, unknown>;
}

export function pubkey(v: unknown): string {
  if (typeof v !== 'string') throw invalidParams('Invalid params: expected a base58 public key string');
  if (!isBase58Of(v, 32)) throw invalidParams(`Invalid param: ${v.length > 44 ? 'WrongSize' : 'Invalid'}`);
  return v;
}

export function signature(v: unknown): string {
  if (typeof v !== 'string') throw invalidParams('Invalid params: expected a base58 signature string');
  if (!isBase58Of(v, 64)) throw invalidParams(`Invalid param: ${v.length > 88 ? 'WrongSize' : 'Invalid'}`);
  return v;
}

/** A u64 parameter (exact as a JS number: below 2^53). */
export function u64(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw invalidParams(`Invalid params: ${what} must be a non-negative integer (got ${JSON.stringify(v)})`);
  }
  return v;
}

export function bool(c: Record<string, unknown>, key: string, fallback: boolean): boolean {
  const v = c[key];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'boolean') throw invalidParams(`Invalid params: ${key} must be true or false`);
  return v;
}

/** One of `allowed` at `c[key]`, else `fallback`. */
export function oneOf<T extends string>(c: Record<string, unknown>, key: string, allowed: readonly T[], fallback: T): T {
  const v = c[key];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) {
    throw invalidParams(`Invalid params: unknown variant \`${String(v)}\`, expected one of ${allowed.map((a) => `\`${a}\``).join(', ')}`);
  }
  return v as T;
}

const COMMITMENTS = ['processed', 'confirmed', 'finalized'] as const;

/** `commitment` of a config (the RPC default is `finalized`). */
export function commitment(c: Record<string, unknown>, fallback: Commitment = 'finalized'): Commitment {
  return oneOf(c, 'commitment', COMMITMENTS, fallback);
}

/** Enforce `minContextSlot`: the answering bank must have reached it. */
export function checkMinContextSlot(c: Record<string, unknown>, contextSlot: number): void {
  if (c.minContextSlot === undefined || c.minContextSlot === null) return;
  const min = u64(c.minContextSlot, 'minContextSlot');
  if (contextSlot < min) {
    throw new RpcError(MIN_CONTEXT_SLOT_NOT_REACHED, 'Minimum context slot has not been reached', { contextSlot });
  }
}

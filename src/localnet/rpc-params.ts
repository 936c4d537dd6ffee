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
export const UNSUPPORTED_TRANSACTION_VERSION = -32015;
export const MIN_CONTEXT_SLOT_NOT_REACHED = -32016;

export function invalidParams(message: string): RpcError {
  return new RpcError(INVALID_PARAMS, message);
}

/**
 * How serde names a JSON value it did not expect (`invalid type: integer `5`, expected a
 * string`): Agave's parameter errors are serde's messages.
 */
function unexpected(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'boolean') return `boolean \`${v}\``;
  if (typeof v === 'number') return Number.isInteger(v) ? `integer \`${v}\`` : `floating point \`${v}\``;
  if (typeof v === 'string') return `string ${JSON.stringify(v)}`;
  return Array.isArray(v) ? 'sequence' : 'map';
}

/** serde's "invalid type" error as Agave's RPC returns it. */
export function invalidType(v: unknown, expected: string): RpcError {
  return invalidParams(`Invalid params: invalid type: ${unexpected(v)}, expected ${expected}.`);
}

/**
 * Positional parameters: absent → [], an array of at most `max` → itself. `min` is the number
 * of required ones: fewer is refused as Agave's RPC refuses it — jsonrpc-derive's count check
 * for a method with optional parameters, serde's tuple error for one without.
 */
export function positional(params: unknown, max: number, min = 0): unknown[] {
  if (params !== undefined && params !== null && !Array.isArray(params)) throw invalidParams('`params` should be an array');
  const list = (params ?? []) as unknown[];
  if (list.length > max) {
    throw invalidParams(`Invalid params: expected at most ${max} parameter${max === 1 ? '' : 's'}, got ${list.length}`);
  }
  if (list.length < min) {
    if (min < max) throw invalidParams(`\`params\` should have at least ${min} argument(s)`);
    throw invalidParams(
      params === undefined || params === null
        ? `Invalid params: invalid type: null, expected a tuple of size ${max}.`
        : `Invalid params: invalid length ${list.length}, expected a tuple of size ${max}.`,
    );
  }
  return list;
}

/** The configuration object at `params[i]` (absent or null → {}). */
export function config(params: unknown[], i: number): Record<string, unknown> {
  const v = params[i];
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw invalidType(v, 'struct config');
  return v as Record<string, unknown>;
}

/**
 * A base58 value of `length` bytes, as `Pubkey::from_str` / `Signature::from_str` /
 * `Hash::from_str` judge it: too long a text or a wrong decoded size is `WrongSize`, a
 * character outside the alphabet `Invalid`. Returns the error's name, or null when it is fine.
 */
function base58Problem(text: string, length: 32 | 64): 'WrongSize' | 'Invalid' | null {
  if (text.length > (length === 32 ? 44 : 88)) return 'WrongSize';
  if (!/^[1-9A-HJ-NP-Za-km-z]*$/.test(text)) return 'Invalid';
  return isBase58Of(text, length) ? null : 'WrongSize';
}

export function pubkey(v: unknown): string {
  if (typeof v !== 'string') throw invalidType(v, 'a string');
  const problem = base58Problem(v, 32);
  if (problem) throw invalidParams(`Invalid param: ${problem}`);
  return v;
}

export function signature(v: unknown): string {
  if (typeof v !== 'string') throw invalidType(v, 'a string');
  const problem = base58Problem(v, 64);
  if (problem) throw invalidParams(`Invalid param: ${problem}`);
  return v;
}

/** A blockhash parameter (`isBlockhashValid`): Agave's error is the bare `Hash::from_str` error name. */
export function blockhash(v: unknown): string {
  if (typeof v !== 'string') throw invalidType(v, 'a string');
  const problem = base58Problem(v, 32);
  if (problem) throw invalidParams(problem);
  return v;
}

/** An unsigned integer parameter (`rustType` as serde names it: u64, usize; exact as a JS number: below 2^53). */
export function u64(v: unknown, rustType: 'u64' | 'usize' | 'u8' = 'u64'): number {
  if (typeof v === 'number' && Number.isInteger(v) && v < 0) throw invalidParams(`Invalid params: invalid value: integer \`${v}\`, expected ${rustType}.`);
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw invalidType(v, rustType);
  return v;
}

export function bool(c: Record<string, unknown>, key: string, fallback: boolean): boolean {
  const v = c[key];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'boolean') throw invalidType(v, 'a boolean');
  return v;
}

/**
 * One of `allowed` at `c[key]`, else `fallback`. `variants` is the whole Rust enum, which serde
 * lists when the value is none of them; a variant the local cluster does not serve is refused
 * with `unsupported`'s message.
 */
export function oneOf<T extends string>(
  c: Record<string, unknown>,
  key: string,
  allowed: readonly T[],
  fallback: T,
  variants: readonly string[] = allowed,
  unsupported: (v: string) => string = (v) => `Invalid params: unsupported ${key}: ${v}`,
): T {
  const v = c[key];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'string') throw invalidType(v, `one of ${variants.map((a) => `\`${a}\``).join(', ')}`);
  if (!variants.includes(v)) {
    throw invalidParams(`Invalid params: unknown variant \`${v}\`, expected one of ${variants.map((a) => `\`${a}\``).join(', ')}.`);
  }
  if (!(allowed as readonly string[]).includes(v)) throw invalidParams(unsupported(v));
  return v as T;
}

const COMMITMENTS = ['processed', 'confirmed', 'finalized'] as const;

/**
 * `commitment` of a config (the RPC default is `finalized`). Agave flattens an optional
 * `CommitmentConfig` into each config, and serde turns a flattened `Option` that fails to
 * parse into `None`: an unknown commitment is the default, not an error.
 */
export function commitment(c: Record<string, unknown>, fallback: Commitment = 'finalized'): Commitment {
  const v = c.commitment;
  return typeof v === 'string' && (COMMITMENTS as readonly string[]).includes(v) ? (v as Commitment) : fallback;
}

/** A `CommitmentLevel` field that is not flattened (`preflightCommitment`): an unknown one is an error. */
export function commitmentLevel(c: Record<string, unknown>, key: string, fallback: Commitment): Commitment {
  return oneOf(c, key, COMMITMENTS, fallback);
}

/** Enforce `minContextSlot`: the answering bank must have reached it. */
export function checkMinContextSlot(c: Record<string, unknown>, contextSlot: number): void {
  if (c.minContextSlot === undefined || c.minContextSlot === null) return;
  const min = u64(c.minContextSlot);
  if (contextSlot < min) {
    throw new RpcError(MIN_CONTEXT_SLOT_NOT_REACHED, 'Minimum context slot has not been reached', { contextSlot });
  }
}

/**
 * Landfall's error codes: one table, one error type. HTTP mapping happens in one place
 * (`src/http/errors.ts` once the API exists), never in handlers.
 */

/**
 * The codes of the native transaction core's verdicts (`Code` in `native/src/error.rs`, the one
 * table of them), each with what it is about: `signature` (signatures missing or not verifying,
 * which Agave reports as a signature verification failure) or `transaction` (anything else about
 * the bytes). This is the only TypeScript list of them; `test/unit/native-codes.test.ts` fails
 * the moment it and the Rust table differ (a code added, renamed or removed on one side).
 */
export const TRANSACTION_ERRORS = {
  BASE64_INVALID: 'transaction',
  TOO_LARGE: 'transaction',
  MALFORMED: 'transaction',
  UNSUPPORTED_VERSION: 'transaction',
  SIGNATURE_COUNT_MISMATCH: 'signature',
  INVALID_HEADER: 'transaction',
  TOO_MANY_ACCOUNTS: 'transaction',
  INVALID_PROGRAM_INDEX: 'transaction',
  INVALID_ACCOUNT_INDEX: 'transaction',
  EMPTY_LOOKUP: 'transaction',
  UNSIGNED: 'signature',
  SIGNATURE_INVALID: 'signature',
} as const satisfies Record<string, 'transaction' | 'signature'>;

export type TransactionErrorCode = keyof typeof TRANSACTION_ERRORS;
export const TRANSACTION_ERROR_CODES = Object.keys(TRANSACTION_ERRORS) as readonly TransactionErrorCode[];

/**
 * Codes the native process-wide shared state throws (`overlay`, `accountSlot`, `usage` in
 * `src/native.ts`; the same Rust table): bugs of the caller, never a client's refusal.
 */
export const NATIVE_STATE_ERROR_CODES = [
  'OVERLAY_KEY_TOO_LARGE',
  'OVERLAY_VALUE_TOO_LARGE',
  'ACCOUNT_SLOTS_FULL',
  'USAGE_INDEX_OUT_OF_RANGE',
  'USAGE_INVALID_VALUE',
] as const;

/** Codes of the service itself (`BASE58_INVALID` is the native table's too: `base58Decode`). */
export const SERVICE_ERROR_CODES = ['BASE58_INVALID', 'CONFIG_INVALID', 'BUCKET_INVALID'] as const;
export type ServiceErrorCode = (typeof SERVICE_ERROR_CODES)[number];

export type LandfallErrorCode = TransactionErrorCode | ServiceErrorCode;

/** Context that makes an error precise: where in the bytes, which item. */
export interface ErrorContext {
  offset?: number;
  index?: number;
  [key: string]: unknown;
}

/** The one error type: a stable `code`, a human message, and structured context. */
export class LandfallError extends Error {
  override readonly name = 'LandfallError';
  constructor(
    readonly code: LandfallErrorCode,
    message: string,
    readonly context: ErrorContext = {},
  ) {
    super(message);
  }
}

export function isTransactionErrorCode(code: string): code is TransactionErrorCode {
  return Object.hasOwn(TRANSACTION_ERRORS, code);
}

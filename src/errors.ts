/**
 * Landfall's error codes: one table, one error type. HTTP mapping happens in one place
 * (`src/http/errors.ts` once the API exists), never in handlers.
 */

/** Codes produced by the native transaction core (`native/src/error.rs`). */
export const TRANSACTION_ERROR_CODES = [
  'BASE64_INVALID',
  'TOO_LARGE',
  'MALFORMED',
  'UNSUPPORTED_VERSION',
  'SIGNATURE_COUNT_MISMATCH',
  'INVALID_HEADER',
  'TOO_MANY_ACCOUNTS',
  'INVALID_PROGRAM_INDEX',
  'INVALID_ACCOUNT_INDEX',
  'EMPTY_LOOKUP',
  'UNSIGNED',
  'SIGNATURE_INVALID',
] as const;

export type TransactionErrorCode = (typeof TRANSACTION_ERROR_CODES)[number];

/** Codes of the service itself. */
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
  return (TRANSACTION_ERROR_CODES as readonly string[]).includes(code);
}

/**
 * LiteSVM's transaction errors in the two forms RPC clients see: the JSON value of `err`
 * (`UiTransactionError`: `"BlockhashNotFound"`, `{"InstructionError":[0,{"Custom":1}]}`,
 * `{"InsufficientFundsForRent":{"account_index":1}}`), and the text Agave's `Display` gives it,
 * which becomes the message of a failed preflight ("Transaction simulation failed: …").
 *
 * LiteSVM hands fieldless variants over as numbers in its own order (its `const enum`s, which
 * differ from the Rust declaration order), and the others as napi class instances; the tables
 * below are indexed by LiteSVM's numbers; the texts come from `chain/tx-error.ts` (Agave's).
 */

import { describeTransactionError } from '../chain/tx-error.js';

/** JSON of a transaction error, exactly as Agave's RPC serialises it. */
export type UiTransactionError = string | Record<string, unknown>;

/** `TransactionErrorFieldless` variant names, in LiteSVM's numbering. */
const TRANSACTION_ERRORS: readonly string[] = [
  'AccountInUse', 'AccountLoadedTwice', 'AccountNotFound', 'ProgramAccountNotFound',
  'InsufficientFundsForFee', 'InvalidAccountForFee', 'AlreadyProcessed', 'BlockhashNotFound',
  'CallChainTooDeep', 'MissingSignatureForFee', 'InvalidAccountIndex', 'SignatureFailure',
  'InvalidProgramForExecution', 'SanitizeFailure', 'ClusterMaintenance',
  'AccountBorrowOutstanding', 'WouldExceedMaxBlockCostLimit', 'UnsupportedVersion',
  'InvalidWritableAccount', 'WouldExceedMaxAccountCostLimit', 'WouldExceedAccountDataBlockLimit',
  'TooManyAccountLocks', 'AddressLookupTableNotFound', 'InvalidAddressLookupTableOwner',
  'InvalidAddressLookupTableData', 'InvalidAddressLookupTableIndex', 'InvalidRentPayingAccount',
  'WouldExceedMaxVoteCostLimit', 'WouldExceedAccountDataTotalLimit',
  'MaxLoadedAccountsDataSizeExceeded', 'ResanitizationNeeded',
  'InvalidLoadedAccountsDataSizeLimit', 'UnbalancedTransaction', 'ProgramCacheHitMaxLimit',
  'CommitCancelled',
];

/** `InstructionErrorFieldless` variant names, in LiteSVM's numbering. */
const INSTRUCTION_ERRORS: readonly string[] = [
  'GenericError', 'InvalidArgument', 'InvalidInstructionData', 'InvalidAccountData',
  'AccountDataTooSmall', 'InsufficientFunds', 'IncorrectProgramId', 'MissingRequiredSignature',
  'AccountAlreadyInitialized', 'UninitializedAccount', 'UnbalancedInstruction',
  'ModifiedProgramId', 'ExternalAccountLamportSpend', 'ExternalAccountDataModified',
  'ReadonlyLamportChange', 'ReadonlyDataModified', 'DuplicateAccountIndex', 'ExecutableModified',
  'RentEpochModified', 'NotEnoughAccountKeys', 'AccountDataSizeChanged', 'AccountNotExecutable',
  'AccountBorrowFailed', 'AccountBorrowOutstanding', 'DuplicateAccountOutOfSync', 'InvalidError',
  'ExecutableDataModified', 'ExecutableLamportChange', 'ExecutableAccountNotRentExempt',
  'UnsupportedProgramId', 'CallDepth', 'MissingAccount', 'ReentrancyNotAllowed',
  'MaxSeedLengthExceeded', 'InvalidSeeds', 'InvalidRealloc', 'ComputationalBudgetExceeded',
  'PrivilegeEscalation', 'ProgramEnvironmentSetupFailure', 'ProgramFailedToComplete',
  'ProgramFailedToCompile', 'Immutable', 'IncorrectAuthority', 'AccountNotRentExempt',
  'InvalidAccountOwner', 'ArithmeticOverflow', 'UnsupportedSysvar', 'IllegalOwner',
  'MaxAccountsDataAllocationsExceeded', 'MaxAccountsExceeded', 'MaxInstructionTraceLengthExceeded',
  'BuiltinProgramsMustConsumeComputeUnits', 'BorshIoError',
];

/** A transaction error in both forms. */
export interface TxError {
  json: UiTransactionError;
  message: string;
}

/** Both forms of an error given as its JSON: the text is Agave's, from the one shared table. */
function both(json: UiTransactionError): TxError {
  return { json, message: describeTransactionError(json) };
}

/** The fieldless transaction error `name` (e.g. `BlockhashNotFound`, `SignatureFailure`). */
export function namedError(name: string): TxError {
  if (!TRANSACTION_ERRORS.includes(name)) throw new RangeError(`no transaction error named ${name}`);
  return both(name);
}

function instructionErrorJson(e: unknown): unknown {
  if (typeof e === 'number') return INSTRUCTION_ERRORS[e] ?? `UnknownInstructionError${e}`;
  const o = e as { constructor: { name: string }; code?: number };
  if (o.constructor.name === 'InstructionErrorCustom') return { Custom: o.code ?? 0 };
  // InstructionErrorBorshIo: Agave's BorshIoError is a unit variant today.
  return 'BorshIoError';
}

/** Convert what LiteSVM's `FailedTransactionMetadata.err()` returns. */
export function fromLiteSvm(err: unknown): TxError {
  if (typeof err === 'number') return both(TRANSACTION_ERRORS[err] ?? `UnknownTransactionError${err}`);
  const o = err as { constructor: { name: string }; index?: number; accountIndex?: number; err?: () => unknown };
  switch (o.constructor.name) {
    case 'TransactionErrorInstructionError':
      return both({ InstructionError: [o.index, instructionErrorJson(o.err!())] });
    case 'TransactionErrorDuplicateInstruction':
      return both({ DuplicateInstruction: o.index });
    case 'TransactionErrorInsufficientFundsForRent':
      return both({ InsufficientFundsForRent: { account_index: o.accountIndex } });
    case 'TransactionErrorProgramExecutionTemporarilyRestricted':
      return both({ ProgramExecutionTemporarilyRestricted: { account_index: o.accountIndex } });
    default:
      return both(o.constructor.name);
  }
}

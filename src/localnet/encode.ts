/**
 * The JSON shapes Agave's RPC returns, built from the ledger's records: transactions and their
 * status meta (`getTransaction`), accounts (`getAccountInfo`), statuses, contexts — and the one
 * serializer that writes them, since one value (`rentEpoch` = u64::MAX) is not a JS number.
 */
import { base58Encode } from '../native.js';
import { SOLANA_CORE_VERSION } from './constants.js';
import type { AccountState, Commitment, Ledger, TxRecord } from './ledger.js';
import { isStaticWritable } from './transaction.js';

/** `context` of every RPC response that has one. */
export function context(slot: number): { slot: number; apiVersion: string } {
  return { slot, apiVersion: SOLANA_CORE_VERSION };
}

export type TransactionEncoding = 'json' | 'base64' | 'base58';

/** The `transaction` field of `getTransaction` in `encoding`. */
export function encodeTransaction(record: TxRecord, encoding: TransactionEncoding): unknown {
  if (encoding === 'base64') return [Buffer.from(record.decoded.wire).toString('base64'), 'base64'];
  if (encoding === 'base58') return [base58Encode(record.decoded.wire), 'base58'];
  const d = record.decoded;
  return {
    signatures: d.signatures,
    message: {
      accountKeys: d.staticKeys.map((k) => k.address),
      header: d.header,
      recentBlockhash: d.recentBlockhash,
      instructions: d.instructions.map((ix) => ({
        programIdIndex: ix.programIdIndex,
        accounts: ix.accounts,
        data: base58Encode(ix.data),
        // Top-level instructions run at stack height 1 (Agave records it since 2.x).
        stackHeight: 1,
      })),
      ...(d.version === 0 && {
        addressTableLookups: d.lookups.map((l) => ({
          accountKey: l.accountKey.address,
          writableIndexes: l.writableIndexes,
          readonlyIndexes: l.readonlyIndexes,
        })),
      }),
    },
  };
}

/** `meta` of `getTransaction` (`UiTransactionStatusMeta`). */
export function encodeMeta(record: TxRecord): Record<string, unknown> {
  const err = record.err?.json ?? null;
  return {
    err,
    status: err === null ? { Ok: null } : { Err: err },
    fee: record.fee,
    preBalances: record.preBalances,
    postBalances: record.postBalances,
    innerInstructions: record.innerInstructions,
    logMessages: record.logs,
    preTokenBalances: [],
    postTokenBalances: [],
    rewards: [],
    loadedAddresses: record.loaded,
    ...(record.returnData && { returnData: record.returnData }),
    computeUnitsConsumed: record.computeUnitsConsumed,
    costUnits: costUnits(record),
  };
}

const SIGNATURE_COST = 720;
const WRITE_LOCK_COST = 300;
const INSTRUCTION_DATA_BYTES_PER_UNIT = 4;
/** Cost of each 32 KiB page of loaded account data. */
const LOADED_DATA_PAGE_COST = 8;

/**
 * `meta.costUnits`: Agave's cost model of an executed transaction — signatures, write locks,
 * instruction data bytes, the compute units it used, and the loaded account data (taken here as
 * one 32 KiB page: the local ledger does not keep the loaded size; a value, not a shape).
 */
function costUnits(record: TxRecord): number {
  const d = record.decoded;
  const writable = d.staticKeys.filter((_, i) => isStaticWritable(d, i)).length + record.loaded.writable.length;
  const dataBytes = d.instructions.reduce((sum, ix) => sum + ix.data.length, 0);
  return (
    SIGNATURE_COST * d.header.numRequiredSignatures +
    WRITE_LOCK_COST * writable +
    Math.floor(dataBytes / INSTRUCTION_DATA_BYTES_PER_UNIT) +
    record.computeUnitsConsumed +
    LOADED_DATA_PAGE_COST
  );
}

/** One entry of `getSignatureStatuses`. */
export function encodeStatus(record: TxRecord, ledger: Ledger): Record<string, unknown> {
  const confirmationStatus: Commitment = ledger.confirmationStatus(record.slot);
  const err = record.err?.json ?? null;
  return {
    slot: record.slot,
    confirmations: confirmationStatus === 'finalized' ? null : ledger.slot - record.slot,
    err,
    status: err === null ? { Ok: null } : { Err: err },
    confirmationStatus,
  };
}

export type AccountEncoding = 'base58' | 'base64' | 'jsonParsed' | 'binary';

/** Base58 account data longer than this is refused (`MAX_BASE58_BYTES`). */
export const MAX_BASE58_BYTES = 128;

/**
 * `UiAccount` in `encoding`. `jsonParsed` falls back to base64, as Agave does for account data
 * it has no parser for; `binary` (the default when no encoding is given) is a bare base58 string.
 */
export function encodeAccount(a: AccountState, encoding: AccountEncoding, slice?: { offset: number; length: number }): Record<string, unknown> {
  const bytes = slice ? a.data.subarray(slice.offset, slice.offset + slice.length) : a.data;
  const data =
    encoding === 'binary'
      ? base58Encode(bytes)
      : encoding === 'base58'
        ? [base58Encode(bytes), 'base58']
        : [Buffer.from(bytes).toString('base64'), 'base64'];
  return {
    data,
    executable: a.executable,
    lamports: Number(a.lamports),
    owner: a.owner,
    rentEpoch: a.rentEpoch,
    space: a.data.length,
  };
}

/**
 * JSON text of an RPC value. bigints are written as exact JSON integers (the one in these
 * responses is `rentEpoch`, u64::MAX for every rent-exempt account, which a JS number cannot hold).
 */
export function toJson(value: unknown): string {
  const text = JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? `\u0000bigint:${v.toString()}` : v));
  // Only a string that is exactly NUL + "bigint:" + digits could be mistaken for the marker.
  return text.replace(/"\\u0000bigint:(\d+)"/g, '$1');
}

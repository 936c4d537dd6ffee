/**
 * Wire transactions as the cluster reads them: decoded once (with @solana/kit's codecs, the
 * shapes LiteSVM takes), with the views the ledger and the RPC need — signatures, blockhash,
 * which static keys are writable, and the keys loaded from address lookup tables.
 *
 * Framing is checked here only as far as decoding needs (size, version, exact length); the
 * sanitize rules and signature verification are LiteSVM's, as they are the validator runtime's.
 */
import {
  getCompiledTransactionMessageDecoder,
  getCompiledTransactionMessageEncoder,
  getTransactionDecoder,
  getTransactionEncoder,
  type Address,
  type Blockhash,
  type CompiledTransactionMessage,
  type CompiledTransactionMessageWithLifetime,
  type Transaction,
} from '@solana/kit';
import { base58Encode } from '../native.js';
import { PACKET_DATA_SIZE } from './constants.js';

export type CompiledMessage = (CompiledTransactionMessage & CompiledTransactionMessageWithLifetime) & {
  version: 'legacy' | 0;
};

export interface DecodedTransaction {
  wire: Uint8Array;
  /** The kit form LiteSVM executes. */
  tx: Transaction;
  message: CompiledMessage;
  /** base58 signatures in wire order (all-zero = unsigned, as base58 of 64 zero bytes). */
  signatures: string[];
  /** The first signature: the transaction's id. */
  signature: string;
  recentBlockhash: string;
  feePayer: string;
}

/** Why bytes are not a transaction; the text follows Agave's RPC wording. */
export class DecodeError extends Error {
  override readonly name = 'DecodeError';
}

const txDecoder = getTransactionDecoder();
const txEncoder = getTransactionEncoder();
const messageDecoder = getCompiledTransactionMessageDecoder();
const messageEncoder = getCompiledTransactionMessageEncoder();

const ZERO_SIGNATURE = new Uint8Array(64);

/** Decode wire bytes; throws `DecodeError` for anything that is not one legacy or v0 transaction. */
export function decodeTransaction(wire: Uint8Array): DecodedTransaction {
  if (wire.length > PACKET_DATA_SIZE) {
    throw new DecodeError(`transaction too large: ${wire.length} bytes (max: ${PACKET_DATA_SIZE} bytes)`);
  }
  let tx: Transaction;
  let message: CompiledTransactionMessage & CompiledTransactionMessageWithLifetime;
  try {
    const [decoded, end] = txDecoder.read(wire, 0);
    if (end !== wire.length) throw new Error(`${wire.length - end} trailing bytes`);
    tx = decoded;
    message = messageDecoder.decode(tx.messageBytes);
  } catch (e) {
    throw new DecodeError(`failed to deserialize transaction: ${(e as Error).message}`);
  }
  if (message.version !== 'legacy' && message.version !== 0) {
    throw new DecodeError(`unsupported transaction version ${String(message.version)}`);
  }
  if (message.staticAccounts.length === 0) throw new DecodeError('failed to deserialize transaction: no account keys');
  const signatures = Object.values(tx.signatures).map((s) => base58Encode(s ?? ZERO_SIGNATURE));
  if (signatures.length === 0) throw new DecodeError('failed to deserialize transaction: no signatures');
  return {
    wire,
    tx,
    message: message as CompiledMessage,
    signatures,
    signature: signatures[0]!,
    recentBlockhash: message.lifetimeToken,
    feePayer: message.staticAccounts[0]!,
  };
}

/** The same transaction with another recent blockhash (signatures kept, so no longer valid). */
export function withBlockhash(decoded: DecodedTransaction, blockhash: string): DecodedTransaction {
  const message = { ...decoded.message, lifetimeToken: blockhash as Blockhash };
  const messageBytes = messageEncoder.encode(message);
  const tx = { ...decoded.tx, messageBytes } as Transaction;
  return { ...decoded, tx, message, recentBlockhash: blockhash, wire: Uint8Array.from(txEncoder.encode(tx)) };
}

/** Is static key `i` writable, by the message header (before any runtime demotion)? */
export function isStaticWritable(message: CompiledMessage, i: number): boolean {
  const h = message.header;
  if (i < h.numSignerAccounts) return i < h.numSignerAccounts - h.numReadonlySignerAccounts;
  return i < message.staticAccounts.length - h.numReadonlyNonSignerAccounts;
}

/** Addresses a v0 message loads from lookup tables, in the order the runtime appends them. */
export interface LoadedAddresses {
  writable: string[];
  readonly: string[];
}

/** Bytes before the first address in an address lookup table account (`LOOKUP_TABLE_META_SIZE`). */
const LOOKUP_TABLE_META_SIZE = 56;

/**
 * Resolve a v0 message's lookups against `tableData` (an account's data by address). Returns null
 * when a table is missing or an index is out of range: the runtime then refuses the transaction
 * (`AddressLookupTableNotFound`, `InvalidAddressLookupTableIndex`), so there is nothing to show.
 */
export function loadAddresses(
  message: CompiledMessage,
  tableData: (address: Address) => Uint8Array | null,
): LoadedAddresses | null {
  const out: LoadedAddresses = { writable: [], readonly: [] };
  if (message.version !== 0) return out;
  for (const lookup of message.addressTableLookups ?? []) {
    const data = tableData(lookup.lookupTableAddress);
    if (!data) return null;
    const count = Math.floor((data.length - LOOKUP_TABLE_META_SIZE) / 32);
    const at = (i: number): string | null => {
      if (i >= count) return null;
      const o = LOOKUP_TABLE_META_SIZE + i * 32;
      return base58Encode(data.subarray(o, o + 32));
    };
    for (const [indexes, into] of [
      [lookup.writableIndexes, out.writable],
      [lookup.readonlyIndexes, out.readonly],
    ] as const) {
      for (const i of indexes) {
        const address = at(i);
        if (address === null) return null;
        into.push(address);
      }
    }
  }
  return out;
}

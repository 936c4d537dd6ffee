/**
 * Wire transactions as the cluster reads them: parsed once into the views the ledger and the RPC
 * need — signatures, header, keys (bytes for LiteSVM, base58 for JSON), blockhash, instructions,
 * lookups — without copying the bytes LiteSVM executes.
 *
 * Only framing is checked here (lengths, counts, version, nothing left over); the sanitize rules
 * and signature verification are LiteSVM's, as they are the validator runtime's.
 */
import { base58Decode, base58Encode } from '../native.js';
import { PACKET_DATA_SIZE } from './constants.js';

/** A public key as the runtime takes it (bytes) and as JSON shows it (base58). */
export interface Key {
  bytes: Uint8Array;
  address: string;
}

export interface MessageHeader {
  numRequiredSignatures: number;
  numReadonlySignedAccounts: number;
  numReadonlyUnsignedAccounts: number;
}

export interface CompiledInstruction {
  programIdIndex: number;
  accounts: number[];
  data: Uint8Array;
}

export interface AddressTableLookup {
  accountKey: Key;
  writableIndexes: number[];
  readonlyIndexes: number[];
}

export interface DecodedTransaction {
  wire: Uint8Array;
  version: 'legacy' | 0;
  /** base58 signatures in wire order (an all-zero one = not signed). */
  signatures: string[];
  /** The first signature: the transaction's id. */
  signature: string;
  header: MessageHeader;
  staticKeys: Key[];
  recentBlockhash: string;
  /** Where the blockhash sits in `wire` (to replace it for simulation). */
  blockhashOffset: number;
  instructions: CompiledInstruction[];
  lookups: AddressTableLookup[];
}

/** Why bytes are not a transaction; the text follows Agave's RPC wording. */
export class DecodeError extends Error {
  override readonly name = 'DecodeError';
  constructor(
    message: string,
    /** What Agave's RPC says of the same bytes, where it is known (the RPC answers with it). */
    readonly agaveMessage?: string,
  ) {
    super(message);
  }
}

const VERSION_PREFIX = 0x80;

/** A bounds-checked reader over the wire bytes. */
class Reader {
  o = 0;
  constructor(readonly b: Uint8Array) {}

  need(n: number, what: string): void {
    if (this.o + n > this.b.length) {
      throw new DecodeError(
        `failed to deserialize transaction: ${what} runs past the end (offset ${this.o})`,
        `failed to deserialize solana_transaction::versioned::VersionedTransaction: Attempting to read ${n} bytes`,
      );
    }
  }

  u8(what: string): number {
    this.need(1, what);
    return this.b[this.o++]!;
  }

  /** compact-u16 (shortvec): at most 3 bytes, minimal encoding. */
  compactU16(what: string): number {
    let value = 0;
    for (let i = 0; i < 3; i++) {
      const byte = this.u8(what);
      value |= (byte & 0x7f) << (7 * i);
      if ((byte & 0x80) === 0) {
        if (i > 0 && byte === 0) throw new DecodeError(`failed to deserialize transaction: ${what} is not minimally encoded`);
        if (value > 0xffff) break;
        return value;
      }
    }
    throw new DecodeError(`failed to deserialize transaction: ${what} is not a compact-u16`);
  }

  bytes(n: number, what: string): Uint8Array {
    this.need(n, what);
    const out = this.b.subarray(this.o, this.o + n);
    this.o += n;
    return out;
  }

  key(what: string): Key {
    const bytes = this.bytes(32, what);
    return { bytes, address: base58Encode(bytes) };
  }

  indexes(what: string): number[] {
    return Array.from(this.bytes(this.compactU16(what), what));
  }
}

/** Parse wire bytes; throws `DecodeError` for anything that is not one legacy or v0 transaction. */
export function decodeTransaction(wire: Uint8Array): DecodedTransaction {
  if (wire.length > PACKET_DATA_SIZE) {
    throw new DecodeError(`transaction too large: ${wire.length} bytes (max: ${PACKET_DATA_SIZE} bytes)`);
  }
  const r = new Reader(wire);
  const numSignatures = r.compactU16('signature count');
  if (numSignatures === 0) throw new DecodeError('failed to deserialize transaction: no signatures');
  const signatures: string[] = [];
  for (let i = 0; i < numSignatures; i++) signatures.push(base58Encode(r.bytes(64, 'signatures')));
  let version: 'legacy' | 0 = 'legacy';
  r.need(1, 'message');
  if (wire[r.o]! & VERSION_PREFIX) {
    const v = r.u8('version') & ~VERSION_PREFIX;
    if (v !== 0) throw new DecodeError(`unsupported transaction version ${v}`);
    version = 0;
  }
  const header = {
    numRequiredSignatures: r.u8('header'),
    numReadonlySignedAccounts: r.u8('header'),
    numReadonlyUnsignedAccounts: r.u8('header'),
  };
  const staticKeys: Key[] = [];
  const numKeys = r.compactU16('account key count');
  if (numKeys === 0) throw new DecodeError('failed to deserialize transaction: no account keys');
  for (let i = 0; i < numKeys; i++) staticKeys.push(r.key('account keys'));
  const blockhashOffset = r.o;
  const recentBlockhash = base58Encode(r.bytes(32, 'recent blockhash'));
  const instructions: CompiledInstruction[] = [];
  const numInstructions = r.compactU16('instruction count');
  for (let i = 0; i < numInstructions; i++) {
    const programIdIndex = r.u8('instruction program index');
    const accounts = r.indexes('instruction accounts');
    const data = r.bytes(r.compactU16('instruction data length'), 'instruction data');
    instructions.push({ programIdIndex, accounts, data });
  }
  const lookups: AddressTableLookup[] = [];
  if (version === 0) {
    const numLookups = r.compactU16('lookup count');
    for (let i = 0; i < numLookups; i++) {
      lookups.push({ accountKey: r.key('lookup table'), writableIndexes: r.indexes('lookup indexes'), readonlyIndexes: r.indexes('lookup indexes') });
    }
  }
  if (r.o !== wire.length) throw new DecodeError(`failed to deserialize transaction: ${wire.length - r.o} trailing bytes`);
  return { wire, version, signatures, signature: signatures[0]!, header, staticKeys, recentBlockhash, blockhashOffset, instructions, lookups };
}

/** The same transaction with another recent blockhash (signatures kept, so no longer valid). */
export function withBlockhash(decoded: DecodedTransaction, blockhash: Uint8Array): DecodedTransaction {
  const wire = Uint8Array.from(decoded.wire);
  wire.set(blockhash, decoded.blockhashOffset);
  return decodeTransaction(wire);
}

/** Is static key `i` writable, by the message header (before any runtime demotion)? */
export function isStaticWritable(decoded: DecodedTransaction, i: number): boolean {
  const h = decoded.header;
  if (i < h.numRequiredSignatures) return i < h.numRequiredSignatures - h.numReadonlySignedAccounts;
  return i < decoded.staticKeys.length - h.numReadonlyUnsignedAccounts;
}

/** Keys a v0 message loads from lookup tables, in the order the runtime appends them. */
export interface LoadedKeys {
  writable: Key[];
  readonly: Key[];
}

/** Bytes before the first address in an address lookup table account (`LOOKUP_TABLE_META_SIZE`). */
const LOOKUP_TABLE_META_SIZE = 56;

/**
 * Resolve a v0 message's lookups against `tableData` (a table account's data). Returns null when
 * a table is missing or an index is out of range: the runtime then refuses the transaction
 * (`AddressLookupTableNotFound`, `InvalidAddressLookupTableIndex`), so there is nothing to show.
 */
export function loadKeys(decoded: DecodedTransaction, tableData: (key: Key) => Uint8Array | null): LoadedKeys | null {
  const out: LoadedKeys = { writable: [], readonly: [] };
  for (const lookup of decoded.lookups) {
    const data = tableData(lookup.accountKey);
    if (!data) return null;
    const count = Math.floor((data.length - LOOKUP_TABLE_META_SIZE) / 32);
    for (const [indexes, into] of [
      [lookup.writableIndexes, out.writable],
      [lookup.readonlyIndexes, out.readonly],
    ] as const) {
      for (const i of indexes) {
        if (i >= count) return null;
        const bytes = data.subarray(LOOKUP_TABLE_META_SIZE + i * 32, LOOKUP_TABLE_META_SIZE + (i + 1) * 32);
        into.push({ bytes, address: base58Encode(bytes) });
      }
    }
  }
  return out;
}

/** Is `text` the base58 of exactly `length` bytes (32: a public key or hash, 64: a signature)? */
export function isBase58Of(text: string, length: 32 | 64): boolean {
  // Base58 of n bytes is at most ⌈n·log(256)/log(58)⌉ characters: 44 for 32 bytes, 88 for 64.
  if (text.length === 0 || text.length > (length === 32 ? 44 : 88)) return false;
  try {
    return base58Decode(text).length === length;
  } catch {
    return false;
  }
}

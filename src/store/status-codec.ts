/**
 * The on-disk form of a status record: a fixed binary value keyed by the signature's 64 raw
 * bytes. The base58 key (88 B) and the msgpack value (354 B) it replaces took ~1,260 B per record
 * on disk with their pending entry and time index; this takes ~120 B of value, so a record with
 * LMDB's node header and page slack stays under 300 B (see `bench/status.ts`).
 *
 * Value layout, version 1 (big-endian; offsets in bytes):
 *
 * | off | size | field                                                                |
 * |-----|------|----------------------------------------------------------------------|
 * |   0 |    1 | version (1)                                                          |
 * |   1 |    1 | flags: bits 0–1 status (0 sent, 1 confirmed, 2 failed), bit 2 expired, bit 3 durableNonce |
 * |   2 |    8 | submittedAt, u64 ms                                                  |
 * |  10 |    8 | confirmedAt, u64 ms, `NULL_U64` = null                               |
 * |  18 |    8 | latencyMs, f64, NaN = null                                           |
 * |  26 |    8 | slot, u64, `NULL_U64` = null                                         |
 * |  34 |    8 | submitSlot, u64                                                      |
 * |  42 |    8 | lastValidBlockHeight, u64, `NULL_U64` = null                         |
 * |  50 |    8 | tipLamports, u64 (the whole range)                                   |
 * |  58 |   32 | recentBlockhash, raw                                                 |
 * |  90 |  1+n | accountId, u8 length + UTF-8                                         |
 * |     |  1+m | keyName, u8 length + UTF-8                                           |
 * |     |    1 | resend tail, only with flags bit 4: bit 0 antiMev, bit 1 untilExpiry, bits 4–7 maxRetries |
 * |     |    2 | wire length, u16                                                     |
 * |     |    w | the transaction's wire bytes (≤ 1232)                                |
 * |     |    2 | error tail, only with flags bit 5: JSON length, u16                  |
 * |     |    e | a failed transaction's on-chain error, JSON (≤ `MAX_ERR_BYTES`)      |
 * |     |    8 | deadline tail, only with flags bit 6: deadlineSlot, u64 (the last 8 bytes) |
 *
 * The resend tail (flags bit 4) lets a restarted service send a pending transaction again
 * (`resendOf`, `Engine.resume`). It is written only while the record is pending (`sent`, not
 * expired): the update that settles or expires a transaction rewrites the value without it, so a
 * settled record takes exactly the bytes it took before the tail existed (`FIXED_BYTES` + its
 * two strings). A value without the bit (every record before it, and every settled one) decodes
 * as before; a reader that does not know the bit ignores the bytes after the key name.
 *
 * The error tail (flags bit 5) keeps why a failed transaction failed: the RPC's `err` object, as
 * JSON. Only a failed record has it, and a failed record never has the resend tail, so the two
 * never meet. A value without the bit (every record before it) decodes with no `err`.
 *
 * The deadline tail (flags bit 6) keeps `options.deadline_slot`; flags bit 7 says an expired
 * record expired because that slot passed. Being the value's last 8 bytes, it is found without
 * reading the tails before it, and a value without the bit decodes with no deadline.
 *
 * One shape is also encoded natively: a fresh acceptance (`sent`, not expired, with the resend
 * tail), which the send path writes with `recordAccepted` (`native/src/record.rs`) together with
 * its acknowledgement-log frame. A change to this layout changes that file too;
 * `test/unit/record-native.test.ts` encodes records both ways and fails on any byte that differs.
 *
 * The flags byte comes first so a scan for pending records (`isPendingValue`) and the retention
 * scan (`submittedAtOf`) read one field without decoding the rest. Integers are written as two
 * u32 halves (no BigInt on the hot path) and must be non-negative safe integers; `NULL_U64`
 * (2^64 − 1) is never one, so it cannot be confused with a value.
 */
import { sentRecord, type Resend, type StatusRecord, type TxStatus } from './records.js';
import { base58DecodeShared, base58Encode } from '../native.js';

export const STATUS_CODEC_VERSION = 1;
/** Signature bytes: the key of a status record. */
export const SIGNATURE_BYTES = 64;
export const BLOCKHASH_BYTES = 32;

// Field offsets, in one place.
const OFF_VERSION = 0;
const OFF_FLAGS = 1;
const OFF_SUBMITTED_AT = 2;
const OFF_CONFIRMED_AT = 10;
const OFF_LATENCY = 18;
const OFF_SLOT = 26;
const OFF_SUBMIT_SLOT = 34;
const OFF_LAST_VALID = 42;
const OFF_TIP = 50;
const OFF_BLOCKHASH = 58;
const OFF_STRINGS = OFF_BLOCKHASH + BLOCKHASH_BYTES;
/** The value's size without its two strings' bytes (their length bytes included). */
export const FIXED_BYTES = OFF_STRINGS + 2;
/** Longest accountId / keyName, in UTF-8 bytes (one length byte each). */
export const MAX_STRING_BYTES = 255;

const STATUS_MASK = 0b11;
const FLAG_EXPIRED = 0b100;
const FLAG_DURABLE_NONCE = 0b1000;
const FLAG_RESEND = 0b1_0000;
const FLAG_ERR = 0b10_0000;
const FLAG_DEADLINE = 0b100_0000;
const FLAG_DEADLINE_PASSED = 0b1000_0000;
const DEADLINE_BYTES = 8;
/** Longest on-chain error kept, as JSON; a longer one (no Agave error is) keeps its first bytes as a string. */
export const MAX_ERR_BYTES = 1024;
/** The resend tail's fixed part: options byte and u16 wire length. */
const RESEND_HEADER_BYTES = 3;
/** Largest wire transaction (Solana's packet data size); the native inspection enforces it too. */
export const MAX_WIRE_BYTES = 1232;
const RESEND_ANTI_MEV = 0b1;
/** `rebroadcast_until_expiry`; a value written before it existed has the bit clear (off). */
const RESEND_UNTIL_EXPIRY = 0b10;
const RESEND_RETRIES_SHIFT = 4;
const STATUS_CODES: Record<TxStatus, number> = { sent: 0, confirmed: 1, failed: 2 };
const STATUS_NAMES: readonly TxStatus[] = ['sent', 'confirmed', 'failed'];

const U32 = 2 ** 32;
const NULL_HALF = 0xffff_ffff;
const U64_MAX = (1n << 64n) - 1n;

function writeU64(v: DataView, off: number, n: number, field: string): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`status record: ${field} must be a non-negative safe integer, got ${n}`);
  v.setUint32(off, Math.floor(n / U32));
  v.setUint32(off + 4, n >>> 0);
}

function writeU64OrNull(v: DataView, off: number, n: number | null, field: string): void {
  if (n === null) {
    v.setUint32(off, NULL_HALF);
    v.setUint32(off + 4, NULL_HALF);
  } else writeU64(v, off, n, field);
}

function readU64(v: DataView, off: number): number {
  return v.getUint32(off) * U32 + v.getUint32(off + 4);
}

function readU64OrNull(v: DataView, off: number): number | null {
  const hi = v.getUint32(off);
  const lo = v.getUint32(off + 4);
  return hi === NULL_HALF && lo === NULL_HALF ? null : hi * U32 + lo;
}

function viewOf(b: Uint8Array): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

function asBuffer(b: Uint8Array): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

/**
 * The key of a status record: the signature's 64 raw bytes, or undefined if `signature` is not
 * the base58 of exactly 64 bytes (such a signature can have no record).
 */
export function statusKey(signature: string): Buffer | undefined {
  // 64 bytes are 87–88 base58 characters (fewer only with leading zero bytes, never under 64).
  if (signature.length < 64 || signature.length > 88) return undefined;
  let key: Buffer;
  try {
    key = base58DecodeShared(signature);
  } catch {
    return undefined;
  }
  return key.length === SIGNATURE_BYTES ? key : undefined;
}

/**
 * A record's signature and recent blockhash as raw bytes, where the caller holds them (views
 * into an accepted transaction's wire): the record is keyed and encoded from these, not from
 * its base58 fields decoded again. They must be the bytes of those fields.
 */
export interface RecordBytes {
  /** 64 bytes: the status key. */
  signature: Buffer;
  /** 32 bytes. */
  blockhash: Uint8Array;
}

/** A record's key (its first signature's 64 bytes) read in place from its transaction's wire. */
export function signatureIn(wire: Buffer, signatureOffset: number): Buffer {
  return wire.subarray(signatureOffset, signatureOffset + SIGNATURE_BYTES);
}

/** A record's bytes read in place from its transaction's wire, at the native inspection's offsets. */
export function recordBytesIn(wire: Buffer, signatureOffset: number, blockhashOffset: number): RecordBytes {
  return {
    signature: signatureIn(wire, signatureOffset),
    blockhash: wire.subarray(blockhashOffset, blockhashOffset + BLOCKHASH_BYTES),
  };
}

/** The base58 signature of a status key. */
export function signatureOfKey(key: Uint8Array): string {
  return base58Encode(key);
}

/**
 * Encode a record's value (the signature is the key, not part of it), with the resend tail when
 * `resend` is given and the record is pending (a settled or expired record never keeps it).
 * Throws `RangeError` on a field that does not fit its slot (a bug upstream, never user input).
 * @param blockhashBytes the 32 bytes of `rec.recentBlockhash` where the caller holds them (the
 *   wire of an accepted transaction): not decoded from base58 again
 *
 * @example
 * db.put(statusKey(rec.signature)!, encodeStatus(rec));
 */
export function encodeStatus(rec: StatusRecord, resend?: Resend | null, blockhashBytes?: Uint8Array): Buffer {
  const accountBytes = Buffer.byteLength(rec.accountId, 'utf8');
  const keyNameBytes = Buffer.byteLength(rec.keyName, 'utf8');
  if (accountBytes > MAX_STRING_BYTES) throw new RangeError(`status record: accountId is ${accountBytes} bytes (max ${MAX_STRING_BYTES})`);
  if (keyNameBytes > MAX_STRING_BYTES) throw new RangeError(`status record: keyName is ${keyNameBytes} bytes (max ${MAX_STRING_BYTES})`);
  const code = STATUS_CODES[rec.status];
  if (code === undefined) throw new RangeError(`status record: unknown status ${JSON.stringify(rec.status)}`);
  const blockhash = blockhashBytes ?? base58DecodeShared(rec.recentBlockhash);
  if (blockhash.length !== BLOCKHASH_BYTES) throw new RangeError(`status record: recentBlockhash is ${blockhash.length} bytes, not 32`);
  const tip = rec.tipLamports;
  if (typeof tip !== 'bigint' || tip < 0n || tip > U64_MAX) throw new RangeError(`status record: tipLamports must be a u64 bigint, got ${String(tip)}`);

  const tail = resend && code === STATUS_CODES.sent && !rec.expired ? resend : null;
  if (tail) checkResend(tail);
  const tailBytes = tail ? RESEND_HEADER_BYTES + tail.wire.length : 0;
  const err = code === STATUS_CODES.failed ? errJson(rec.err) : null;
  const errBytes = err ? 2 + err.length : 0;
  const deadline = rec.deadlineSlot ?? null;
  const deadlineBytes = deadline === null ? 0 : DEADLINE_BYTES;

  const out = Buffer.allocUnsafe(FIXED_BYTES + accountBytes + keyNameBytes + tailBytes + errBytes + deadlineBytes);
  const v = viewOf(out);
  v.setUint8(OFF_VERSION, STATUS_CODEC_VERSION);
  v.setUint8(
    OFF_FLAGS,
    code |
      (rec.expired ? FLAG_EXPIRED : 0) |
      (rec.durableNonce ? FLAG_DURABLE_NONCE : 0) |
      (tail ? FLAG_RESEND : 0) |
      (err ? FLAG_ERR : 0) |
      (deadline !== null ? FLAG_DEADLINE : 0) |
      (rec.expired && rec.deadlinePassed ? FLAG_DEADLINE_PASSED : 0),
  );
  writeU64(v, OFF_SUBMITTED_AT, rec.submittedAt, 'submittedAt');
  writeU64OrNull(v, OFF_CONFIRMED_AT, rec.confirmedAt, 'confirmedAt');
  v.setFloat64(OFF_LATENCY, rec.latencyMs === null ? NaN : rec.latencyMs);
  writeU64OrNull(v, OFF_SLOT, rec.slot, 'slot');
  writeU64(v, OFF_SUBMIT_SLOT, rec.submitSlot, 'submitSlot');
  writeU64OrNull(v, OFF_LAST_VALID, rec.lastValidBlockHeight, 'lastValidBlockHeight');
  v.setBigUint64(OFF_TIP, tip);
  out.set(blockhash, OFF_BLOCKHASH);
  let off = OFF_STRINGS;
  out[off++] = accountBytes;
  off += out.write(rec.accountId, off, 'utf8');
  out[off++] = keyNameBytes;
  off += out.write(rec.keyName, off, 'utf8');
  if (tail) {
    out[off++] = (tail.antiMev ? RESEND_ANTI_MEV : 0) | (tail.untilExpiry ? RESEND_UNTIL_EXPIRY : 0) | (tail.maxRetries << RESEND_RETRIES_SHIFT);
    v.setUint16(off, tail.wire.length);
    off += 2;
    off += tail.wire.copy(out, off);
  }
  if (err) {
    v.setUint16(off, err.length);
    off += 2 + err.copy(out, off + 2);
  }
  if (deadline !== null) writeU64(v, off, deadline, 'deadlineSlot');
  return out;
}

/**
 * The two strings of an accepted record as its value holds them (`u8 length | accountId | u8
 * length | keyName`), for the native `recordAccepted`: the same for every send of one key, so
 * callers keep it. Throws `RangeError` for a string over `MAX_STRING_BYTES`, as `encodeStatus`.
 */
export function acceptedNames(accountId: string, keyName: string): Buffer {
  const a = Buffer.byteLength(accountId, 'utf8');
  const k = Buffer.byteLength(keyName, 'utf8');
  if (a > MAX_STRING_BYTES) throw new RangeError(`status record: accountId is ${a} bytes (max ${MAX_STRING_BYTES})`);
  if (k > MAX_STRING_BYTES) throw new RangeError(`status record: keyName is ${k} bytes (max ${MAX_STRING_BYTES})`);
  const out = Buffer.allocUnsafeSlow(2 + a + k);
  out[0] = a;
  out.write(accountId, 1, 'utf8');
  out[1 + a] = k;
  out.write(keyName, 2 + a, 'utf8');
  return out;
}

/** The length of an accepted record's value (`encodeStatus` of a fresh `sent` record with its resend tail). */
export function acceptedValueBytes(names: Uint8Array, wireBytes: number, hasDeadline: boolean): number {
  return FIXED_BYTES - 2 + names.length + RESEND_HEADER_BYTES + wireBytes + (hasDeadline ? DEADLINE_BYTES : 0);
}

/** The resend tail's options byte (`antiMev`, `untilExpiry`, `maxRetries`), checked as `encodeStatus` checks it. */
export function resendOptionsByte(antiMev: boolean, maxRetries: number, untilExpiry: boolean): number {
  if (!Number.isInteger(maxRetries) || maxRetries < 0 || maxRetries > 15) {
    throw new RangeError(`status record: resend maxRetries must be an integer 0..15, got ${maxRetries}`);
  }
  return (antiMev ? RESEND_ANTI_MEV : 0) | (untilExpiry ? RESEND_UNTIL_EXPIRY : 0) | (maxRetries << RESEND_RETRIES_SHIFT);
}

/**
 * The error tail's bytes: `err` as JSON, or null when there is none. An error over
 * `MAX_ERR_BYTES` (none of Agave's is near it) is kept as the string of its first bytes, so a
 * failed record is always written.
 */
function errJson(err: unknown): Buffer | null {
  if (err === undefined || err === null) return null;
  const json = Buffer.from(JSON.stringify(err) ?? 'null', 'utf8');
  if (json.length <= MAX_ERR_BYTES) return json;
  return Buffer.from(JSON.stringify(json.toString('utf8', 0, MAX_ERR_BYTES - 64)), 'utf8');
}

/** The error tail of a value (after the strings), or undefined when it has none or it is damaged. */
function errOf(b: Buffer, flags: number, off: number): unknown {
  if ((flags & FLAG_ERR) === 0 || off + 2 > b.length) return undefined;
  const length = b.readUInt16BE(off);
  if (off + 2 + length > b.length) return undefined;
  try {
    return JSON.parse(b.toString('utf8', off + 2, off + 2 + length)) as unknown;
  } catch {
    return undefined;
  }
}

function checkResend(r: Resend): void {
  if (!Buffer.isBuffer(r.wire) || r.wire.length === 0 || r.wire.length > MAX_WIRE_BYTES) {
    throw new RangeError(`status record: resend wire must be 1..${MAX_WIRE_BYTES} bytes, got ${Buffer.isBuffer(r.wire) ? r.wire.length : typeof r.wire}`);
  }
  if (!Number.isInteger(r.maxRetries) || r.maxRetries < 0 || r.maxRetries > 15) {
    throw new RangeError(`status record: resend maxRetries must be an integer 0..15, got ${r.maxRetries}`);
  }
}

/**
 * The resend tail of a value (a copy of the wire bytes: scans hand out borrowed buffers), or
 * null when it has none (settled, expired, migrated from the old layout, or written before the
 * tail existed).
 * @param copy false: the wire is a view into `value` (a value the caller owns, as a drained
 *   hand-off batch: `src/delivery/handoff-queue.ts`)
 */
export function resendOf(value: Uint8Array, copy = true): Resend | null {
  if (((value[OFF_FLAGS] ?? 0) & FLAG_RESEND) === 0) return null;
  const b = asBuffer(value);
  let off = OFF_STRINGS;
  off += 1 + b[off]!; // accountId
  off += 1 + b[off]!; // keyName
  if (off + RESEND_HEADER_BYTES > b.length) return null;
  const options = b[off]!;
  const length = b.readUInt16BE(off + 1);
  off += RESEND_HEADER_BYTES;
  if (length === 0 || off + length > b.length) return null;
  return {
    wire: copy ? Buffer.from(b.subarray(off, off + length)) : b.subarray(off, off + length),
    antiMev: (options & RESEND_ANTI_MEV) !== 0,
    maxRetries: options >> RESEND_RETRIES_SHIFT,
    ...((options & RESEND_UNTIL_EXPIRY) !== 0 && { untilExpiry: true }),
  };
}

/** Decode a value written by `encodeStatus`; `signature` is its key's base58. */
export function decodeStatus(signature: string, value: Uint8Array): StatusRecord {
  if (value.length < FIXED_BYTES) throw new RangeError(`status record ${signature}: ${value.length} bytes, too short`);
  const b = asBuffer(value);
  const v = viewOf(b);
  const version = v.getUint8(OFF_VERSION);
  if (version !== STATUS_CODEC_VERSION) throw new RangeError(`status record ${signature}: unknown layout version ${version}`);
  const flags = v.getUint8(OFF_FLAGS);
  const status = STATUS_NAMES[flags & STATUS_MASK];
  if (status === undefined) throw new RangeError(`status record ${signature}: bad status bits ${flags & STATUS_MASK}`);
  const latency = v.getFloat64(OFF_LATENCY);
  let off = OFF_STRINGS;
  const accountEnd = off + 1 + b[off]!;
  const accountId = b.toString('utf8', off + 1, accountEnd);
  off = accountEnd;
  const keyNameEnd = off + 1 + b[off]!;
  if (keyNameEnd > b.length) throw new RangeError(`status record ${signature}: strings run past the value`);
  const keyName = b.toString('utf8', off + 1, keyNameEnd);
  const err = errOf(b, flags, keyNameEnd);
  const deadlineSlot = (flags & FLAG_DEADLINE) !== 0 && b.length >= keyNameEnd + DEADLINE_BYTES ? readU64(v, b.length - DEADLINE_BYTES) : undefined;
  return {
    signature,
    accountId,
    keyName,
    tipLamports: v.getBigUint64(OFF_TIP),
    recentBlockhash: base58Encode(b.subarray(OFF_BLOCKHASH, OFF_BLOCKHASH + BLOCKHASH_BYTES)),
    durableNonce: (flags & FLAG_DURABLE_NONCE) !== 0,
    submittedAt: readU64(v, OFF_SUBMITTED_AT),
    submitSlot: readU64(v, OFF_SUBMIT_SLOT),
    lastValidBlockHeight: readU64OrNull(v, OFF_LAST_VALID),
    status,
    confirmedAt: readU64OrNull(v, OFF_CONFIRMED_AT),
    latencyMs: Number.isNaN(latency) ? null : latency,
    slot: readU64OrNull(v, OFF_SLOT),
    expired: (flags & FLAG_EXPIRED) !== 0,
    ...(err !== undefined && { err }),
    ...(deadlineSlot !== undefined && { deadlineSlot }),
    ...((flags & FLAG_DEADLINE_PASSED) !== 0 && { deadlinePassed: true as const }),
  };
}

/**
 * A fresh acceptance's record from its value (as `recordAccepted` writes it), built by
 * `sentRecord` so it has the very shape the send path's records have (`decodeStatus` builds
 * another, with spreads): for the main thread's rebuild of a hand-off (`handoff-queue.ts`),
 * which also passes the blockhash's base58 as the ingress thread had it (else it is encoded here).
 */
export function decodeSent(signature: string, value: Uint8Array, recentBlockhash?: string): StatusRecord {
  const b = asBuffer(value);
  const v = viewOf(b);
  const flags = v.getUint8(OFF_FLAGS);
  let off = OFF_STRINGS;
  const accountEnd = off + 1 + b[off]!;
  const accountId = b.toString('utf8', off + 1, accountEnd);
  off = accountEnd;
  const keyNameEnd = off + 1 + b[off]!;
  const keyName = b.toString('utf8', off + 1, keyNameEnd);
  return sentRecord({
    signature,
    accountId,
    keyName,
    tipLamports: v.getBigUint64(OFF_TIP),
    recentBlockhash: recentBlockhash ?? base58Encode(b.subarray(OFF_BLOCKHASH, OFF_BLOCKHASH + BLOCKHASH_BYTES)),
    durableNonce: (flags & FLAG_DURABLE_NONCE) !== 0,
    submittedAt: readU64(v, OFF_SUBMITTED_AT),
    submitSlot: readU64(v, OFF_SUBMIT_SLOT),
    lastValidBlockHeight: readU64OrNull(v, OFF_LAST_VALID),
    deadlineSlot: (flags & FLAG_DEADLINE) !== 0 ? readU64(v, b.length - DEADLINE_BYTES) : undefined,
  });
}

/** `status === 'sent' && !expired`, read from the flags byte alone. */
export function isPendingValue(value: Uint8Array): boolean {
  return value[OFF_VERSION] === STATUS_CODEC_VERSION && ((value[OFF_FLAGS] ?? 0) & (STATUS_MASK | FLAG_EXPIRED)) === 0;
}

/** `status === 'confirmed'`, read from the flags byte alone. */
export function isConfirmedValue(value: Uint8Array): boolean {
  return value[OFF_VERSION] === STATUS_CODEC_VERSION && ((value[OFF_FLAGS] ?? 0) & STATUS_MASK) === STATUS_CODES.confirmed;
}

/** The record's submission time (ms), read without decoding the rest. */
export function submittedAtOf(value: Uint8Array): number {
  return readU64(viewOf(value), OFF_SUBMITTED_AT);
}

/**
 * The on-disk form of a delivery trace (`Trace` in `records.ts`, built by `src/delivery/trace.ts`): a binary value in
 * `status_traces`, keyed like its status record by the signature's 64 raw bytes, committed with
 * the status records' grouped commit and pruned with them. Leaders are written once each in a
 * table (a trace names the same two or three leaders over and over) and attempts refer to them
 * by index: a first send and three rounds to two leaders take ~230 B, the cap of 64 attempts
 * under 1.3 KB.
 *
 * Value layout, version 1 (big-endian):
 *
 * | size | field                                                                        |
 * |------|------------------------------------------------------------------------------|
 * |    1 | version (1)                                                                  |
 * |    2 | omitted: attempts past the cap, u16 (saturating)                             |
 * |    8 | base slot: the first attempt's slot, u64 (two u32 halves)                    |
 * |    1 | leader table length L (≤ 255)                                                |
 * |  L × | identity: 32 raw bytes (all zero: unknown); TPU address: u8 length + UTF-8   |
 * |    1 | attempt count A (≤ `MAX_ATTEMPTS`)                                           |
 * | A×14 | µs since the request u32 (saturating) · slot − base slot i32 · round u8 ·    |
 * |      | outcome u8 · leader index u8 (255: none) · reason u8 (255: none) ·           |
 * |      | close code u16 (65535: none)                                                 |
 *
 * Reasons are stored by their index in `REASONS`, a list that only ever grows (a reason the
 * list does not know is stored as `other`).
 */
import { base58DecodeShared, base58Encode } from '../native.js';
import { ATTEMPT_OUTCOMES, MAX_ATTEMPTS, type Attempt, type Trace } from './records.js';

export const TRACE_CODEC_VERSION = 1;

/** Send failure reasons by stored index: append only (indexes are on disk). */
export const REASONS = [
  'other',
  'empty',
  'too_large',
  'queue_full',
  'backoff',
  'handshake_timeout',
  'connect_failed',
  'connection_lost',
  'stream_stopped',
  'send_timeout',
  'client_closed',
  'connection_stale',
  'deadline',
  // No longer produced (first sends have a connection of their own, so nothing gives way to
  // them); kept so traces stored with it still decode.
  'busy',
] as const;

const IDENTITY_BYTES = 32;
const ATTEMPT_BYTES = 14;
const NONE_U8 = 255;
const NONE_U16 = 0xffff;
const MAX_LEADERS = 255;
const MAX_TPU_BYTES = 255;
const U32 = 2 ** 32;
const REASON_INDEX = new Map<string, number>(REASONS.map((r, i) => [r, i]));
const OUTCOME_INDEX = new Map<string, number>(ATTEMPT_OUTCOMES.map((o, i) => [o, i]));
const ZERO_IDENTITY = Buffer.alloc(IDENTITY_BYTES);
/**
 * Decoded leader identities: a trace names the same few leaders as every other trace of its
 * epoch, so each is decoded once, not once per trace. Cleared when it grows past the bound.
 */
const identities = new Map<string, Buffer>();
const MAX_CACHED_IDENTITIES = 4096;

/** Thrown by `decodeTrace` for a value it cannot read: the message says where and why. */
export class TraceDecodeError extends RangeError {
  override readonly name = 'TraceDecodeError';
}

/** `key`'s bytes from `cache`, made by `make` on a miss; the cache is cleared when it grows past its bound. */
function cached(cache: Map<string, Buffer>, key: string, make: (key: string) => Buffer): Buffer {
  let bytes = cache.get(key);
  if (bytes === undefined) {
    if (cache.size >= MAX_CACHED_IDENTITIES) cache.clear();
    cache.set(key, (bytes = make(key)));
  }
  return bytes;
}

function decodeIdentity(id: string): Buffer {
  try {
    const b = base58DecodeShared(id);
    if (b.length === IDENTITY_BYTES) return Buffer.from(b);
  } catch {
    // not base58
  }
  return ZERO_IDENTITY; // not the base58 of 32 bytes: stored as unknown
}

/** TPU addresses' UTF-8 bytes (at most `MAX_TPU_BYTES`), as few as the leaders. */
const addresses = new Map<string, Buffer>();
const addressBytes = (tpu: string): Buffer => Buffer.from(tpu, 'utf8').subarray(0, MAX_TPU_BYTES);

/**
 * Encode a trace. Attempts past `MAX_ATTEMPTS` (there are none in a trace built by
 * `TraceBuilder`) are dropped and counted in `omitted`; leaders past the table's 255 entries
 * are stored as unknown. Runs on the main thread once per accepted transaction: the leader
 * table is a scan of a few entries (no map, no key strings) and the bytes of identities and
 * addresses are cached across traces.
 */
export function encodeTrace(t: Trace): Buffer {
  const count = Math.min(t.attempts.length, MAX_ATTEMPTS);
  const omitted = t.omitted + (t.attempts.length - count);
  const attempts = t.attempts;
  const baseSlot = count > 0 ? attempts[0]!.slot : 0;
  // The leader table: distinct (identity, address) pairs, in order of first use.
  const ids: Array<string | null> = [];
  const tpus: Array<string | null> = [];
  const leaderIndex = new Uint8Array(count);
  let size = 1 + 2 + 8 + 1 + 1 + count * ATTEMPT_BYTES;
  for (let i = 0; i < count; i++) {
    const a = attempts[i]!;
    let k = NONE_U8;
    if (a.leader !== null || a.tpu !== null) {
      for (let j = 0; j < ids.length; j++) {
        if (ids[j] === a.leader && tpus[j] === a.tpu) {
          k = j;
          break;
        }
      }
      if (k === NONE_U8 && ids.length < MAX_LEADERS) {
        k = ids.length;
        ids.push(a.leader);
        tpus.push(a.tpu);
        size += IDENTITY_BYTES + 1 + (a.tpu === null ? 0 : cached(addresses, a.tpu, addressBytes).length);
      }
    }
    leaderIndex[i] = k;
  }
  const out = Buffer.allocUnsafe(size); // every byte is written below
  let off = out.writeUInt8(TRACE_CODEC_VERSION, 0);
  off = out.writeUInt16BE(Math.min(omitted, NONE_U16), off);
  off = out.writeUInt32BE(Math.floor(baseSlot / U32), off);
  off = out.writeUInt32BE(baseSlot >>> 0, off);
  off = out.writeUInt8(ids.length, off);
  for (let j = 0; j < ids.length; j++) {
    const id = ids[j]!;
    off += (id === null ? ZERO_IDENTITY : cached(identities, id, decodeIdentity)).copy(out, off);
    const tpu = tpus[j];
    const bytes = tpu === null || tpu === undefined ? null : cached(addresses, tpu, addressBytes);
    off = out.writeUInt8(bytes === null ? 0 : bytes.length, off);
    if (bytes !== null) off += bytes.copy(out, off);
  }
  off = out.writeUInt8(count, off);
  for (let i = 0; i < count; i++) {
    const a = attempts[i]!;
    off = out.writeUInt32BE(Math.min(Math.max(0, Math.round(a.atUs)), U32 - 1), off);
    off = out.writeInt32BE(Math.max(-(2 ** 31), Math.min(2 ** 31 - 1, a.slot - baseSlot)), off);
    out[off++] = Math.min(a.round, 254);
    out[off++] = Math.max(0, OUTCOME_INDEX.get(a.outcome) ?? 0);
    out[off++] = leaderIndex[i]!;
    out[off++] = a.reason === null ? NONE_U8 : (REASON_INDEX.get(a.reason) ?? 0);
    off = out.writeUInt16BE(a.closeCode === null ? NONE_U16 : Math.min(a.closeCode, NONE_U16 - 1), off);
  }
  return out;
}

/** Decode a value written by `encodeTrace`; throws `TraceDecodeError` for anything else. */
export function decodeTrace(value: Uint8Array): Trace {
  const b = Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  let off = 0;
  const need = (n: number, what: string): void => {
    if (off + n > b.length) throw new TraceDecodeError(`trace: ${b.length} bytes end inside ${what} (at byte ${off})`);
  };
  need(12, 'the header');
  const version = b.readUInt8(off++);
  if (version !== TRACE_CODEC_VERSION) throw new TraceDecodeError(`trace: unknown layout version ${version}`);
  const omitted = b.readUInt16BE(off);
  off += 2;
  const baseSlot = b.readUInt32BE(off) * U32 + b.readUInt32BE(off + 4);
  off += 8;
  const leaderCount = b.readUInt8(off++);
  const leaders: Array<{ identity: string | null; tpu: string | null }> = [];
  for (let i = 0; i < leaderCount; i++) {
    need(IDENTITY_BYTES + 1, `leader ${i}`);
    const id = b.subarray(off, off + IDENTITY_BYTES);
    off += IDENTITY_BYTES;
    const len = b.readUInt8(off++);
    need(len, `leader ${i}'s address`);
    const tpu = b.toString('utf8', off, off + len);
    off += len;
    leaders.push({ identity: id.equals(ZERO_IDENTITY) ? null : base58Encode(id), tpu: len === 0 ? null : tpu });
  }
  need(1, 'the attempt count');
  const count = b.readUInt8(off++);
  if (count > MAX_ATTEMPTS) throw new TraceDecodeError(`trace: ${count} attempts, more than the cap of ${MAX_ATTEMPTS}`);
  need(count * ATTEMPT_BYTES, `${count} attempts`);
  if (off + count * ATTEMPT_BYTES !== b.length) throw new TraceDecodeError(`trace: ${b.length - off - count * ATTEMPT_BYTES} bytes after the last attempt`);
  const attempts: Attempt[] = [];
  for (let i = 0; i < count; i++) {
    const atUs = b.readUInt32BE(off);
    const slot = baseSlot + b.readInt32BE(off + 4);
    const round = b.readUInt8(off + 8);
    const outcome = ATTEMPT_OUTCOMES[b.readUInt8(off + 9)];
    const li = b.readUInt8(off + 10);
    const ri = b.readUInt8(off + 11);
    const code = b.readUInt16BE(off + 12);
    off += ATTEMPT_BYTES;
    if (outcome === undefined) throw new TraceDecodeError(`trace: attempt ${i} has unknown outcome ${b.readUInt8(off - 5)}`);
    const leader = li === NONE_U8 ? { identity: null, tpu: null } : leaders[li];
    if (leader === undefined) throw new TraceDecodeError(`trace: attempt ${i} names leader ${li} of ${leaderCount}`);
    const reason = ri === NONE_U8 ? null : REASONS[ri];
    if (reason === undefined) throw new TraceDecodeError(`trace: attempt ${i} has unknown reason ${ri}`);
    attempts.push({ atUs, slot, round, leader: leader.identity, tpu: leader.tpu, outcome, closeCode: code === NONE_U16 ? null : code, reason });
  }
  return { attempts, omitted };
}

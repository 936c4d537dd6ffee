/**
 * The native hand-off of an ingress thread's accepted sends to the main thread
 * (`native/src/handoff.rs`), and its entries' encoding on both sides.
 *
 * Why: the batch used to cross as a structured clone of the `Accepted` objects — V8's serializer
 * on the ingress thread and its deserializer on the main thread, about 4 and 7 µs a send
 * (`bench/handoff-clone.ts`). But the send's record call (`recordAccepted`) already holds the
 * status value, which has the wire and every field of the record, so it pushes that value onto
 * the thread's native queue as its last step, with a tail of the few facts the value lacks
 * (written here, `tail`); the main thread drains a batch in one call and rebuilds the objects
 * with the store's decoder (`decodeHandoff`).
 *
 * The port still carries one message per batch — now only the entries' sequence numbers — so the
 * batch keeps its place among the thread's other messages (a trace request flushes it first, the
 * stream hand-over's order, `ackReplication: quorum`'s answer per batch). A send that is recorded
 * but then fails before its hand-off leaves an entry no message names: the next drain drops it.
 * Known-signature resends are not recorded, so they push nothing; the main thread's own sends
 * (no ingress threads) hand the object over directly and use no queue.
 *
 * The tail, little-endian: `u64 receivedAt | f64 sentSlot | f64 computeUnitPrice (NaN: none) |
 * u16 signatureOffset | u16 blockhashOffset (0xffff: none) | u8 flags (held, skipPreflight,
 * firstAttempts present) | u8 nonce account length (0: none) | the nonce account (ASCII) |
 * u8 attempts | per attempt: u16 length | target (UTF-8) | f64 outcome | f64 close code |
 * f64 µs | u16 length | reason (UTF-8) | u8 signature length | u8 blockhash length | the
 * signature's base58 | the blockhash's base58` (ASCII). The send options the value does not keep are only
 * `skipPreflight` (the resend byte holds `antiMev`, `maxRetries`, `rebroadcastUntilExpiry`; the
 * record its `deadlineSlot`): a new send option must be added here, and
 * `test/unit/handoff-queue.test.ts` fails until it is.
 */
import { handoffDrain } from '../native.js';
import { decodeSent, resendOf } from '../store/status-codec.js';
import type { Accepted, HandoffQueue as QueueEnd } from './delivery.js';
import { PACKED_STRIDE, type PackedAttempts } from './trace.js';

const HELD = 1;
const SKIP_PREFLIGHT = 2;
const ATTEMPTS = 4;
const NONE16 = 0xffff;
/** The tail's fixed part, up to the nonce account's length byte. */
const FIXED = 30;

/** An ingress thread's end of its hand-off queue: the tail of each send, and their numbers. */
export class HandoffQueue implements QueueEnd {
  private scratch = Buffer.allocUnsafe(1024);
  private pushed = 0;

  /** @param id the queue the main thread opened for this thread (`handoffOpen`) */
  constructor(readonly id: number) {}

  /** The tail of `a` (a view of this queue's scratch buffer, good until the next call). */
  tail(a: Accepted): Buffer {
    for (;;) {
      const n = writeTail(this.scratch, a);
      if (n >= 0) return this.scratch.subarray(0, n);
      this.scratch = Buffer.allocUnsafe(this.scratch.length * 2);
    }
  }

  /** The sequence number of the entry the record call just pushed (one a successful call). */
  next(): number {
    return ++this.pushed;
  }
}

/** Write `a`'s tail into `out`; its length, or -1 if `out` is too short. */
function writeTail(out: Buffer, a: Accepted): number {
  const nonce = a.nonceAccount;
  const attempts = a.firstAttempts;
  if (out.length < FIXED + 2 + (nonce?.length ?? 0)) return -1;
  out.writeBigUInt64LE(a.receivedAt, 0);
  out.writeDoubleLE(a.sentSlot, 8);
  out.writeDoubleLE(a.computeUnitPrice ?? NaN, 16);
  out.writeUInt16LE(a.signatureOffset ?? NONE16, 24);
  out.writeUInt16LE(a.blockhashOffset ?? NONE16, 26);
  out[28] = (a.held ? HELD : 0) | (a.options.skipPreflight ? SKIP_PREFLIGHT : 0) | (attempts !== undefined ? ATTEMPTS : 0);
  let off = FIXED;
  if (nonce !== undefined) {
    const n = out.write(nonce, off, 'latin1');
    if (n !== nonce.length || n > 255) return -1;
    out[29] = n;
    off += n;
  } else out[29] = 0;
  const count = attempts === undefined ? 0 : Math.floor(attempts.length / PACKED_STRIDE);
  if (count > 255) throw new RangeError(`hand-off: ${count} first-send attempts`);
  out[off++] = count;
  for (let i = 0; i < count; i++) {
    const at = i * PACKED_STRIDE;
    off = writeString(out, off, String(attempts![at]));
    if (off < 0 || off + 24 > out.length) return -1;
    out.writeDoubleLE(attempts![at + 1] as number, off);
    out.writeDoubleLE(attempts![at + 2] as number, off + 8);
    out.writeDoubleLE(attempts![at + 3] as number, off + 16);
    off = writeString(out, off + 24, String(attempts![at + 4]));
    if (off < 0) return -1;
  }
  // The two base58 strings the main thread keys by, as the ingress thread already has them: the
  // main thread reads them in one copy instead of encoding them again (two calls into the addon,
  // about 2.5 µs a send of its ~6.5 µs rebuild, measured on a batch drained from the service).
  const sig = a.record.signature;
  const bh = a.record.recentBlockhash;
  if (sig.length > 255 || bh.length > 255) throw new RangeError('hand-off: a base58 string over 255 characters');
  if (off + 2 + sig.length + bh.length > out.length) return -1;
  out[off++] = sig.length;
  out[off++] = bh.length;
  return writeAscii(out, writeAscii(out, off, sig), bh);
}

/** A base58 string's bytes at `off` (room checked by the caller); the new offset. */
function writeAscii(out: Buffer, off: number, s: string): number {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) throw new RangeError('hand-off: a base58 string that is not ASCII');
    out[off + i] = c;
  }
  return off + s.length;
}

/**
 * `s` as `u16 length | UTF-8` at `off`; the new offset, or -1 if it does not fit. A short ASCII
 * string (a leader's address, an empty reason: nearly all) is copied by this loop, not by
 * `Buffer.write`, whose call into C++ costs more than the copy.
 */
function writeString(out: Buffer, off: number, s: string): number {
  const n = s.length;
  if (n <= 64 && off + 2 + n <= out.length) {
    let i = 0;
    for (; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) break;
      out[off + 2 + i] = c;
    }
    if (i === n) {
      out[off] = n;
      out[off + 1] = 0;
      return off + 2 + n;
    }
  }
  if (off + 2 + Buffer.byteLength(s) > out.length) return -1;
  const bytes = out.write(s, off + 2, 'utf8');
  if (bytes > NONE16) throw new RangeError('hand-off: a first-send attempt string over 64 KiB');
  out.writeUInt16LE(bytes, off);
  return off + 2 + bytes;
}


/**
 * The first sends' targets (a leader's `ip:port`) repeat across a batch and from batch to batch,
 * so the rebuild keeps the strings it made, by the bytes' hash, and makes a string only for a
 * target it has not seen (checked byte for byte: a collision makes a fresh string).
 */
const targets = new Map<number, { bytes: Buffer; text: string }>();

function internedTarget(t: Buffer, from: number, to: number): string {
  let h = 0;
  for (let i = from; i < to; i++) h = (Math.imul(h, 31) + t[i]!) | 0;
  const hit = targets.get(h);
  if (hit !== undefined && hit.bytes.length === to - from) {
    let i = 0;
    while (i < hit.bytes.length && hit.bytes[i] === t[from + i]) i++;
    if (i === hit.bytes.length) return hit.text;
  }
  const text = t.toString('utf8', from, to);
  if (targets.size >= 4096) targets.clear();
  targets.set(h, { bytes: Buffer.from(t.subarray(from, to)), text });
  return text;
}

/** Drain `seqs` of queue `queue` and rebuild each `Accepted` as the ingress thread handed it over. */
export function drainHandoff(queue: number, seqs: number[]): Accepted[] {
  return decodeHandoff(handoffDrain(queue, seqs));
}

/** The `Accepted` of each entry of a drain (`u32 entry length | u32 value length | value | tail`). */
export function decodeHandoff(bytes: Buffer): Accepted[] {
  const out: Accepted[] = [];
  let q = 0;
  while (q + 8 <= bytes.length) {
    const end = q + 4 + bytes.readUInt32LE(q);
    const value = bytes.subarray(q + 8, q + 8 + bytes.readUInt32LE(q + 4));
    const t = bytes.subarray(value.byteOffset - bytes.byteOffset + value.length, end);
    q = end;
    // The wire stays a view into the drained batch (as a cloned message's did into its buffer).
    const resend = resendOf(value, false);
    if (resend === null) throw new RangeError('hand-off entry without its wire');
    const sigOff = t.readUInt16LE(24);
    const bhOff = t.readUInt16LE(26);
    const flags = t[28]!;
    const wire = resend.wire;
    let off = FIXED;
    const nonceLength = t[29]!;
    const nonceAccount = nonceLength === 0 ? undefined : t.toString('latin1', off, off + nonceLength);
    off += nonceLength;
    let firstAttempts: PackedAttempts | undefined;
    if ((flags & ATTEMPTS) === 0) off++; // the attempts' count, 0
    else {
      firstAttempts = [];
      for (let n = t[off++]!; n > 0; n--) {
        const tl = t.readUInt16LE(off);
        const target = internedTarget(t, off + 2, off + 2 + tl);
        off += 2 + tl;
        const outcome = t.readDoubleLE(off);
        const closeCode = t.readDoubleLE(off + 8);
        const atUs = t.readDoubleLE(off + 16);
        const rl = t.readUInt16LE(off + 24);
        firstAttempts.push(target, outcome, closeCode, atUs, rl === 0 ? '' : t.toString('utf8', off + 26, off + 26 + rl));
        off += 26 + rl;
      }
    }
    // The signature and the blockhash, read as one string and cut in two (a slice, not a copy).
    const sigLength = t[off]!;
    const both = t.toString('latin1', off + 2, off + 2 + sigLength + t[off + 1]!);
    const record = decodeSent(both.slice(0, sigLength), value, both.slice(sigLength));
    const price = t.readDoubleLE(16);
    out.push({
      record,
      wire,
      options: {
        skipPreflight: (flags & SKIP_PREFLIGHT) !== 0,
        maxRetries: resend.maxRetries,
        antiMev: resend.antiMev,
        deadlineSlot: record.deadlineSlot ?? null,
        rebroadcastUntilExpiry: resend.untilExpiry === true,
      },
      receivedAt: t.readBigUInt64LE(0),
      sentSlot: t.readDoubleLE(8),
      held: (flags & HELD) !== 0,
      firstAttempts,
      nonceAccount,
      computeUnitPrice: Number.isNaN(price) ? undefined : price,
      signatureOffset: sigOff === NONE16 ? undefined : sigOff,
      blockhashOffset: bhOff === NONE16 ? undefined : bhOff,
    });
  }
  return out;
}

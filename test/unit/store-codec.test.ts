import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { base58Encode } from '../../src/native.js';
import type { StatusRecord } from '../../src/store/records.js';
import {
  decodeStatus,
  encodeStatus,
  FIXED_BYTES,
  isPendingValue,
  MAX_WIRE_BYTES,
  resendOf,
  signatureOfKey,
  statusKey,
  submittedAtOf,
} from '../../src/store/status-codec.js';
import { randomSignature, statusRecord } from '../../harness/records.js';

const signature = randomSignature;
const record = statusRecord;

function roundTrip(r: StatusRecord): StatusRecord {
  return decodeStatus(r.signature, encodeStatus(r));
}

describe('status codec', () => {
  it('round-trips a fresh sent record, every field', () => {
    const r = record();
    expect(roundTrip(r)).toEqual(r);
  });

  it('round-trips confirmed, failed and expired records with their nulls', () => {
    const confirmed = record({ status: 'confirmed', confirmedAt: Date.now(), latencyMs: 412, slot: 301_234_569 });
    const failed = record({ status: 'failed', confirmedAt: Date.now(), latencyMs: null, slot: 301_234_570, lastValidBlockHeight: null });
    const expired = record({ expired: true });
    const fractional = record({ status: 'confirmed', confirmedAt: 1, latencyMs: 0.25, slot: 0 });
    for (const r of [confirmed, failed, expired, fractional]) expect(roundTrip(r)).toEqual(r);
  });

  it('keeps edge values: u64-max tip, zero tip, durable nonce, zero and 2^53−1 numbers, empty and multi-byte strings', () => {
    const edges = [
      record({ tipLamports: (1n << 64n) - 1n }),
      record({ tipLamports: 0n }),
      record({ durableNonce: true, lastValidBlockHeight: null }),
      record({ submittedAt: 0, submitSlot: 0, lastValidBlockHeight: 0, status: 'confirmed', confirmedAt: 0, latencyMs: 0, slot: 0 }),
      record({ submittedAt: Number.MAX_SAFE_INTEGER, submitSlot: Number.MAX_SAFE_INTEGER, slot: Number.MAX_SAFE_INTEGER }),
      record({ keyName: '', accountId: 'a' }),
      record({ keyName: 'bot @ zürich — 東京', accountId: 'x'.repeat(255) }),
      record({ recentBlockhash: base58Encode(Buffer.alloc(32)) }),
      record({ durableNonce: true, expired: true, status: 'sent' }),
    ];
    for (const r of edges) expect(roundTrip(r)).toEqual(r);
  });

  it('is compact: ~120 bytes for a typical record, the signature in the key only', () => {
    const r = record();
    const v = encodeStatus(r);
    expect(v.length).toBe(FIXED_BYTES + r.accountId.length + r.keyName.length);
    expect(v.length).toBeLessThanOrEqual(125);
    expect(v[0]).toBe(1);
  });

  it('reads pending and submission time from the value without decoding it', () => {
    expect(isPendingValue(encodeStatus(record()))).toBe(true);
    expect(isPendingValue(encodeStatus(record({ durableNonce: true })))).toBe(true);
    expect(isPendingValue(encodeStatus(record({ expired: true })))).toBe(false);
    expect(isPendingValue(encodeStatus(record({ status: 'confirmed', confirmedAt: 1, latencyMs: 1, slot: 1 })))).toBe(false);
    expect(isPendingValue(encodeStatus(record({ status: 'failed', confirmedAt: 1, slot: 1 })))).toBe(false);
    expect(submittedAtOf(encodeStatus(record({ submittedAt: 1_795_260_350_155 })))).toBe(1_795_260_350_155);
  });

  it('keys a record by the 64 signature bytes, and refuses what is not a signature', () => {
    const bytes = randomBytes(64);
    const sig = base58Encode(bytes);
    expect(statusKey(sig)).toEqual(bytes);
    expect(signatureOfKey(statusKey(sig)!)).toBe(sig);
    // Leading zero bytes are leading '1's: still 64 bytes.
    const zeros = Buffer.concat([Buffer.alloc(5), randomBytes(59)]);
    expect(statusKey(base58Encode(zeros))).toEqual(zeros);
    expect(statusKey(base58Encode(randomBytes(32)))).toBeUndefined();
    expect(statusKey(base58Encode(randomBytes(65)))).toBeUndefined();
    expect(statusKey('0OIl'.repeat(22))).toBeUndefined();
    expect(statusKey('')).toBeUndefined();
  });

  it('refuses fields that do not fit instead of writing them wrong', () => {
    expect(() => encodeStatus(record({ tipLamports: 1n << 64n }))).toThrow(RangeError);
    expect(() => encodeStatus(record({ tipLamports: -1n }))).toThrow(RangeError);
    expect(() => encodeStatus(record({ submittedAt: 1.5 }))).toThrow(/submittedAt/);
    expect(() => encodeStatus(record({ slot: -1 }))).toThrow(/slot/);
    expect(() => encodeStatus(record({ submitSlot: 2 ** 53 }))).toThrow(/submitSlot/);
    expect(() => encodeStatus(record({ recentBlockhash: base58Encode(randomBytes(31)) }))).toThrow(/32/);
    expect(() => encodeStatus(record({ keyName: 'é'.repeat(128) }))).toThrow(/keyName/);
    expect(() => encodeStatus(record({ status: 'landed' as never }))).toThrow(/status/);
    // A value of an unknown layout version is refused, not misread.
    const v = encodeStatus(record());
    v[0] = 2;
    expect(() => decodeStatus('x', v)).toThrow(/version 2/);
    expect(isPendingValue(v)).toBe(false);
  });
});

describe('resend tail (the wire bytes of a pending transaction)', () => {
  const resend = (wire = randomBytes(420), antiMev = true, maxRetries = 3) => ({ wire, antiMev, maxRetries });

  it('round-trips the wire bytes and options of a pending record; the record itself decodes as without it', () => {
    for (const tail of [resend(), resend(randomBytes(1), false, 0), resend(randomBytes(MAX_WIRE_BYTES), true, 10), resend(randomBytes(200), false, 15)]) {
      const r = record({ keyName: 'bot @ zürich' });
      const v = encodeStatus(r, tail);
      expect(v.length).toBe(FIXED_BYTES + Buffer.byteLength(r.accountId) + Buffer.byteLength(r.keyName) + 3 + tail.wire.length);
      expect(resendOf(v)).toEqual(tail);
      expect(decodeStatus(r.signature, v)).toEqual(r);
      expect(isPendingValue(v)).toBe(true);
      expect(submittedAtOf(v)).toBe(r.submittedAt);
    }
    // A durable-nonce transaction keeps it too (it is pending until its nonce moves on).
    expect(resendOf(encodeStatus(record({ durableNonce: true, lastValidBlockHeight: null }), resend()))).not.toBeNull();
  });

  it('is never kept by a settled or expired record: those take exactly the bytes they took before the tail existed', () => {
    const sent = record();
    const settled = [
      { ...sent, status: 'confirmed' as const, confirmedAt: 2, latencyMs: 400, slot: 9 },
      { ...sent, status: 'failed' as const, confirmedAt: 2, slot: 9 },
      { ...sent, expired: true },
    ];
    for (const r of settled) {
      const v = encodeStatus(r, resend());
      expect(v.length).toBe(FIXED_BYTES + sent.accountId.length + sent.keyName.length);
      expect(v).toEqual(encodeStatus(r));
      expect(resendOf(v)).toBeNull();
    }
    expect(resendOf(encodeStatus(sent))).toBeNull();
  });

  it('refuses a tail that does not fit', () => {
    expect(() => encodeStatus(record(), resend(randomBytes(MAX_WIRE_BYTES + 1)))).toThrow(/resend wire/);
    expect(() => encodeStatus(record(), resend(Buffer.alloc(0)))).toThrow(/resend wire/);
    expect(() => encodeStatus(record(), resend(randomBytes(10), true, 16))).toThrow(/maxRetries/);
  });
});

describe('error tail (why a failed transaction failed)', () => {
  const failed = (err: unknown) => record({ status: 'failed', confirmedAt: Date.now(), latencyMs: 512, slot: 77, err });

  it("round-trips the RPC's err of a failed record: fieldless, object and nested forms", () => {
    for (const err of ['InsufficientFundsForFee', { InsufficientFundsForRent: { account_index: 1 } }, { InstructionError: [0, { Custom: 6001 }] }]) {
      const r = failed(err);
      const v = encodeStatus(r);
      expect(v.length).toBe(FIXED_BYTES + r.accountId.length + r.keyName.length + 2 + Buffer.byteLength(JSON.stringify(err)));
      expect(roundTrip(r)).toEqual(r);
      expect(isPendingValue(v)).toBe(false);
    }
  });

  it('decodes a failed record written before the tail existed: no err, every other field as it was', () => {
    const r = failed({ InstructionError: [1, 'InvalidArgument'] });
    const withTail = encodeStatus(r);
    // The value as the earlier layout wrote it: without the error tail and without its flag bit.
    const old = Buffer.from(withTail.subarray(0, withTail.length - 2 - Buffer.byteLength(JSON.stringify(r.err))));
    old[1] = old[1]! & ~0b10_0000;
    const { err: _err, ...rest } = r;
    expect(decodeStatus(r.signature, old)).toEqual(rest);
  });

  it('keeps no err on a record that did not fail, and keeps a huge one as its first bytes', () => {
    const confirmed = record({ status: 'confirmed', confirmedAt: 1, latencyMs: 3, slot: 2, err: { Oops: 1 } });
    expect(roundTrip(confirmed).err).toBeUndefined();
    const huge = roundTrip(failed({ Newer: 'x'.repeat(5_000) }));
    expect(typeof huge.err).toBe('string');
    expect(huge.err as string).toMatch(/^\{"Newer":"x+$/);
  });
});

describe('deadline tail (options.deadline_slot)', () => {
  it('round-trips the deadline beside the other tails, and "deadline passed" on an expired record', () => {
    const wire = randomBytes(300);
    const pending = record({ deadlineSlot: 301_234_600 });
    const v = encodeStatus(pending, { wire, antiMev: true, maxRetries: 5 });
    expect(decodeStatus(pending.signature, v)).toEqual(pending);
    expect(resendOf(v)).toEqual({ wire, antiMev: true, maxRetries: 5 });
    expect(isPendingValue(v)).toBe(true);
    const passed = { ...pending, expired: true, deadlinePassed: true as const };
    expect(roundTrip(passed)).toEqual(passed);
    expect(isPendingValue(encodeStatus(passed))).toBe(false);
    const failed = record({ status: 'failed', confirmedAt: 5, latencyMs: 9, slot: 8, err: { InstructionError: [0, 'InvalidArgument'] }, deadlineSlot: 0 });
    expect(roundTrip(failed)).toEqual(failed);
  });

  it('the resend tail keeps rebroadcast_until_expiry; a tail written before it existed reads as off', () => {
    const wire = randomBytes(200);
    const pending = record();
    expect(resendOf(encodeStatus(pending, { wire, antiMev: false, maxRetries: 3, untilExpiry: true }))).toEqual({ wire, antiMev: false, maxRetries: 3, untilExpiry: true });
    expect(resendOf(encodeStatus(pending, { wire, antiMev: true, maxRetries: 10 }))).toEqual({ wire, antiMev: true, maxRetries: 10 });
  });

  it('a record without a deadline is the bytes it was before the tail existed', () => {
    const r = record();
    expect(encodeStatus(r).length).toBe(FIXED_BYTES + r.accountId.length + r.keyName.length);
    expect(encodeStatus({ ...r, deadlineSlot: 7 }).length).toBe(FIXED_BYTES + r.accountId.length + r.keyName.length + 8);
    expect(roundTrip(r).deadlineSlot).toBeUndefined();
  });
});

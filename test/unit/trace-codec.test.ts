/**
 * The delivery trace's binary form (`src/store/trace-codec.ts`) and the trace model around it
 * (`src/delivery/trace.ts`): round trip, the per-transaction cap, and values it must refuse.
 */
import { Keypair } from '@solana/web3.js';
import { describe, expect, it } from 'vitest';
import { ATTEMPT_OUTCOMES, finalState, MAX_ATTEMPTS, outcomeOf, packAttempt, TraceBuilder, unpackAttempts, type Attempt, type PackedAttempts, type Trace } from '../../src/delivery/trace.js';
import { sentRecord, type StatusRecord } from '../../src/store/records.js';
import { decodeTrace, encodeTrace, REASONS, TraceDecodeError } from '../../src/store/trace-codec.js';

const leaderA = Keypair.generate().publicKey.toBase58();
const leaderB = Keypair.generate().publicKey.toBase58();

function attempt(over: Partial<Attempt>): Attempt {
  return { atUs: 0, slot: 1_000, round: 0, leader: leaderA, tpu: '127.0.0.1:8003', outcome: 'written', closeCode: null, reason: null, ...over };
}

/** One attempt of every outcome, with every optional field both set and unset somewhere. */
const varied: Trace = {
  attempts: [
    attempt({ atUs: 412, outcome: 'written' }),
    attempt({ atUs: 415, leader: leaderB, tpu: '127.0.0.1:8005', outcome: 'pending' }),
    attempt({ atUs: 400_118, slot: 1_001, round: 1, outcome: 'refused', closeCode: 2, reason: 'connection_lost' }),
    attempt({ atUs: 400_120, slot: 1_001, round: 1, leader: leaderB, tpu: '127.0.0.1:8005', outcome: 'backoff', closeCode: 2, reason: 'backoff' }),
    attempt({ atUs: 800_000, slot: 1_002, round: 2, outcome: 'queue_full', reason: 'queue_full' }),
    attempt({ atUs: 800_001, slot: 1_002, round: 2, leader: null, tpu: '[::1]:9001', outcome: 'failed', reason: 'handshake_timeout' }),
    attempt({ atUs: 5, slot: 1_000, leader: leaderB, tpu: null, outcome: 'held' }),
    attempt({ atUs: 1_200_000, slot: 1_004, round: 3, tpu: null, outcome: 'released' }),
    attempt({ atUs: 2 ** 32 + 5, slot: 999, round: 3, outcome: 'written' }),
  ],
  omitted: 0,
};

describe('trace codec', () => {
  it('round-trips every outcome, leader, address, reason and close code', () => {
    const back = decodeTrace(encodeTrace(varied));
    expect(back.omitted).toBe(0);
    // µs past the u32 range saturate; everything else is exact.
    expect(back.attempts).toEqual(varied.attempts.map((a) => (a.atUs >= 2 ** 32 ? { ...a, atUs: 2 ** 32 - 1 } : a)));
    expect(new Set(back.attempts.map((a) => a.outcome))).toEqual(new Set(ATTEMPT_OUTCOMES));
  });

  it('stores each leader once, so a typical trace stays small', () => {
    // A first send to two leaders and three rounds to the same two.
    const typical: Trace = { attempts: [], omitted: 0 };
    for (let round = 0; round < 4; round++) {
      typical.attempts.push(attempt({ round, slot: 1_000 + round }), attempt({ round, slot: 1_000 + round, leader: leaderB, tpu: '127.0.0.1:8005' }));
    }
    const bytes = encodeTrace(typical);
    expect(bytes.length).toBeLessThan(260);
    expect(decodeTrace(bytes)).toEqual(typical);
  });

  it('keeps a slot far above 2^32 and an empty trace', () => {
    const far = { attempts: [attempt({ slot: 2 ** 40 + 3 }), attempt({ slot: 2 ** 40 + 9 })], omitted: 0 };
    expect(decodeTrace(encodeTrace(far))).toEqual(far);
    expect(decodeTrace(encodeTrace({ attempts: [], omitted: 0 }))).toEqual({ attempts: [], omitted: 0 });
  });

  it('stores a reason it does not know as "other", and an identity that is not a public key as unknown', () => {
    const back = decodeTrace(encodeTrace({ attempts: [attempt({ outcome: 'failed', reason: 'a_new_reason', leader: 'not-base58-0OIl' })], omitted: 0 }));
    expect(back.attempts[0]!.reason).toBe('other');
    expect(back.attempts[0]!.leader).toBeNull();
    expect(REASONS[0]).toBe('other');
  });
});

describe('trace cap', () => {
  it('keeps the first MAX_ATTEMPTS attempts and counts the rest', () => {
    const b = new TraceBuilder();
    for (let i = 0; i < MAX_ATTEMPTS + 7; i++) b.push(attempt({ atUs: i, round: Math.floor(i / 2) }));
    expect(b.attempts).toHaveLength(MAX_ATTEMPTS);
    expect(b.omitted).toBe(7);
    const back = decodeTrace(encodeTrace(b));
    expect(back.attempts.map((a) => a.atUs)).toEqual([...Array(MAX_ATTEMPTS).keys()]);
    expect(back.omitted).toBe(7);
  });

  it('cuts a trace handed over longer than the cap at encoding, counting what it cut', () => {
    const long: Trace = { attempts: Array.from({ length: MAX_ATTEMPTS + 3 }, (_, i) => attempt({ atUs: i })), omitted: 2 };
    const back = decodeTrace(encodeTrace(long));
    expect(back.attempts).toHaveLength(MAX_ATTEMPTS);
    expect(back.omitted).toBe(5);
  });
});

describe('bad bytes', () => {
  const good = encodeTrace(varied);
  const cases: Array<[string, Buffer, RegExp]> = [
    ['empty', Buffer.alloc(0), /end inside the header/],
    ['a wrong version', Buffer.concat([Buffer.from([9]), good.subarray(1)]), /unknown layout version 9/],
    ['cut inside an attempt', good.subarray(0, good.length - 3), /end inside 9 attempts/],
    ['cut inside the leader table', good.subarray(0, 20), /end inside leader 0/],
    ['bytes after the last attempt', Buffer.concat([good, Buffer.from([0])]), /1 bytes after the last attempt/],
  ];
  for (const [what, bytes, message] of cases) {
    it(`refuses ${what} with a TraceDecodeError saying why`, () => {
      expect(() => decodeTrace(bytes)).toThrow(TraceDecodeError);
      expect(() => decodeTrace(bytes)).toThrow(message);
    });
  }

  it('refuses an unknown outcome, a leader index past the table, an unknown reason and too many attempts', () => {
    const one = encodeTrace({ attempts: [attempt({ outcome: 'failed', reason: 'deadline' })], omitted: 0 });
    const at = one.length - 14; // the only attempt
    const patched = (offset: number, byte: number): Buffer => {
      const b = Buffer.from(one);
      b[at + offset] = byte;
      return b;
    };
    expect(() => decodeTrace(patched(9, 200))).toThrow(/attempt 0 has unknown outcome 200/);
    expect(() => decodeTrace(patched(10, 7))).toThrow(/attempt 0 names leader 7 of 1/);
    expect(() => decodeTrace(patched(11, 200))).toThrow(/attempt 0 has unknown reason 200/);
    const count = Buffer.from(one);
    count[at - 1] = MAX_ATTEMPTS + 1;
    expect(() => decodeTrace(count)).toThrow(/more than the cap/);
  });
});

describe('first-send packing and the final state', () => {
  it('names an outcome from the send failure: the validator\'s close code makes it a refusal', () => {
    expect(outcomeOf('connection_lost', 2)).toBe('refused');
    expect(outcomeOf('connect_failed', 4)).toBe('refused');
    expect(outcomeOf('connect_failed', null)).toBe('failed');
    expect(outcomeOf('backoff', 2)).toBe('backoff');
    expect(outcomeOf('queue_full', null)).toBe('queue_full');
    expect(outcomeOf('deadline', null)).toBe('failed');
  });

  it('unpacks what the ingress thread packed, resolving leaders by address', () => {
    const packed: PackedAttempts = [];
    packAttempt(packed, '127.0.0.1:8003', 'written', null, 120.4);
    packAttempt(packed, '127.0.0.1:8005', 'refused', 2, 90, 'connection_lost');
    const b = new TraceBuilder();
    unpackAttempts(packed, 77, (tpu) => (tpu === '127.0.0.1:8003' ? leaderA : null), b);
    expect(b.attempts).toEqual([
      attempt({ atUs: 120, slot: 77 }),
      attempt({ atUs: 90, slot: 77, leader: null, tpu: '127.0.0.1:8005', outcome: 'refused', closeCode: 2, reason: 'connection_lost' }),
    ]);
  });

  const base: StatusRecord = sentRecord({
    signature: 'x',
    accountId: 'a',
    keyName: 'k',
    tipLamports: 1n,
    recentBlockhash: 'h',
    durableNonce: false,
    submittedAt: 0,
    submitSlot: 10,
    lastValidBlockHeight: 160,
  });
  it('says why in words: landed, failed, expired with the leaders reached, pending', () => {
    const t = decodeTrace(encodeTrace(varied));
    expect(finalState({ ...base, status: 'confirmed', slot: 12 }, t)).toEqual({ state: 'landed', cause: 'landed in slot 12' });
    expect(finalState({ ...base, status: 'failed', slot: 13 }, t)).toEqual({ state: 'failed', cause: 'failed on chain in slot 13' });
    // Written to leader A only; tried A, B and one address of unknown identity.
    expect(finalState({ ...base, expired: true }, t)).toEqual({
      state: 'expired',
      cause: 'expired: blockhash past last valid block height 160, reached 1 of 3 leaders',
    });
    expect(finalState(base, { attempts: [], omitted: 0 }).state).toBe('pending');
  });
});

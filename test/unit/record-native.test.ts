/**
 * The accepted send's record in one native call (`recordAccepted`, `native/src/record.rs`): the
 * status value it encodes is byte for byte `encodeStatus`'s (and the TypeScript decoder reads it
 * back), the acknowledgement log frame around it carries node:zlib's CRC-32, and the overlay and
 * the usage see the record only once it is logged. `Store.insertAccepted` on top of it: the
 * value committed and the value a dead process's log replays are the same bytes.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, copyFileSync, mkdirSync, openSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { accountSlot, base58Decode, base58Encode, overlay, recordAccepted, usage, utcDay } from '../../src/native.js';
import { parseSegment } from '../../src/store/ack-log.js';
import type { Resend, StatusRecord } from '../../src/store/records.js';
import { acceptedNames, acceptedValueBytes, decodeStatus, encodeStatus, MAX_WIRE_BYTES, resendOf, resendOptionsByte } from '../../src/store/status-codec.js';
import { Store } from '../../src/store/store.js';
import { statusRecord } from '../../harness/records.js';
import { tempDir } from '../../harness/tmp.js';

/** No hand-off queue (`handoffQueue` 0): the record call pushes nothing. */
const NO_TAIL = new Uint8Array(0);

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

/** A wire whose first signature and blockhash are the record's (at offsets 1 and `bhOff`). */
function wireFor(rec: StatusRecord, length: number): { wire: Buffer; key: Buffer; bhOff: number } {
  const wire = randomBytes(Math.max(length, 1 + 64 + 32));
  base58Decode(rec.signature).copy(wire, 1);
  const bhOff = wire.length - 32;
  base58Decode(rec.recentBlockhash).copy(wire, bhOff);
  return { wire, key: wire.subarray(1, 65), bhOff };
}

const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)]!;
const U64_MAX = (1n << 64n) - 1n;

/** Random records and resend options, edge cases first. */
function cases(n: number): { rec: StatusRecord; resend: Resend; wireBytes: number }[] {
  const longAscii = 'a'.repeat(255);
  const longUtf8 = 'é'.repeat(127); // 254 bytes
  const edges: { rec: StatusRecord; resend: Resend; wireBytes: number }[] = [
    { rec: statusRecord({ durableNonce: true, lastValidBlockHeight: null }), resend: { wire: Buffer.alloc(0), antiMev: false, maxRetries: 0 }, wireBytes: 97 },
    { rec: statusRecord({ deadlineSlot: 0 }), resend: { wire: Buffer.alloc(0), antiMev: true, maxRetries: 15, untilExpiry: true }, wireBytes: MAX_WIRE_BYTES },
    { rec: statusRecord({ deadlineSlot: Number.MAX_SAFE_INTEGER, submitSlot: Number.MAX_SAFE_INTEGER, submittedAt: 0 }), resend: { wire: Buffer.alloc(0), antiMev: false, maxRetries: 7, untilExpiry: true }, wireBytes: 500 },
    { rec: statusRecord({ accountId: longAscii, keyName: longUtf8, tipLamports: U64_MAX }), resend: { wire: Buffer.alloc(0), antiMev: true, maxRetries: 3 }, wireBytes: 300 },
    { rec: statusRecord({ accountId: '', keyName: '', tipLamports: 0n, lastValidBlockHeight: 0 }), resend: { wire: Buffer.alloc(0), antiMev: false, maxRetries: 1 }, wireBytes: 200 },
    { rec: statusRecord({ keyName: 'ключ 🔑', lastValidBlockHeight: Number.MAX_SAFE_INTEGER }), resend: { wire: Buffer.alloc(0), antiMev: true, maxRetries: 0 }, wireBytes: 1000 },
  ];
  const random = Array.from({ length: n }, () => {
    const rec = statusRecord({
      accountId: `acc_${randomBytes(Math.floor(Math.random() * 20)).toString('hex')}`,
      keyName: pick(['default', 'bot-1', 'ключ', '']),
      tipLamports: BigInt(Math.floor(Math.random() * 2 ** 53)) * pick([1n, 1000n, 1n << 11n]),
      durableNonce: Math.random() < 0.2,
      submittedAt: Date.now() - Math.floor(Math.random() * 1e9),
      submitSlot: Math.floor(Math.random() * 2 ** 40),
      lastValidBlockHeight: Math.random() < 0.2 ? null : Math.floor(Math.random() * 2 ** 40),
      ...(Math.random() < 0.4 && { deadlineSlot: Math.floor(Math.random() * 2 ** 40) }),
    });
    const resend: Resend = { wire: Buffer.alloc(0), antiMev: Math.random() < 0.5, maxRetries: Math.floor(Math.random() * 16), ...(Math.random() < 0.3 && { untilExpiry: true as const }) };
    return { rec, resend, wireBytes: 97 + Math.floor(Math.random() * (MAX_WIRE_BYTES - 96)) };
  });
  return [...edges, ...random];
}

/** `recordAccepted` of `rec` on `fd`, as `StatusTables.insertAccepted` calls it; the value and the token. */
function record(fd: number, rec: StatusRecord, resend: Resend, wire: Buffer, key: Buffer, bhOff: number, index: number, sync = false): { value: Buffer; token: number } {
  const names = acceptedNames(rec.accountId, rec.keyName);
  const value = Buffer.allocUnsafe(acceptedValueBytes(names, wire.length, rec.deadlineSlot !== undefined));
  const token = recordAccepted(
    fd,
    key,
    wire,
    bhOff,
    names,
    rec.tipLamports,
    rec.submittedAt,
    rec.submitSlot,
    rec.lastValidBlockHeight ?? -1,
    rec.durableNonce,
    rec.deadlineSlot ?? -1,
    resendOptionsByte(resend.antiMev, resend.maxRetries, resend.untilExpiry === true),
    index,
    utcDay(),
    sync,
    value,
    0,
    NO_TAIL,
  );
  return { value, token };
}

describe('recordAccepted', () => {
  it("encodes byte for byte what encodeStatus does (edge cases and 3,000 random records), frames it with node:zlib's CRC-32, and shows and counts it", () => {
    const path = join(tmp.dir, 'seg.log');
    const fd = openSync(path, 'a', 0o600);
    const index = accountSlot('acc_record_native');
    usage.init(index, 0, utcDay(), 0);
    const before = usage.get(index, utcDay())!.total;
    const all = cases(3000);
    const expected: { key: Buffer; value: Buffer }[] = [];
    try {
      for (const [i, { rec, resend, wireBytes }] of all.entries()) {
        const { wire, key, bhOff } = wireFor(rec, wireBytes);
        const tail = { ...resend, wire };
        const { value, token } = record(fd, rec, tail, wire, key, bhOff, index, i < 3);
        const js = encodeStatus(rec, tail);
        if (!value.equals(js)) expect(value.toString('hex'), `record ${i}`).toBe(js.toString('hex'));
        expect(decodeStatus(rec.signature, value)).toEqual(rec);
        const back = resendOf(value)!;
        expect(back.wire.equals(wire)).toBe(true);
        expect({ ...back, wire: null }).toEqual({ ...tail, wire: null });
        expect(overlay.get(key)?.equals(value)).toBe(true);
        expect(overlay.release(key, token)).toBe(true);
        expect(base58Encode(key)).toBe(rec.signature);
        expected.push({ key: Buffer.from(key), value });
      }
    } finally {
      closeSync(fd);
    }
    expect(usage.get(index, utcDay())!.total - before).toBe(all.length);
    const file = readFileSync(path);
    // The frame: u32 LE payload length, u32 LE CRC-32 (node:zlib's) of key + value.
    const first = Buffer.concat([expected[0]!.key, expected[0]!.value]);
    expect(file.readUInt32LE(0)).toBe(first.length);
    expect(file.readUInt32LE(4)).toBe(crc32(first));
    const { records, torn } = parseSegment(file); // checks every frame's CRC with node:zlib
    expect(torn).toBe(false);
    const hex = (rs: { key: Buffer; value: Buffer }[]): string[] => rs.map((r) => `${r.key.toString('hex')}:${r.value.toString('hex')}`);
    expect(hex(records)).toEqual(hex(expected));
  });

  it('refuses a record that cannot be stored (RECORD_INVALID) and a failed write (its errno) without touching the log, the overlay or the usage', () => {
    const path = join(tmp.dir, 'seg.log');
    const fd = openSync(path, 'a', 0o600);
    const index = accountSlot('acc_record_native_refused');
    usage.init(index, 0, utcDay(), 0);
    const rec = statusRecord();
    const { wire, key, bhOff } = wireFor(rec, 300);
    const resend: Resend = { wire, antiMev: false, maxRetries: 3 };
    const code = (f: () => unknown): unknown => {
      try {
        f();
      } catch (e) {
        return (e as { code?: unknown }).code;
      }
      return 'no error';
    };
    try {
      const bad: [string, () => unknown][] = [
        ['a tip over u64', () => record(fd, { ...rec, tipLamports: U64_MAX + 1n }, resend, wire, key, bhOff, index)],
        ['a negative tip', () => record(fd, { ...rec, tipLamports: -1n }, resend, wire, key, bhOff, index)],
        ['a fractional slot', () => record(fd, { ...rec, submitSlot: 1.5 }, resend, wire, key, bhOff, index)],
        ['a time past 2^53', () => record(fd, { ...rec, submittedAt: 2 ** 53 }, resend, wire, key, bhOff, index)],
        ['a blockhash past the wire', () => record(fd, rec, resend, wire, key, wire.length - 31, index)],
        ['a short key', () => record(fd, rec, resend, wire, key.subarray(0, 63), bhOff, index)],
        ['a usage index out of range', () => record(fd, rec, resend, wire, key, bhOff, 40_000)],
        ['a wire over 1232 bytes', () => record(fd, rec, { ...resend, wire: Buffer.alloc(1233) }, Buffer.alloc(1233), key, bhOff, index)],
        [
          'a value buffer of the wrong length',
          () => {
            const names = acceptedNames(rec.accountId, rec.keyName);
            return recordAccepted(fd, key, wire, bhOff, names, rec.tipLamports, 1, 1, -1, false, -1, 0, index, 1, false, Buffer.alloc(10), 0, NO_TAIL);
          },
        ],
        [
          'names that do not frame',
          () => {
            const value = Buffer.alloc(acceptedValueBytes(Buffer.alloc(5), wire.length, false));
            return recordAccepted(fd, key, wire, bhOff, Buffer.from([9, 1, 1, 0, 0]), rec.tipLamports, 1, 1, -1, false, -1, 0, index, 1, false, value, 0, NO_TAIL);
          },
        ],
        ['undefined resend option bits', () => recordAccepted(fd, key, wire, bhOff, acceptedNames('a', 'b'), 1n, 1, 1, -1, false, -1, 0b100, index, 1, false, Buffer.alloc(acceptedValueBytes(acceptedNames('a', 'b'), wire.length, false)), 0, NO_TAIL)],
      ];
      for (const [what, f] of bad) expect(code(f), what).toBe('RECORD_INVALID');
      // The file descriptor of no file: the errno's name, as node:fs names it.
      expect(code(() => record(999_999, rec, resend, wire, key, bhOff, index))).toBe('EBADF');
    } finally {
      closeSync(fd);
    }
    expect(statSync(path).size).toBe(0);
    expect(overlay.get(key)).toBeNull();
    expect(usage.get(index, utcDay())!.total).toBe(0);
    // The JavaScript checks in front of it say the same as encodeStatus.
    expect(() => acceptedNames('x'.repeat(256), 'k')).toThrow(RangeError);
    expect(() => acceptedNames('a', 'é'.repeat(128))).toThrow(RangeError);
    expect(() => resendOptionsByte(false, 16, false)).toThrow(RangeError);
  });
});

/** A pid and start time of a process that has exited (its pid may be reused: the start time tells). */
function deadWriter(): string {
  const r = spawnSync('sh', ['-c', 'echo $$; cut -d" " -f22 /proc/$$/stat'], { encoding: 'utf8' });
  const [pid, start] = r.stdout.trim().split('\n');
  return `${pid}-${start}`;
}

describe('Store.insertAccepted', () => {
  it('commits the bytes encodeStatus would, counts the send once, and a dead process replays the same bytes from its log', async () => {
    const live = Store.open(join(tmp.dir, 'live'), { commitWindowMs: 10 });
    const dataDir = join(tmp.dir, 'replayed');
    const account = 'acc_insert_accepted';
    const index = accountSlot(account);
    usage.init(index, 0, utcDay(), 0);
    const sent = cases(50).map(({ rec, resend, wireBytes }) => {
      const r = { ...rec, accountId: account, submittedAt: Date.now() };
      const { wire, key, bhOff } = wireFor(r, wireBytes);
      return { rec: r, key, wire, bhOff, resend: { ...resend, wire } };
    });
    try {
      for (const s of sent) {
        const o = resendOptionsByte(s.resend.antiMev, s.resend.maxRetries, s.resend.untilExpiry === true);
        live.insertAccepted(s.rec, s.key, s.wire, s.bhOff, acceptedNames(account, s.rec.keyName), o, index, utcDay());
      }
      expect(usage.get(index, utcDay())!.total).toBe(sent.length);
      for (const s of sent) expect(live.getStatus(s.rec.signature)).toEqual(s.rec);
      await live.flushed();
      live.root.resetReadTxn();
      for (const s of sent) expect(live.status.getBinary(s.key)?.equals(encodeStatus(s.rec, s.resend))).toBe(true);
      // Its log, as a process killed before the commit would have left it.
      mkdirSync(join(dataDir, 'acks'), { recursive: true });
      const writer = deadWriter();
      for (const name of readdirSync(join(live.path, 'acks'))) copyFileSync(join(live.path, 'acks', name), join(dataDir, 'acks', name.replace(/^\d+-\d+/, writer)));
    } finally {
      await live.close();
    }
    const restarted = Store.open(dataDir);
    try {
      const recovered = restarted.recoverAcknowledged();
      expect(recovered.map((r) => r.signature).sort()).toEqual(sent.map((s) => s.rec.signature).sort());
      restarted.root.resetReadTxn();
      for (const s of sent) expect(restarted.status.getBinary(s.key)?.equals(encodeStatus(s.rec, s.resend))).toBe(true);
      expect(restarted.getUsage(account)?.total).toBe(sent.length);
      const pending = new Map([...restarted.pendingEntries()].map((p) => [p.signature, p.resend]));
      for (const s of sent) expect(pending.get(s.rec.signature)).toEqual(s.resend);
    } finally {
      await restarted.close();
    }
  });
});

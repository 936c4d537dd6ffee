/**
 * An independent, deliberately simple reference for the Solana wire format (legacy + v0) and the
 * validator's sanitize rules (agave `transaction-view`: frame, then sanitize signatures, account
 * access, instructions, lookups). Tests use it only to *classify* mutated bytes ("does this
 * still frame and sanitize?"); it shares no code with the native parser.
 */

export const PACKET_DATA_SIZE = 1232;

/** Encode `n` (0..0xffff) as a minimal compact-u16 ("short vec" length). */
export function compactU16(n: number): number[] {
  if (!Number.isInteger(n) || n < 0 || n > 0xffff) throw new RangeError(`compact-u16 out of range: ${n}`);
  const out: number[] = [];
  let v = n;
  for (;;) {
    const low = v & 0x7f;
    v >>= 7;
    if (v === 0) {
      out.push(low);
      return out;
    }
    out.push(low | 0x80);
  }
}

class Reject extends Error {
  constructor(readonly code: string) {
    super(code);
  }
}

class Reader {
  off = 0;
  constructor(readonly bytes: Uint8Array) {}
  byte(): number {
    const b = this.bytes[this.off];
    if (b === undefined) throw new Reject('MALFORMED');
    this.off += 1;
    return b;
  }
  skip(n: number): number {
    const start = this.off;
    if (start + n > this.bytes.length) throw new Reject('MALFORMED');
    this.off += n;
    return start;
  }
  compact(): number {
    let value = 0;
    for (let i = 0; i < 3; i++) {
      const b = this.byte();
      // Non-minimal: a continuation that ends in a zero byte; over 16 bits: third byte > 3.
      if (i > 0 && b === 0) throw new Reject('MALFORMED');
      if (i === 2 && b > 3) throw new Reject('MALFORMED');
      value |= (b & 0x7f) << (7 * i);
      if ((b & 0x80) === 0) return value;
    }
    throw new Reject('MALFORMED');
  }
}

export interface ReferenceInstruction {
  programIndex: number;
  accounts: number[];
  dataStart: number;
  dataEnd: number;
}

export interface ReferenceView {
  numSignatures: number;
  signaturesStart: number;
  messageStart: number;
  version: 'legacy' | 'v0';
  header: [number, number, number];
  numStaticKeys: number;
  staticKeysStart: number;
  blockhashStart: number;
  instructions: ReferenceInstruction[];
  lookups: { tableStart: number; writable: number[]; readonly: number[] }[];
}

export type ReferenceVerdict = { ok: true; view: ReferenceView } | { ok: false; code: string };

/**
 * Frame and sanitize `bytes` by the validator's rules. `ok: true` means the bytes are a
 * well-formed transaction whose only remaining check is the signatures.
 */
export function referenceSanitize(bytes: Uint8Array): ReferenceVerdict {
  try {
    return { ok: true, view: frameAndSanitize(bytes) };
  } catch (e) {
    if (e instanceof Reject) return { ok: false, code: e.code };
    throw e;
  }
}

function frameAndSanitize(bytes: Uint8Array): ReferenceView {
  if (bytes.length > PACKET_DATA_SIZE) throw new Reject('TOO_LARGE');
  const r = new Reader(bytes);
  const numSignatures = r.compact();
  // Each signature needs 64 bytes plus a 32-byte static key: at most 12 fit a packet.
  if (numSignatures * 96 > PACKET_DATA_SIZE) throw new Reject('MALFORMED');
  const signaturesStart = r.skip(numSignatures * 64);
  const messageStart = r.off;
  const first = r.byte();
  let version: 'legacy' | 'v0' = 'legacy';
  let numRequired = first;
  if (first & 0x80) {
    if ((first & 0x7f) !== 0) throw new Reject('UNSUPPORTED_VERSION');
    version = 'v0';
    numRequired = r.byte();
  }
  const roSigned = r.byte();
  const roUnsigned = r.byte();
  const numStaticKeys = r.compact();
  if (numStaticKeys > 256) throw new Reject('TOO_MANY_ACCOUNTS');
  const staticKeysStart = r.skip(numStaticKeys * 32);
  const blockhashStart = r.skip(32);
  const numInstructions = r.compact();
  const instructions: ReferenceInstruction[] = [];
  for (let i = 0; i < numInstructions; i++) {
    const programIndex = r.byte();
    const na = r.compact();
    const accStart = r.skip(na);
    const accounts = Array.from(bytes.subarray(accStart, accStart + na));
    const nd = r.compact();
    const dataStart = r.skip(nd);
    instructions.push({ programIndex, accounts, dataStart, dataEnd: dataStart + nd });
  }
  const lookups: ReferenceView['lookups'] = [];
  if (version === 'v0') {
    const n = r.compact();
    for (let i = 0; i < n; i++) {
      const tableStart = r.skip(32);
      const nw = r.compact();
      const w = r.skip(nw);
      const nr = r.compact();
      const ro = r.skip(nr);
      lookups.push({
        tableStart,
        writable: Array.from(bytes.subarray(w, w + nw)),
        readonly: Array.from(bytes.subarray(ro, ro + nr)),
      });
    }
  }
  if (r.off !== bytes.length) throw new Reject('MALFORMED');

  // Sanitize: signatures.
  if (numSignatures !== numRequired) throw new Reject('SIGNATURE_COUNT_MISMATCH');
  if (numStaticKeys < numSignatures) throw new Reject('SIGNATURE_COUNT_MISMATCH');
  // Account access.
  if (roUnsigned > numStaticKeys - numRequired) throw new Reject('INVALID_HEADER');
  if (roSigned >= numRequired) throw new Reject('INVALID_HEADER');
  const total =
    numStaticKeys + lookups.reduce((s, l) => s + l.writable.length + l.readonly.length, 0);
  if (total > 256) throw new Reject('TOO_MANY_ACCOUNTS');
  // Instructions.
  for (const ix of instructions) {
    if (ix.programIndex >= numStaticKeys || ix.programIndex === 0) throw new Reject('INVALID_PROGRAM_INDEX');
    if (ix.accounts.some((a) => a >= total)) throw new Reject('INVALID_ACCOUNT_INDEX');
  }
  // Lookups.
  if (lookups.some((l) => l.writable.length === 0 && l.readonly.length === 0)) throw new Reject('EMPTY_LOOKUP');

  return {
    numSignatures,
    signaturesStart,
    messageStart,
    version,
    header: [numRequired, roSigned, roUnsigned],
    numStaticKeys,
    staticKeysStart,
    blockhashStart,
    instructions,
    lookups,
  };
}

/** Assemble a wire transaction from signatures and message bytes (count prefix overridable). */
export function assemble(signatures: Uint8Array[], message: Uint8Array, countPrefix?: number[]): Uint8Array {
  const prefix = countPrefix ?? compactU16(signatures.length);
  const out = new Uint8Array(prefix.length + signatures.length * 64 + message.length);
  out.set(prefix, 0);
  signatures.forEach((s, i) => {
    if (s.length !== 64) throw new RangeError('signature must be 64 bytes');
    out.set(s, prefix.length + i * 64);
  });
  out.set(message, prefix.length + signatures.length * 64);
  return out;
}

/** Concatenate byte arrays. */
export function concat(...parts: (Uint8Array | number[])[]): Uint8Array {
  const len = parts.reduce((s, p) => s + p.length, 0);
  const out = new Uint8Array(len);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** A copy of `bytes` with bit `bit` of byte `offset` flipped. */
export function flipBit(bytes: Uint8Array, offset: number, bit = 0): Uint8Array {
  const out = Uint8Array.from(bytes);
  const b = out[offset];
  if (b === undefined) throw new RangeError(`offset ${offset} out of range`);
  out[offset] = b ^ (1 << bit);
  return out;
}

/** Seeded PRNG (mulberry32): reproducible random tests. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Random integer in [0, n) from `rand`. */
export function randInt(rand: () => number, n: number): number {
  return Math.floor(rand() * n);
}

/** Random bytes from a seeded PRNG. */
export function randomBytesFrom(rand: () => number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = randInt(rand, 256);
  return out;
}

/** Fisher–Yates shuffle with a seeded PRNG (returns a new array). */
export function shuffle<T>(items: readonly T[], rand: () => number): T[] {
  const out = items.slice();
  for (let i = out.length - 1; i > 0; i--) {
    const j = randInt(rand, i + 1);
    const a = out[i] as T;
    out[i] = out[j] as T;
    out[j] = a;
  }
  return out;
}

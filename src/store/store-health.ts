/**
 * Whether the store can commit, known to every thread of the process at once.
 *
 * Every thread (the main one and each ingress thread) has its own `Store` on the one LMDB
 * environment, and any of them may be the first to meet a full disk or a failed commit. The
 * state is one small SharedArrayBuffer that the main thread creates and hands to every ingress
 * thread (`IngressInit.storeHealth`, like the stream counters): a send on any thread reads one
 * Int32 (`Atomics.load`) to know whether it may be accepted, with no message and no lock. The
 * first thread that finds the store unable to write marks it (compare-and-swap, so one reason
 * wins and is kept); only the main thread's probe (`Store.startProbe`) clears it, once the
 * filesystem has room again and a probe write committed.
 *
 * Why not native state: the flag, a time, two counters and a short text fit a SharedArrayBuffer,
 * which every thread already knows how to receive, and changing them needs no addon rebuild.
 *
 * Layout (all fields in one place):
 *
 * | bytes  | field                                                                          |
 * |--------|--------------------------------------------------------------------------------|
 * | 0–3    | state: 0 available, 1 unavailable, 2 a writer is changing the fields           |
 * | 4–7    | generation, bumped by every change (a reader retries if it moved under it)      |
 * | 8–11   | reason length, bytes                                                           |
 * | 12–15  | writes refused or failed since the store became unavailable                    |
 * | 16–23  | since when unavailable, ms since the epoch (BigInt64)                          |
 * | 24–31  | free bytes on the data directory's filesystem at the last check, −1 unknown    |
 * | 32–    | reason, UTF-8, at most `REASON_BYTES`                                          |
 */

const STATE = 0;
const GENERATION = 1;
const REASON_LENGTH = 2;
const REFUSED = 3;
/** BigInt64Array indexes. */
const SINCE = 2;
const FREE = 3;
const REASON_OFFSET = 32;
const REASON_BYTES = 480;
const BYTES = REASON_OFFSET + REASON_BYTES;

const AVAILABLE = 0;
const UNAVAILABLE = 1;
const WRITING = 2;

/** What `/health` shows of the store. */
export interface StoreHealthView {
  available: boolean;
  /** Why the store cannot commit (null while it can). */
  reason: string | null;
  /** Since when, ISO-8601 UTC (null while available). */
  since: string | null;
  /** Free bytes on the data directory's filesystem at the last check (null before the first). */
  free_bytes: number | null;
  /** Writes refused or failed since it became unavailable (0 while available). */
  refused_writes: number;
}

export class StoreHealth {
  readonly buffer: SharedArrayBuffer;
  private readonly i32: Int32Array;
  private readonly i64: BigInt64Array;
  private readonly bytes: Uint8Array;

  /** @param shared the `buffer` of another thread's `StoreHealth`, or none for a new one */
  constructor(shared?: SharedArrayBuffer) {
    this.buffer = shared ?? new SharedArrayBuffer(BYTES);
    this.i32 = new Int32Array(this.buffer, 0, 4);
    this.i64 = new BigInt64Array(this.buffer, 0, 4);
    this.bytes = new Uint8Array(this.buffer, REASON_OFFSET, REASON_BYTES);
    if (!shared) Atomics.store(this.i64, FREE, -1n);
  }

  /** Fast path of every send: one atomic load. */
  get available(): boolean {
    return Atomics.load(this.i32, STATE) === AVAILABLE;
  }

  /**
   * Mark the store unavailable for `reason`. Returns true if this call made the change (the
   * caller logs it); false if it already was unavailable (the first reason is kept, the write
   * is counted as refused).
   */
  markUnavailable(reason: string, now = Date.now()): boolean {
    if (Atomics.compareExchange(this.i32, STATE, AVAILABLE, WRITING) !== AVAILABLE) {
      Atomics.add(this.i32, REFUSED, 1);
      return false;
    }
    this.writeReason(reason);
    Atomics.store(this.i64, SINCE, BigInt(now));
    Atomics.store(this.i32, REFUSED, 1);
    Atomics.add(this.i32, GENERATION, 1);
    Atomics.store(this.i32, STATE, UNAVAILABLE);
    return true;
  }

  /**
   * Replace the reason while unavailable (lmdb-js reports a failed commit first as "Commit
   * failed" and the errno a moment later). No-op if the store is available or being changed.
   */
  refineReason(reason: string): void {
    if (Atomics.compareExchange(this.i32, STATE, UNAVAILABLE, WRITING) !== UNAVAILABLE) return;
    this.writeReason(reason);
    Atomics.add(this.i32, GENERATION, 1);
    Atomics.store(this.i32, STATE, UNAVAILABLE);
  }

  /**
   * The store can commit again (main thread's probe only). Returns how long it was unavailable
   * and how many writes it refused meanwhile, or null if it was not unavailable.
   */
  markAvailable(now = Date.now()): { unavailableMs: number; refused: number } | null {
    if (Atomics.compareExchange(this.i32, STATE, UNAVAILABLE, WRITING) !== UNAVAILABLE) return null;
    const since = Number(Atomics.load(this.i64, SINCE));
    const refused = Atomics.load(this.i32, REFUSED);
    Atomics.store(this.i32, REFUSED, 0);
    Atomics.store(this.i32, REASON_LENGTH, 0);
    Atomics.add(this.i32, GENERATION, 1);
    Atomics.store(this.i32, STATE, AVAILABLE);
    return { unavailableMs: now - since, refused };
  }

  /** A write was refused because the store is unavailable. */
  countRefused(): void {
    Atomics.add(this.i32, REFUSED, 1);
  }

  /** Free bytes found by the last space check. */
  setFreeBytes(n: number): void {
    Atomics.store(this.i64, FREE, BigInt(Math.max(0, Math.floor(n))));
  }

  /** Why and since when the store is unavailable; null while it is available. */
  unavailable(): { reason: string; since: number } | null {
    for (;;) {
      const generation = Atomics.load(this.i32, GENERATION);
      const state = Atomics.load(this.i32, STATE);
      if (state === AVAILABLE) return null;
      if (state === WRITING) continue; // a few stores away from done
      const length = Atomics.load(this.i32, REASON_LENGTH);
      const reason = Buffer.from(this.bytes.slice(0, length)).toString('utf8');
      const since = Number(Atomics.load(this.i64, SINCE));
      if (Atomics.load(this.i32, GENERATION) === generation) return { reason, since };
    }
  }

  view(): StoreHealthView {
    const u = this.unavailable();
    const free = Atomics.load(this.i64, FREE);
    return {
      available: u === null,
      reason: u?.reason ?? null,
      since: u === null ? null : new Date(u.since).toISOString(),
      free_bytes: free < 0n ? null : Number(free),
      refused_writes: u === null ? 0 : Atomics.load(this.i32, REFUSED),
    };
  }

  private writeReason(reason: string): void {
    const encoded = Buffer.from(reason, 'utf8');
    let n = Math.min(encoded.length, REASON_BYTES);
    // Never cut a UTF-8 sequence in half.
    while (n > 0 && n < encoded.length && (encoded[n]! & 0xc0) === 0x80) n--;
    this.bytes.set(encoded.subarray(0, n));
    Atomics.store(this.i32, REASON_LENGTH, n);
  }
}

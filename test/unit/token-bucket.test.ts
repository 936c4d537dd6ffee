/**
 * The process-wide native token buckets, through `buckets` (src/native.ts).
 *
 * Expectations follow from the configuration: at `rate` tokens per second one token takes
 * 1/rate seconds, the burst is `capacity`, a take is all or nothing. Most tests use a very slow
 * rate (0.01/s: one token per 100 s) so no refill can happen while they run and every number is
 * exact. The table is process-wide: every test uses its own slots.
 */
import { describe, expect, it } from 'vitest';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { buckets } from '../../src/native.js';
import { LandfallError } from '../../src/errors.js';
import { startWorker } from '../../harness/worker.js';

let nextSlot = 20_000;
/** A slot no other test uses. */
const freshSlot = (): number => nextSlot++;

/** 0.01 tokens per second: 100 s per token, 100 000 ms. */
const SLOW = 0.01;
const SLOW_MS_PER_TOKEN = 100_000;

function slowBucket(capacity: number): number {
  const s = freshSlot();
  buckets.configure(s, SLOW, capacity);
  buckets.reset(s);
  return s;
}

describe('token bucket semantics', () => {
  it('burst equals capacity: that many takes are granted, counting down, then refused', () => {
    const s = slowBucket(10);
    expect(buckets.available(s)).toBe(10);
    for (let i = 9; i >= 0; i--) expect(buckets.take(s, 1)).toBe(i);
    expect(buckets.available(s)).toBe(0);

    const r = buckets.take(s, 1);
    // Refused: minus the seconds until one token is back (at most 100 s, and it has barely started).
    expect(r).toBeLessThan(0);
    expect(-r).toBeLessThanOrEqual(SLOW_MS_PER_TOKEN / 1000);
    expect(-r).toBeGreaterThan(SLOW_MS_PER_TOKEN / 1000 - 5);

    const d = buckets.takeDetailed(s, 1);
    expect(d.granted).toBe(false);
    expect(d.remaining).toBe(0);
    expect(d.retryAfterMs).toBeGreaterThan(0);
    expect(d.retryAfterMs).toBeLessThanOrEqual(SLOW_MS_PER_TOKEN);
    expect(d.retryAfterMs).toBeGreaterThan(SLOW_MS_PER_TOKEN - 5_000);
    // Full again once all 10 tokens are back: just under 10 × 100 s.
    expect(d.resetMs).toBeLessThanOrEqual(10 * SLOW_MS_PER_TOKEN);
    expect(d.resetMs).toBeGreaterThan(10 * SLOW_MS_PER_TOKEN - 5_000);
  });

  it('takeDetailed on a granted take: remaining, retryAfterMs 0, resetMs = time the used tokens take to refill', () => {
    const s = slowBucket(10);
    const d = buckets.takeDetailed(s, 3);
    expect(d).toMatchObject({ granted: true, remaining: 7, retryAfterMs: 0 });
    expect(d.resetMs).toBeLessThanOrEqual(3 * SLOW_MS_PER_TOKEN);
    expect(d.resetMs).toBeGreaterThan(3 * SLOW_MS_PER_TOKEN - 5_000);
  });

  it('take of n is all or nothing', () => {
    const s = slowBucket(10);
    expect(buckets.take(s, 6)).toBe(4);
    // 6 more do not fit: refused, and nothing is taken.
    expect(buckets.take(s, 6)).toBeLessThan(0);
    expect(buckets.available(s)).toBe(4);
    const d = buckets.takeDetailed(s, 6);
    expect(d.granted).toBe(false);
    expect(d.remaining).toBe(4);
    // Two more tokens are needed: just under 2 × 100 s.
    expect(d.retryAfterMs).toBeLessThanOrEqual(2 * SLOW_MS_PER_TOKEN);
    expect(d.retryAfterMs).toBeGreaterThan(2 * SLOW_MS_PER_TOKEN - 5_000);
    expect(buckets.available(s)).toBe(4);
    // Exactly what is left is granted.
    expect(buckets.take(s, 4)).toBe(0);
    expect(buckets.take(s, 1)).toBeLessThan(0);
  });

  it('n = capacity is granted from a full bucket; n > capacity can never be granted', () => {
    const s = freshSlot();
    buckets.configure(s, 1000, 5);
    buckets.reset(s);
    expect(buckets.take(s, 6)).toBe(-Infinity);
    const d = buckets.takeDetailed(s, 6);
    expect(d.granted).toBe(false);
    expect(d.retryAfterMs).toBe(Infinity);
    // The refused takes took nothing: the full burst is still there.
    expect(buckets.available(s)).toBe(5);
    expect(buckets.take(s, 5)).toBe(0);
    expect(buckets.take(s, 1_000_000)).toBe(-Infinity);
  });

  it('n > capacity is never granted, however large n is, even at a slow rate', () => {
    const s = slowBucket(10);
    const nsPerToken = 1e9 / SLOW; // 1e11 ns
    // Up to the largest u32, including the first n whose cost in nanoseconds passes 2^64.
    const ns = [11, 2 ** 24, Math.ceil(2 ** 64 / nsPerToken), 2 ** 31, 2 ** 32 - 1];
    for (const n of ns) {
      expect(buckets.take(s, n), `take(${n})`).toBe(-Infinity);
      const d = buckets.takeDetailed(s, n);
      expect(d.granted, `takeDetailed(${n})`).toBe(false);
      expect(d.retryAfterMs, `takeDetailed(${n})`).toBe(Infinity);
      expect(buckets.available(s), `after take(${n})`).toBe(10);
    }
  });

  it('numbers beyond u32 are refused, never wrapped onto another slot, capacity or count', () => {
    const s = slowBucket(3);
    const invalidConfigure = (slot: number, capacity: number): unknown => {
      try {
        buckets.configure(slot, SLOW, capacity);
      } catch (e) {
        return e;
      }
      return undefined;
    };
    // Slot 2^32 + s is not slot s (it is ≥ buckets.slots).
    const e1 = invalidConfigure(2 ** 32 + s, 7);
    expect.soft(e1, 'configure(2^32 + s)').toBeInstanceOf(LandfallError);
    expect.soft(buckets.available(s), 'slot s after configure(2^32 + s)').toBe(3);
    // Capacity 2^32 + 3 is not capacity 3 (it is above the maximum).
    buckets.configure(s, SLOW, 3);
    const e2 = invalidConfigure(s, 2 ** 32 + 5);
    expect.soft(e2, 'configure(capacity 2^32 + 5)').toBeInstanceOf(LandfallError);
    // A take of 2^32 or 2^32 + 1 tokens (> capacity) is not a take of 0 or 1.
    buckets.configure(s, SLOW, 3);
    buckets.reset(s);
    for (const n of [2 ** 32, 2 ** 32 + 1]) {
      let r: number | undefined;
      try {
        r = buckets.take(s, n);
      } catch {
        r = undefined; // refusing the argument is fine
      }
      if (r !== undefined) expect.soft(r, `take(${n})`).toBeLessThan(0);
      expect.soft(buckets.available(s), `after take(${n})`).toBe(3);
    }
  });

  it('a refused take tells the truth: after retryAfterMs the take is granted', async () => {
    const s = freshSlot();
    buckets.configure(s, 50, 1); // one token per 20 ms
    buckets.reset(s);
    expect(buckets.take(s, 1)).toBe(0);
    const d = buckets.takeDetailed(s, 1);
    const refusedAt = performance.now(); // after the refusal
    expect(d.granted).toBe(false);
    expect(d.retryAfterMs).toBeGreaterThan(0);
    expect(d.retryAfterMs).toBeLessThanOrEqual(20);
    // Wait at least retryAfterMs by the monotonic clock (timers alone may fire a little early).
    await sleep(Math.ceil(d.retryAfterMs) + 1);
    while (performance.now() - refusedAt < d.retryAfterMs + 1) await sleep(1);
    expect(buckets.takeDetailed(s, 1).granted).toBe(true);
  });

  it('reset refills to capacity', () => {
    const s = slowBucket(7);
    expect(buckets.take(s, 7)).toBe(0);
    expect(buckets.available(s)).toBe(0);
    buckets.reset(s);
    expect(buckets.available(s)).toBe(7);
  });

  it('an unconfigured slot never grants; an out-of-range slot refuses without throwing', () => {
    const s = freshSlot();
    expect(buckets.take(s, 1)).toBe(-Infinity);
    expect(buckets.takeDetailed(s, 1).retryAfterMs).toBe(Infinity);
    expect(buckets.available(s)).toBe(0);
    expect(buckets.take(buckets.slots, 1)).toBe(-Infinity);
    expect(buckets.available(buckets.slots)).toBe(0);
    expect(() => buckets.reset(buckets.slots)).toThrow();
  });

  it('invalid configuration throws LandfallError BUCKET_INVALID and leaves the bucket as it was', () => {
    const s = slowBucket(3);
    expect(buckets.take(s, 1)).toBe(2);
    const invalid: [string, number, number, number][] = [
      ['rate 0', s, 0, 3],
      ['rate NaN', s, Number.NaN, 3],
      ['rate negative', s, -5, 3],
      ['rate Infinity', s, Number.POSITIVE_INFINITY, 3],
      ['capacity 0', s, 1, 0],
      ['capacity 2^24', s, 1, 2 ** 24],
      ['slot = slots', buckets.slots, 1, 1],
      ['slot > slots', buckets.slots + 7, 1, 1],
    ];
    for (const [what, slot, rate, capacity] of invalid) {
      let thrown: unknown;
      try {
        buckets.configure(slot, rate, capacity);
      } catch (e) {
        thrown = e;
      }
      expect(thrown, what).toBeInstanceOf(LandfallError);
      expect((thrown as LandfallError).code, what).toBe('BUCKET_INVALID');
    }
    // Still 0.01/s with capacity 3, 2 tokens left.
    expect(buckets.available(s)).toBe(2);
    expect(buckets.take(s, 3)).toBeLessThan(0);
    // The last slot and the largest capacity are valid.
    expect(buckets.slots).toBeGreaterThan(0);
    expect(() => buckets.configure(buckets.slots - 1, 1, 2 ** 24 - 1)).not.toThrow();
  });

  it('live reconfigure: a larger capacity applies to the very next take, tokens in use stay in use', () => {
    const s = slowBucket(4);
    expect(buckets.take(s, 4)).toBe(0);
    expect(buckets.take(s, 1)).toBeLessThan(0);
    buckets.configure(s, SLOW, 10);
    // 4 of 10 in use: the next take is granted and leaves 5.
    expect(buckets.take(s, 1)).toBe(5);
  });

  it('live reconfigure: a higher rate applies to the very next take, tokens in use stay in use', () => {
    const s = slowBucket(4);
    expect(buckets.take(s, 4)).toBe(0);
    expect(buckets.take(s, 1)).toBeLessThan(0);
    buckets.configure(s, 2 * SLOW, 8);
    // 4 of 8 in use.
    expect(buckets.take(s, 1)).toBe(3);
    expect(buckets.available(s)).toBe(3);
  });

  it('live reconfigure to a smaller capacity: the bucket is then a bucket of that capacity', () => {
    // 8 of 10 tokens in use, then capacity 4: at most 4 can be in use, so the bucket is empty,
    // one token is back after one token interval and it is full again within capacity / rate.
    for (const newRate of [SLOW, 2 * SLOW]) {
      const s = slowBucket(10);
      expect(buckets.take(s, 8)).toBe(2);
      buckets.configure(s, newRate, 4);
      const msPerToken = 1000 / newRate;
      expect.soft(buckets.available(s), `rate ${newRate}: available`).toBe(0);
      const d = buckets.takeDetailed(s, 1);
      expect.soft(d.granted, `rate ${newRate}: granted`).toBe(false);
      expect.soft(d.retryAfterMs, `rate ${newRate}: retryAfterMs`).toBeLessThanOrEqual(msPerToken);
      expect.soft(d.resetMs, `rate ${newRate}: resetMs`).toBeLessThanOrEqual(4 * msPerToken);
    }
  });

  it('live reconfigure: a plan upgrade (8/s → 150/s) takes effect at once', () => {
    const s = freshSlot();
    buckets.configure(s, 8, 8);
    buckets.reset(s);
    let granted = 0;
    while (buckets.take(s, 1) >= 0) granted++;
    expect(granted).toBeGreaterThanOrEqual(8);
    buckets.configure(s, 150, 150);
    const r = buckets.take(s, 1);
    // At most the 8 tokens used stay in use (less whatever refilled meanwhile).
    expect(r).toBeGreaterThanOrEqual(150 - 8 - 2);
    expect(r).toBeLessThanOrEqual(149);
  });
});

// ---- threads ----------------------------------------------------------------------------------

const WORKER = new URL('./fixtures/bucket-worker.mjs', import.meta.url);

interface WorkerResult {
  granted: number;
  refused?: number;
}

describe('token buckets across threads', () => {
  it('a bucket drained in a worker thread is drained for the main thread, and the other way round', async () => {
    const s = slowBucket(50);
    expect(buckets.take(s, 20)).toBe(30);
    const w = startWorker(WORKER, { mode: 'drain', slot: s, n: 45 });
    const r = await w.message<WorkerResult>('granted');
    await w.worker.terminate();
    // The worker saw the 20 tokens the main thread used: only 30 were left for it.
    expect(r.granted).toBe(30);
    expect(buckets.available(s)).toBe(0);
    expect(buckets.take(s, 1)).toBeLessThan(0);
  });

  it('4 worker threads hammering one bucket never get more than capacity + rate × elapsed', async () => {
    const s = freshSlot();
    const rate = 1000; // one token per ms, exactly
    const capacity = 1000; // a full second of refill fits: no token is lost to the cap
    buckets.configure(s, rate, capacity);
    buckets.reset(s);

    const shared = new SharedArrayBuffer(3 * Int32Array.BYTES_PER_ELEMENT);
    const flags = new Int32Array(shared);
    const workers = Array.from({ length: 4 }, () => startWorker(WORKER, { mode: 'hammer', slot: s, shared }));
    try {
      await Promise.all(workers.map((w) => w.message('ready')));
      expect(Atomics.load(flags, 0)).toBe(4);

      // The bucket is full (capacity) at t0; no worker takes before `go`.
      const t0 = performance.now();
      Atomics.store(flags, 1, 1);
      Atomics.notify(flags, 1);
      await sleep(500);
      const tStop = performance.now();
      Atomics.store(flags, 2, 1);
      const results = await Promise.all(workers.map((w) => w.message<WorkerResult>('granted')));
      const t1 = performance.now();

      const granted = results.reduce((n, r) => n + r.granted, 0);
      const refused = results.reduce((n, r) => n + (r.refused ?? 0), 0);
      const elapsed = (t1 - t0) / 1000;
      const upper = capacity + rate * elapsed;
      expect(granted, `granted ${granted} > ${upper} (elapsed ${elapsed.toFixed(3)} s)`).toBeLessThanOrEqual(upper);
      // The limit was reached (the workers were refused), yet not wrongly: at least the burst
      // plus half of what refilled while the workers were surely running.
      expect(refused).toBeGreaterThan(0);
      const lower = capacity + 0.5 * rate * ((tStop - t0) / 1000);
      expect(granted, `granted only ${granted} < ${lower}`).toBeGreaterThanOrEqual(lower);
    } finally {
      Atomics.store(flags, 1, 1);
      Atomics.notify(flags, 1);
      Atomics.store(flags, 2, 1);
      await Promise.all(workers.map((w) => w.worker.terminate()));
    }
  });
});

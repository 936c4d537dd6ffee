/**
 * `setThreadNice`: a thread sets its own niceness (each ingress thread does, `ingressNice`), on a
 * real worker thread, read back from `/proc/thread-self/stat`.
 */
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { ownNice } from '../../harness/thread-nice.mjs';

interface Step {
  asked: number;
  got: { nice?: number | null; error?: string | null };
  now: number;
}

describe('setThreadNice', () => {
  it('sets the calling thread only; 0 leaves it; out of range and refused come back as errors naming the thread', async () => {
    const before = ownNice();
    const worker = new Worker(new URL('./fixtures/thread-nice-worker.mjs', import.meta.url));
    const [steps] = (await once(worker, 'message')) as [Step[]];
    await worker.terminate();
    const [zero, four, high, low, lowered] = steps;
    expect(zero).toMatchObject({ got: { nice: 0 }, now: before }); // a worker starts at its creator's
    // Raising a thread's niceness needs no privilege: exact everywhere.
    expect(four).toMatchObject({ got: { nice: 4 }, now: 4 });
    expect(high!.got.error).toBe('test thread: nice must be an integer -20..19, got 25');
    expect(low!.got.error).toBe('test thread: nice must be an integer -20..19, got -21');
    expect(high!.now).toBe(4);
    // Lowering it needs CAP_SYS_NICE (root here and in CI); without, the thread says why and keeps its niceness.
    if (lowered!.got.nice != null) expect(lowered).toMatchObject({ got: { nice: -3 }, now: -3 });
    else {
      expect(lowered!.got.error).toMatch(/^cannot set test thread to nice -3: .*CAP_SYS_NICE/);
      expect(lowered!.now).toBe(4);
    }
    // This thread (the test's) was not touched.
    expect(ownNice()).toBe(before);
  });
});

/**
 * Requests the service has answered, every thread together: one counter in shared memory that
 * each thread's `Telemetry` adds to as it writes a response, and the main thread reads to tell a
 * quiet service from a busy one (`src/memory/give-back.ts`). One atomic add a request.
 */
export class RequestCount {
  readonly buffer: SharedArrayBuffer;
  private readonly count: Int32Array;

  /** @param buffer another thread's `buffer`, or none for a new counter */
  constructor(buffer?: SharedArrayBuffer) {
    this.buffer = buffer ?? new SharedArrayBuffer(4);
    this.count = new Int32Array(this.buffer);
  }

  answered(): void {
    Atomics.add(this.count, 0, 1);
  }

  /** Requests answered so far, modulo 2^32 (the difference of two readings is `>>> 0`'d). */
  get total(): number {
    return Atomics.load(this.count, 0) >>> 0;
  }
}

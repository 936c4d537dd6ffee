/**
 * The disk-space guard: LMDB is never allowed to write into a full filesystem (lmdb-js 3.5.6
 * corrupts its heap on a failed page write, see docs/store.md), so every write the store issues
 * first checks the free space of the data directory's filesystem (`statfs`, ~1 µs) against a
 * reserve. A write refused here, or a commit that fails anyway, makes the store unavailable for
 * the whole process (`StoreHealth`); the main thread's probe makes it available again.
 */
import { statfsSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import type { StoreHealth } from './store-health.js';

/** At most this much free space is kept back on a large filesystem. */
export const RESERVE_MAX_BYTES = 32 * 1024 * 1024;
/** Share of a small filesystem kept back. */
const RESERVE_FRACTION = 0.1;
/** Free space must exceed the reserve by this factor before the probe makes the store available. */
const RECOVER_FACTOR = 1.5;
/** How often the main thread's probe checks the store (and a thread retries its held writes). */
export const PROBE_MS = 1000;

/** The two levels the store logs at. */
export interface StoreLog {
  error(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export const STDERR_LOG: StoreLog = {
  error: (obj, msg) => process.stderr.write(`landfall: ${msg} ${JSON.stringify(obj)}\n`),
  info: () => {},
};

/** A write the store did not make: unavailable (disk full, a failed commit), or closed. */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
  readonly code = 'STORE_UNAVAILABLE';
}

/** The reserve of free space for a filesystem of `totalBytes`: 10 %, at most 32 MiB. */
export function reserveFor(totalBytes: number): number {
  return Math.min(RESERVE_MAX_BYTES, Math.floor(totalBytes * RESERVE_FRACTION));
}

/** Free and total bytes of the filesystem holding `path` (what an unprivileged writer may use). */
export function filesystemSpace(path: string): { free: number; total: number } {
  const s = statfsSync(path);
  return { free: s.bavail * s.bsize, total: s.blocks * s.bsize };
}

/** `12.3 MiB`. */
function mib(n: number): string {
  return `${(n / 1048576).toFixed(n < 10 * 1048576 ? 2 : 1)} MiB`;
}

/** An lmdb-js write error as `ENOSPC (No space left on device)`. */
export function describeWriteError(e: unknown): string {
  const err = e as { code?: unknown; message?: string };
  const message = (err.message ?? String(e)).split(': Attempting to write page')[0]!;
  const name = typeof err.code === 'number' ? Object.entries(osConstants.errno).find(([, n]) => n === err.code)?.[0] : typeof err.code === 'string' ? err.code : undefined;
  return name && !message.startsWith(name) ? `${name} (${message})` : message;
}

/** A commit lmdb-js could not make (as opposed to an error thrown by a transaction's own code). */
export function isCommitFailure(e: unknown): boolean {
  const err = e as { commitError?: unknown; code?: unknown } | null;
  return err !== null && typeof err === 'object' && (err.commitError !== undefined || typeof err.code === 'number');
}

/** What the probe needs of the rest of the store. */
export interface ProbeHooks {
  /** One small write that must commit before the store is available again. */
  write(): Promise<unknown>;
  /** Called once the store is available again (held status writes can commit). */
  available(): void;
}

export class DiskGuard {
  /** Set by `Store.close`: nothing is written, the probe stops. */
  closed = false;
  /** Status writes held while unavailable (for the log lines); set by the commit window. */
  heldWrites: () => number = () => 0;
  private probeTimer: NodeJS.Timeout | null = null;
  private probing = false;

  constructor(
    private readonly path: string,
    readonly health: StoreHealth,
    readonly log: StoreLog,
    private readonly reserveBytes: number | undefined,
  ) {}

  /** Whether the data directory's filesystem has more free space than the reserve (`factor` ×). */
  room(factor = 1): { ok: true; free: number } | { ok: false; reason: string } {
    let space: { free: number; total: number };
    try {
      space = filesystemSpace(this.path);
    } catch (e) {
      return { ok: false, reason: `cannot read the free space of ${this.path}: ${(e as Error).message}` };
    }
    this.health.setFreeBytes(space.free);
    const reserve = this.reserveBytes ?? reserveFor(space.total);
    if (space.free > reserve * factor) return { ok: true, free: space.free };
    return {
      ok: false,
      reason: `${mib(space.free)} free on the data directory's filesystem (${this.path}), at or below the reserve of ${mib(reserve)} the store keeps`,
    };
  }

  /** Mark the whole process's store unavailable (the first reason wins); logs the change. */
  unavailable(reason: string): void {
    if (this.health.markUnavailable(reason)) {
      this.log.error({ store: { reason } }, 'store unavailable: sends are refused until it can commit again');
    }
  }

  /**
   * May this thread write now? Fast path: the shared state says available and there is room.
   * Slow path: it says unavailable (the write is counted as refused), or the filesystem is at or
   * below the reserve (the store becomes unavailable).
   */
  writable(): boolean {
    if (!this.health.available) {
      this.health.countRefused();
      return false;
    }
    const room = this.room();
    if (room.ok) return true;
    this.unavailable(room.reason);
    return false;
  }

  /** The error a refused write rejects with. */
  refused(what: string): StoreUnavailableError {
    const u = this.health.unavailable();
    return new StoreUnavailableError(`${what} not written: store unavailable${u ? `: ${u.reason}` : ''}`);
  }

  /**
   * A write lmdb-js could not commit: the store becomes unavailable, the failure is logged at
   * `error`. lmdb-js rejects the write with "Commit failed" and a second promise
   * (`commitError`) with the errno a moment later; that one is handled here too, or Node would
   * exit on it.
   */
  writeFailed(what: string, e: unknown): void {
    const commitError = (e as { commitError?: Promise<unknown> } | null)?.commitError;
    if (commitError && typeof commitError.then === 'function') {
      this.unavailable(`${what}: commit failed`);
      commitError.then(undefined, (cause: unknown) => {
        const detail = describeWriteError(cause);
        this.health.refineReason(`${what}: commit failed: ${detail}`);
        this.log.error({ what, err: detail, held: this.heldWrites() }, 'store write failed');
      });
      return;
    }
    const detail = describeWriteError(e);
    this.unavailable(`${what}: ${detail}`);
    this.log.error({ what, err: detail, held: this.heldWrites() }, 'store write failed');
  }

  /**
   * An asynchronous write other than a status window, checked and guarded: refused (rejected
   * with `StoreUnavailableError`) while the store is unavailable or the disk at its reserve; a
   * commit failure makes the store unavailable and rejects with `StoreUnavailableError`. Errors
   * thrown by the write's own code (not the commit) pass through unchanged.
   */
  guarded<T>(what: string, write: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new StoreUnavailableError(`${what} not written: store is closed`));
    if (!this.writable()) return Promise.reject(this.refused(what));
    let p: Promise<T>;
    try {
      p = write();
    } catch (e) {
      p = Promise.reject(e);
    }
    return p.catch((e: unknown) => {
      if (!isCommitFailure(e)) throw e;
      this.writeFailed(what, e);
      throw new StoreUnavailableError(`${what} not written: ${describeWriteError(e)}`);
    });
  }

  /** Synchronous writes (the CLI's) refuse with a clear error rather than write into a full disk. */
  assertWritable(what: string): void {
    const room = this.room();
    if (!room.ok) throw new StoreUnavailableError(`${what} not written: ${room.reason}`);
  }

  /**
   * The main thread's probe, every `intervalMs` (unref'd), and once now so a service started on
   * a full disk knows before it serves. While the store is available it only checks the free
   * space (marking the store unavailable at or below the reserve); while unavailable it waits for
   * 1.5 × the reserve free, makes the probe write, and makes the store available again once that
   * commits.
   */
  startProbe(hooks: ProbeHooks, intervalMs = PROBE_MS): void {
    if (this.probeTimer) return;
    void this.probe(hooks);
    this.probeTimer = setInterval(() => void this.probe(hooks), intervalMs);
    this.probeTimer.unref();
  }

  stopProbe(): void {
    if (this.probeTimer) clearInterval(this.probeTimer);
    this.probeTimer = null;
  }

  private async probe(hooks: ProbeHooks): Promise<void> {
    if (this.probing || this.closed) return;
    this.probing = true;
    try {
      if (this.health.available) {
        const room = this.room();
        if (!room.ok) this.unavailable(room.reason);
        return;
      }
      if (!this.room(RECOVER_FACTOR).ok) return;
      try {
        await hooks.write();
      } catch (e) {
        if (isCommitFailure(e)) this.writeFailed('probe write', e);
        else this.log.error({ err: (e as Error).message }, 'store probe failed');
        return;
      }
      const back = this.health.markAvailable();
      if (back) {
        this.log.info({ unavailable_ms: back.unavailableMs, refused_writes: back.refused, held: this.heldWrites() }, 'store available again: sends are accepted');
      }
      hooks.available();
    } finally {
      this.probing = false;
    }
  }
}

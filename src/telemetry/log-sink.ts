/**
 * Where the JSON log lines go: a file (`logFile`) or stdout, written so that a failed write can
 * never reach a request handler.
 *
 * pino hands every line to `LogSink.write`, which only appends it to a buffer. The buffer goes out
 * in one asynchronous `fs.write` (on the libuv pool) once it holds {@link BATCH_BYTES}, or at the
 * next flush (every 200 ms, `Telemetry`). A write that fails — a full filesystem (ENOSPC), a
 * quota, an I/O error — drops that batch: its lines are counted in {@link LogHealth} (every
 * thread's in one shared counter: `/metrics` `landfall_log_lines_dropped_total`, `/health`
 * `log`), nothing is thrown or emitted, and the next batch is tried afresh, so the log resumes by
 * itself once there is room again, starting with one line saying how many were lost. Lines are
 * not held for later: on a full disk they would pile up in memory. A reader of stdout that does
 * not keep up (EAGAIN) is waited for, up to {@link MAX_PENDING_BYTES} buffered; past that, lines
 * are dropped and counted the same way.
 *
 * Before: pino's own destination (sonic-boom) emitted the ENOSPC as an uncaught error, which
 * surfaced inside a uWS handler and aborted the process (SIGABRT after 19 requests on a full
 * log filesystem, and a crash loop on restart).
 */
import { closeSync, fchmodSync, fstatSync, mkdirSync, openSync, write } from 'node:fs';
import { dirname } from 'node:path';
import { LandfallError } from '../errors.js';

/** A batch goes out once it holds this much (one write syscall per batch, not per line). */
const BATCH_BYTES = 4096;
/** Buffered bytes at most (a stdout nobody reads); lines past it are dropped and counted. */
const MAX_PENDING_BYTES = 4 << 20;
/** A write that could not proceed (EAGAIN on a full pipe) is tried again after this. */
const RETRY_MS = 20;
/**
 * The log file's mode: its lines name accounts, signatures and client addresses; for the
 * service's user only (a file found wider is narrowed), and a directory it creates likewise.
 */
const FILE_MODE = 0o600;
const DIR_MODE = 0o700;
/** Errors that mean "no room now", not a wrong setting: at start the sink waits for room instead of refusing. */
const NO_ROOM = new Set(['ENOSPC', 'EDQUOT']);

/**
 * Whether log lines are being written, known to every thread of the process: one small
 * SharedArrayBuffer the main thread creates and hands to the ingress threads (like `StoreHealth`).
 * BigInt64 fields: [0] lines dropped since start, [1] since when writes fail (ms since the epoch,
 * 0 while they succeed).
 */
export class LogHealth {
  readonly buffer: SharedArrayBuffer;
  private readonly fields: BigInt64Array;

  constructor(buffer?: SharedArrayBuffer) {
    this.buffer = buffer ?? new SharedArrayBuffer(16);
    this.fields = new BigInt64Array(this.buffer);
  }

  /** `lines` were dropped: writes fail (from now, unless they already did). */
  dropped(lines: number): void {
    Atomics.add(this.fields, 0, BigInt(lines));
    Atomics.compareExchange(this.fields, 1, 0n, BigInt(Date.now()));
  }

  /** A write succeeded. */
  wrote(): void {
    Atomics.store(this.fields, 1, 0n);
  }

  /** True while writes fail (any thread's). */
  get failing(): boolean {
    return Atomics.load(this.fields, 1) !== 0n;
  }

  get droppedLines(): number {
    return Number(Atomics.load(this.fields, 0));
  }

  /** What `/health` shows of the log. */
  view(): LogHealthView {
    const since = Number(Atomics.load(this.fields, 1));
    return { writing: since === 0, dropped_lines: this.droppedLines, failing_since: since === 0 ? null : new Date(since).toISOString() };
  }
}

export interface LogHealthView {
  /** False while log writes fail (lines are dropped, the service serves on). */
  writing: boolean;
  /** Lines dropped since the start, every thread together. */
  dropped_lines: number;
  /** Since when writes fail, ISO-8601 UTC (null while they succeed). */
  failing_since: string | null;
}

const newlines = (s: string): number => {
  let n = 0;
  for (let i = s.indexOf('\n'); i !== -1; i = s.indexOf('\n', i + 1)) n++;
  return n;
};

export class LogSink {
  private fd: number | null = null;
  private pending: string[] = [];
  private pendingBytes = 0;
  /** A batch being written (its unwritten rest, after a partial write). */
  private inFlight: Buffer | null = null;
  /** The batch in flight opens with the line telling of lost lines (not itself a dropped line if it fails). */
  private inFlightTellsLoss = false;
  /** Part of the batch in flight went out: a failure now leaves the file ending mid-line. */
  private inFlightStarted = false;
  /** The file ends mid-line (a batch failed after a partial write): the next write starts a new line. */
  private midLine = false;
  private retry: NodeJS.Timeout | null = null;
  /** Lines this sink dropped since its last successful write (told in the first line after). */
  private lost = 0;
  private lostReason = '';
  private readonly flushed: Array<() => void> = [];
  private closed = false;
  /** A reopen was asked for (SIGHUP, after logrotate moved the file): done before the next write. */
  private reopenWanted = false;

  /** @param file append to this file (its directory created); null: stdout */
  constructor(
    private readonly file: string | null,
    private readonly health: LogHealth,
  ) {
    if (file === null) this.fd = 1;
    else this.open(true);
  }

  /** pino's destination: buffer the line; a full batch starts a write. Never throws. */
  write(line: string): boolean {
    if (this.closed) return true;
    if (this.pendingBytes + line.length > MAX_PENDING_BYTES) {
      this.drop(1, 'log backlog full: the log is not written fast enough');
      return true;
    }
    this.pending.push(line);
    this.pendingBytes += line.length;
    if (this.pendingBytes >= BATCH_BYTES) this.next();
    return true;
  }

  /** Write out what is buffered; `done` once it was written (or dropped). */
  flush(done: () => void = () => {}): void {
    if (this.pending.length === 0 && this.inFlight === null) return done();
    this.flushed.push(done);
    this.next();
  }

  /**
   * Close the file and open it again by its name, before the next write (never stdout): after
   * logrotate renamed it (its `create` mode), lines go to the new file instead of the renamed one.
   * Between two writes, so no batch is split between the files.
   */
  reopen(): void {
    if (this.file === null || this.closed) return;
    this.reopenWanted = true;
    this.next();
  }

  /** Flush, then close the file (never stdout). */
  end(): Promise<void> {
    return new Promise((resolve) =>
      this.flush(() => {
        this.closed = true;
        if (this.retry !== null) clearTimeout(this.retry);
        if (this.fd !== null && this.fd !== 1) closeSync(this.fd);
        this.fd = null;
        resolve();
      }),
    );
  }

  /**
   * Open the file. At start (`starting`), a setting that cannot work (a directory that cannot be
   * made, no permission) is an error; no room is not: the sink starts and tries again at each batch.
   */
  private open(starting: boolean): boolean {
    try {
      mkdirSync(dirname(this.file!), { recursive: true, mode: DIR_MODE });
      this.fd = openSync(this.file!, 'a', FILE_MODE);
      if ((fstatSync(this.fd).mode & 0o077) !== 0) fchmodSync(this.fd, FILE_MODE);
      return true;
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      if (starting && !NO_ROOM.has(err.code ?? '')) throw new LandfallError('CONFIG_INVALID', `cannot open logFile ${this.file}: ${err.message}`);
      this.lostReason = err.code ?? err.message;
      return false;
    }
  }

  /** Start the next write unless one is under way. */
  private next(): void {
    if (this.inFlight !== null || this.retry !== null) return;
    if (this.reopenWanted) {
      this.reopenWanted = false;
      if (this.fd !== null) closeSync(this.fd);
      this.fd = null;
      this.open(false); // no room: the next batch tries again, as after any failed open
    }
    if (this.pending.length === 0) return this.settle();
    if (this.fd === null && !this.open(false)) {
      this.drop(this.pending.length, this.lostReason);
      this.clearPending();
      return this.settle();
    }
    let text = this.pending.join('');
    this.clearPending();
    this.inFlightTellsLoss = this.lost > 0;
    if (this.inFlightTellsLoss) text = this.lostLine() + text;
    // After a failure (of this thread, or of another thread writing the same file) the file may
    // end mid-line: start a new one (at worst an empty line).
    if (this.midLine || this.health.failing) text = '\n' + text;
    this.inFlightStarted = false;
    this.inFlight = Buffer.from(text);
    this.writeInFlight();
  }

  private writeInFlight(): void {
    const buf = this.inFlight!;
    write(this.fd!, buf, 0, buf.length, null, (err, written) => {
      if (err) {
        if (err.code === 'EAGAIN') {
          // A pipe's reader is behind: the same bytes, a moment later.
          this.retry = setTimeout(() => {
            this.retry = null;
            this.writeInFlight();
          }, RETRY_MS);
          return;
        }
        this.inFlight = null;
        this.midLine ||= this.inFlightStarted;
        this.drop(newlines(buf.toString('utf8')) - (this.inFlightTellsLoss ? 1 : 0), err.code ?? err.message);
        return this.next();
      }
      if (written < buf.length) {
        this.inFlight = buf.subarray(written);
        this.inFlightTellsLoss = false; // its start went out
        this.inFlightStarted = true;
        return this.writeInFlight();
      }
      this.inFlight = null;
      this.lost = 0;
      this.midLine = false;
      this.health.wrote();
      this.next();
    });
  }

  private drop(lines: number, reason: string): void {
    this.lost += lines;
    this.lostReason = reason;
    this.health.dropped(lines);
  }

  /** The line that opens the log again after lines were lost. */
  private lostLine(): string {
    return JSON.stringify({ level: 'warn', time: Date.now(), msg: 'log lines dropped: the log could not be written', dropped: this.lost, reason: this.lostReason }) + '\n';
  }

  private clearPending(): void {
    this.pending = [];
    this.pendingBytes = 0;
  }

  /** Nothing left to write: tell the flushes waiting. */
  private settle(): void {
    for (const done of this.flushed.splice(0)) done();
  }
}

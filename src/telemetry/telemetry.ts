/**
 * Logs and metrics of the HTTP API, told once per request when its response is written.
 *
 * Logs are JSON lines through pino, each with a message naming its event. Request lines, their
 * levels and the bound on what one client can make the log write: `request-log.ts`. Never an API
 * key (the query string is not logged, and anything key-shaped a client wrote is redacted:
 * `redact.ts`) and never transaction bytes (only the signature). Where lines go, and why a failed
 * write never reaches a request: `log-sink.ts`.
 *
 * Hot path: a line's object is only built when its level is enabled; pino serialises a flat
 * object of strings and numbers on its fast path into the sink's buffer, written asynchronously
 * in 4 KiB batches, so a request never waits on a write.
 */
import { pino, type Logger } from 'pino';
import type { LogLevel } from '../config.js';
import type { RequestFacts, RequestObserver } from './request-facts.js';
import { LogHealth, LogSink } from './log-sink.js';
import { Metrics } from './metrics.js';
import { redactKeys } from './redact.js';
import { RequestCount } from './request-count.js';
import { RequestLog } from './request-log.js';

/** Longest a buffered log line waits before it is written. */
const FLUSH_MS = 200;

export interface TelemetryOptions {
  level: LogLevel;
  /** Append JSON lines to this file; null writes to stdout. */
  file: string | null;
  /** The process's log state, shared by its threads (the main thread makes it; none: a new one). */
  health?: LogHealth;
  /** Requests answered, every thread of the process (the main thread makes it; none: a new one). */
  requestCount?: RequestCount;
  /** Successes summarised per interval (default) or one line each (`logSuccesses`). */
  successes?: 'summary' | 'every';
}

export class Telemetry implements RequestObserver {
  readonly log: Logger;
  readonly metrics = new Metrics();
  /** Whether lines are written, and how many were dropped (every thread of the process). */
  readonly logHealth: LogHealth;
  /** Requests answered, every thread of the process: one more as each response is written. */
  readonly requestCount: RequestCount;
  private readonly sink: LogSink;
  readonly requests: RequestLog;
  private readonly flusher: NodeJS.Timeout | null;

  constructor(opts: TelemetryOptions) {
    this.logHealth = opts.health ?? new LogHealth();
    this.requestCount = opts.requestCount ?? new RequestCount();
    this.sink = new LogSink(opts.level === 'silent' ? null : opts.file, this.logHealth);
    // Lines are batched into writes of 4 KiB and flushed at least every FLUSH_MS: one write
    // syscall per line (on the libuv pool) measured ~40 µs per request end to end; batched,
    // the request line costs its serialisation (~1.3 µs).
    this.flusher = opts.level === 'silent' ? null : setInterval(() => this.sink.flush(), FLUSH_MS).unref();
    this.log = pino(
      {
        level: opts.level,
        // "level":"info" rather than 30: readable without pino's tools.
        formatters: { level: (label) => ({ level: label }) },
      },
      this.sink,
    );
    this.requests = new RequestLog(this.log, opts.successes ?? 'summary');
  }

  /** Open the log file again by its name (SIGHUP after logrotate); stdout: nothing to do. */
  reopenLog(): void {
    this.sink.reopen();
  }

  /** For an API built without a service (tests of the HTTP layer): counts, logs nothing. */
  static quiet(): Telemetry {
    return new Telemetry({ level: 'silent', file: null });
  }

  finished(ctx: RequestFacts, status: number, reason: string | null): void {
    this.requestCount.answered();
    this.metrics.request(ctx.route, status, Number(process.hrtime.bigint() - ctx.receivedAt) / 1e9);
    this.requests.finished(ctx, status, reason);
  }

  /** An unexpected exception in a handler (a bug): its stack, with the request id to find it by. */
  internalError(ctx: RequestFacts, e: unknown): void {
    const err = e instanceof Error ? { type: e.name, message: redactKeys(e.message), stack: redactKeys(e.stack ?? '') } : redactKeys(String(e));
    this.log.error({ req: redactKeys(ctx.requestId), err }, 'internal error');
  }

  /** Tell what the request log counted, write out what is buffered and release the file (never stdout). */
  async close(): Promise<void> {
    if (this.flusher) clearInterval(this.flusher);
    this.requests.close();
    await this.sink.end();
  }
}

/**
 * Logs and metrics of the HTTP API, told once per request when its response is written.
 *
 * Logs are JSON lines through pino: one per request (`info`; `error` for a 5xx; `debug` for the
 * probe routes `/ping`, `/health`, `/metrics`, which clients and scrapers hit all the time),
 * carrying the request id, method, route, path, status, time in µs, the account id, the
 * transaction signature and, for a refusal, its reason. Never an API key (the query string is
 * not logged, and anything key-shaped in the path, the request id, the method or a reason that
 * quotes client input is redacted) and never transaction bytes (only the signature).
 *
 * Hot path: the line's object is only built when its level is enabled; pino serialises a flat
 * object of strings and numbers on its fast path, into a buffer written asynchronously in 4 KiB
 * batches (sonic-boom), so a request never waits on a write.
 */
import { pino, type Logger } from 'pino';
import type { LogLevel } from '../config.js';
import type { Ctx, RequestObserver } from '../http/request.js';
import { Metrics } from './metrics.js';
import { redactKeys } from './redact.js';

/** Longest a buffered log line waits before it is written. */
const FLUSH_MS = 200;

/** Routes probed continuously (keep-alives, health checks, scrapes): logged at debug, not info. */
const PROBES = new Set(['/ping', '/health', '/metrics']);

export interface TelemetryOptions {
  level: LogLevel;
  /** Append JSON lines to this file; null writes to stdout. */
  file: string | null;
}

export class Telemetry implements RequestObserver {
  readonly log: Logger;
  readonly metrics = new Metrics();
  private readonly destination: ReturnType<typeof pino.destination>;
  private readonly toFile: boolean;
  private readonly flusher: NodeJS.Timeout | null;

  constructor(opts: TelemetryOptions) {
    this.toFile = opts.file !== null;
    // Lines are batched into writes of 4 KiB and flushed at least every FLUSH_MS: one write
    // syscall per line (on the libuv pool) measured ~40 µs per request end to end; batched,
    // the request line costs its serialisation (~1.3 µs). pino flushes what is left on exit.
    this.destination = pino.destination({ dest: opts.file ?? 1, sync: false, minLength: 4096, mkdir: opts.file !== null });
    this.flusher = opts.level === 'silent' ? null : setInterval(() => this.log.flush(), FLUSH_MS).unref();
    this.log = pino(
      {
        level: opts.level,
        // "level":"info" rather than 30: readable without pino's tools.
        formatters: { level: (label) => ({ level: label }) },
      },
      this.destination,
    );
  }

  /** For an API built without a service (tests of the HTTP layer): counts, logs nothing. */
  static quiet(): Telemetry {
    return new Telemetry({ level: 'silent', file: null });
  }

  finished(ctx: Ctx, status: number, reason: string | null): void {
    this.metrics.request(ctx.route, status);
    const level = status >= 500 ? 'error' : PROBES.has(ctx.route) ? 'debug' : 'info';
    if (!this.log.isLevelEnabled(level)) return;
    this.log[level](
      {
        // What the client wrote itself (its request id, method, path, and reasons that quote its
        // input) may hold a key: redacted.
        req: redactKeys(ctx.requestId),
        method: redactKeys(ctx.method),
        route: ctx.route,
        path: redactKeys(ctx.url),
        status,
        us: Math.round(Number(process.hrtime.bigint() - ctx.receivedAt) / 1000),
        account: ctx.accountId ?? undefined,
        sig: ctx.signature ?? undefined,
        reason: reason === null ? undefined : redactKeys(reason),
      },
      'request',
    );
  }

  /** An unexpected exception in a handler (a bug): its stack, with the request id to find it by. */
  internalError(ctx: Ctx, e: unknown): void {
    this.log.error({ req: redactKeys(ctx.requestId), err: e }, 'internal error');
  }

  /** Write out what is buffered and release the file (never stdout). */
  close(): Promise<void> {
    if (this.flusher) clearInterval(this.flusher);
    return new Promise((resolve) => {
      this.log.flush(() => {
        if (this.toFile) this.destination.end();
        resolve();
      });
    });
  }
}

/**
 * The request log: which requests get a line, at which level, under which message, and how much
 * one client can make it write.
 *
 * - Reads anyone may make without a key, and probes (`/ping`, `/health`, `/metrics`,
 *   `/v1/tip-floor`, `/v1/tip-addresses`, `/v1/openapi.json`): `debug`. They draw on no budget,
 *   so at `info` one client could fill the disk with them (156 MB/min was measured).
 * - 401 and 429: counted by status and route, and told in one `info` line per
 *   {@link SUMMARY_MS} ("requests refused (401, 429), counted"); each one at `debug`.
 * - Everything else: one line per request (`error` for a 5xx), under a per-source bound: a client
 *   without an account (by address) gets at most {@link ANONYMOUS_LINES}, an account at most
 *   {@link ACCOUNT_LINES} per {@link SUMMARY_MS} (an account's sends and queries are already
 *   bounded by its plan: a whale's 150 sends and 300 queries a second fit); past it, its lines are
 *   counted and told in one line per interval ("request lines suppressed").
 *   Clients without an account together get at most {@link ANONYMOUS_TOTAL_LINES} per interval
 *   (per ingress thread): a per-source bound alone is bypassed by rotating source addresses
 *   (600 sources × 200 404s were all logged, 351 MB/min, and any IPv6 client has millions).
 *
 * - Successes (a 2xx without a refusal reason: `transaction accepted`, `request served`) and
 *   landed transactions: by default (`logSuccesses: "summary"`) counted by event and route and
 *   told in one `info` line per interval ("requests served, counted"), each at `debug`; a line
 *   each was 9.1 MB of log a minute at ~200 sends/s, ~13 GB a day. `"every"`: one `info` line each.
 *   Every refusal and error is still logged one by one, within the bounds above.
 *
 * Each line's message names its event: `transaction accepted`, `request served`,
 * `request refused`, `request failed`.
 */
import type { Logger } from 'pino';
import type { RequestFacts } from './request-facts.js';
import { redactKeys } from './redact.js';

/** How often the counted refusals and the suppressed lines are told. */
export const SUMMARY_MS = 10_000;
/** Request lines per {@link SUMMARY_MS} of a client without an account (by address). */
export const ANONYMOUS_LINES = 200;
/**
 * Request lines per {@link SUMMARY_MS} of all clients without an account together, whatever
 * their number of addresses (200 a second: ~3 MB a minute of log at worst).
 */
export const ANONYMOUS_TOTAL_LINES = 2_000;
/** Request lines per {@link SUMMARY_MS} of an account. */
export const ACCOUNT_LINES = 10_000;
/** Sources tracked per interval; past it, new ones share one bucket (a bound on the tracker's memory). */
const MAX_SOURCES = 10_000;
/** Sources named in a suppression line (the heaviest). */
const TOP_SOURCES = 10;

/** Probes and key-less reads: logged at debug. */
const QUIET_ROUTES = new Set(['/ping', '/health', '/metrics', '/v1/tip-floor', '/v1/tip-addresses', '/v1/openapi.json']);
/** Routes that take transactions (a 200 with a signature is an acceptance). */
const SEND_ROUTES = new Set(['/v1/send', '/v1/send/batch', '/', '/v1/rpc', '/api/v1/transactions', '/api/v1/bundles', '/fast']);
/** Refusals summarised per interval rather than logged one by one. */
const COUNTED = new Set([401, 429]);

/** The message naming a request line's event. */
function eventOf(ctx: RequestFacts, status: number, reason: string | null): string {
  if (status >= 500) return 'request failed';
  if (status >= 400 || reason !== null) return 'request refused';
  return SEND_ROUTES.has(ctx.route) && (ctx.signature !== null || ctx.route === '/v1/send/batch') ? 'transaction accepted' : 'request served';
}

export class RequestLog {
  /** `"<status> <route>"` → refusals this interval. */
  private refused = new Map<string, number>();
  /** Source → request lines this interval. */
  private lines = new Map<string, number>();
  /** Lines of clients without an account this interval (all sources). */
  private anonymousLines = 0;
  /** Source → lines suppressed this interval. */
  private suppressed = new Map<string, number>();
  /** `"<event> <route>"` (or `transaction landed`) → successes counted this interval. */
  private served = new Map<string, number>();
  private readonly timer: NodeJS.Timeout | null;

  constructor(
    private readonly log: Logger,
    private readonly successes: 'summary' | 'every' = 'every',
  ) {
    // A silent logger (an API built without a service) has nothing to tell: no timer.
    this.timer = log.level === 'silent' ? null : setInterval(() => this.summarise(), SUMMARY_MS).unref();
  }

  /** One request's response was written. */
  finished(ctx: RequestFacts, status: number, reason: string | null): void {
    if (QUIET_ROUTES.has(ctx.route) && status < 500) return this.line('debug', ctx, status, reason);
    if (COUNTED.has(status)) {
      const key = `${status} ${ctx.route}`;
      this.refused.set(key, (this.refused.get(key) ?? 0) + 1);
      return this.line('debug', ctx, status, reason);
    }
    if (this.successes === 'summary' && status < 400 && reason === null) {
      const key = `${eventOf(ctx, status, reason)} ${ctx.route}`;
      this.served.set(key, (this.served.get(key) ?? 0) + 1);
      return this.line('debug', ctx, status, reason);
    }
    const level = status >= 500 ? 'error' : 'info';
    if (!this.log.isLevelEnabled(level)) return;
    if (!this.withinBound(ctx)) return;
    this.line(level, ctx, status, reason);
  }

  /**
   * A transaction's outcome (main thread). A landing is a success: counted under `summary`, with
   * its line at `debug`; a failure or an expiry is always one `info` line.
   */
  outcome(event: 'transaction landed' | 'transaction failed' | 'transaction expired', fields: Record<string, unknown>): void {
    if (event === 'transaction landed' && this.successes === 'summary') {
      this.served.set(event, (this.served.get(event) ?? 0) + 1);
      if (this.log.isLevelEnabled('debug')) this.log.debug(fields, event);
      return;
    }
    this.log.info(fields, event);
  }

  /** Tell what is counted and stop. */
  close(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.summarise();
  }

  /** True if the request's source may have one more line this interval; else it is counted. */
  private withinBound(ctx: RequestFacts): boolean {
    let source = ctx.accountId ?? ctx.peer;
    if (!this.lines.has(source) && this.lines.size >= MAX_SOURCES) source = 'other sources';
    const n = (this.lines.get(source) ?? 0) + 1;
    this.lines.set(source, n);
    if (ctx.accountId !== null ? n <= ACCOUNT_LINES : n <= ANONYMOUS_LINES && this.anonymousLines < ANONYMOUS_TOTAL_LINES) {
      if (ctx.accountId === null) this.anonymousLines++;
      return true;
    }
    this.suppressed.set(source, (this.suppressed.get(source) ?? 0) + 1);
    return false;
  }

  private line(level: 'debug' | 'info' | 'error', ctx: RequestFacts, status: number, reason: string | null): void {
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
      eventOf(ctx, status, reason),
    );
  }

  /** The interval's counted refusals and suppressed lines, one line each (none if nothing happened). */
  private summarise(): void {
    const interval_s = SUMMARY_MS / 1000;
    if (this.served.size > 0) this.log.info({ interval_s, served: Object.fromEntries(this.served) }, 'requests served, counted');
    if (this.refused.size > 0) this.log.info({ interval_s, refused: Object.fromEntries(this.refused) }, 'requests refused (401, 429), counted');
    if (this.suppressed.size > 0) {
      const top = [...this.suppressed].sort((a, b) => b[1] - a[1]).slice(0, TOP_SOURCES);
      let total = 0;
      for (const n of this.suppressed.values()) total += n;
      const bounds = { per_source: ANONYMOUS_LINES, all_keyless: ANONYMOUS_TOTAL_LINES, per_account: ACCOUNT_LINES };
      this.log.warn({ interval_s, suppressed: total, sources: this.suppressed.size, top: Object.fromEntries(top), bounds }, 'request lines suppressed (per-source bound)');
    }
    this.anonymousLines = 0;
    this.served = new Map();
    this.refused = new Map();
    this.lines = new Map();
    this.suppressed = new Map();
  }
}

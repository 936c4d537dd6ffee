/**
 * `LandfallClient`: the HTTP API over kept-alive connections, with `Retry-After` honoured,
 * typed errors, confirmation waits on the live stream (polling only as the fallback), and the
 * tip facts (`min_tip_bp`, tip addresses) cached for an hour as the spec suggests.
 */
import { PublicKey, SystemProgram, type TransactionInstruction } from '@solana/web3.js';
import { Endpoint, isNetworkError, type Response } from './endpoint.js';
import { StatusStream } from './stream.js';
import {
  isFinal,
  LandfallApiError,
  LandfallTimeoutError,
  type AccountRecord,
  type BatchItem,
  type DeliveryTrace,
  type LandingAnalytics,
  type SendOptions,
  type SendResult,
  type StatusRecord,
  type TipFloorRecord,
  type TransactionPage,
} from './types.js';
import { toBase64, type TransactionInput } from './wire-tx.js';
import { SEND_OPTIONS } from './wire.js';

export interface LandfallClientOptions {
  /**
   * Base URL of the service, e.g. `http://127.0.0.1:8080` (a path prefix is kept), or several
   * (one per region): requests go to the first that answers, and stay there until it stops.
   */
  url: string | readonly string[];
  apiKey: string;
  /** Per-request timeout (default 10 s). */
  timeoutMs?: number;
  /** 429 responses retried after their `Retry-After` (default 3; 0 throws at once). */
  rateLimitRetries?: number;
  /** Longest single `Retry-After` wait; a longer one throws instead (default 5 s). */
  maxRetryAfterMs?: number;
  /**
   * A request that could not reach the service (connection refused, reset, timed out) is tried
   * again this many times (default 3; 0 throws at once), each at the next URL, after a back-off
   * that doubles from `retryBackoffMs`.
   */
  networkRetries?: number;
  /** The first back-off after a network error (default 100 ms; doubled each time, at most 2 s). */
  retryBackoffMs?: number;
  /** Connections kept open to the service (default 16). */
  maxSockets?: number;
  /**
   * How long an idle connection is kept (default 5 s): below uWS's 10 s idle close, so a reused
   * connection is rarely one the server is closing. `ping()` keeps one warm between bursts.
   */
  keepAliveMs?: number;
  /** How long tip addresses and `min_tip_bp` are reused before asking again (default 1 h). */
  tipRefreshMs?: number;
  /** `waitForConfirmation` listens on `/v1/stream` (default true); false always polls. */
  stream?: boolean;
}

export interface WaitOptions {
  /** Give up after this long (default 60 s, about a blockhash lifetime). */
  timeoutMs?: number;
  /** Polling interval when the stream is not available (default 400 ms). */
  pollMs?: number;
}

/** The tip facts the client caches. */
export interface TipInfo {
  /** Tip addresses (base58). */
  addresses: string[];
  /** The account's current minimum tip in points and in lamports. */
  minTipBp: number;
  minTipLamports: bigint;
  /** The service's lamports per point (BP), as `/v1/account` reports it. */
  lamportsPerPoint: number;
  fetchedAt: number;
}

export type { TransactionInput };

/** The longest back-off between network retries. */
const MAX_BACKOFF_MS = 2_000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** `Retry-After` in ms: delta-seconds or an HTTP date (RFC 9110 §10.2.3); null if absent or bad. */
function retryAfterMs(v: string | undefined): number | null {
  if (v === undefined) return null;
  if (/^\d+$/.test(v.trim())) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

/** The send options under their wire names (`SEND_OPTIONS`); those left undefined are not sent. */
function wireOptions(o: SendOptions | undefined): Record<string, unknown> | undefined {
  if (!o) return undefined;
  const wire: Record<string, unknown> = {};
  for (const [name, { field }] of Object.entries(SEND_OPTIONS)) wire[name] = o[field];
  return wire;
}

/**
 * A client of one Landfall service with one API key.
 *
 * @example
 * ```ts
 * const client = new LandfallClient({ url: 'http://127.0.0.1:8080', apiKey: process.env.LANDFALL_KEY! });
 * const { signature } = await client.send(signedTx);
 * const record = await client.waitForConfirmation(signature);   // pushed over /v1/stream
 * client.close();
 * ```
 */
export class LandfallClient {
  /**
   * Requests made, TCP connections opened for them, 429s waited out, network errors retried, and
   * moves to another URL after one.
   */
  readonly stats = { requests: 0, connections: 0, rateLimitRetries: 0, networkRetries: 0, failovers: 0 };
  private readonly endpoints: Endpoint[];
  /** The endpoint requests go to: the last one that answered. */
  private current = 0;
  private readonly rateLimitRetries: number;
  private readonly maxRetryAfterMs: number;
  private readonly networkRetries: number;
  private readonly retryBackoffMs: number;
  private readonly tipRefreshMs: number;
  private readonly useStream: boolean;
  private tips: { info: Promise<TipInfo>; fetchedAt: number } | null = null;
  private statusStream: StatusStream | null = null;

  constructor(private readonly options: LandfallClientOptions) {
    if (!options.apiKey) throw new TypeError('apiKey is required');
    const urls = typeof options.url === 'string' ? [options.url] : [...options.url];
    if (urls.length === 0) throw new TypeError('url: give at least one base URL');
    const endpointOptions = {
      apiKey: options.apiKey,
      timeoutMs: options.timeoutMs ?? 10_000,
      maxSockets: options.maxSockets ?? 16,
      keepAliveMs: options.keepAliveMs ?? 5_000,
      stats: this.stats,
    };
    this.endpoints = urls.map((u) => new Endpoint(u, endpointOptions));
    this.rateLimitRetries = options.rateLimitRetries ?? 3;
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? 5_000;
    this.networkRetries = options.networkRetries ?? 3;
    this.retryBackoffMs = options.retryBackoffMs ?? 100;
    this.tipRefreshMs = options.tipRefreshMs ?? 3_600_000;
    this.useStream = options.stream ?? true;
  }

  /** The base URL requests currently go to (the last one that answered). */
  get url(): string {
    return this.endpoints[this.current]!.base.toString();
  }

  /** Submit one signed transaction (`POST /v1/send`). Re-sending the same one is idempotent. */
  async send(tx: TransactionInput, options?: SendOptions): Promise<SendResult> {
    const r = (await this.call('POST', '/v1/send', { transaction: toBase64(tx), options: wireOptions(options) })) as SendResult;
    return { signature: r.signature, slot: r.slot };
  }

  /** Submit up to 100 (`POST /v1/send/batch`); a bad item fails alone, in its result. */
  async sendBatch(txs: TransactionInput[], options?: SendOptions): Promise<BatchItem[]> {
    const r = (await this.call('POST', '/v1/send/batch', { transactions: txs.map(toBase64), options: wireOptions(options) })) as { results: BatchItem[] };
    return r.results;
  }

  /** The service's telemetry for one of this account's transactions (404 if not ours). */
  status(signature: string): Promise<StatusRecord> {
    return this.call('GET', `/v1/status/${encodeURIComponent(signature)}`) as Promise<StatusRecord>;
  }

  /**
   * Every delivery attempt of one of this account's transactions, and its final state with the
   * cause (404 if not ours). Draws from the same query budget as `status`.
   *
   * @example
   * const t = await client.trace(sig);
   * if (t.final_state === 'expired') console.log(t.cause); // "expired: blockhash past …, reached 1 of 3 leaders"
   */
  trace(signature: string): Promise<DeliveryTrace> {
    return this.call('GET', `/v1/status/${encodeURIComponent(signature)}/trace`) as Promise<DeliveryTrace>;
  }

  /**
   * Landing analytics of this account's own transactions over the last hour or day: landing rate
   * and slots to land, in total, by leader and over time (`GET /v1/analytics`; query budget).
   */
  analytics(window: '1h' | '24h' = '24h'): Promise<LandingAnalytics> {
    return this.call('GET', `/v1/analytics?window=${window}`) as Promise<LandingAnalytics>;
  }

  /**
   * A page of this account's own transactions, newest first (`GET /v1/transactions`; one query
   * token a page). `limit` 1 to 100 (default 50); `before` is the previous page's `next_cursor`.
   *
   * @example
   * for (let page = await client.transactions(); ; page = await client.transactions({ before: page.next_cursor })) {
   *   for (const t of page.transactions) console.log(t.signature, t.status);
   *   if (!page.next_cursor) break;
   * }
   */
  transactions(opts: { limit?: number; before?: string | null } = {}): Promise<TransactionPage> {
    const q = new URLSearchParams();
    if (opts.limit !== undefined) q.set('limit', String(opts.limit));
    if (opts.before) q.set('before', opts.before);
    const qs = q.toString();
    return this.call('GET', `/v1/transactions${qs ? `?${qs}` : ''}`) as Promise<TransactionPage>;
  }

  /** Plan, limits, usage and next tier. */
  account(): Promise<AccountRecord> {
    return this.call('GET', '/v1/account') as Promise<AccountRecord>;
  }

  /** Where tips go (no key needed). */
  async tipAddresses(): Promise<string[]> {
    return ((await this.call('GET', '/v1/tip-addresses')) as { tip_addresses: string[] }).tip_addresses;
  }

  /**
   * Tip percentiles of the transactions Landfall saw land in the last minute, 10 minutes and
   * hour (`GET /v1/tip-floor`), with this account's plan minimum. The service recomputes it at
   * most once a second; `addTip(tx, { client, percentile })` uses it.
   */
  tipFloor(): Promise<TipFloorRecord> {
    return this.call('GET', '/v1/tip-floor') as Promise<TipFloorRecord>;
  }

  /** A cheap round trip (`GET /ping`) that keeps a connection warm between bursts. */
  async ping(): Promise<void> {
    const r = await this.request('GET', '/ping', undefined);
    if (r.status !== 200) throw new LandfallApiError(r.status, 'Ping failed', `GET /ping answered ${r.status}`);
  }

  /**
   * Tip addresses and the account's minimum tip, fetched together and reused for
   * `tipRefreshMs` (1 h): the minimum only falls, after an upgrade, so an hour-old value is at
   * worst a little generous. Concurrent callers share one fetch; a failed fetch is not cached.
   */
  tipInfo(): Promise<TipInfo> {
    const now = Date.now();
    if (this.tips && now - this.tips.fetchedAt < this.tipRefreshMs) return this.tips.info;
    const info = Promise.all([this.tipAddresses(), this.account()]).then(([addresses, account]) => ({
      addresses,
      minTipBp: account.limits.min_tip_bp,
      // The service's own conversion, never an assumed default: an operator may configure it.
      minTipLamports: BigInt(account.limits.min_tip_bp) * BigInt(account.lamports_per_point),
      lamportsPerPoint: account.lamports_per_point,
      fetchedAt: now,
    }));
    const entry = { info, fetchedAt: now };
    this.tips = entry;
    info.catch(() => {
      if (this.tips === entry) this.tips = null;
    });
    return info;
  }

  /**
   * Where a tip goes and how much: a random tip address (spreading write locks over all of them)
   * and the account's current minimum tip, or `lamports` if given. A tip below the minimum is the
   * service's refusal (`LandfallApiError` 402 "Tip insufficient"), raised before anything is sent.
   */
  async tipTransfer(options: { lamports?: number | bigint } = {}): Promise<{ to: string; lamports: bigint }> {
    const tips = await this.tipInfo();
    const lamports = options.lamports === undefined ? tips.minTipLamports : BigInt(options.lamports);
    if (lamports < tips.minTipLamports) {
      throw new LandfallApiError(
        402,
        'Tip insufficient',
        `a tip of ${lamports} lamports is below this account's minimum of ${tips.minTipBp} BP (${tips.minTipLamports} lamports)`,
      );
    }
    const to = tips.addresses[Math.floor(Math.random() * tips.addresses.length)];
    if (to === undefined) throw new Error('the service lists no tip addresses (GET /v1/tip-addresses)');
    return { to, lamports };
  }

  /** The tip (see {@link tipTransfer}) as a web3.js System transfer from `payer`. */
  async tipInstruction(payer: PublicKey, options: { lamports?: number | bigint } = {}): Promise<TransactionInstruction> {
    const { to, lamports } = await this.tipTransfer(options);
    return SystemProgram.transfer({ fromPubkey: payer, toPubkey: new PublicKey(to), lamports });
  }

  /**
   * The account's live status stream (`/v1/stream`), opened on first use and shared; a closed
   * one is replaced on the next call.
   */
  stream(): StatusStream {
    if (!this.statusStream || this.statusStream.closed) {
      this.statusStream = new StatusStream(this.endpoints[this.current]!.wsUrl('/v1/stream'), this.options.apiKey);
    }
    return this.statusStream;
  }

  /**
   * Resolve with the record once the transaction is confirmed, failed, or expired. Listens on
   * the stream and reads the status once after subscribing (a change pushed before that is not
   * missed); polls every `pollMs` if the stream is off, refused or lost.
   */
  waitForConfirmation(signature: string, options: WaitOptions = {}): Promise<StatusRecord> {
    const timeoutMs = options.timeoutMs ?? 60_000;
    const pollMs = options.pollMs ?? 400;
    return new Promise<StatusRecord>((resolve, reject) => {
      let done = false;
      const cleanups: Array<() => void> = [];
      const finish = (result: StatusRecord | Error) => {
        if (done) return;
        done = true;
        for (const c of cleanups) c();
        if (result instanceof Error) reject(result);
        else resolve(result);
      };
      const timer = setTimeout(
        () => finish(new LandfallTimeoutError(`${signature} was not confirmed, failed or expired within ${timeoutMs} ms`)),
        timeoutMs,
      );
      cleanups.push(() => clearTimeout(timer));
      const check = () =>
        this.status(signature).then(
          (r) => (isFinal(r) ? finish(r) : undefined),
          (e: Error) => finish(e),
        );
      let polling = false;
      const poll = async () => {
        if (polling) return;
        polling = true;
        while (!done) {
          await check();
          if (!done) await sleep(pollMs);
        }
      };
      if (!this.useStream) {
        void poll();
        return;
      }
      const stream = this.stream();
      cleanups.push(stream.onSignature(signature, (r) => isFinal(r) && finish(r)));
      cleanups.push(stream.onClose(() => void poll()));
      stream.ready.then(check, () => void poll());
    });
  }

  /** Close the stream and the kept-alive connections. */
  close(): void {
    this.statusStream?.close();
    this.statusStream = null;
    for (const e of this.endpoints) e.close();
  }

  /** An API call: JSON in and out, 429 retried after `Retry-After`, refusals thrown typed. */
  private async call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    for (let attempt = 0; ; attempt++) {
      const r = await this.request(method, path, payload);
      if (r.status >= 200 && r.status < 300) return r.body;
      const wait = r.status === 429 ? retryAfterMs(r.headers['retry-after'] as string | undefined) : null;
      if (wait !== null && attempt < this.rateLimitRetries && wait <= this.maxRetryAfterMs) {
        this.stats.rateLimitRetries++;
        await sleep(wait);
        continue;
      }
      const e = (r.body as { error?: { message?: unknown; reason?: unknown } } | null)?.error;
      throw new LandfallApiError(
        r.status,
        typeof e?.message === 'string' ? e.message : `HTTP ${r.status}`,
        typeof e?.reason === 'string' ? e.reason : JSON.stringify(r.body),
        wait,
      );
    }
  }

  /**
   * One exchange with the service: at the current URL, and after a network error (refused,
   * reset, timed out) again at the next one, after a back-off, up to `networkRetries` times.
   * The URL that answers becomes the current one.
   */
  private async request(method: string, path: string, payload: Buffer | undefined): Promise<Response> {
    for (let attempt = 0; ; attempt++) {
      const at = this.current;
      try {
        return await this.endpoints[at]!.request(method, path, payload);
      } catch (e) {
        if (!isNetworkError(e) || attempt >= this.networkRetries) throw e;
        this.stats.networkRetries++;
        if (this.endpoints.length > 1 && this.current === at) {
          this.current = (at + 1) % this.endpoints.length;
          this.stats.failovers++;
        }
        // With several URLs the first retry goes to the next one at once; a lone URL waits.
        const backoff = Math.min(this.retryBackoffMs * 2 ** attempt, MAX_BACKOFF_MS);
        if (this.endpoints.length === 1 || attempt >= this.endpoints.length - 1) await sleep(backoff);
      }
    }
  }
}

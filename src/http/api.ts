/**
 * The API of spec §4 on uWebSockets.js: send, batch, status, account, plus tip-addresses,
 * health and ping. Handlers throw `ApiError`; `route` renders it. Nothing here knows LMDB key
 * layouts or QUIC: accounts, store and delivery are behind their own modules.
 */
import * as uWS from 'uWebSockets.js';
import type { Accounts } from '../accounts/accounts.js';
import { minTipLamports, pointsForTip } from '../accounts/plans.js';
import type { RateDecision, RateLimiter } from '../accounts/rate-limiter.js';
import type { Config } from '../config.js';
import {
  DEFAULT_SEND_OPTIONS,
  DeliveryError,
  MAX_RETRIES_LIMIT,
  type Delivery,
  type SendOptions,
} from '../delivery/delivery.js';
import {
  base58Decode,
  inspectTransaction,
  inspectTransactionsAsync,
  type InspectResult,
  type TipSet,
  type VerifiedTransaction,
} from '../native.js';
import type { AccountRecord, KeyRecord, StatusRecord, Store } from '../store/store.js';
import { ApiError, MSG } from './errors.js';
import { Ctx, isJson, parseJson, type Reply } from './request.js';
import { registerStream, type StatusHub } from './stream.js';

export const SEND_BODY_LIMIT = 8 * 1024;
export const BATCH_BODY_LIMIT = 256 * 1024;
export const MAX_BATCH = 100;

export interface Services {
  config: Config;
  accounts: Accounts;
  store: Store;
  limiter: RateLimiter;
  tips: TipSet;
  delivery: Delivery;
  /** Status changes for `/v1/stream`; without it the stream endpoint is not served. */
  statusHub?: StatusHub;
}

type Handler = (ctx: Ctx) => Reply | Promise<Reply>;

/** Wrap a handler: capture the request, optionally start the body, render errors. */
function route(params: number, bodyLimit: number | null, handler: Handler) {
  return (res: uWS.HttpResponse, req: uWS.HttpRequest) => {
    const ctx = new Ctx(res, req, params);
    if (bodyLimit !== null) ctx.startBody(bodyLimit);
    const fail = (e: unknown) => {
      if (e instanceof ApiError) ctx.replyError(e);
      else {
        // Never leak internals; the reason stays generic, the process stays up.
        process.stderr.write(`landfall: internal error on ${ctx.method} ${ctx.url}: ${(e as Error)?.stack ?? e}\n`);
        ctx.replyError(new ApiError(500, MSG.internal, 'unexpected server error'));
      }
    };
    try {
      const r = handler(ctx);
      if (r instanceof Promise) r.then((x) => ctx.reply(x), fail);
      else ctx.reply(r);
    } catch (e) {
      fail(e);
    }
  };
}

// ---- authentication (spec §5) -----------------------------------------------------------

const BEARER = /^Bearer\s+(\S+)\s*$/i;

function bearerKey(ctx: Ctx): string | undefined {
  if (!ctx.authorization) return undefined;
  const m = BEARER.exec(ctx.authorization);
  return m ? m[1] : '';
}

/**
 * Resolve the caller. `allowQuery`: also accept `api-key` / `api_key` query parameters
 * (status and account endpoints; spec §5.2–5.3).
 */
function authenticate(s: Services, ctx: Ctx, allowQuery: boolean): { key: KeyRecord; account: AccountRecord } {
  let key = bearerKey(ctx);
  if (key === '') throw new ApiError(401, MSG.unauthorized, 'Authorization header must be "Bearer <API key>"');
  if (key === undefined && allowQuery) key = ctx.queryParam('api-key') ?? ctx.queryParam('api_key');
  if (key === undefined || key === '') {
    throw new ApiError(
      401,
      MSG.unauthorized,
      allowQuery ? 'missing API key: use "Authorization: Bearer <key>" or the api-key query parameter' : 'missing "Authorization: Bearer <key>" header',
    );
  }
  const who = s.accounts.authenticate(key);
  if (!who) throw new ApiError(401, MSG.unauthorized, 'invalid or revoked API key');
  return who;
}

// ---- rate limits ---------------------------------------------------------------------------

function rateHeaders(d: RateDecision): Record<string, string> {
  return {
    'RateLimit-Limit': String(d.limit),
    'RateLimit-Remaining': String(d.remaining),
    'RateLimit-Reset': String(Math.max(0, Math.ceil(d.resetMs / 1000))),
  };
}

function refuse(d: RateDecision, message: string, what: string): ApiError {
  const retry = Number.isFinite(d.retryAfterMs) ? Math.max(1, Math.ceil(d.retryAfterMs / 1000)) : 60;
  const reason = Number.isFinite(d.retryAfterMs)
    ? `${what} budget of ${d.limit}/s exhausted; retry in ${Math.ceil(d.retryAfterMs)} ms`
    : `${what} request larger than the ${d.limit}/s budget can ever grant at once`;
  return new ApiError(429, message, reason, { 'Retry-After': String(retry), ...rateHeaders(d) });
}

// ---- send ----------------------------------------------------------------------------------

function requireJson(ctx: Ctx): void {
  if (!isJson(ctx.contentType)) {
    throw new ApiError(
      415,
      MSG.unsupportedMediaType,
      ctx.contentType ? `Content-Type must be application/json, got ${ctx.contentType}` : 'Content-Type: application/json is required',
    );
  }
}

function parseOptions(v: unknown): SendOptions {
  if (v === undefined || v === null) return DEFAULT_SEND_OPTIONS;
  if (typeof v !== 'object' || Array.isArray(v)) throw new ApiError(400, MSG.invalidTransaction, 'options must be an object');
  const o = v as Record<string, unknown>;
  const bool = (k: string, d: boolean) => {
    if (o[k] === undefined) return d;
    if (typeof o[k] !== 'boolean') throw new ApiError(400, MSG.invalidTransaction, `options.${k} must be a boolean`);
    return o[k] as boolean;
  };
  let maxRetries = DEFAULT_SEND_OPTIONS.maxRetries;
  if (o.max_retries !== undefined) {
    const m = o.max_retries;
    if (typeof m !== 'number' || !Number.isInteger(m) || m < 0 || m > MAX_RETRIES_LIMIT) {
      throw new ApiError(400, MSG.invalidTransaction, `options.max_retries must be an integer 0..${MAX_RETRIES_LIMIT}`);
    }
    maxRetries = m;
  }
  return {
    skipPreflight: bool('skip_preflight', DEFAULT_SEND_OPTIONS.skipPreflight),
    maxRetries,
    antiMev: bool('anti_mev', DEFAULT_SEND_OPTIONS.antiMev),
  };
}

/** Everything a verified transaction must still pass before delivery: blockhash, tip. */
function admissible(s: Services, tx: VerifiedTransaction, account: AccountRecord): ApiError | null {
  if (!tx.durableNonce && s.delivery.isBlockhashExpired(tx.recentBlockhash)) {
    return new ApiError(400, MSG.invalidTransaction, `blockhash ${tx.recentBlockhash} has expired; sign with a recent blockhash`);
  }
  if (tx.tipLamports === 0n) {
    const reason =
      tx.transfersViaLookup > 0
        ? 'a transfer destination is loaded from an address lookup table; tip addresses must be static account keys'
        : 'no System transfer to a tip address (GET /v1/tip-addresses)';
    return new ApiError(402, MSG.tipRequired, reason);
  }
  const lpp = s.config.lamportsPerPoint;
  const plan = s.config.plans[account.plan];
  const min = minTipLamports(plan, lpp);
  if (tx.tipLamports < min) {
    return new ApiError(
      402,
      MSG.tipInsufficient,
      `tip of ${tx.tipLamports} lamports (${pointsForTip(tx.tipLamports, lpp)} BP) is below the ${account.plan} minimum of ${plan.minTipBp} BP (${min} lamports)`,
    );
  }
  return null;
}

function invalid(r: Extract<InspectResult, { ok: false }>): ApiError {
  return new ApiError(400, MSG.invalidTransaction, `${r.error.code}: ${r.error.message}`);
}

/** Record (first submission only), count, deliver. Returns the send result. */
async function deliver(
  s: Services,
  ctx: Ctx,
  tx: VerifiedTransaction,
  wire: Buffer,
  who: { key: KeyRecord; account: AccountRecord },
  options: SendOptions,
): Promise<{ slot: number }> {
  const existing = s.store.getStatus(tx.signature);
  const result = await s.delivery.submit({
    signature: tx.signature,
    wire,
    accountId: who.account.id,
    recentBlockhash: tx.recentBlockhash,
    durableNonce: tx.durableNonce,
    tipLamports: tx.tipLamports,
    options,
    receivedAt: ctx.receivedAt,
  });
  if (!existing) {
    // Idempotent: a known signature is delivered again but never recorded or counted twice.
    const now = Date.now();
    const rec: StatusRecord = {
      signature: tx.signature,
      accountId: who.account.id,
      keyName: who.key.name,
      status: 'sent',
      submittedAt: now,
      confirmedAt: null,
      latencyMs: null,
      slot: null,
      submitSlot: result.slot,
      expired: false,
      tipLamports: tx.tipLamports.toString(),
      recentBlockhash: tx.recentBlockhash,
      durableNonce: tx.durableNonce,
    };
    s.store.insertStatus(rec, {
      accountId: who.account.id,
      submittedAt: now,
      recentBlockhash: tx.recentBlockhash,
      durableNonce: tx.durableNonce,
      lastValidBlockHeight: result.lastValidBlockHeight,
      tipLamports: rec.tipLamports,
    });
    s.accounts.countSubmissions(who.account.id, 1);
    s.statusHub?.publish(rec);
  }
  return { slot: result.slot };
}

function sendHandler(s: Services): Handler {
  return async (ctx) => {
    const who = authenticate(s, ctx, false);
    requireJson(ctx);
    const body = parseJson(await ctx.body(), MSG.invalidTransaction);
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new ApiError(400, MSG.invalidTransaction, 'body must be a JSON object {"transaction": "<base64>"}');
    }
    const { transaction, options } = body as Record<string, unknown>;
    if (typeof transaction !== 'string') {
      throw new ApiError(400, MSG.invalidTransaction, 'transaction must be a base64 string');
    }
    const opts = parseOptions(options);
    const r = inspectTransaction(transaction, s.tips);
    if (!r.ok) throw invalid(r);
    const refusal = admissible(s, r.tx, who.account);
    if (refusal) throw refusal;
    const d = s.limiter.takeSend(who.account, 1);
    if (!d.granted) throw refuse(d, MSG.rateLimited, 'send');
    if (!opts.skipPreflight) {
      const err = await s.delivery.simulate(r.tx.wire!);
      if (err !== null) throw new ApiError(400, MSG.invalidTransaction, `preflight simulation failed: ${err}`);
    }
    try {
      const { slot } = await deliver(s, ctx, r.tx, r.tx.wire!, who, opts);
      return { status: 200, body: { success: true, signature: r.tx.signature, slot }, headers: rateHeaders(d) };
    } catch (e) {
      if (e instanceof DeliveryError) throw new ApiError(500, MSG.deliveryFailed, e.message);
      throw e;
    }
  };
}

// ---- batch ---------------------------------------------------------------------------------

interface BatchItem {
  index: number;
  signature: string | null;
  status: 'sent' | 'failed';
  error?: string;
}

function batchHandler(s: Services): Handler {
  return async (ctx) => {
    const who = authenticate(s, ctx, false);
    requireJson(ctx);
    const body = parseJson(await ctx.body(), MSG.invalidRequest);
    const txs = typeof body === 'object' && body !== null ? (body as Record<string, unknown>).transactions : undefined;
    if (!Array.isArray(txs)) throw new ApiError(400, MSG.invalidRequest, 'transactions must be an array of base64 strings');
    if (txs.length === 0) throw new ApiError(400, MSG.invalidRequest, 'transactions must not be empty');
    if (txs.length > MAX_BATCH) {
      throw new ApiError(400, MSG.invalidRequest, `batch of ${txs.length} exceeds the maximum of ${MAX_BATCH} transactions`);
    }
    const opts = parseOptions((body as Record<string, unknown>).options);
    // A batch of N consumes N tokens, all or nothing (spec §8).
    const d = s.limiter.takeSend(who.account, txs.length);
    if (!d.granted) throw refuse(d, MSG.rateLimited, 'send');

    const strings = txs.map((t) => (typeof t === 'string' ? t : ''));
    // One ed25519 batch on a pool thread: the event loop keeps serving while it verifies.
    const verdicts = await inspectTransactionsAsync(strings, s.tips);
    const results: BatchItem[] = await Promise.all(
      verdicts.map(async (v, index): Promise<BatchItem> => {
        if (typeof txs[index] !== 'string') {
          return { index, signature: null, status: 'failed', error: `${MSG.invalidTransaction}: transaction must be a base64 string` };
        }
        if (!v.ok) return { index, signature: null, status: 'failed', error: `${MSG.invalidTransaction}: ${v.error.code}: ${v.error.message}` };
        const refusal = admissible(s, v.tx, who.account);
        if (refusal) return { index, signature: null, status: 'failed', error: `${refusal.message}: ${refusal.reason}` };
        try {
          if (!opts.skipPreflight) {
            const err = await s.delivery.simulate(v.tx.wire!);
            if (err !== null) return { index, signature: null, status: 'failed', error: `${MSG.invalidTransaction}: preflight simulation failed: ${err}` };
          }
          await deliver(s, ctx, v.tx, v.tx.wire!, who, opts);
          return { index, signature: v.tx.signature, status: 'sent' };
        } catch (e) {
          if (e instanceof DeliveryError) return { index, signature: v.tx.signature, status: 'failed', error: `${MSG.deliveryFailed}: ${e.message}` };
          throw e;
        }
      }),
    );
    return { status: 200, body: { success: true, results }, headers: rateHeaders(d) };
  };
}

// ---- status and account --------------------------------------------------------------------

/** The status record of spec §2.4 (+ `expired` once it can no longer land). */
export function statusView(r: StatusRecord): Record<string, unknown> {
  return {
    signature: r.signature,
    status: r.status,
    submitted_at: new Date(r.submittedAt).toISOString(),
    confirmed_at: r.confirmedAt === null ? null : new Date(r.confirmedAt).toISOString(),
    latency_ms: r.latencyMs,
    slot: r.slot,
    api_key_name: r.keyName,
    ...(r.expired && { expired: true }),
  };
}

function statusHandler(s: Services): Handler {
  return (ctx) => {
    const who = authenticate(s, ctx, true);
    const sig = ctx.params[0] ?? '';
    let bytes: Buffer | undefined;
    try {
      bytes = sig.length >= 64 && sig.length <= 88 ? base58Decode(sig) : undefined;
    } catch {
      bytes = undefined;
    }
    if (!bytes || bytes.length !== 64) {
      throw new ApiError(400, MSG.invalidSignature, 'signature must be the base58 encoding of 64 bytes');
    }
    const d = s.limiter.takeQuery(who.account);
    if (!d.granted) throw refuse(d, MSG.queryRateLimited, 'query');
    let rec: StatusRecord | undefined;
    try {
      rec = s.store.getStatus(sig);
    } catch (e) {
      throw new ApiError(500, MSG.internal, `status lookup failed: ${(e as Error).message}`);
    }
    if (!rec || rec.accountId !== who.account.id) {
      throw new ApiError(404, MSG.notFound, 'no transaction with this signature was submitted by this account');
    }
    return { status: 200, body: statusView(rec), headers: rateHeaders(d) };
  };
}

function accountHandler(s: Services): Handler {
  return (ctx) => {
    const who = authenticate(s, ctx, true);
    const d = s.limiter.takeQuery(who.account);
    if (!d.granted) throw refuse(d, MSG.queryRateLimited, 'query');
    return { status: 200, body: s.accounts.view(who.account), headers: rateHeaders(d) };
  };
}

// ---- the app -------------------------------------------------------------------------------

function notAllowed(allow: string) {
  return route(0, null, () => {
    throw new ApiError(405, MSG.methodNotAllowed, `use ${allow}`, { Allow: allow });
  });
}

/** Build the uWS app with every route. */
export function buildApp(s: Services): uWS.TemplatedApp {
  const app = uWS.App();
  const startedAt = Date.now();
  app.post('/v1/send', route(0, SEND_BODY_LIMIT, sendHandler(s)));
  app.post('/v1/send/batch', route(0, BATCH_BODY_LIMIT, batchHandler(s)));
  app.get('/v1/status/:signature', route(1, null, statusHandler(s)));
  app.get('/v1/account', route(0, null, accountHandler(s)));
  if (s.statusHub) registerStream(app, s, s.statusHub, statusView);
  const tipAddresses = s.tips.addresses; // decoded once by TipSet; encoded once here
  app.get('/v1/tip-addresses', route(0, null, () => ({ status: 200, body: { tip_addresses: tipAddresses } })));
  app.get(
    '/health',
    route(0, null, () => {
      const h = s.delivery.health();
      return {
        status: h.synced ? 200 : 503,
        body: { status: h.synced ? 'ok' : 'unsynced', uptime_s: Math.round((Date.now() - startedAt) / 1000), chain: { synced: h.synced, slot: h.slot, slot_age_ms: Math.round(h.slotAgeMs) } },
      };
    }),
  );
  app.get('/ping', (res) => {
    res.cork(() => res.writeStatus('200 OK').writeHeader('content-type', 'text/plain').end('pong'));
  });
  for (const [path, allow] of [
    ['/v1/send', 'POST'],
    ['/v1/send/batch', 'POST'],
    ['/v1/status/:signature', 'GET'],
    ['/v1/account', 'GET'],
    ['/v1/tip-addresses', 'GET'],
    ['/health', 'GET'],
    ['/ping', 'GET'],
  ] as const) {
    app.any(path, notAllowed(allow));
  }
  app.any(
    '/*',
    route(0, null, (ctx) => {
      throw new ApiError(404, MSG.notFound, `no route ${ctx.method} ${ctx.url}`);
    }),
  );
  return app;
}

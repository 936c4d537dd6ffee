/**
 * The API of spec §4 on uWebSockets.js: send, batch, status, account, plus tip-addresses,
 * health, ping, metrics, the OpenAPI document and Solana JSON-RPC (`POST /`, `/v1/rpc`).
 * Handlers throw `ApiError`; `route` renders it. Nothing here knows LMDB key layouts or QUIC:
 * accounts, store and delivery are behind their own modules.
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
import type { Budget } from '../telemetry/metrics.js';
import { Telemetry } from '../telemetry/telemetry.js';
import { ApiError, MSG, PreflightFailed, TransactionRefused } from './errors.js';
import { rpcHandler } from './json-rpc.js';
import { OPENAPI } from './openapi.js';
import { Ctx, parseJson, requireJson, type Reply } from './request.js';
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
  /** Logs and metrics; without it requests are counted but nothing is logged. */
  telemetry?: Telemetry;
}

/** `Services` once `buildApp` has filled in the defaults. */
type Wired = Services & { telemetry: Telemetry };

export type Handler = (ctx: Ctx) => Reply | Promise<Reply>;

/** Who a request comes from, once its API key is resolved. */
export interface Caller {
  key: KeyRecord;
  account: AccountRecord;
}

/** One HTTP route: the pattern doubles as the metrics label, so the label set stays bounded. */
interface RouteSpec {
  method: 'get' | 'post';
  pattern: string;
  /** Body size limit; null for routes without a body. */
  body: number | null;
  handler: Handler;
}

/** Wrap a handler: capture the request, optionally start the body, render errors. */
function route(t: Telemetry, spec: Pick<RouteSpec, 'pattern' | 'body' | 'handler'>) {
  const params = spec.pattern.split('/').filter((p) => p.startsWith(':')).length;
  const { pattern, body: bodyLimit, handler } = spec;
  return (res: uWS.HttpResponse, req: uWS.HttpRequest) => {
    const ctx = new Ctx(res, req, params, pattern, t);
    if (bodyLimit !== null) ctx.startBody(bodyLimit);
    const fail = (e: unknown) => {
      if (e instanceof ApiError) ctx.replyError(e);
      else {
        // Never leak internals; the reason stays generic, the process stays up.
        t.internalError(ctx, e);
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
function authenticate(s: Services, ctx: Ctx, allowQuery: boolean): Caller {
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
  ctx.accountId = who.account.id;
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

/** The 429 for a refused take from an account's `budget` (counted for `/metrics`). */
function refuse(s: Wired, d: RateDecision, budget: Budget): ApiError {
  s.telemetry.metrics.rateLimited(budget);
  const message = budget === 'send' ? MSG.rateLimited : MSG.queryRateLimited;
  const retry = Number.isFinite(d.retryAfterMs) ? Math.max(1, Math.ceil(d.retryAfterMs / 1000)) : 60;
  const reason = Number.isFinite(d.retryAfterMs)
    ? `${budget} budget of ${d.limit}/s exhausted; retry in ${Math.ceil(d.retryAfterMs)} ms`
    : `${budget} request larger than the ${d.limit}/s budget can ever grant at once`;
  return new ApiError(429, message, reason, { 'Retry-After': String(retry), ...rateHeaders(d) });
}

// ---- send ----------------------------------------------------------------------------------

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
  return new TransactionRefused(r.error.code, r.error.message);
}

/** Simulate through the chain node (`skip_preflight: false`); a failure is a `PreflightFailed`. */
async function preflight(s: Services, wire: Buffer): Promise<void> {
  const failure = await s.delivery.simulate(wire);
  if (failure !== null) throw new PreflightFailed(failure);
}

/**
 * Record (first submission only), count, deliver. Returns the send result; a first send that
 * reached no leader is the spec's 500 `Delivery failed`.
 */
async function deliver(
  s: Services,
  ctx: Ctx,
  tx: VerifiedTransaction,
  wire: Buffer,
  who: { key: KeyRecord; account: AccountRecord },
  options: SendOptions,
): Promise<{ slot: number }> {
  const existing = s.store.getStatus(tx.signature);
  const result = await submit(s, {
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

async function submit(s: Services, req: Parameters<Delivery['submit']>[0]) {
  try {
    return await s.delivery.submit(req);
  } catch (e) {
    if (e instanceof DeliveryError) throw new ApiError(500, MSG.deliveryFailed, e.message);
    throw e;
  }
}

/**
 * The one path of a single transaction, behind `POST /v1/send` and JSON-RPC `sendTransaction`:
 * admission (blockhash, tip), one token of the send budget, preflight if asked, delivery. Every
 * refusal is thrown as an `ApiError`; each front end renders it in its own dialect.
 */
export async function sendOne(
  s: Wired,
  ctx: Ctx,
  who: Caller,
  r: InspectResult,
  opts: SendOptions,
): Promise<{ signature: string; slot: number; rate: RateDecision }> {
  if (!r.ok) throw invalid(r);
  const tx = r.tx;
  ctx.signature = tx.signature;
  const refusal = admissible(s, tx, who.account);
  if (refusal) throw refusal;
  const d = s.limiter.takeSend(who.account, 1);
  if (!d.granted) throw refuse(s, d, 'send');
  if (!opts.skipPreflight) await preflight(s, tx.wire!);
  const { slot } = await deliver(s, ctx, tx, tx.wire!, who, opts);
  return { signature: tx.signature, slot, rate: d };
}

function sendHandler(s: Wired): Handler {
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
    const sent = await sendOne(s, ctx, who, inspectTransaction(transaction, s.tips), opts);
    return { status: 200, body: { success: true, signature: sent.signature, slot: sent.slot }, headers: rateHeaders(sent.rate) };
  };
}

// ---- batch ---------------------------------------------------------------------------------

interface BatchItem {
  index: number;
  signature: string | null;
  status: 'sent' | 'failed';
  error?: string;
}

function batchHandler(s: Wired): Handler {
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
    if (!d.granted) throw refuse(s, d, 'send');

    const strings = txs.map((t) => (typeof t === 'string' ? t : ''));
    // One ed25519 batch on a pool thread: the event loop keeps serving while it verifies.
    const verdicts = await inspectTransactionsAsync(strings, s.tips);
    const results: BatchItem[] = await Promise.all(
      verdicts.map(async (v, index): Promise<BatchItem> => {
        if (typeof txs[index] !== 'string') {
          return { index, signature: null, status: 'failed', error: `${MSG.invalidTransaction}: transaction must be a base64 string` };
        }
        try {
          if (!v.ok) throw invalid(v);
          const refusal = admissible(s, v.tx, who.account);
          if (refusal) throw refusal;
          if (!opts.skipPreflight) await preflight(s, v.tx.wire!);
          await deliver(s, ctx, v.tx, v.tx.wire!, who, opts);
          return { index, signature: v.tx.signature, status: 'sent' };
        } catch (e) {
          if (!(e instanceof ApiError)) throw e;
          // Only a delivery failure has a signature worth reporting: the transaction was valid.
          const signature = e.message === MSG.deliveryFailed && v.ok ? v.tx.signature : null;
          return { index, signature, status: 'failed', error: `${e.message}: ${e.reason}` };
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

function statusHandler(s: Wired): Handler {
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
    if (!d.granted) throw refuse(s, d, 'query');
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

function accountHandler(s: Wired): Handler {
  return (ctx) => {
    const who = authenticate(s, ctx, true);
    const d = s.limiter.takeQuery(who.account);
    if (!d.granted) throw refuse(s, d, 'query');
    return { status: 200, body: s.accounts.view(who.account), headers: rateHeaders(d) };
  };
}

// ---- the app -------------------------------------------------------------------------------

/** Build the uWS app with every route. */
export function buildApp(services: Services): uWS.TemplatedApp {
  const s: Wired = { ...services, telemetry: services.telemetry ?? Telemetry.quiet() };
  const t = s.telemetry;
  const app = uWS.App();
  const startedAt = Date.now();
  const tipAddresses = s.tips.addresses; // decoded once by TipSet; encoded once here
  const openapi = JSON.stringify(OPENAPI); // rendered once
  const rpc = rpcHandler({
    tips: s.tips,
    tipAddresses,
    authenticate: (ctx) => authenticate(s, ctx, true),
    send: (ctx, who, r, opts) => sendOne(s, ctx, who, r, opts),
    internalError: (ctx, e) => t.internalError(ctx, e),
  });
  const routes: RouteSpec[] = [
    { method: 'post', pattern: '/v1/send', body: SEND_BODY_LIMIT, handler: sendHandler(s) },
    { method: 'post', pattern: '/v1/send/batch', body: BATCH_BODY_LIMIT, handler: batchHandler(s) },
    { method: 'get', pattern: '/v1/status/:signature', body: null, handler: statusHandler(s) },
    { method: 'get', pattern: '/v1/account', body: null, handler: accountHandler(s) },
    { method: 'get', pattern: '/v1/tip-addresses', body: null, handler: () => ({ status: 200, body: { tip_addresses: tipAddresses } }) },
    { method: 'post', pattern: '/', body: BATCH_BODY_LIMIT, handler: rpc },
    { method: 'post', pattern: '/v1/rpc', body: BATCH_BODY_LIMIT, handler: rpc },
    { method: 'get', pattern: '/v1/openapi.json', body: null, handler: () => ({ status: 200, body: openapi, contentType: 'application/json' }) },
    {
      method: 'get',
      pattern: '/health',
      body: null,
      handler: () => {
        const h = s.delivery.health();
        return {
          status: h.synced ? 200 : 503,
          body: { status: h.synced ? 'ok' : 'unsynced', uptime_s: Math.round((Date.now() - startedAt) / 1000), chain: { synced: h.synced, slot: h.slot, slot_age_ms: Math.round(h.slotAgeMs) } },
        };
      },
    },
    { method: 'get', pattern: '/ping', body: null, handler: () => ({ status: 200, body: 'pong', contentType: 'text/plain' }) },
    { method: 'get', pattern: '/metrics', body: null, handler: async () => ({ status: 200, body: await t.metrics.text(), contentType: t.metrics.contentType }) },
  ];
  for (const r of routes) app[r.method](r.pattern, route(t, r));
  if (s.statusHub) registerStream(app, s, s.statusHub, statusView);
  // A known path with the wrong method: 405 with Allow (after the routes, which win).
  for (const r of routes) {
    const allow = r.method.toUpperCase();
    app.any(
      r.pattern,
      route(t, {
        pattern: r.pattern,
        body: null,
        handler: () => {
          throw new ApiError(405, MSG.methodNotAllowed, `use ${allow}`, { Allow: allow });
        },
      }),
    );
  }
  app.any(
    '/*',
    route(t, {
      pattern: '/*',
      body: null,
      handler: (ctx) => {
        throw new ApiError(404, MSG.notFound, `no route ${ctx.method} ${ctx.url}`);
      },
    }),
  );
  return app;
}

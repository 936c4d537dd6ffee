/**
 * The API of spec §4 on uWebSockets.js: routes and rendering only. Send, batch and JSON-RPC
 * `sendTransaction` call the submission core (`src/submission/`); status and account read the
 * store and accounts. Handlers throw `Refusal`s; `route` renders them.
 *
 * Layers (each only imports the ones below it, so there is no circle):
 *   api.ts (routes) → json-rpc.ts, stream.ts, openapi.ts → auth.ts, request.ts, types.ts
 *   → submission/ → accounts/, store/, delivery/, native
 */
import * as uWS from 'uWebSockets.js';
import { KeyCache } from '../accounts/key-cache.js';
import { base58DecodeShared, inspectTransaction, inspectTransactionsAsync } from '../native.js';
import type { StatusRecord } from '../store/records.js';
import { rateHeaders, SubmissionCore, type Caller } from '../submission/core.js';
import { MAX_BATCH, parseSendOptions } from '../submission/options.js';
import { Refusal } from '../submission/refusals.js';
import { Telemetry } from '../telemetry/telemetry.js';
import { authenticate } from './auth.js';
import { rpcHandler } from './json-rpc.js';
import { OPENAPI } from './openapi.js';
import { Ctx, parseJson, requireJson, type Reply } from './request.js';
import { registerStream } from './stream.js';
import { StreamSlots } from './stream-slots.js';
import type { Handler, Services } from './types.js';

export { MAX_BATCH };
export type { Services, Handler, Caller };

export const SEND_BODY_LIMIT = 8 * 1024;
export const BATCH_BODY_LIMIT = 256 * 1024;

/** `Services` once `buildApp` has filled in the defaults. */
export type Wired = Services & { telemetry: Telemetry; keys: KeyCache; core: SubmissionCore };

/** One HTTP route: the pattern doubles as the metrics label, so the label set stays bounded. */
interface RouteSpec {
  method: 'get' | 'post';
  pattern: string;
  /** Body size limit; null for routes without a body. */
  body: number | null;
  handler: Handler;
}

/** Wrap a handler: capture the request, optionally start the body, render refusals. */
function route(t: Telemetry, spec: Pick<RouteSpec, 'pattern' | 'body' | 'handler'>) {
  const params = spec.pattern.split('/').filter((p) => p.startsWith(':')).length;
  const { pattern, body: bodyLimit, handler } = spec;
  const fail = (ctx: Ctx, e: unknown) => {
    if (e instanceof Refusal) ctx.replyError(e);
    else {
      // Never leak internals; the reason stays generic, the process stays up.
      t.internalError(ctx, e);
      ctx.replyError(new Refusal('INTERNAL', 'unexpected server error'));
    }
  };
  return (res: uWS.HttpResponse, req: uWS.HttpRequest) => {
    const ctx = new Ctx(res, req, params, pattern, t);
    if (bodyLimit !== null) ctx.startBody(bodyLimit);
    try {
      const r = handler(ctx);
      if (r instanceof Promise) r.then((x) => ctx.reply(x), (e: unknown) => fail(ctx, e));
      else ctx.reply(r);
    } catch (e) {
      fail(ctx, e);
    }
  };
}

// ---- send and batch --------------------------------------------------------------------------

function sendHandler(s: Wired): Handler {
  return async (ctx) => {
    const who = authenticate(s.keys, ctx, false);
    requireJson(ctx);
    const body = parseJson(await ctx.body(), 'TX_INVALID');
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new Refusal('TX_INVALID', 'body must be a JSON object {"transaction": "<base64>"}');
    }
    const { transaction, options } = body as Record<string, unknown>;
    if (typeof transaction !== 'string') throw new Refusal('TX_INVALID', 'transaction must be a base64 string');
    const opts = parseSendOptions(options);
    const r = inspectTransaction(transaction, s.tips);
    if (r.ok) ctx.signature = r.tx.signature;
    const sent = await s.core.send(who, r, opts, ctx.receivedAt);
    return { status: 200, body: { success: true, signature: sent.signature, slot: sent.slot }, headers: rateHeaders(sent.rate) };
  };
}

function batchHandler(s: Wired): Handler {
  return async (ctx) => {
    const who = authenticate(s.keys, ctx, false);
    requireJson(ctx);
    const body = parseJson(await ctx.body(), 'REQUEST_INVALID');
    const txs = typeof body === 'object' && body !== null ? (body as Record<string, unknown>).transactions : undefined;
    if (!Array.isArray(txs)) throw new Refusal('REQUEST_INVALID', 'transactions must be an array of base64 strings');
    if (txs.length === 0) throw new Refusal('REQUEST_INVALID', 'transactions must not be empty');
    if (txs.length > MAX_BATCH) throw new Refusal('REQUEST_INVALID', `batch of ${txs.length} exceeds the maximum of ${MAX_BATCH} transactions`);
    const opts = parseSendOptions((body as Record<string, unknown>).options);
    // One ed25519 batch on a libuv pool thread (the event loop keeps serving while it verifies),
    // run only once the budget has granted all N tokens.
    const verify = async () => {
      const verdicts = await inspectTransactionsAsync(
        txs.map((t) => (typeof t === 'string' ? t : '')),
        s.tips,
      );
      return verdicts.map((v, i) => (typeof txs[i] === 'string' ? v : null));
    };
    const { results, rate } = await s.core.sendBatch(who, txs.length, verify, opts, ctx.receivedAt);
    return { status: 200, body: { success: true, results }, headers: rateHeaders(rate) };
  };
}

// ---- status and account ----------------------------------------------------------------------

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
    const who = authenticate(s.keys, ctx, true);
    const sig = ctx.params[0] ?? '';
    let bytes: Buffer | undefined;
    try {
      bytes = sig.length >= 64 && sig.length <= 88 ? base58DecodeShared(sig) : undefined;
    } catch {
      bytes = undefined;
    }
    if (!bytes || bytes.length !== 64) throw new Refusal('STATUS_SIGNATURE_INVALID', 'signature must be the base58 encoding of 64 bytes');
    const d = s.core.take(who.account, 'query');
    let rec: StatusRecord | undefined;
    try {
      rec = s.store.getStatus(sig);
    } catch (e) {
      throw new Refusal('INTERNAL', `status lookup failed: ${(e as Error).message}`);
    }
    if (!rec || rec.accountId !== who.account.id) {
      throw new Refusal('STATUS_NOT_FOUND', 'no transaction with this signature was submitted by this account');
    }
    return { status: 200, body: statusView(rec), headers: rateHeaders(d) };
  };
}

function accountHandler(s: Wired): Handler {
  return (ctx) => {
    const who = authenticate(s.keys, ctx, true);
    const d = s.core.take(who.account, 'query');
    return { status: 200, body: s.accounts.view(who.account), headers: rateHeaders(d) };
  };
}

// ---- the app -----------------------------------------------------------------------------------

/** Fill in the defaults: quiet telemetry, a key cache, the submission core. */
export function wire(services: Services): Wired {
  const telemetry = services.telemetry ?? Telemetry.quiet();
  const keys = services.keys ?? new KeyCache(services.accounts, services.store);
  const core = new SubmissionCore({
    plans: services.config.plans,
    lamportsPerPoint: services.config.lamportsPerPoint,
    accounts: services.accounts,
    store: services.store,
    limiter: services.limiter,
    delivery: services.delivery,
    inFlight: services.inFlight,
    onRateLimited: (budget) => telemetry.metrics.rateLimited(budget),
  });
  return { ...services, telemetry, keys, core };
}

/** A constant reply, rendered once. */
function constant(status: number, body: string, contentType = 'application/json'): Handler {
  const reply: Reply = { status, body, contentType };
  return () => reply;
}

/** Build the uWS app with every route. */
export function buildApp(services: Services): uWS.TemplatedApp {
  const s = wire(services);
  const t = s.telemetry;
  const app = uWS.App();
  const startedAt = Date.now();
  const rpc = rpcHandler({
    tips: s.tips,
    tipAddresses: s.tips.addresses,
    authenticate: (ctx) => authenticate(s.keys, ctx, true),
    send: (ctx, who, r, opts) => {
      if (r.ok) ctx.signature = r.tx.signature;
      return s.core.send(who, r, opts, ctx.receivedAt);
    },
    internalError: (ctx, e) => t.internalError(ctx, e),
  });
  const metricsText = s.metricsText ?? (() => t.metrics.text());
  const routes: RouteSpec[] = [
    { method: 'post', pattern: '/v1/send', body: SEND_BODY_LIMIT, handler: sendHandler(s) },
    { method: 'post', pattern: '/v1/send/batch', body: BATCH_BODY_LIMIT, handler: batchHandler(s) },
    { method: 'get', pattern: '/v1/status/:signature', body: null, handler: statusHandler(s) },
    { method: 'get', pattern: '/v1/account', body: null, handler: accountHandler(s) },
    { method: 'get', pattern: '/v1/tip-addresses', body: null, handler: constant(200, JSON.stringify({ tip_addresses: s.tips.addresses })) },
    { method: 'post', pattern: '/', body: BATCH_BODY_LIMIT, handler: rpc },
    { method: 'post', pattern: '/v1/rpc', body: BATCH_BODY_LIMIT, handler: rpc },
    { method: 'get', pattern: '/v1/openapi.json', body: null, handler: constant(200, JSON.stringify(OPENAPI)) },
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
    { method: 'get', pattern: '/ping', body: null, handler: constant(200, 'pong', 'text/plain') },
    { method: 'get', pattern: '/metrics', body: null, handler: async () => ({ status: 200, body: await metricsText(), contentType: t.metrics.contentType }) },
  ];
  for (const r of routes) app[r.method](r.pattern, route(t, r));
  if (s.statusHub) registerStream(app, s.keys, s.statusHub, s.streamSlots ?? new StreamSlots(), statusView);
  // A known path with the wrong method: 405 with Allow (after the routes, which win).
  for (const r of routes) {
    const allow = r.method.toUpperCase();
    app.any(
      r.pattern,
      route(t, {
        pattern: r.pattern,
        body: null,
        handler: () => {
          throw new Refusal('REQUEST_METHOD', `use ${allow}`, { headers: { Allow: allow } });
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
        throw new Refusal('ROUTE_NOT_FOUND', `no route ${ctx.method} ${ctx.url}`);
      },
    }),
  );
  return app;
}

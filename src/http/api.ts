/**
 * The API of spec §4 on uWebSockets.js: routes and rendering only. Send, batch and JSON-RPC
 * `sendTransaction` call the submission core (`src/submission/`); status and account read the
 * store and accounts. Handlers throw `Refusal`s; `route` renders them.
 *
 * Layers (each only imports the ones below it, so there is no circle):
 *   api.ts (handlers) → json-rpc.ts, stream.ts, openapi.ts → routes.ts (the routes table), auth.ts, request.ts, types.ts
 *   → submission/ → accounts/, store/, delivery/, native
 */
import { LandingAnalytics } from '../tracker/landing-analytics.js';
import { createHash, timingSafeEqual } from 'node:crypto';
import * as uWS from 'uWebSockets.js';
import { KeyCache } from '../accounts/key-cache.js';
import { describeTransactionError } from '../chain/tx-error.js';
import type { BatchBody, DeliveryTrace, SendBody, StatusRecord as StatusJson, StreamStatus, TransactionPage } from '../client/wire.js';
import type { ChainHealth, SendOptions } from '../delivery/delivery.js';
import { finalState, leadersReached } from '../delivery/trace.js';
import { base58DecodeShared, inspectTransactionsAsync } from '../native.js';
import type { StatusRecord, Trace } from '../store/records.js';
import type { TxCursor } from '../store/store.js';
import type { StoreHealthView } from '../store/store-health.js';
import type { LogHealthView } from '../telemetry/log-sink.js';
import type { ClusterHealth } from '../cluster/health.js';
import { SubmissionCore, type Caller, type KeyedCaller } from '../submission/core.js';
import { MAX_BATCH, namesSendOption, parseSendOptions } from '../submission/options.js';
import { Refusal } from '../submission/refusals.js';
import { RenderedText } from '../telemetry/rendered-text.js';
import { Telemetry } from '../telemetry/telemetry.js';
import { TipFloor } from '../tracker/tip-floor.js';
import { authenticate, bearerKey, presentedKey, resolveKey } from './auth.js';
import { DROP_IN_DIALECT, rpcHandler, type RpcBackend } from './json-rpc.js';
import { dashboardRoutes } from './dashboard.js';
import { registerRpcSubscriptions } from './rpc-subscriptions.js';
import { OPENAPI } from './openapi.js';
import { ROUTES, type RouteEntry, type RouteId } from './routes.js';
import { Ctx, parseJson, requireJson, type Reply } from './request.js';
import { rateHeaders } from './rate-headers.js';
import { isLoopback, isLoopbackHostHeader } from './server.js';
import { registerStream } from './stream.js';
import { StreamSlots } from './stream-slots.js';
import type { Handler, Services } from './types.js';

export { MAX_BATCH };
export type { Services, Handler, Caller };

export { BATCH_BODY_LIMIT, SEND_BODY_LIMIT } from './routes.js';

/** `Services` once `buildApp` has filled in the defaults. */
export type Wired = Services & { telemetry: Telemetry; keys: KeyCache; core: SubmissionCore };

/** One HTTP route as registered: where (`RouteEntry`: the pattern doubles as the metrics label) and its handler. */
export type RouteSpec = Pick<RouteEntry, 'method' | 'pattern' | 'body'> & { handler: Handler };

/** Wrap a handler: capture the request, refuse unsafe framing, optionally start the body, render refusals. */
export function route(t: Telemetry, spec: Pick<RouteSpec, 'pattern' | 'body' | 'handler'>) {
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
    if (ctx.framingError !== null) return ctx.replyError(new Refusal('REQUEST_FRAMING', ctx.framingError));
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

const SEND_FIELDS = ['transaction', 'options'] as const;
const BATCH_FIELDS = ['transactions', 'options'] as const;

/**
 * Refuse a body field the endpoint does not know, as unknown option keys are refused: a
 * `skip_preflight` put next to `transaction` instead of inside `options` must not be silently
 * ignored (and the OpenAPI document's request bodies are closed, so the two agree).
 */
function onlyFields(body: Record<string, unknown>, allowed: readonly string[], code: 'TX_INVALID' | 'REQUEST_INVALID'): void {
  for (const k in body) {
    if (allowed.includes(k)) continue;
    const option = namesSendOption(k);
    throw new Refusal(code, `unknown field ${JSON.stringify(k)}${option ? ' (send options go inside "options")' : ''}; the body takes ${allowed.join(' and ')}`);
  }
}

/**
 * `POST /v1/send`. The key is resolved in the send's one native call on an ingress thread
 * (`SubmissionCore.sendBase64Keyed`: the key table's lookup folded into the inspection and
 * admission), so only its presence and form are checked before the body; a refusal of the body
 * itself (its size, its type, its JSON, its fields and options) first resolves the key the
 * ordinary way, so a wrong key is still `401` whatever the body is, as when it was resolved first.
 */
function sendHandler(s: Wired): Handler {
  return async (ctx) => {
    const key = presentedKey(ctx, false);
    let transaction: string;
    let opts: SendOptions;
    try {
      requireJson(ctx);
      const body = parseJson(await ctx.body(), 'TX_INVALID');
      if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        throw new Refusal('TX_INVALID', 'body must be a JSON object {"transaction": "<base64>"}');
      }
      onlyFields(body as Record<string, unknown>, SEND_FIELDS, 'TX_INVALID');
      const fields = body as Record<string, unknown>;
      if (typeof fields.transaction !== 'string') throw new Refusal('TX_INVALID', 'transaction must be a base64 string');
      transaction = fields.transaction;
      opts = parseSendOptions(fields.options);
    } catch (e) {
      resolveKey(s.keys, ctx, key); // a wrong key's 401 comes first
      throw e;
    }
    const keyed: KeyedCaller = {
      keys: s.keys,
      apiKey: key,
      authenticate: () => resolveKey(s.keys, ctx, key),
      resolved: (who) => (ctx.accountId = who.account.id),
    };
    const sent = await s.core.sendBase64Keyed(keyed, transaction, s.tips, opts, ctx.receivedAt, (signature) => (ctx.signature = signature));
    return { status: 200, body: { success: true, signature: sent.signature, slot: sent.slot } satisfies SendBody, headers: rateHeaders(sent.rate) };
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
    onlyFields(body as Record<string, unknown>, BATCH_FIELDS, 'REQUEST_INVALID');
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
    return { status: 200, body: { success: true, results } satisfies BatchBody, headers: rateHeaders(rate) };
  };
}

// ---- status and account ----------------------------------------------------------------------

/**
 * The status record of spec §2.4 (+ `expired` once it can no longer land; + a failed
 * transaction's on-chain `err` and, in Agave's words, `err_reason`).
 */
export function statusView(r: StatusRecord): StatusJson {
  return {
    signature: r.signature,
    status: r.status,
    submitted_at: new Date(r.submittedAt).toISOString(),
    confirmed_at: r.confirmedAt === null ? null : new Date(r.confirmedAt).toISOString(),
    latency_ms: r.latencyMs,
    slot: r.slot,
    api_key_name: r.keyName,
    ...(r.expired && { expired: true }),
    ...(r.expired && r.deadlinePassed && { deadline_passed: true }),
    ...(r.err !== undefined && { err: r.err, err_reason: describeTransactionError(r.err) }),
  };
}

/**
 * A status change as `/v1/stream` pushes it: the status record, plus its tip and the slot at
 * acceptance, which a live view (the dashboard's tips against the floor, slots to land) needs and
 * could otherwise only get by spending its query budget.
 */
export function streamView(r: StatusRecord): Omit<StreamStatus, 'type'> {
  return { ...statusView(r), tip_lamports: Number(r.tipLamports), submit_slot: r.submitSlot, ...(r.postMortem && { post_mortem: r.postMortem }) };
}

/** The trace of `GET /v1/status/{signature}/trace`. */
export function traceView(rec: StatusRecord, t: Trace): DeliveryTrace {
  const { reached, tried } = leadersReached(t);
  const final = finalState(rec, t);
  return {
    signature: rec.signature,
    status: rec.status,
    ...(rec.expired && { expired: true }),
    final_state: final.state,
    cause: final.cause,
    latency_ms: rec.latencyMs,
    ...(rec.err !== undefined && { err: rec.err }),
    leaders_reached: reached,
    leaders_tried: tried,
    attempts: t.attempts.map((a) => ({
      at_us: a.atUs,
      slot: a.slot,
      round: a.round,
      leader: a.leader,
      tpu: a.tpu,
      outcome: a.outcome,
      close_code: a.closeCode,
      reason: a.reason,
    })),
    attempts_omitted: t.omitted,
    ...(t.postMortem && { post_mortem: t.postMortem }),
  };
}

/** Base58 digits (no 0, O, I, l), by char code. */
const BASE58_DIGIT = (() => {
  const t = new Uint8Array(128);
  for (const c of '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz') t[c.charCodeAt(0)] = 1;
  return t;
})();

/** 64 to 88 base58 characters (the OpenAPI document's `Signature` pattern), without a regex. */
function isSignatureShaped(sig: string): boolean {
  if (sig.length < 64 || sig.length > 88) return false;
  for (let i = 0; i < sig.length; i++) {
    const c = sig.charCodeAt(i);
    if (c >= 128 || BASE58_DIGIT[c] === 0) return false;
  }
  return true;
}

/**
 * The status record of the path's signature for the calling account, with the query budget
 * taken (spec §4.3: 400 for a malformed signature, 404 for one this account did not submit).
 */
function ownRecord(s: Wired, ctx: Ctx): { rec: StatusRecord; d: ReturnType<SubmissionCore['take']> } {
  const who = authenticate(s.keys, ctx, true);
  const sig = ctx.params[0] ?? '';
  // The format is exactly the document's `Signature` pattern (64–88 base58 characters), so
  // the document and the server agree on what is a 400. A string of that format that does not
  // decode to 64 bytes is no transaction's signature: 404, with the reason saying why.
  if (!isSignatureShaped(sig)) throw new Refusal('STATUS_SIGNATURE_INVALID', 'signature must be 64 to 88 base58 characters');
  let bytes: Buffer | undefined;
  try {
    bytes = base58DecodeShared(sig);
  } catch {
    bytes = undefined;
  }
  const d = s.core.take(who.account, 'query');
  if (!bytes || bytes.length !== 64) {
    throw new Refusal('STATUS_NOT_FOUND', `no transaction has this signature: it decodes to ${bytes?.length ?? 0} bytes, not 64`);
  }
  let rec: StatusRecord | undefined;
  try {
    rec = s.store.getStatus(sig);
  } catch (e) {
    throw new Refusal('INTERNAL', `status lookup failed: ${(e as Error).message}`);
  }
  if (!rec || rec.accountId !== who.account.id) {
    throw new Refusal('STATUS_NOT_FOUND', 'no transaction with this signature was submitted by this account');
  }
  return { rec, d };
}

/** The account's record of `signature`, or undefined when it is not one of its transactions (or not a signature). */
function ownStatus(s: Wired, accountId: string, signature: string): StatusRecord | undefined {
  if (!isSignatureShaped(signature)) return undefined;
  const rec = s.store.getStatus(signature);
  return rec && rec.accountId === accountId ? rec : undefined;
}

function statusHandler(s: Wired): Handler {
  return (ctx) => {
    const { rec, d } = ownRecord(s, ctx);
    return { status: 200, body: statusView(rec), headers: rateHeaders(d) };
  };
}

/**
 * `GET /v1/status/{signature}/trace`: the delivery trace, as the status endpoint answers (same
 * auth, budget and 404s). In flight, the engine on the main thread holds it; after its last
 * round, the store. A transaction accepted a moment ago may not have reached the engine yet:
 * its attempts are then empty.
 */
function traceHandler(s: Wired): Handler {
  return async (ctx) => {
    const { rec, d } = ownRecord(s, ctx);
    let trace: Trace | null | undefined = s.liveTrace ? await s.liveTrace(rec.signature) : null;
    try {
      trace ??= s.store.getTrace(rec.signature);
    } catch (e) {
      throw new Refusal('INTERNAL', `trace lookup failed: ${(e as Error).message}`);
    }
    return { status: 200, body: traceView(rec, trace ?? { attempts: [], omitted: 0 }), headers: rateHeaders(d) };
  };
}

/** Default and largest page of `GET /v1/transactions`. */
export const TRANSACTIONS_DEFAULT_LIMIT = 50;
export const TRANSACTIONS_MAX_LIMIT = 100;
/** A cursor: base64url of the record's submission time (u64 ms, big-endian) and its 64 signature bytes. */
const CURSOR_CHARS = 96;
const CURSOR_SHAPE = /^[A-Za-z0-9_-]{96}$/;

function encodeCursor(c: TxCursor): string {
  const b = Buffer.allocUnsafe(72);
  b.writeUInt32BE(Math.floor(c.submittedAt / 2 ** 32), 0);
  b.writeUInt32BE(c.submittedAt >>> 0, 4);
  b.set(c.signature, 8);
  return b.toString('base64url');
}

function decodeCursor(text: string): TxCursor {
  if (!CURSOR_SHAPE.test(text)) {
    throw new Refusal('REQUEST_INVALID', `before must be the next_cursor of a previous page (${CURSOR_CHARS} base64url characters), got ${JSON.stringify(text.slice(0, 32))}`);
  }
  const b = Buffer.from(text, 'base64url');
  return { submittedAt: b.readUInt32BE(0) * 2 ** 32 + b.readUInt32BE(4), signature: b.subarray(8) };
}

/**
 * `GET /v1/transactions?limit=&before=`: the account's own transactions, newest first, a page at
 * a time (`StatusTables.listAccountTransactions`); each item as the status endpoint answers.
 * Authenticated and budgeted like the status (one query token a page). The cursor is opaque to
 * the caller; one that was never a `next_cursor` is refused only if it is malformed (a made-up
 * well-formed one just starts the page at its time, within the caller's own transactions).
 */
function transactionsHandler(s: Wired): Handler {
  return (ctx) => {
    const who = authenticate(s.keys, ctx, true);
    const limitText = ctx.queryParam('limit');
    let limit = TRANSACTIONS_DEFAULT_LIMIT;
    if (limitText !== undefined) {
      limit = /^[0-9]{1,3}$/.test(limitText) ? Number(limitText) : NaN;
      if (!(limit >= 1 && limit <= TRANSACTIONS_MAX_LIMIT)) {
        throw new Refusal('REQUEST_INVALID', `limit must be an integer from 1 to ${TRANSACTIONS_MAX_LIMIT}, got ${JSON.stringify(limitText.slice(0, 32))}`);
      }
    }
    const beforeText = ctx.queryParam('before');
    const before = beforeText === undefined ? undefined : decodeCursor(beforeText);
    const d = s.core.take(who.account, 'query');
    let page: { records: StatusRecord[]; next: TxCursor | undefined };
    try {
      page = s.store.listAccountTransactions(who.account.id, limit, before);
    } catch (e) {
      throw new Refusal('INTERNAL', `transaction list failed: ${(e as Error).message}`);
    }
    const body: TransactionPage = { transactions: page.records.map(statusView), next_cursor: page.next ? encodeCursor(page.next) : null };
    return { status: 200, body, headers: rateHeaders(d) };
  };
}

function accountHandler(s: Wired): Handler {
  return (ctx) => {
    const who = authenticate(s.keys, ctx, true);
    const d = s.core.take(who.account, 'query');
    return { status: 200, body: s.accounts.view(who.account), headers: rateHeaders(d) };
  };
}

/**
 * `GET /v1/analytics?window=1h|24h`: the account's own landing rate and slots to land, by leader
 * and over time (src/tracker/landing-analytics.ts). Authenticated and budgeted like the status.
 */
function analyticsHandler(s: Wired): Handler {
  return async (ctx) => {
    const who = authenticate(s.keys, ctx, true);
    const w = ctx.queryParam('window') ?? '24h';
    if (w !== '1h' && w !== '24h') throw new Refusal('REQUEST_INVALID', `window must be 1h or 24h, got ${JSON.stringify(w.slice(0, 32))}`);
    const d = s.core.take(who.account, 'query');
    const view = s.analytics ? await s.analytics(who.account.id, w) : new LandingAnalytics().view(who.account.id, w);
    return { status: 200, body: view, headers: rateHeaders(d) };
  };
}

/**
 * `GET /v1/tip-floor`: tip percentiles of the transactions Landfall saw land (no key needed; the
 * view is computed at most once a second and shared). With a key (header, `api-key`, `api_key`)
 * it also gives the caller's plan minimum, so a bot can tip max(floor, minimum); a wrong key is
 * 401 rather than silently ignored. It draws on no budget: answering costs one serialisation.
 */
function tipFloorHandler(s: Wired): Handler {
  const floor = s.tipFloor ?? new TipFloor(s.config.lamportsPerPoint);
  const lamportsPerPoint = s.config.lamportsPerPoint;
  return (ctx) => {
    const view = floor.view();
    const keyGiven = ctx.authorization !== '' || ctx.queryParam('api-key') !== undefined || ctx.queryParam('api_key') !== undefined;
    if (!keyGiven) return { status: 200, body: view };
    const { account } = authenticate(s.keys, ctx, true);
    const minTipBp = s.config.plans[account.plan].minTipBp;
    return { status: 200, body: { ...view, plan_minimum: { plan: account.plan, min_tip_bp: minTipBp, min_tip_lamports: minTipBp * lamportsPerPoint } } };
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
    onRateLimited: (budget, plan) => telemetry.metrics.rateLimited(budget, plan),
    onAccepted: (plan) => telemetry.metrics.accepted(plan),
  });
  // The key table's entries hold what this core admits a send on (`POST /v1/send`'s one call).
  keys.admitWith((a) => core.planFacts(a));
  return { ...services, telemetry, keys, core };
}

/** A constant reply, rendered once. */
export function constant(status: number, body: string, contentType = 'application/json'): Handler {
  const reply: Reply = { status, body, contentType };
  return () => reply;
}

/** Where Solana's JSON-RPC is answered: over HTTP (POST) and, for subscriptions, WebSocket. */
const RPC_PATHS = [ROUTES.jsonRpc.pattern, ROUTES.jsonRpcV1.pattern] as const;

/**
 * The handler of every route of the routes table (`routes.ts`), or null for one this app does
 * not serve: the compiler wants an entry for each, so no route is served undocumented.
 */
type RouteHandlers = Record<RouteId, Handler | null>;

/** The dashboard's handlers (`dashboard.ts`), by the route of the table each serves. */
function dashboardHandlers(): Pick<RouteHandlers, 'rootToDashboard' | 'dashboardNoSlash' | 'dashboard' | 'dashboardScript' | 'dashboardStyle'> {
  const byPattern = new Map(dashboardRoutes().map((r) => [r.pattern, r.handler]));
  const at = (id: RouteId): Handler => {
    const h = byPattern.get(ROUTES[id].pattern);
    if (h === undefined) throw new Error(`the dashboard serves no ${ROUTES[id].pattern}`);
    return h;
  };
  return { rootToDashboard: at('rootToDashboard'), dashboardNoSlash: at('dashboardNoSlash'), dashboard: at('dashboard'), dashboardScript: at('dashboardScript'), dashboardStyle: at('dashboardStyle') };
}

/** Build the uWS app with every route. */
export function buildApp(services: Services): uWS.TemplatedApp {
  const s = wire(services);
  const t = s.telemetry;
  const app = uWS.App();
  const startedAt = Date.now();
  const rpcBackend: RpcBackend = {
    tips: s.tips,
    tipAddresses: s.tips.addresses,
    authenticate: (ctx) => authenticate(s.keys, ctx, true),
    send: (ctx, who, tx, opts) => {
      if (typeof tx === 'string') return s.core.sendBase64(who, tx, s.tips, opts, ctx.receivedAt, (signature) => (ctx.signature = signature));
      if (tx.ok) ctx.signature = tx.tx.signature;
      return s.core.send(who, tx, opts, ctx.receivedAt);
    },
    query: (who) => void s.core.take(who.account, 'query'),
    latestBlockhash: () => s.delivery.latestBlockhash(),
    ownStatuses: (who, signatures) => signatures.map((sig) => ownStatus(s, who.account.id, sig)),
    internalError: (ctx, e) => t.internalError(ctx, e),
  };
  const rpc = rpcHandler(rpcBackend);
  // The paths Jito's and Helius Sender's clients post to: the same handler and submission core,
  // with the key also read where those clients put it, and their preflight default.
  const dropIn = rpcHandler({ ...rpcBackend, authenticate: (ctx) => authenticate(s.keys, ctx, true, true) }, DROP_IN_DIALECT);
  const metricsText = s.metricsText ?? (() => t.metrics.text());
  const ops = operationRoutes({ health: () => s.delivery.health(), store: () => s.store.health.view(), log: () => t.logHealth.view(), cluster: s.cluster, metricsText, metricsContentType: t.metrics.contentType, token: s.config.metricsToken, exposed: !isLoopback(s.config.host), startedAt });
  // With an admin listener, /metrics and /health's details are served there only (service.ts).
  const adminElsewhere = s.config.adminPort !== null;
  const handlers: RouteHandlers = {
    send: sendHandler(s),
    sendBatch: batchHandler(s),
    status: statusHandler(s),
    trace: traceHandler(s),
    transactions: transactionsHandler(s),
    account: accountHandler(s),
    analytics: analyticsHandler(s),
    tipAddresses: constant(200, JSON.stringify({ tip_addresses: s.tips.addresses })),
    tipFloor: tipFloorHandler(s),
    jsonRpc: rpc,
    jsonRpcV1: rpc,
    jitoTransactions: dropIn,
    jitoBundles: dropIn,
    heliusSender: dropIn,
    openapi: constant(200, JSON.stringify(OPENAPI)),
    health: adminElsewhere ? ops.bareHealth : ops.health.handler,
    ping: constant(200, 'pong', 'text/plain'),
    metrics: adminElsewhere ? null : ops.metrics.handler,
    ...dashboardHandlers(),
    // Registered below, after the WebSocket route of its path.
    stream: null,
  };
  const routes: RouteSpec[] = [];
  for (const id of Object.keys(ROUTES) as RouteId[]) {
    const handler = handlers[id];
    if (handler !== null) routes.push({ ...ROUTES[id], handler });
  }
  for (const r of routes) app[r.method](r.pattern, route(t, r));
  if (s.statusHub) {
    const slots = s.streamSlots ?? new StreamSlots();
    registerStream(app, s.keys, s.statusHub, slots, streamView);
    registerRpcSubscriptions(app, RPC_PATHS, {
      keys: s.keys,
      hub: s.statusHub,
      slots,
      ownStatus: (accountId, sig) => ownStatus(s, accountId, sig),
      watchSlots: (listener) => s.delivery.watchSlots(listener),
      takeQuery: (account) => {
        try {
          s.core.take(account, 'query');
          return null;
        } catch (e) {
          if (e instanceof Refusal) return e.reason;
          throw e;
        }
      },
    });
    // uWS upgrades a GET of /v1/stream exactly when it carries a 24-character Sec-WebSocket-Key;
    // any other GET falls through its WebSocket route to this one (registered after it).
    const plainGet: RouteSpec = { ...ROUTES.stream, handler: streamWithoutUpgrade };
    app.get(plainGet.pattern, route(t, plainGet));
    routes.push(plainGet); // for the 405 below
  }
  refuseOtherMethods(app, t, routes);
  app.any('/*', route(t, NOT_FOUND));
  return app;
}

/**
 * A known path with the wrong method: 405 with `Allow` listing the path's methods (registered
 * after the routes, which win).
 */
export function refuseOtherMethods(app: uWS.TemplatedApp, t: Telemetry, routes: readonly Pick<RouteSpec, 'method' | 'pattern'>[]): void {
  const allowed = new Map<string, string[]>();
  for (const r of routes) allowed.set(r.pattern, [...(allowed.get(r.pattern) ?? []), r.method.toUpperCase()]);
  for (const [pattern, methods] of allowed) {
    const allow = methods.join(', ');
    app.any(
      pattern,
      route(t, {
        pattern,
        body: null,
        handler: () => {
          throw new Refusal('REQUEST_METHOD', `use ${methods.join(' or ')}`, { headers: { Allow: allow } });
        },
      }),
    );
  }
}

/**
 * `GET /v1/stream` that uWS did not upgrade: no handshake at all is 426 (with `Upgrade:
 * websocket`, RFC 9110); a handshake without a usable key is 400 (RFC 6455).
 */
const streamWithoutUpgrade: Handler = (ctx) => {
  if (ctx.upgrade === '' && ctx.webSocketKey === '') {
    throw new Refusal('STREAM_UPGRADE_REQUIRED', '/v1/stream is a WebSocket: send the upgrade request (Upgrade: websocket, Sec-WebSocket-Key)', {
      headers: { Upgrade: 'websocket', Connection: 'Upgrade' },
    });
  }
  throw new Refusal('REQUEST_INVALID', 'WebSocket handshake: Sec-WebSocket-Key must be 24 characters (base64 of 16 random bytes)');
};

/** Any path no route matched. */
export const NOT_FOUND: Pick<RouteSpec, 'pattern' | 'body' | 'handler'> = {
  pattern: '/*',
  body: null,
  handler: (ctx) => {
    throw new Refusal('ROUTE_NOT_FOUND', `no route ${ctx.method} ${ctx.url}`);
  },
};

// ---- operations: /health and /metrics ------------------------------------------------------------

export interface OperationsSources {
  health: () => ChainHealth;
  metricsText: () => Promise<string>;
  metricsContentType: string;
  /** `metricsToken`: `/metrics` and `/health`'s details need `Authorization: Bearer <token>`; null: open. */
  token: string | null;
  /**
   * The listener is on a non-loopback address: without a token, `/metrics` is not served there
   * (404 saying why) and `/health` tells only ok/unsynced, so the service's inner numbers are
   * open by default only on loopback.
   */
  exposed?: boolean;
  startedAt: number;
  /** Whether the store can commit (every thread's view of one state); none: not reported. */
  store?: () => StoreHealthView;
  /** Whether log lines are written, and how many were dropped (every thread's); none: not reported. */
  log?: () => LogHealthView;
  /** The node's cluster state (`config.nats`); none or null: a single node, not reported. */
  cluster?: () => ClusterHealth | null;
}

/** Wrong metrics tokens a listener considers a second (and in a burst); past it, none is read. */
export const TOKEN_GUESSES_PER_S = 10;

/**
 * `/health` and `/metrics`, for the API app or the admin app (`admin.ts`). With a token, `/metrics`
 * without it is 401 and `/health` without it tells only ok/unsynced (its status code is the same
 * either way, so a load balancer's probe needs no token); the comparison is on SHA-256 digests
 * in constant time.
 */
export function operationRoutes(o: OperationsSources): { health: RouteSpec; bareHealth: Handler; metrics: RouteSpec } {
  const digest = (v: string) => createHash('sha256').update(v).digest();
  // Rendered at most once per interval on this thread (with ingress threads, the main thread
  // renders every thread's values for all of them, also at most once per interval: `IngressPool`).
  const metricsText = new RenderedText(o.metricsText);
  const expected = o.token === null ? null : digest(o.token);
  // Wrong tokens are throttled: at most TOKEN_GUESSES_PER_S a second for the whole listener (a
  // burst of as many); past that every token is refused unread until the bucket refills, so
  // `/health`'s answer (details or not) is no oracle at more than that rate either.
  let guesses = TOKEN_GUESSES_PER_S;
  let guessesAt = Date.now();
  const throttled = (): boolean => {
    const now = Date.now();
    guesses = Math.min(TOKEN_GUESSES_PER_S, guesses + ((now - guessesAt) / 1000) * TOKEN_GUESSES_PER_S);
    guessesAt = now;
    return guesses < 1;
  };
  /**
   * Details and metrics: with a token, to whoever sends it; without one, only on a loopback
   * listener (`exposed` false) and only to a request whose `Host` names this machine (a page that
   * rebinds its own name to 127.0.0.1 must not read them through the visitor's browser).
   */
  const granted = (ctx: Ctx): boolean => {
    if (expected === null) return o.exposed !== true && isLoopbackHostHeader(ctx.host);
    const key = bearerKey(ctx.authorization);
    if (key === undefined || key === '') return false;
    if (throttled()) return false;
    if (timingSafeEqual(digest(key), expected)) return true;
    guesses -= 1;
    return false;
  };
  // 503 while the store cannot commit (sends are refused) or the chain view is stale; `status`
  // names the first of the two.
  const state = (synced: boolean, store: StoreHealthView | null) => {
    const status = store !== null && !store.available ? 'store_unavailable' : synced ? 'ok' : 'unsynced';
    return { code: status === 'ok' ? 200 : 503, status };
  };
  const bareHealth: Handler = () => {
    const { code, status } = state(o.health().synced, o.store?.() ?? null);
    return { status: code, body: { status } };
  };
  return {
    bareHealth,
    health: {
      method: 'get',
      pattern: '/health',
      body: null,
      handler: (ctx) => {
        if (!granted(ctx)) return bareHealth(ctx);
        const h = o.health();
        const store = o.store?.() ?? null;
        const cluster = o.cluster?.() ?? null;
        const log = o.log?.() ?? null;
        const { code, status } = state(h.synced, store);
        return {
          status: code,
          body: {
            status,
            uptime_s: Math.round((Date.now() - o.startedAt) / 1000),
            chain: { synced: h.synced, slot: h.slot, slot_age_ms: Math.round(h.slotAgeMs) },
            ...(store !== null && { store }),
            ...(cluster !== null && { cluster }),
            ...(log !== null && { log }),
          },
        };
      },
    },
    metrics: {
      method: 'get',
      pattern: '/metrics',
      body: null,
      handler: async (ctx) => {
        if (o.token === null && o.exposed === true) {
          throw new Refusal('ROUTE_NOT_FOUND', '/metrics is served on a non-loopback address only with metricsToken set (or on the admin listener, adminPort, on a loopback adminHost)');
        }
        if (o.token === null && !isLoopbackHostHeader(ctx.host)) {
          throw new Refusal('ROUTE_NOT_FOUND', `/metrics without metricsToken is served only to requests for a loopback host (Host: localhost, 127.0.0.1 or [::1]), not ${JSON.stringify(ctx.host.slice(0, 100))}`);
        }
        if (o.token !== null && throttled()) {
          throw new Refusal('QUERY_RATE_LIMITED', `more than ${TOKEN_GUESSES_PER_S} wrong metrics tokens a second: retry in a second`, {
            retryAfterS: 1,
            rate: { limit: TOKEN_GUESSES_PER_S, remaining: 0, resetMs: 1000 },
          });
        }
        if (!granted(ctx)) throw new Refusal('AUTH_UNAUTHORIZED', 'the metrics token is required: "Authorization: Bearer <metricsToken>"');
        return { status: 200, body: await metricsText.get(), contentType: o.metricsContentType };
      },
    },
  };
}

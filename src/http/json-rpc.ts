/**
 * Solana JSON-RPC compatibility (`POST /`, `POST /v1/rpc`): the two methods bots already call on
 * an RPC node or a block engine, answered as those answer them, so `@solana/web3.js`
 * `Connection.sendRawTransaction` pointed at Landfall works unchanged.
 *
 * - `sendTransaction` [encoded transaction, { encoding, skipPreflight, maxRetries, … }] → the
 *   signature. Same path as `POST /v1/send` (validation, tip, budget, preflight, delivery), with
 *   Agave's defaults: base58, preflight on.
 * - `getTipAccounts` [] → the tip addresses, as a block engine lists them. No key needed.
 * - What a bot asks around a send, answered from the service's own state so that web3.js's
 *   `connection.sendTransaction(tx, [payer])` + `confirmTransaction` work against Landfall alone
 *   (each call takes one token of the caller's query budget): `getLatestBlockhash`,
 *   `getBlockHeight`, `getEpochInfo` and `getSlot` from the chain view the leader tracker keeps (once a slot),
 *   and `getSignatureStatuses` for the caller's own transactions (from its status records; any
 *   other signature is `null`, as an unknown one is on a node). `signatureSubscribe` and
 *   `slotSubscribe` are on the WebSocket (`rpc-subscriptions.ts`). Any other method is -32601 naming what is offered.
 * - The bundle methods (`sendBundle`, `getBundleStatuses`, `getInflightBundleStatuses`,
 *   `simulateBundle`) → -32601 saying bundles are not offered: Jito's clients call them on the
 *   drop-in path `/api/v1/bundles`, and a clear error beats a 404 or a silent "not found".
 *
 * The drop-in paths (`/api/v1/transactions`, `/api/v1/bundles`, `/fast`) serve the same methods
 * in the dialect of the senders whose clients post there ({@link DROP_IN_DIALECT}): preflight off
 * unless the call asks for it, as Jito's block engine and Helius Sender always skip it.
 *
 * Errors are JSON-RPC error objects. Protocol errors use the standard codes; a failed preflight
 * and a bad signature use Agave's (-32002 with the simulation as `data`, -32003); the service's
 * own refusals use -32050…-32054 with `{status, message, reason}` (the REST API's error) as
 * `data` (see `RPC_CODES`). The HTTP status is 200, except where the refusal concerns the whole
 * HTTP request and clients act on the status: 401 (bad key), 429 (budget; with `Retry-After`,
 * which web3.js honours by backing off), 413 and 415 — and only for a single call, never a batch.
 */
import { describeTransactionError } from '../chain/tx-error.js';
import { base58Decode, inspectWire, type InspectResult, type TipSet } from '../native.js';
import type { LatestBlockhash } from '../delivery/chain-view.js';
import type { StatusRecord } from '../store/records.js';
import type { Caller } from '../submission/core.js';
import { DEFAULT_SEND_OPTIONS, MAX_BATCH, MAX_RETRIES_LIMIT, type SendOptions } from '../submission/options.js';
import { Refusal, RPC_CODES } from '../submission/refusals.js';
import { refusalHeaders } from './rate-headers.js';
import { requireJson, type Ctx, type Reply } from './request.js';
import type { Handler } from './types.js';

export { RPC_CODES };

/** HTTP statuses a single call's refusal keeps (the request as a whole was refused); others are 200. */
const HTTP_LEVEL = new Set([401, 413, 415, 429]);

/** Agave's limits on an encoded transaction (1232 bytes raw). */
const MAX_BASE58_LENGTH = 1683;

/** Upper bound of calls in one batch (the spec's batch limit, as `POST /v1/send/batch`). */
export const MAX_RPC_BATCH = MAX_BATCH;

export interface RpcBackend {
  tips: TipSet;
  tipAddresses: readonly string[];
  /** Resolve the key (header, `api-key`, `api_key`); throws the 401 `Refusal`. */
  authenticate(ctx: Ctx): Caller;
  /**
   * The `/v1/send` path: for a base64 string not inspected yet (as `POST /v1/send` takes it: on an
   * ingress thread inspection, admission and the send token are one native call), or for a
   * transaction decoded and inspected here (base58); throws a `Refusal` for every refusal.
   */
  send(ctx: Ctx, who: Caller, tx: string | InspectResult, opts: SendOptions): Promise<{ signature: string }>;
  /** Take one token of the caller's query budget; throws the 429 `Refusal`. */
  query(who: Caller): void;
  /** The chain view's newest blockhash, slot and block height; null until the view has one. */
  latestBlockhash(): LatestBlockhash | null;
  /** The caller's own record of each signature; undefined for one it did not submit (or unknown). */
  ownStatuses(who: Caller, signatures: string[]): Array<StatusRecord | undefined>;
  /** Log an unexpected exception (a bug); the call answers -32603. */
  internalError(ctx: Ctx, e: unknown): void;
}

/** What differs between the paths this handler serves. */
export interface RpcDialect {
  /** `skipPreflight` when the call does not say. */
  skipPreflight: boolean;
}

/** `POST /`, `POST /v1/rpc`: a Solana RPC node's defaults (Agave preflights unless told not to). */
export const NODE_DIALECT: RpcDialect = { skipPreflight: false };
/** The drop-in paths: Jito's block engine always skips preflight, Helius Sender requires it skipped. */
export const DROP_IN_DIALECT: RpcDialect = { skipPreflight: true };

/** Agave's limit on `getSignatureStatuses`. */
export const MAX_SIGNATURE_STATUSES = 256;
/** Agave's "node is behind" code: the chain view is not there yet. */
const NODE_UNHEALTHY = -32005;

/** The methods served over HTTP, for the error that names them. */
export const OFFERED_METHODS = ['sendTransaction', 'getLatestBlockhash', 'getSignatureStatuses', 'getBlockHeight', 'getEpochInfo', 'getSlot', 'getTipAccounts'] as const;

/** Jito's bundle methods: answered, never served (Landfall delivers single transactions). */
const BUNDLE_METHODS = new Set(['sendBundle', 'getBundleStatuses', 'getInflightBundleStatuses', 'simulateBundle']);

type Id = string | number | null;

interface RpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

type RpcResponse = { jsonrpc: '2.0'; result: unknown; id: Id } | { jsonrpc: '2.0'; error: RpcErrorObject; id: Id };

/** A call's outcome: its response (null for a notification), and the refusal behind an error. */
interface Answer {
  response: RpcResponse | null;
  refusal: Refusal | null;
}

/** A protocol-level error (bad params, unknown method): thrown inside a call, answered in it. */
class RpcFault extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

function failure(id: Id, error: RpcErrorObject): RpcResponse {
  return { jsonrpc: '2.0', error, id };
}

/**
 * A service refusal in JSON-RPC's words: the code from the one refusal table; the message as
 * Agave words it where a Solana client expects Agave (preflight, signatures), else the spec's
 * message and the reason; `data` = the REST API's error, or the simulation for a preflight.
 */
export function rpcError(e: Refusal): RpcErrorObject {
  if (e.code === 'TX_PREFLIGHT' && e.simulation) {
    return { code: e.rpcCode, message: `Transaction simulation failed: ${describeTransactionError(e.simulation.err)}`, data: e.simulation };
  }
  const data = { status: e.status, message: e.message, reason: e.reason };
  if (e.code === 'TX_SIGNATURE') return { code: e.rpcCode, message: 'Transaction signature verification failure', data };
  return { code: e.rpcCode, message: `${e.message}: ${e.reason}`, data };
}

function isId(v: unknown): v is Id {
  return v === null || typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
}

/**
 * `sendTransaction`'s params, Agave's way: `[string, config?]`; unknown config fields ignored.
 * The transaction comes back as the base64 string itself (inspected by the send path, as
 * `POST /v1/send`'s is) or, for base58, decoded and inspected here.
 */
function sendParams(params: unknown, tips: TipSet, dialect: RpcDialect): { tx: string | InspectResult; opts: SendOptions } {
  if (!Array.isArray(params) || params.length < 1 || params.length > 2) {
    throw new RpcFault(RPC_CODES.invalidParams, 'Invalid params: expected [transaction, config?]');
  }
  const [encoded, config] = params as [unknown, unknown];
  if (typeof encoded !== 'string') throw new RpcFault(RPC_CODES.invalidParams, 'Invalid params: the transaction must be a string');
  if (config !== undefined && config !== null && (typeof config !== 'object' || Array.isArray(config))) {
    throw new RpcFault(RPC_CODES.invalidParams, 'Invalid params: config must be an object');
  }
  const c = (config ?? {}) as Record<string, unknown>;
  const encoding = c.encoding ?? 'base58';
  if (encoding !== 'base58' && encoding !== 'base64') {
    throw new RpcFault(RPC_CODES.invalidParams, `unsupported encoding: ${String(encoding)}. Supported encodings: base58, base64`);
  }
  const skipPreflight = c.skipPreflight ?? dialect.skipPreflight;
  if (typeof skipPreflight !== 'boolean') throw new RpcFault(RPC_CODES.invalidParams, 'Invalid params: skipPreflight must be a boolean');
  const maxRetries = c.maxRetries ?? DEFAULT_SEND_OPTIONS.maxRetries;
  if (typeof maxRetries !== 'number' || !Number.isInteger(maxRetries) || maxRetries < 0) {
    throw new RpcFault(RPC_CODES.invalidParams, 'Invalid params: maxRetries must be a non-negative integer');
  }
  // preflightCommitment and minContextSlot are accepted and ignored: preflight runs at the
  // service's own commitment, and the service's slot is the chain's, not a lagging node's.
  // Every option Agave's config has no word for takes the service's default.
  const opts: SendOptions = {
    ...DEFAULT_SEND_OPTIONS,
    skipPreflight,
    // A node retries until expiry however large maxRetries is; Landfall caps its rounds.
    maxRetries: Math.min(maxRetries, MAX_RETRIES_LIMIT),
  };
  if (encoding === 'base64') return { tx: encoded, opts };
  if (encoded.length > MAX_BASE58_LENGTH) {
    // Checked before decoding: base58 decoding is quadratic in the length.
    throw new RpcFault(RPC_CODES.invalidParams, `base58 encoded transaction too large: ${encoded.length} bytes (max: encoded/raw ${MAX_BASE58_LENGTH}/1232)`);
  }
  let wire: Buffer;
  try {
    wire = base58Decode(encoded);
  } catch (e) {
    throw new RpcFault(RPC_CODES.invalidParams, `invalid base58 encoding: ${(e as Error).message}`);
  }
  const r = inspectWire(wire, tips);
  if (r.ok) r.tx.wire = wire; // inspectWire reads in place; delivery needs the bytes
  return { tx: r, opts };
}

/** The -32601 message: what Landfall answers instead, so a caller knows where to ask. */
export function methodNotOffered(method: string): string {
  return `Method not found: Landfall answers ${OFFERED_METHODS.join(', ')} (and signatureSubscribe, slotSubscribe on its WebSocket); ask an RPC node for ${method.slice(0, 64)}`;
}

/** A chain-view method's result, as a node answers it. */
function chainResult(method: 'getLatestBlockhash' | 'getBlockHeight' | 'getEpochInfo' | 'getSlot', chain: LatestBlockhash): unknown {
  switch (method) {
    case 'getSlot':
      return chain.slot;
    case 'getBlockHeight':
      return chain.blockHeight;
    case 'getEpochInfo':
      if (chain.epoch === null) throw new RpcFault(NODE_UNHEALTHY, 'Landfall has not seen the epoch yet (starting); try again shortly');
      // The transaction count is the node's ledger's, which Landfall does not keep: null, as Agave allows.
      return { absoluteSlot: chain.slot, blockHeight: chain.blockHeight, ...chain.epoch, transactionCount: null };
    case 'getLatestBlockhash':
      return { context: { slot: chain.slot }, value: { blockhash: chain.blockhash, lastValidBlockHeight: chain.lastValidBlockHeight } };
  }
}

/** `[config?]` of the chain-view methods: commitment and minContextSlot are accepted and ignored. */
function optionalConfig(params: unknown, method: string): void {
  if (params === undefined || params === null) return;
  const ok = Array.isArray(params) && params.length <= 1 && (params[0] === undefined || params[0] === null || (typeof params[0] === 'object' && !Array.isArray(params[0])));
  if (!ok) throw new RpcFault(RPC_CODES.invalidParams, `Invalid params: ${method} takes [config?]`);
}

/** `getSignatureStatuses`' params: `[signatures, config?]`, at most 256 strings. */
function statusParams(params: unknown): string[] {
  if (!Array.isArray(params) || params.length < 1 || params.length > 2 || !Array.isArray(params[0])) {
    throw new RpcFault(RPC_CODES.invalidParams, 'Invalid params: expected [signatures, config?]');
  }
  const signatures = params[0] as unknown[];
  if (signatures.length > MAX_SIGNATURE_STATUSES) {
    throw new RpcFault(RPC_CODES.invalidParams, `Invalid params: too many signatures: ${signatures.length} (max ${MAX_SIGNATURE_STATUSES})`);
  }
  if (!signatures.every((x): x is string => typeof x === 'string')) throw new RpcFault(RPC_CODES.invalidParams, 'Invalid params: signatures must be strings');
  return signatures;
}

/**
 * A status record as a node's `getSignatureStatuses` entry: null while it has not landed (or
 * expired), else its slot, `err` and `confirmed` (the commitment the tracker settles at).
 */
export function signatureStatus(r: StatusRecord): Record<string, unknown> | null {
  if (r.status === 'sent') return null;
  // A failed record written before errors were kept has none: still never `null` (success).
  const err = r.status === 'failed' ? (r.err ?? 'UnknownError') : null;
  return { slot: r.slot, confirmations: null, err, status: err === null ? { Ok: null } : { Err: err }, confirmationStatus: 'confirmed' };
}

/** One call of a request (or of a batch). Never throws: every outcome is an answer. */
async function call(b: RpcBackend, dialect: RpcDialect, ctx: Ctx, item: unknown, who: () => Caller): Promise<Answer> {
  const o = typeof item === 'object' && item !== null && !Array.isArray(item) ? (item as Record<string, unknown>) : null;
  const hasId = o !== null && 'id' in o;
  const id: Id = hasId && isId(o.id) ? o.id : null;
  if (o === null || o.jsonrpc !== '2.0' || typeof o.method !== 'string' || (hasId && !isId(o.id)) || (o.params !== undefined && typeof o.params !== 'object')) {
    return { response: failure(null, { code: RPC_CODES.invalidRequest, message: 'Invalid request' }), refusal: null };
  }
  const answer = (response: RpcResponse, refusal: Refusal | null = null): Answer => ({ response: hasId ? response : null, refusal });
  try {
    switch (o.method) {
      case 'sendTransaction': {
        const caller = who();
        if (ctx.queryParam('bundleOnly') === 'true') {
          throw new RpcFault(RPC_CODES.invalidParams, 'bundleOnly is not offered: Landfall does not send bundles; send without bundleOnly=true to deliver the transaction on its own');
        }
        const { tx, opts } = sendParams(o.params, b.tips, dialect);
        const { signature } = await b.send(ctx, caller, tx, opts);
        return answer({ jsonrpc: '2.0', result: signature, id });
      }
      case 'getLatestBlockhash':
      case 'getBlockHeight':
      case 'getEpochInfo':
      case 'getSlot': {
        const caller = who();
        optionalConfig(o.params, o.method);
        b.query(caller);
        const chain = b.latestBlockhash();
        if (chain === null) throw new RpcFault(NODE_UNHEALTHY, 'Landfall has no view of the chain yet (starting or resyncing); try again shortly');
        return answer({ jsonrpc: '2.0', result: chainResult(o.method, chain), id });
      }
      case 'getSignatureStatuses': {
        const caller = who();
        const signatures = statusParams(o.params);
        b.query(caller);
        const slot = b.latestBlockhash()?.slot ?? 0;
        const value = b.ownStatuses(caller, signatures).map((r) => (r ? signatureStatus(r) : null));
        return answer({ jsonrpc: '2.0', result: { context: { slot }, value }, id });
      }
      case 'getTipAccounts':
        if (o.params !== undefined && o.params !== null && !(Array.isArray(o.params) && o.params.length === 0)) {
          throw new RpcFault(RPC_CODES.invalidParams, 'Invalid params: getTipAccounts takes none');
        }
        return answer({ jsonrpc: '2.0', result: b.tipAddresses, id });
      default:
        if (BUNDLE_METHODS.has(o.method)) {
          const message = `${o.method} is not offered: Landfall delivers single transactions, not bundles; send each transaction with sendTransaction`;
          return answer(failure(id, { code: RPC_CODES.methodNotFound, message }));
        }
        return answer(failure(id, { code: RPC_CODES.methodNotFound, message: methodNotOffered(o.method) }));
    }
  } catch (e) {
    if (e instanceof RpcFault) return answer(failure(id, { code: e.code, message: e.message }));
    if (e instanceof Refusal) return answer(failure(id, rpcError(e)), e);
    b.internalError(ctx, e);
    return answer(failure(id, { code: RPC_CODES.internalError, message: 'Internal error' }));
  }
}

/** Render a whole-request refusal (413, 415) as one JSON-RPC error, keeping its HTTP status. */
function requestRefused(e: Refusal): Reply {
  return { status: e.status, body: failure(null, rpcError(e)), headers: refusalHeaders(e), reason: e.reason };
}

/** The handler of `POST /` and `POST /v1/rpc` (node dialect) and of the drop-in paths. */
export function rpcHandler(b: RpcBackend, dialect: RpcDialect = NODE_DIALECT): Handler {
  return async (ctx) => {
    let text: string;
    try {
      requireJson(ctx);
      text = (await ctx.body()).toString('utf8');
    } catch (e) {
      if (e instanceof Refusal) return requestRefused(e);
      throw e;
    }
    let payload: unknown;
    try {
      payload = JSON.parse(text);
    } catch (e) {
      return { status: 200, body: failure(null, { code: RPC_CODES.parseError, message: 'Parse error' }), reason: `parse error: ${(e as Error).message}` };
    }
    // The key is resolved at most once per HTTP request, and only if a method needs it.
    let caller: Caller | undefined;
    const who = () => (caller ??= b.authenticate(ctx));

    if (!Array.isArray(payload)) {
      const { response, refusal } = await call(b, dialect, ctx, payload, who);
      if (response === null) return { status: 204, body: '', contentType: 'application/json' };
      const status = refusal && HTTP_LEVEL.has(refusal.status) ? refusal.status : 200;
      const reason = 'error' in response ? response.error.message : undefined;
      return { status, body: response, headers: status === 200 ? {} : refusalHeaders(refusal!), reason };
    }
    if (payload.length === 0 || payload.length > MAX_RPC_BATCH) {
      const message = payload.length === 0 ? 'Invalid request' : `Invalid request: batch of ${payload.length} calls exceeds ${MAX_RPC_BATCH}`;
      return { status: 200, body: failure(null, { code: RPC_CODES.invalidRequest, message }), reason: message };
    }
    const answers = await Promise.all(payload.map((item) => call(b, dialect, ctx, item, who)));
    const responses = answers.flatMap((a) => (a.response ? [a.response] : []));
    if (responses.length === 0) return { status: 204, body: '', contentType: 'application/json' };
    const errors = responses.filter((r): r is Extract<RpcResponse, { error: RpcErrorObject }> => 'error' in r);
    const reason = errors.length > 0 ? `${errors.length} of ${payload.length} calls failed; first: ${errors[0]!.error.message}` : undefined;
    return { status: 200, body: responses, reason };
  };
}

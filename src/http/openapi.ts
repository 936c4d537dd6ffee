/**
 * The OpenAPI 3.1 document of the whole HTTP surface, served at `GET /v1/openapi.json`.
 *
 * Written as a typed object, next to the code it describes, so a new field or status is one
 * edit away; the e2e test validates the document against the OpenAPI 3.1 schema and validates
 * real responses of a running server (every success and every error status) against it.
 * Response objects are closed (`additionalProperties: false`): a field the server sends but the
 * document does not name fails that test.
 *
 * Generated where there is a source: the paths, methods, error statuses and error messages from
 * the routes table (`routes.ts`) and the refusal table (`REFUSALS`); the JSON-RPC error prose
 * from `RPC_CODES`; the response schemas are checked by the compiler against the wire types of
 * `client/wire.ts` (which the server's renderers return and the client hands out). What is
 * written here is the prose: summaries, descriptions, and what each refusal means.
 */
import type {
  AccountRecord,
  BatchBody,
  BatchItem,
  DeliveryAttempt,
  DeliveryTrace,
  PostMortem,
  ErrorBody,
  NextTier,
  PlanMinimum,
  PlanName,
  PriorityFeeWindow,
  SendBody,
  StatusRecord,
  StreamStatus,
  TransactionPage,
  TipFloorRecord,
  TipFloorWindow,
} from '../client/wire.js';
import { SEND_OPTIONS } from '../client/wire.js';
import type { ClusterHealth } from '../cluster/health.js';
import type { StoreHealthView } from '../store/store-health.js';
import { MAX_BATCH, MAX_RETRIES_LIMIT } from '../submission/options.js';
import { REFUSALS, RPC_CODES, type RefusalCode } from '../submission/refusals.js';
import type { LogHealthView } from '../telemetry/log-sink.js';
import { TIP_PERCENTILES, TIP_WINDOWS } from '../tracker/tip-floor.js';
import { BATCH_BODY_LIMIT, openApiPath, ROUTES, type RouteEntry, type RouteId } from './routes.js';
import { MAX_SIGNATURE_STATUSES } from './json-rpc.js';
import { CLOSE, MAX_STREAMS_PER_ACCOUNT } from './stream.js';

const MAX_RPC_BATCH = MAX_BATCH;

/** The JSON Schema 2020-12 keywords this document uses (OpenAPI 3.1's schema dialect). */
export interface Schema {
  $ref?: string;
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean' | 'null' | Array<'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean' | 'null'>;
  description?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  dependentRequired?: Record<string, string[]>;
  additionalProperties?: boolean | Schema;
  items?: Schema;
  prefixItems?: Schema[];
  minItems?: number;
  maxItems?: number;
  oneOf?: Schema[];
  anyOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  default?: unknown;
  examples?: unknown[];
}

interface Ref {
  $ref: string;
}

interface Header {
  description: string;
  required?: boolean;
  schema: Schema;
}

interface MediaType {
  schema: Schema;
}

interface Response {
  description: string;
  headers?: Record<string, Header | Ref>;
  content?: Record<string, MediaType>;
}

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  description: string;
  schema: Schema;
}

interface Operation {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  security?: Array<Record<string, string[]>>;
  parameters?: Array<Parameter | Ref>;
  requestBody?: { required: boolean; description?: string; content: Record<string, MediaType> };
  responses: Record<string, Response | Ref>;
}

interface PathItem {
  get?: Operation;
  post?: Operation;
}

interface SecurityScheme {
  type: 'http' | 'apiKey';
  description: string;
  scheme?: 'bearer';
  in?: 'query' | 'header';
  name?: string;
}

export interface OpenApiDocument {
  openapi: '3.1.0';
  info: { title: string; version: string; description: string };
  servers: Array<{ url: string; description: string }>;
  tags: Array<{ name: string; description: string }>;
  paths: Record<string, PathItem>;
  components: {
    schemas: Record<string, Schema>;
    responses: Record<string, Response>;
    headers: Record<string, Header>;
    parameters: Record<string, Parameter>;
    securitySchemes: Record<string, SecurityScheme>;
  };
}

// ---- building blocks -------------------------------------------------------------------------

const ref = (kind: 'schemas' | 'responses' | 'headers' | 'parameters', name: string) => ({ $ref: `#/components/${kind}/${name}` });
const schema = (name: string): Schema => ref('schemas', name);
const json = (s: Schema): Record<string, MediaType> => ({ 'application/json': { schema: s } });
const BASE58 = '[1-9A-HJ-NP-Za-km-z]';

/** Every response carries the request id; rate-limited ones also the budget headers. */
const REQUEST_ID = { 'x-request-id': ref('headers', 'RequestId') };
const RATE_HEADERS = {
  ...REQUEST_ID,
  'RateLimit-Limit': ref('headers', 'RateLimitLimit'),
  'RateLimit-Remaining': ref('headers', 'RateLimitRemaining'),
  'RateLimit-Reset': ref('headers', 'RateLimitReset'),
};
/** The counts of landing analytics: the whole window's, and each leader's and bucket's. */
const LANDING_COUNTS = {
  transactions: { type: 'integer', minimum: 0, description: 'Transactions of the account that reached an outcome (landed, failed on chain, or expired)' },
  landed: { type: 'integer', minimum: 0, description: 'Of those, landed (confirmed or failed on chain)' },
  failed: { type: 'integer', minimum: 0, description: 'Of the landed, failed on chain' },
  expired: { type: 'integer', minimum: 0, description: 'Did not land: blockhash or deadline_slot passed' },
  landing_rate: { type: ['number', 'null'], minimum: 0, maximum: 1, description: 'landed / transactions; null with none' },
  slots_to_land: {
    description:
      'Slots from acceptance to landing, as the upper bound of its histogram bin (0, 1, 2, 3, 4, 6, 8, 12, 16, 32, 64, 150, then 151 for more): nearest-rank p50, p90, p99; null when none landed',
    oneOf: [
      {
        type: 'object',
        required: ['p50', 'p90', 'p99'],
        additionalProperties: false,
        properties: { p50: { type: 'integer', minimum: 0 }, p90: { type: 'integer', minimum: 0 }, p99: { type: 'integer', minimum: 0 } },
      },
      { type: 'null' },
    ],
  },
} satisfies Record<string, Schema>;
const RETRY_HEADERS = { ...RATE_HEADERS, 'Retry-After': ref('headers', 'RetryAfter') };

/** The error body for one HTTP status, with the spec messages that status can carry there. */
function errorSchema(status: number, messages: string[]): Schema {
  return closed<ErrorBody>()(
    {
      success: { const: false },
      error: closed<ErrorBody['error']>()(
        {
          code: { const: status, description: 'The HTTP status' },
          message: { enum: messages, description: "The spec's message for this status" },
          reason: { type: 'string', minLength: 1, description: 'The precise cause, for humans' },
        },
        ['code', 'message', 'reason'],
      ),
    },
    ['success', 'error'],
  );
}

function errorResponse(status: number, messages: string[], description: string, headers: Record<string, Ref> = REQUEST_ID): Response {
  return { description, headers, content: json(errorSchema(status, messages)) };
}

/** A JSON-RPC error response (HTTP 401, 413, 415, 429 for a single call refused as a whole). */
function rpcErrorResponse(description: string, headers: Record<string, Ref> = REQUEST_ID): Response {
  return { description, headers, content: json(schema('JsonRpcError')) };
}

type Security = Array<Record<string, string[]>>;
const bearer: Security = [{ bearer: [] }];
/** The header or either query parameter. */
const anyKey: Security = [{ bearer: [] }, { apiKey: [] }, { apiKeyUnderscore: [] }];
/** A key where the caller has one; some calls need none ({} = no requirement). */
const optionalKey: Security = [...anyKey, {}];
/** The drop-in paths also read the key where Jito's clients put it. */
const dropInKey: Security = [...anyKey, { jitoUuid: [] }, { jitoAuth: [] }, {}];
/** `/metrics` and `/health`'s details: open unless `metricsToken` is configured. */
const operationsKey: Security = [{}, { metricsToken: [] }];

// ---- schemas checked against the wire types -------------------------------------------------

/** The fields of T that are not optional. */
type RequiredKeys<T> = { [K in keyof T]-?: {} extends Pick<T, K> ? never : K }[keyof T];
/** A list of `U`s that the compiler accepts only when it names every member of `U`. */
type Every<U, L extends readonly unknown[]> = L & ([Exclude<U, L[number]>] extends [never] ? unknown : { missing: Exclude<U, L[number]> });
/** One schema per field of T, every field named, no other (an object literal's extra key is an error). */
type Fields<T> = { [K in keyof T]-?: Schema };

/**
 * The closed object schema of the wire type T: `properties` names exactly T's fields and
 * `required` exactly those that are not optional, or the document does not compile.
 */
function closed<T>() {
  return <const R extends readonly RequiredKeys<T>[]>(properties: Fields<T>, required: Every<RequiredKeys<T>, R>, description?: string): Schema => ({
    type: 'object',
    ...(description !== undefined && { description }),
    required: [...required] as string[],
    additionalProperties: false,
    properties,
  });
}

/** An `enum` of the string union T, every member listed (checked by the compiler). */
function enumOf<T>() {
  return <const V extends readonly T[]>(values: Every<T, V>, description?: string): Schema => ({ enum: [...values], ...(description !== undefined && { description }) });
}

// ---- refusals: generated from the routes table and the refusal table ------------------------

/**
 * What each refusal means, for the document's error responses: an operation's error status is
 * described by its route's refusals at that status (an operation's `notes` may say it for its
 * route), and the message enum lists theirs (`REFUSALS`).
 */
const REFUSAL_DOCS: Record<RefusalCode, string> = {
  TX_INVALID: 'malformed or not a valid transaction',
  TX_SIGNATURE: 'unsigned, or a signature does not verify',
  TX_BLOCKHASH_EXPIRED: 'expired blockhash',
  TX_OPTIONS: 'bad options',
  TX_PREFLIGHT: 'failed preflight',
  TIP_REQUIRED: 'no tip to a tip address',
  TIP_INSUFFICIENT: 'a tip below the plan minimum, the reason giving both amounts in BP and lamports',
  SEND_RATE_LIMITED: "send budget (plan TPS) exhausted, or the account's cap of transactions in flight reached",
  QUERY_RATE_LIMITED: 'query budget exhausted (one budget for status, trace, account and the JSON-RPC reads)',
  DELIVERY_FAILED: 'the first send reached no leader, the chain view is stale or the store cannot record, Retry-After saying when to retry',
  AUTH_UNAUTHORIZED: 'missing, malformed, invalid or revoked API key',
  REQUEST_INVALID: 'the body is not what the endpoint takes',
  REQUEST_TOO_LARGE:
    'body over the limit: answered as soon as the declared or streamed size passes it (with `Connection: close`), then the ' +
    'rest of the body is read and discarded, for at most 10 s and 64 MiB, before the connection is closed',
  REQUEST_MEDIA_TYPE: 'Content-Type is not application/json',
  REQUEST_METHOD: 'a known path with another method',
  REQUEST_FRAMING: 'repeated or conflicting Content-Length / Transfer-Encoding (the connection is closed)',
  STREAM_UPGRADE_REQUIRED: 'a plain GET: no Upgrade and no Sec-WebSocket-Key',
  ROUTE_NOT_FOUND: 'no such route',
  STATUS_SIGNATURE_INVALID: 'not 64 to 88 base58 characters',
  STATUS_NOT_FOUND: 'not submitted through this account (or not the base58 encoding of 64 bytes: no transaction has it)',
  INTERNAL: 'an unexpected fault (a database fault, a bug)',
};

/** Refusals described once, as a component every operation that answers them refers to. */
const COMPONENTS: Partial<Record<RefusalCode, string>> = {
  AUTH_UNAUTHORIZED: 'Unauthorized',
  REQUEST_TOO_LARGE: 'PayloadTooLarge',
  REQUEST_MEDIA_TYPE: 'UnsupportedMediaType',
  INTERNAL: 'InternalError',
  ROUTE_NOT_FOUND: 'NotFound',
  REQUEST_METHOD: 'MethodNotAllowed',
  REQUEST_FRAMING: 'BadFraming',
};

/** The headers a refusal always carries (besides the request id). */
function refusalHeaders(code: RefusalCode): Record<string, Ref> {
  if (code === 'SEND_RATE_LIMITED' || code === 'QUERY_RATE_LIMITED') return RETRY_HEADERS;
  if (code === 'STREAM_UPGRADE_REQUIRED') return UPGRADE_HEADERS;
  if (code === 'REQUEST_METHOD') return ALLOW_HEADERS;
  return REQUEST_ID;
}
const UPGRADE_HEADERS = { ...REQUEST_ID, Upgrade: ref('headers', 'UpgradeWebsocket') };
const ALLOW_HEADERS = { ...REQUEST_ID, Allow: ref('headers', 'Allow') };

const capitalized = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** What an operation says beyond its route: prose, and its successful responses. */
type OperationDoc = Omit<Operation, 'operationId' | 'responses'> & {
  responses: Record<string, Response | Ref>;
  /** What a refusal means on this route, where it says more than `REFUSAL_DOCS`. */
  notes?: Partial<Record<RefusalCode, string>>;
};

/**
 * The error responses of a route: one per HTTP status among its refusals, with their messages;
 * a lone refusal described as a component refers to it.
 */
function refusalResponses(route: RouteEntry, notes: Partial<Record<RefusalCode, string>> = {}): Record<string, Response | Ref> {
  const byStatus = new Map<number, RefusalCode[]>();
  for (const code of route.refusals) byStatus.set(REFUSALS[code].status, [...(byStatus.get(REFUSALS[code].status) ?? []), code]);
  const out: Record<string, Response | Ref> = {};
  for (const [status, codes] of byStatus) {
    const messages = [...new Set(codes.map((c) => REFUSALS[c].message))];
    const headers = refusalHeaders(codes[0]!);
    if (codes.some((c) => refusalHeaders(c) !== headers)) throw new Error(`refusals of one status with different headers: ${codes.join(', ')}`);
    const said = (c: RefusalCode) => notes[c] ?? REFUSAL_DOCS[c];
    const component = COMPONENTS[codes[0]!];
    if (route.dialect === 'json-rpc') {
      out[status] = rpcErrorResponse(capitalized(codes.map((c) => `${said(c)} (error ${REFUSALS[c].rpc})`).join('; ')), headers);
    } else if (codes.length === 1 && component !== undefined && notes[codes[0]!] === undefined) {
      out[status] = ref('responses', component);
    } else {
      const each = (c: RefusalCode) => (messages.length > 1 ? `${REFUSALS[c].message}: ${said(c)}` : said(c));
      out[status] = errorResponse(status, messages, capitalized(codes.map(each).join('; ')), headers);
    }
  }
  return out;
}

// ---- JSON-RPC --------------------------------------------------------------------------------

/** `POST /` and `POST /v1/rpc`: the same endpoint under two paths. */
function rpcOperation(alias: string): OperationDoc {
  return {
    summary: `Solana JSON-RPC: sendTransaction, the reads around a send, getTipAccounts (same as ${alias})`,
    description: RPC_DESCRIPTION,
    tags: ['json-rpc'],
    security: optionalKey,
    requestBody: { required: true, content: json(schema('JsonRpcBody')) },
    ...RPC_RESPONSES,
  };
}

/** The drop-in paths of existing sender clients: the same JSON-RPC endpoint in their dialect. */
function dropInOperation(summary: string): OperationDoc {
  return {
    summary,
    description:
      'The JSON-RPC endpoint of `POST /` (see there) on the path existing sender clients post to, so that only their URL ' +
      "changes: Jito's block-engine layout (`jito-js-rpc`: `new JitoJsonRpcClient(base + '/api/v1', key)`) and Helius " +
      'Sender (`/fast`). Differences: `skipPreflight` defaults to true (Jito always skips preflight, Sender requires it; ' +
      'an explicit false is honoured); the key is also read from the `x-jito-auth` header and the `uuid` query ' +
      'parameter; `sendTransaction` with the query parameter `bundleOnly=true` is refused (-32602). The bundle methods ' +
      '(`sendBundle`, `getBundleStatuses`, `getInflightBundleStatuses`, `simulateBundle`) answer -32601 "… is not ' +
      'offered": Landfall delivers single transactions, not bundles. No `x-bundle-id` header is sent, as no bundle is formed.',
    tags: ['json-rpc'],
    security: dropInKey,
    requestBody: { required: true, content: json(schema('JsonRpcBody')) },
    ...RPC_RESPONSES,
  };
}

/** What each JSON-RPC error code means, in the document's words. */
const RPC_CODE_DOCS: Record<keyof typeof RPC_CODES, string> = {
  parseError: 'parse error',
  invalidRequest: 'invalid request',
  methodNotFound: 'method not found',
  invalidParams: 'invalid params or invalid transaction',
  internalError: 'internal error',
  preflightFailure: 'preflight failure (Agave\'s message "Transaction simulation failed: …", `data` = the simulation result)',
  signatureVerificationFailure: 'signature verification failure',
  unauthorized: 'unauthorized',
  tipRequired: 'tip required',
  tipInsufficient: 'tip insufficient',
  rateLimited: 'rate limit exceeded',
  deliveryFailed: 'delivery failed (`data` = {status, message, reason}: the REST error)',
};

/** "-32700 parse error, -32600 invalid request, …": every code of `RPC_CODES`, in its order. */
function rpcCodeProse(): string {
  return (Object.keys(RPC_CODES) as (keyof typeof RPC_CODES)[]).map((k) => `${RPC_CODES[k]} ${RPC_CODE_DOCS[k]}`).join(', ');
}

const RPC_DESCRIPTION =
    `Solana JSON-RPC 2.0, single calls or batches (at most ${MAX_RPC_BATCH}).` + ' `sendTransaction` takes `[encoded, config?]` as a Solana ' +
    'RPC node does (`encoding` base58 by default or base64, `skipPreflight` false by default, `maxRetries` capped at ' +
    `${MAX_RETRIES_LIMIT}, \`preflightCommitment\` and \`minContextSlot\` ignored) and answers the signature; it needs an API ` +
    'key (Authorization header, `api-key` or `api_key`). `getTipAccounts` answers the tip addresses and needs no key. ' +
    'What a bot asks around a send is answered from the service\'s own state, each call taking one token of the query ' +
    'budget (a key needed): `getLatestBlockhash` `[config?]` → `{context:{slot}, value:{blockhash, lastValidBlockHeight}}`, ' +
    '`getBlockHeight` and `getSlot` `[config?]` → a number, `getEpochInfo` `[config?]` → `{absoluteSlot, blockHeight, epoch, ' +
    'slotIndex, slotsInEpoch, transactionCount: null}`, all from the chain view the service refreshes once a slot ' +
    '(-32005 before it has one); `getSignatureStatuses` `[signatures (at most 256), config?]` → `{context:{slot}, value:[…]}` ' +
    'with, for each of the caller\'s own transactions once confirmed or failed, `{slot, confirmations: null, err, status, ' +
    'confirmationStatus: "confirmed"}`, and null for one still pending, expired, another account\'s or unknown. ' +
    '`signatureSubscribe` / `signatureUnsubscribe` and `slotSubscribe` / `slotUnsubscribe` are served on a WebSocket at ' +
    'this same path (key in the query or Authorization header; 401 without one): one `signatureNotification` when the ' +
    'caller\'s transaction is confirmed or failed, a `slotNotification` per slot of the chain view. With these, web3.js ' +
    '`new Connection(url, { wsEndpoint })` and kit\'s `sendAndConfirmTransactionFactory` send and confirm against Landfall alone. Any other ' +
    'method answers -32601 naming the methods offered. The bundle methods answer -32601 (bundles are not offered). ' +
    `Errors are JSON-RPC error objects: ${rpcCodeProse()}. The HTTP status is 200, except for a single call refused as a ` +
    'whole request: 401 (key), 429 (budget, with Retry-After), 413, 415.';

/** The successful answers of every JSON-RPC path, and what its whole-request refusals mean there. */
const RPC_RESPONSES: Pick<OperationDoc, 'responses' | 'notes'> = {
  responses: {
    200: {
      description: 'A response object, or an array of them for a batch (notifications get none)',
      headers: REQUEST_ID,
      content: json({ oneOf: [schema('JsonRpcResponse'), { type: 'array', minItems: 1, maxItems: MAX_RPC_BATCH, items: schema('JsonRpcResponse') }] }),
    },
    204: { description: 'Only notifications (calls without id): nothing to answer', headers: REQUEST_ID },
  },
  notes: {
    AUTH_UNAUTHORIZED: 'a call that needs a key (sendTransaction, the reads) with a missing, invalid or revoked one',
    REQUEST_TOO_LARGE: `body over ${BATCH_BODY_LIMIT / 1024} KiB`,
  },
};

function rpcSchemas(): Record<string, Schema> {
  const id: Schema = { type: ['string', 'number', 'null'], description: 'Echoed as sent (any JSON string or number); null when the request could not be read' };
  const codes = Object.values(RPC_CODES);
  const signatures: Schema = { type: 'array', items: { type: 'string' }, maxItems: MAX_SIGNATURE_STATUSES, description: 'getSignatureStatuses: the signatures' };
  return {
    SendTransactionConfig: {
      type: 'object',
      description: "Agave's RpcSendTransactionConfig; other fields are ignored",
      properties: {
        encoding: { enum: ['base58', 'base64'], default: 'base58' },
        skipPreflight: { type: 'boolean', default: false },
        maxRetries: { type: 'integer', minimum: 0, description: `Rebroadcast rounds; above ${MAX_RETRIES_LIMIT} counts as ${MAX_RETRIES_LIMIT}` },
        preflightCommitment: { enum: ['processed', 'confirmed', 'finalized'], description: 'Ignored' },
        minContextSlot: { type: 'integer', minimum: 0, description: 'Ignored' },
      },
    },
    JsonRpcRequest: {
      type: 'object',
      required: ['jsonrpc', 'method'],
      properties: {
        jsonrpc: { const: '2.0' },
        id,
        method: { type: 'string', examples: ['sendTransaction', 'getLatestBlockhash', 'getSignatureStatuses', 'getBlockHeight', 'getEpochInfo', 'getSlot', 'getTipAccounts'] },
        params: {
          description:
            'sendTransaction: [encoded transaction, config?]; getSignatureStatuses: [signatures, config?]; getLatestBlockhash, getBlockHeight, getEpochInfo, getSlot: [config?]; getTipAccounts: none',
          oneOf: [
            { type: 'array', prefixItems: [{ type: 'string' }], minItems: 1, maxItems: 1 },
            { type: 'array', prefixItems: [{ type: 'string' }, schema('SendTransactionConfig')], minItems: 2, maxItems: 2 },
            { type: 'array', prefixItems: [signatures], minItems: 1, maxItems: 1 },
            { type: 'array', prefixItems: [signatures, { type: 'object' }], minItems: 2, maxItems: 2 },
            { type: 'array', prefixItems: [{ type: 'object', description: 'commitment, minContextSlot: accepted and ignored' }], minItems: 1, maxItems: 1 },
            { type: 'array', maxItems: 0 },
          ],
        },
      },
    },
    SignatureStatus: {
      type: 'object',
      required: ['slot', 'confirmations', 'err', 'status', 'confirmationStatus'],
      description: "One of the caller's own transactions, confirmed or failed, as an RPC node's getSignatureStatuses entry",
      properties: {
        slot: { type: 'integer', minimum: 0 },
        confirmations: { type: 'null' },
        err: { description: 'null when it succeeded; else the chain error (see ChainError)' },
        status: { type: 'object', description: '{"Ok": null} or {"Err": err}' },
        confirmationStatus: { const: 'confirmed', description: 'The commitment the service tracks at' },
      },
    },
    JsonRpcBody: { oneOf: [schema('JsonRpcRequest'), { type: 'array', minItems: 1, maxItems: MAX_RPC_BATCH, items: schema('JsonRpcRequest') }] },
    JsonRpcResult: {
      type: 'object',
      required: ['jsonrpc', 'result', 'id'],
      additionalProperties: false,
      properties: {
        jsonrpc: { const: '2.0' },
        result: {
          oneOf: [
            schema('Signature'),
            { type: 'array', items: schema('Address') },
            { type: 'integer', minimum: 0 },
            {
              type: 'object',
              description: 'getEpochInfo',
              required: ['absoluteSlot', 'blockHeight', 'epoch', 'slotIndex', 'slotsInEpoch', 'transactionCount'],
              properties: {
                absoluteSlot: { type: 'integer', minimum: 0 },
                blockHeight: { type: 'integer', minimum: 0 },
                epoch: { type: 'integer', minimum: 0 },
                slotIndex: { type: 'integer', minimum: 0 },
                slotsInEpoch: { type: 'integer', minimum: 1 },
                transactionCount: { type: 'null', description: 'Not kept by Landfall' },
              },
            },
            {
              type: 'object',
              required: ['context', 'value'],
              properties: {
                context: { type: 'object', required: ['slot'], properties: { slot: { type: 'integer', minimum: 0 } } },
                value: {
                  oneOf: [
                    {
                      type: 'object',
                      required: ['blockhash', 'lastValidBlockHeight'],
                      properties: { blockhash: { type: 'string' }, lastValidBlockHeight: { type: 'integer', minimum: 0 } },
                    },
                    { type: 'array', maxItems: MAX_SIGNATURE_STATUSES, items: { oneOf: [{ type: 'null' }, schema('SignatureStatus')] } },
                  ],
                },
              },
            },
          ],
          description:
            'sendTransaction: the signature; getTipAccounts: the tip addresses; getSlot, getBlockHeight: a number; getEpochInfo: the epoch; getLatestBlockhash: {context, value: {blockhash, lastValidBlockHeight}}; getSignatureStatuses: {context, value: [status or null]}',
        },
        id,
      },
    },
    JsonRpcError: {
      type: 'object',
      required: ['jsonrpc', 'error', 'id'],
      additionalProperties: false,
      properties: {
        jsonrpc: { const: '2.0' },
        error: {
          type: 'object',
          required: ['code', 'message'],
          additionalProperties: false,
          properties: {
            code: { enum: codes },
            message: { type: 'string' },
            data: { oneOf: [schema('RefusalData'), schema('SimulationResult')] },
          },
        },
        id,
      },
    },
    JsonRpcResponse: { oneOf: [schema('JsonRpcResult'), schema('JsonRpcError')] },
    RefusalData: {
      type: 'object',
      required: ['status', 'message', 'reason'],
      additionalProperties: false,
      description: 'The REST API error this JSON-RPC error stands for',
      properties: { status: { type: 'integer', minimum: 400, maximum: 599 }, message: { type: 'string' }, reason: { type: 'string' } },
    },
    SimulationResult: {
      type: 'object',
      required: ['err', 'logs'],
      description: "The chain node's simulateTransaction value (-32002), as Agave sends it",
      properties: { err: { description: 'The transaction error, as JSON' }, logs: { type: ['array', 'null'], items: { type: 'string' } } },
    },
  };
}

/** The status record (spec §2.4 + `expired`): `GET /v1/status/{signature}` and the stream's pushes. */
const STATUS_FIELDS: Fields<StatusRecord> = {
  signature: schema('Signature'),
  status: enumOf<StatusRecord['status']>()(['sent', 'confirmed', 'failed']),
  submitted_at: { type: 'string', format: 'date-time', description: 'UTC, milliseconds, Z' },
  confirmed_at: { type: ['string', 'null'], format: 'date-time', description: 'Set for both terminal states' },
  latency_ms: {
    type: ['integer', 'null'],
    minimum: 0,
    description: 'Request received to the outcome observed (monotonic clock): confirmed and failed transactions; null while sent and once expired',
  },
  slot: { type: ['integer', 'null'], minimum: 0, description: 'Slot the transaction landed in' },
  api_key_name: { type: 'string', description: 'Name of the key that submitted it' },
  expired: { const: true, description: 'Present once a transaction still sent can no longer land (its blockhash expired, or its deadline_slot passed)' },
  deadline_passed: { const: true, description: 'With expired: it was the deadline_slot of the send options that passed, not the blockhash' },
  err: schema('ChainError'),
  err_reason: {
    type: 'string',
    description: 'A failed transaction: `err` in the words an Agave node uses',
    examples: ['Transaction results in an account (1) with insufficient funds for rent', 'Error processing Instruction 0: custom program error: 0x1'],
  },
};
const STATUS_REQUIRED = ['signature', 'status', 'submitted_at', 'confirmed_at', 'latency_ms', 'slot', 'api_key_name'] as const;

/**
 * What the status and the trace share: one of the account's transactions by signature, the query
 * budget, and the status's 400 / 404 rules (spec §4.3); `ok` is the 200.
 */
function bySignature(ok: Response): Pick<OperationDoc, 'tags' | 'security' | 'parameters' | 'responses'> {
  return {
    tags: ['query'],
    security: anyKey,
    parameters: [{ name: 'signature', in: 'path', required: true, description: 'Base58 transaction signature', schema: schema('Signature') }],
    responses: { 200: ok },
  };
}

/** `GET /` and `GET /dashboard`: a browser is sent to the dashboard. */
function toDashboard(): OperationDoc {
  return {
    summary: 'Redirect to the dashboard',
    tags: ['dashboard'],
    security: [],
    responses: {
      302: { description: 'To /dashboard/', headers: { ...REQUEST_ID, Location: { required: true, description: '/dashboard/', schema: { const: '/dashboard/' } } } },
    },
  };
}

/**
 * One of the dashboard's static files (served by the API and by the admin listener). The page
 * asks for no key in its URL: it keeps the key in the tab and sends it as a header.
 */
function dashboardFile(summary: string, media: string): OperationDoc {
  return {
    summary,
    tags: ['dashboard'],
    security: [],
    responses: { 200: { description: summary, headers: REQUEST_ID, content: { [media]: { schema: { type: 'string' } } } } },
  };
}

/** The refusals every operation refers to (`COMPONENTS`), described once. */
function componentResponses(): Record<string, Response> {
  const out: Record<string, Response> = {};
  for (const [code, name] of Object.entries(COMPONENTS) as [RefusalCode, string][]) {
    out[name] = errorResponse(REFUSALS[code].status, [REFUSALS[code].message], capitalized(REFUSAL_DOCS[code]), refusalHeaders(code));
  }
  return out;
}

/** The prose of every route of the routes table (the compiler wants one for each). */
const OPERATIONS: Record<RouteId, OperationDoc> = {
  send: {
    summary: 'Submit one signed transaction',
    tags: ['send'],
    security: bearer,
    requestBody: { required: true, content: json(schema('SendRequest')) },
    responses: {
      200: { description: 'Delivered to at least one leader', headers: RATE_HEADERS, content: json(schema('SendResult')) },
    },
  },
  sendBatch: {
    summary: `Submit up to ${MAX_BATCH} signed transactions; each fails alone, inside a 200`,
    tags: ['send'],
    security: bearer,
    requestBody: { required: true, content: json(schema('BatchRequest')) },
    responses: {
      200: { description: 'One result per input transaction, by index', headers: RATE_HEADERS, content: json(schema('BatchResult')) },
    },
    notes: {
      REQUEST_INVALID: `transactions missing, empty or over ${MAX_BATCH}`,
      SEND_RATE_LIMITED: 'fewer send tokens left than transactions in the batch (a batch of N takes N)',
    },
  },
  status: {
    summary: "The service's telemetry for one of the account's transactions",
    ...bySignature({ description: 'The status record', headers: RATE_HEADERS, content: json(schema('StatusRecord')) }),
  },
  trace: {
    summary: 'Every delivery attempt of one of the account\'s transactions, and what became of it',
    description:
      'Each attempt to put the transaction in front of a leader, in order: the first send (round 0) and each rebroadcast round, with the time since the request was received, the slot, the leader and its TPU address, and the outcome; anti-MEV holds and releases are attempts too. Then the final state with its cause in words. Same authentication, query budget and 404 rules as the status. Kept as long as the status record. At most 64 attempts are kept; `attempts_omitted` counts the rest.',
    ...bySignature({ description: 'The delivery trace', headers: RATE_HEADERS, content: json(schema('DeliveryTrace')) }),
  },
  transactions: {
    summary: "The account's own transactions, newest first, a page at a time",
    description:
      'Each item as `GET /v1/status/{signature}` answers it. Pages: `limit` records (1 to 100, default 50); pass the page\'s `next_cursor` as ' +
      '`before` for the next (older) page, until `next_cursor` is null. A transaction is listed once its acceptance is committed ' +
      '(milliseconds after the 200 of its send) and for as long as its status record is kept (retention). Only the calling ' +
      "account's transactions, whichever of its keys sent them. Authenticated and budgeted like the status (one query token a page).",
    tags: ['query'],
    security: anyKey,
    parameters: [
      { name: 'limit', in: 'query', required: false, description: 'Records per page, 1 to 100 (default 50)', schema: { type: 'integer', minimum: 1, maximum: 100, default: 50 } },
      { name: 'before', in: 'query', required: false, description: 'The `next_cursor` of the previous page', schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{96}$' } },
    ],
    responses: {
      200: { description: 'A page of transactions', headers: RATE_HEADERS, content: json(schema('TransactionPage')) },
    },
    notes: { REQUEST_INVALID: '`limit` not an integer from 1 to 100, or `before` not a cursor' },
  },
  account: {
    summary: 'Plan, limits, usage and next-tier progress of the calling account',
    tags: ['query'],
    security: anyKey,
    responses: {
      200: { description: 'The account record', headers: RATE_HEADERS, content: json(schema('Account')) },
    },
  },
  analytics: {
    summary: "Landing analytics of the account's own transactions: rate and slots to land, by leader and over time",
    description:
      'Of the calling account\'s transactions that reached an outcome in the last hour (`window=1h`) or day (`24h`, the default): how many ' +
      'landed, how many failed on chain or expired, and the slots from acceptance to landing — in total, by the leader of the slot each was ' +
      'sent in, and over time (hourly for 24h, every 10 minutes for 1h). Counted by the node that tracked them, in memory (a restart ' +
      'starts empty); bounded: 32 leaders per time bucket, the rest pooled as `other`. Authenticated and budgeted like the status.',
    tags: ['query'],
    security: anyKey,
    parameters: [{ name: 'window', in: 'query', required: false, description: '1h or 24h (default)', schema: { type: 'string', enum: ['1h', '24h'], default: '24h' } }],
    responses: {
      200: { description: 'The analytics', headers: RATE_HEADERS, content: json(schema('Analytics')) },
    },
  },
  tipAddresses: {
    summary: 'The addresses a transaction may tip (no key needed)',
    tags: ['send'],
    security: [],
    responses: {
      200: { description: 'The tip addresses', headers: REQUEST_ID, content: json(schema('TipAddresses')) },
    },
  },
  tipFloor: {
    summary: 'Tip percentiles of the transactions Landfall saw land (no key needed)',
    description:
      'Percentiles (nearest rank) of the total tip of every transaction the tracker saw land (confirmed) in the last ' +
      'minute, 10 minutes and hour, in lamports and in points (BP = floor(lamports / lamports_per_point)). `1m` is the ' +
      'last 60 seconds; `10m` and `1h` count whole minutes (the current one so far and the 10 or 60 before it). Computed at ' +
      'most once a second from per-second and per-minute histograms (64 bins per power of two): a percentile is the largest tip seen in ' +
      'the bin of the nearest-rank sample, so it is never below the true percentile and at most 1/64 above it. Kept in ' +
      "memory: a restart starts it empty. With a key (header, `api-key` or `api_key`) the answer also has the caller's " +
      'plan minimum; a wrong key is 401. Draws on no budget. Beside the tips, `priority_fee` gives the same percentiles ' +
      'of the compute-unit price (micro-lamports per CU, 0 for a transaction without SetComputeUnitPrice) those landings ' +
      'paid: priority-fee guidance from what Landfall actually landed (the client\'s `computeUnitPriceInstruction` sets it). ' +
      'No one account can steer a priority-fee percentile: each is held within [1/2 of p-10, 2x of p+10] of the percentiles ' +
      'of the other accounts\' landings (leave one out), starting from the account that pulls it hardest; a window with one ' +
      'account\'s landings only gives null.',
    tags: ['query'],
    security: optionalKey,
    responses: {
      200: { description: 'The tip floor; `plan_minimum` only when a key was given', headers: REQUEST_ID, content: json(schema('TipFloor')) },
    },
  },
  jsonRpc: rpcOperation('/v1/rpc'),
  rootToDashboard: toDashboard(),
  dashboardNoSlash: toDashboard(),
  dashboard: dashboardFile('The dashboard page (bot view with an API key, operator view with the metrics token)', 'text/html'),
  dashboardScript: dashboardFile("The dashboard's script", 'text/javascript'),
  dashboardStyle: dashboardFile("The dashboard's stylesheet", 'text/css'),
  jsonRpcV1: rpcOperation('/'),
  jitoTransactions: dropInOperation("Jito block-engine layout: sendTransaction (jito-js-rpc's sendTxn)"),
  jitoBundles: dropInOperation('Jito block-engine layout: getTipAccounts; the bundle methods answer that bundles are not offered'),
  heliusSender: dropInOperation('Helius Sender layout: sendTransaction'),
  stream: {
    summary: 'Live status stream (WebSocket)',
    description:
      'A WebSocket upgrade: the server upgrades a GET that carries a 24-character `Sec-WebSocket-Key`; without any ' +
      'handshake headers it answers `426` (with `Upgrade: websocket`), with an unusable key `400`. ' +
      'Authenticate on the upgrade (Authorization header, `api-key` or `api_key` query parameter) ' +
      'or with a first text message `{"type":"auth","api_key":"<key>"}` within 5 s. The server sends `{"type":"ready"}`, ' +
      'then one `StreamStatus` message per status change of the account\'s transactions (`sent` on acceptance, then ' +
      '`confirmed`, `failed`, or `expired: true`). Refusals close the socket: ' +
      `${CLOSE.badMessage} bad first message, ${CLOSE.unauthorized} missing or invalid key, ${CLOSE.slowConsumer} slow consumer ` +
      `(too much unread data), ${CLOSE.tooManyStreams} more than ${MAX_STREAMS_PER_ACCOUNT} streams for the account.`,
    tags: ['query'],
    security: optionalKey,
    parameters: [
      { name: 'Upgrade', in: 'header', required: false, description: 'websocket (RFC 6455); the server decides on the key alone', schema: { type: 'string' } },
      {
        name: 'Sec-WebSocket-Key',
        in: 'header',
        required: true,
        description: 'RFC 6455 handshake key: base64 of 16 random bytes (the server checks its length)',
        schema: { type: 'string', minLength: 24, maxLength: 24 },
      },
    ],
    responses: {
      101: {
        description: 'Switching to the WebSocket protocol; messages are `StreamReady` then `StreamStatus` (JSON text frames)',
        headers: {
          Upgrade: { description: 'websocket', schema: { const: 'websocket' } },
          'Sec-WebSocket-Accept': { description: 'RFC 6455 handshake answer', schema: { type: 'string' } },
        },
      },
    },
    notes: { REQUEST_INVALID: 'a handshake (Upgrade or Sec-WebSocket-Key sent) without a 24-character key' },
  },
  health: {
    summary: 'Liveness and chain-sync state',
    description:
      'The status code (200 in sync, 503 stale) needs no credentials. The details (uptime, slot) are left out when ' +
      '`metricsToken` is configured and the request does not carry it (or more than 10 wrong tokens a second were ' +
      'tried), on a non-loopback listener without `metricsToken`, on loopback for a request whose Host header names no ' +
      'loopback address (DNS rebinding), and on the API port when `adminPort` is configured (they are served on the ' +
      'admin listener).',
    tags: ['operations'],
    security: operationsKey,
    responses: {
      200: { description: 'Serving, chain view fresh', headers: REQUEST_ID, content: json(schema('Health')) },
      503: { description: 'Serving, but the store cannot commit (sends are refused) or the chain view is stale', headers: REQUEST_ID, content: json(schema('Health')) },
    },
  },
  ping: {
    summary: 'Cheap keep-alive',
    tags: ['operations'],
    security: [],
    responses: { 200: { description: 'pong', headers: REQUEST_ID, content: { 'text/plain': { schema: { const: 'pong' } } } } },
  },
  metrics: {
    summary: 'Prometheus metrics (text exposition format 0.0.4)',
    description:
      'Open by default only on a loopback address: on any other address it needs `metricsToken` (404 without it). ' +
      'With `metricsToken` configured it needs `Authorization: Bearer <metricsToken>` (401 otherwise); with `adminPort` ' +
      'configured it is served only on the admin listener (404 on the API port). Without `metricsToken`, on loopback, ' +
      'only to a request whose Host header names a loopback address (404 otherwise: DNS rebinding). A render is served ' +
      'again for up to a second (its last line, a comment, gives its time).',
    tags: ['operations'],
    security: operationsKey,
    responses: {
      200: { description: 'The metrics', headers: REQUEST_ID, content: { 'text/plain': { schema: { type: 'string' } } } },
    },
    notes: {
      AUTH_UNAUTHORIZED: '`metricsToken` is configured and the request does not carry it',
      QUERY_RATE_LIMITED: 'more than 10 wrong metrics tokens a second were tried on this listener: no token is read for a moment (Retry-After: 1)',
    },
  },
  openapi: {
    summary: 'This document',
    tags: ['operations'],
    security: [],
    responses: { 200: { description: 'OpenAPI 3.1', headers: REQUEST_ID, content: json({ type: 'object' }) } },
  },
};

/** Every route of the routes table, with its prose and the error responses of its refusals. */
function paths(): Record<string, PathItem> {
  const out: Record<string, PathItem> = {};
  for (const id of Object.keys(ROUTES) as RouteId[]) {
    const route: RouteEntry = ROUTES[id];
    const { responses, notes, ...doc } = OPERATIONS[id];
    (out[openApiPath(route.pattern)] ??= {})[route.method] = { operationId: id, ...doc, responses: { ...responses, ...refusalResponses(route, notes) } };
  }
  return out;
}

// ---- the document ----------------------------------------------------------------------------

export const OPENAPI: OpenApiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'Landfall',
    version: '1',
    description:
      'Solana transaction delivery: POST a signed transaction that tips one of the tip addresses; Landfall verifies it, ' +
      'sends it to the current and upcoming leaders over QUIC, rebroadcasts until it lands or expires, and reports its ' +
      'own telemetry. Every error response of the REST API is `{"success": false, "error": {"code", "message", "reason"}}`; ' +
      'every response carries `x-request-id` (the caller\'s, if it sent one, else one the server makes), and one that keeps ' +
      'the connection also `Keep-Alive: timeout=5` (the server closes idle connections 8-12 s after their last response). ' +
      'Any path not listed is a `404` (`NotFound`); a listed path with another method is a `405` with `Allow` ' +
      '(`MethodNotAllowed`). A request with repeated or conflicting framing headers (two `Content-Length` or ' +
      '`Transfer-Encoding` lines, or a `Transfer-Encoding` other than `chunked`) is refused on every path with `400 ' +
      'Invalid request` (`BadFraming`) and its connection closed.',
  },
  servers: [{ url: '/', description: 'This server' }],
  tags: [
    { name: 'send', description: 'Submit signed transactions' },
    { name: 'query', description: "The service's own telemetry and the account" },
    {
      name: 'json-rpc',
      description:
        'Solana JSON-RPC compatibility (sendTransaction; getLatestBlockhash, getSignatureStatuses, getBlockHeight, getEpochInfo, getSlot; signatureSubscribe and slotSubscribe on the WebSocket; getTipAccounts), also on the paths Jito and Helius Sender clients post to',
    },
    { name: 'operations', description: 'Health, keep-alive, metrics, this document' },
    { name: 'dashboard', description: 'The dashboard served by the service (GET / redirects a browser to it)' },
  ],
  paths: paths(),
  components: {
    securitySchemes: {
      bearer: { type: 'http', scheme: 'bearer', description: '`Authorization: Bearer <API key>` (every authenticated endpoint)' },
      apiKey: { type: 'apiKey', in: 'query', name: 'api-key', description: 'Status, account, JSON-RPC and the stream; a key in a URL may end up in logs' },
      apiKeyUnderscore: { type: 'apiKey', in: 'query', name: 'api_key', description: 'Same as api-key' },
      jitoUuid: { type: 'apiKey', in: 'query', name: 'uuid', description: "Where Jito's clients put their credential; the drop-in paths only" },
      jitoAuth: { type: 'apiKey', in: 'header', name: 'x-jito-auth', description: "Jito's auth header; the drop-in paths only" },
      metricsToken: { type: 'http', scheme: 'bearer', description: '`Authorization: Bearer <metricsToken>` for /metrics and /health details, when the operator configured one' },
    },
    headers: {
      RequestId: { description: "The request's id: the caller's x-request-id (1-128 visible ASCII) or a fresh UUID", required: true, schema: { type: 'string', minLength: 1, maxLength: 128 } },
      RateLimitLimit: { description: 'Requests per second of the budget this request drew from', required: true, schema: { type: 'string', pattern: '^[0-9]+(\\.[0-9]+)?$' } },
      RateLimitRemaining: { description: 'Tokens left in that budget', required: true, schema: { type: 'string', pattern: '^[0-9]+$' } },
      RateLimitReset: { description: 'Seconds until that budget is full again', required: true, schema: { type: 'string', pattern: '^[0-9]+$' } },
      RetryAfter: { description: 'Seconds to wait before retrying', required: true, schema: { type: 'string', pattern: '^[0-9]+$' } },
      Allow: { description: 'The method this path accepts', required: true, schema: { enum: ['GET', 'POST'] } },
      UpgradeWebsocket: { description: 'The protocol to upgrade to', required: true, schema: { const: 'websocket' } },
    },
    parameters: {},
    responses: componentResponses(),
    schemas: {
      Signature: {
        type: 'string',
        pattern: `^${BASE58}{64,88}$`,
        description: 'Base58 of the first 64-byte signature. A string of this form that does not decode to 64 bytes is no signature: the status endpoint answers it 404',
      },
      Address: { type: 'string', pattern: `^${BASE58}{32,44}$`, description: 'Base58 of a 32-byte public key' },
      Base64Transaction: {
        type: 'string',
        description: 'Base64 (standard alphabet, padded) of the signed wire-format transaction (legacy or v0, at most 1232 bytes)',
        minLength: 1,
        maxLength: 1644,
        pattern: '^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$',
      },
      SendOptions: {
        type: 'object',
        additionalProperties: false,
        description: 'Send options (spec §2.1); all optional',
        // Each option's schema as `SEND_OPTIONS` (src/client/wire.ts) defines it: the one table.
        properties: Object.fromEntries(Object.entries(SEND_OPTIONS).map(([name, o]) => [name, o.schema as Schema])),
      },
      SendRequest: {
        type: 'object',
        required: ['transaction'],
        additionalProperties: false,
        properties: { transaction: schema('Base64Transaction'), options: { oneOf: [schema('SendOptions'), { type: 'null', description: 'Every default' }] } },
      },
      SendResult: closed<SendBody>()(
        {
          success: { const: true },
          signature: schema('Signature'),
          slot: { type: 'integer', minimum: 0, description: 'Cluster slot at submission' },
        },
        ['success', 'signature', 'slot'],
      ),
      BatchRequest: {
        type: 'object',
        required: ['transactions'],
        additionalProperties: false,
        properties: {
          transactions: {
            type: 'array',
            minItems: 1,
            maxItems: MAX_BATCH,
            description: 'Base64Transaction items; an item that is not one (any JSON value) fails alone in its result item, inside the 200 (spec §4.2 rule 2)',
            items: {},
          },
          options: { oneOf: [schema('SendOptions'), { type: 'null', description: 'Every default' }] },
        },
      },
      BatchItem: closed<BatchItem>()(
        {
          index: { type: 'integer', minimum: 0, description: 'Position in the input array' },
          signature: { oneOf: [schema('Signature'), { type: 'null' }], description: 'null when the transaction was rejected before delivery' },
          status: enumOf<BatchItem['status']>()(['sent', 'failed']),
          error: { type: 'string', description: 'Present when failed: "<spec message>: <reason>"' },
        },
        ['index', 'signature', 'status'],
      ),
      BatchResult: closed<BatchBody>()({ success: { const: true }, results: { type: 'array', items: schema('BatchItem') } }, ['success', 'results']),
      StatusRecord: closed<StatusRecord>()(STATUS_FIELDS, STATUS_REQUIRED),
      TransactionPage: closed<TransactionPage>()(
        {
          transactions: { type: 'array', maxItems: 100, items: schema('StatusRecord'), description: 'Newest first' },
          next_cursor: { type: ['string', 'null'], description: 'Pass as `before` for the next (older) page; null on the last page' },
        },
        ['transactions', 'next_cursor'],
      ),
      DeliveryAttempt: closed<DeliveryAttempt>()(
        {
          at_us: { type: 'integer', minimum: 0, description: 'Microseconds from the request received to the outcome (a rebroadcast: to the round being sent)' },
          slot: { type: 'integer', minimum: 0, description: 'Cluster slot of the attempt' },
          round: { type: 'integer', minimum: 0, description: '0: the first send; n: the n-th rebroadcast round' },
          leader: { type: ['string', 'null'], description: 'Leader identity (base58); null when unknown' },
          tpu: { type: ['string', 'null'], description: 'TPU QUIC address written to ("ip:port"); null for held and released' },
          outcome: enumOf<DeliveryAttempt['outcome']>()(
            ['written', 'pending', 'refused', 'backoff', 'queue_full', 'failed', 'held', 'released'],
            'written: the stream was written on a live connection. pending: queued to a second leader, outcome not awaited (the first send answers once one leader has it). refused: the validator closed the connection or stopped the stream (close_code). backoff: not attempted, the leader refused or failed recently (close_code: its code). queue_full: not attempted, the connection\'s queue was full. failed: another failure (reason). held: held for anti-MEV, the leader is blocklisted. released: released from the hold at a permitted leader.',
          ),
          close_code: { type: ['integer', 'null'], minimum: 0, description: "The validator's QUIC close code behind a refusal or back-off (1 dropped, 2 disallowed, 4 too many, 5 invalid stream)" },
          reason: { type: ['string', 'null'], description: 'The send failure reason (connect_failed, handshake_timeout, backoff, deadline, ...); null unless it failed' },
        },
        ['at_us', 'slot', 'round', 'leader', 'tpu', 'outcome', 'close_code', 'reason'],
      ),
      ChainError: {
        description:
          'A failed transaction only: the on-chain error exactly as the RPC node reports it (`getSignatureStatuses` `err`), a string for a fieldless error or an object',
        examples: [{ InsufficientFundsForRent: { account_index: 1 } }, { InstructionError: [0, { Custom: 1 }] }, 'InsufficientFundsForFee'],
      },
      Analytics: {
        type: 'object',
        required: ['window', 'from', 'to', 'transactions', 'landed', 'failed', 'expired', 'landing_rate', 'slots_to_land', 'by_leader', 'series_minutes', 'series'],
        additionalProperties: false,
        properties: {
          window: { enum: ['1h', '24h'] },
          from: { type: 'string', format: 'date-time', description: 'Start of the first bucket counted (UTC)' },
          to: { type: 'string', format: 'date-time', description: 'Now (UTC)' },
          ...LANDING_COUNTS,
          by_leader: {
            type: 'array',
            description: 'Per leader of the submission slot (base58 identity, or "other"), most transactions first',
            items: {
              type: 'object',
              required: ['leader', 'transactions', 'landed', 'failed', 'expired', 'landing_rate', 'slots_to_land'],
              additionalProperties: false,
              properties: {
                leader: { type: 'string' },
                ...LANDING_COUNTS,
              },
            },
          },
          series_minutes: { enum: [10, 60], description: 'Length of each series bucket: 60 for 24h, 10 for 1h' },
          series: {
            type: 'array',
            description: 'Oldest first: 24 hourly buckets (24h) or 6 of 10 minutes (1h)',
            items: {
              type: 'object',
              required: ['from', 'transactions', 'landed', 'failed', 'expired', 'landing_rate', 'slots_to_land'],
              additionalProperties: false,
              properties: {
                from: { type: 'string', format: 'date-time' },
                ...LANDING_COUNTS,
              },
            },
          },
        },
      },
      PostMortem: closed<PostMortem>()(
        {
          cause: enumOf<PostMortem['cause']>()(['expired', 'deadline_passed'], 'Its blockhash died, or its deadline_slot passed'),
          summary: { type: 'string', description: 'The post-mortem in one sentence', examples: ['expired after 3 rounds; 5 writes to 3 leaders; its leaders skipped 4 of the 9 slots it was sent for'] },
          rounds: { type: 'integer', minimum: 0, description: 'Rebroadcast rounds written after the first send (known: the trace)' },
          writes: { type: 'integer', minimum: 0, description: "Writes that reached a leader's connection (known: the trace)" },
          refused: {
            type: 'array',
            description: 'Writes the validators refused, by leader and QUIC close code (known: the trace)',
            items: closed<PostMortem['refused'][number]>()(
              { leader: { type: ['string', 'null'] }, close_code: { type: ['integer', 'null'], minimum: 0 }, count: { type: 'integer', minimum: 1 } },
              ['leader', 'close_code', 'count'],
            ),
          },
          throttled: { type: 'integer', minimum: 0, description: "Writes not attempted: the connection's queue full, or backing off a leader that refused (known: the trace)" },
          slots_sent_for: { type: 'array', maxItems: 64, items: { type: 'integer', minimum: 0 }, description: "The leader slots it was sent for: each written leader's slots from its write on" },
          skipped_slots: {
            type: ['array', 'null'],
            items: { type: 'integer', minimum: 0 },
            description: 'Of those, the slots in which no block was produced: the leader skipped them (known: the chain\'s getBlocks); null when the node does not answer getBlocks',
          },
          fees: {
            description: 'Its compute-unit price against the lowest non-vote one in the blocks it was sent for and missed (getBlock, at most 4 blocks). Inferred: the chain does not say why a leader left a transaction out; null when the node cannot tell or no produced block was missed',
            oneOf: [
              closed<NonNullable<PostMortem['fees']>>()(
                {
                  own_cu_price: { type: ['integer', 'null'], minimum: 0, description: 'Its own, micro-lamports per CU (null: not known to this node)' },
                  lowest_cu_price: { type: ['integer', 'null'], minimum: 0, description: 'The lowest in those blocks (0: one paid no priority fee; null: none but votes)' },
                  blocks: { type: 'integer', minimum: 1 },
                  priced_out: { type: 'boolean', description: 'Its price is below every other transaction\'s in those blocks' },
                  inferred: { const: true },
                },
                ['own_cu_price', 'lowest_cu_price', 'blocks', 'priced_out', 'inferred'],
              ),
              { type: 'null' },
            ],
          },
        },
        ['cause', 'summary', 'rounds', 'writes', 'refused', 'throttled', 'slots_sent_for', 'skipped_slots', 'fees'],
        'Why a transaction did not land: in its trace, and on the stream with its expired status pushed a second time. Kept in memory for the node\'s last 10,000 misses',
      ),
      DeliveryTrace: closed<DeliveryTrace>()(
        {
          signature: schema('Signature'),
          status: { ...STATUS_FIELDS.status, description: 'As in the status record' },
          expired: { const: true, description: 'As in the status record' },
          final_state: enumOf<DeliveryTrace['final_state']>()(['landed', 'failed', 'expired', 'deadline_passed', 'pending']),
          cause: {
            type: 'string',
            description: '"landed in slot N", "failed on chain in slot N: <the error in Agave\'s words>", "expired: blockhash past last valid block height N, reached K of M leaders", or "pending: not landed yet, reached K of M leaders"',
            examples: ['landed in slot 4242', 'expired: blockhash past last valid block height 1234, reached 2 of 3 leaders'],
          },
          latency_ms: { type: ['integer', 'null'], minimum: 0, description: 'As in the status record' },
          err: schema('ChainError'),
          leaders_reached: { type: 'integer', minimum: 0, description: 'Distinct leaders the transaction was written to (K)' },
          leaders_tried: { type: 'integer', minimum: 0, description: 'Distinct leaders it was sent to (M)' },
          attempts: { type: 'array', maxItems: 64, items: schema('DeliveryAttempt'), description: 'In order; empty for a transaction accepted a moment ago' },
          attempts_omitted: { type: 'integer', minimum: 0, description: 'Attempts made past the cap of 64, not kept' },
          post_mortem: schema('PostMortem'),
        },
        ['signature', 'status', 'final_state', 'cause', 'latency_ms', 'leaders_reached', 'leaders_tried', 'attempts', 'attempts_omitted'],
      ),
      Account: closed<AccountRecord>()(
        {
          plan: schema('Plan'),
          plan_upgraded_at: schema('LocalTimestamp'),
          member_since: schema('LocalTimestamp'),
          limits: closed<AccountRecord['limits']>()({ max_tps: { type: 'number', minimum: 0 }, min_tip_bp: { type: 'number', minimum: 0 } }, ['max_tps', 'min_tip_bp']),
          usage: closed<AccountRecord['usage']>()(
            {
              service_points: { type: 'integer', minimum: 0 },
              transactions_total: { type: 'integer', minimum: 0 },
              transactions_today: { type: 'integer', minimum: 0 },
            },
            ['service_points', 'transactions_total', 'transactions_today'],
          ),
          next_tier: { oneOf: [schema('NextTier'), { type: 'null' }], description: 'null on the top tier (whale)' },
          lamports_per_point: {
            type: 'integer',
            minimum: 1,
            description: "The service's conversion (additive field): points = floor(tip lamports / lamports_per_point), so the minimum tip in lamports is min_tip_bp × lamports_per_point",
          },
        },
        ['plan', 'plan_upgraded_at', 'member_since', 'limits', 'usage', 'next_tier', 'lamports_per_point'],
      ),
      NextTier: closed<NextTier>()(
        {
          plan: schema('Plan'),
          threshold_bp: { type: 'number', minimum: 0 },
          remaining_bp: { type: 'number', minimum: 0 },
          progress_percent: { type: 'number', minimum: 0, maximum: 100 },
          benefits: closed<NextTier['benefits']>()(
            { new_max_tps: { type: 'number' }, new_tip_bp: { type: 'number' }, tip_savings_percent: { type: 'number' } },
            ['new_max_tps', 'new_tip_bp', 'tip_savings_percent'],
          ),
        },
        ['plan', 'threshold_bp', 'remaining_bp', 'progress_percent', 'benefits'],
      ),
      Plan: enumOf<PlanName>()(['starter', 'growth', 'pro', 'whale']),
      TipPercentiles: {
        type: 'object',
        required: TIP_PERCENTILES.map((p) => `p${p}`),
        additionalProperties: false,
        properties: Object.fromEntries(TIP_PERCENTILES.map((p) => [`p${p}`, { type: 'integer', minimum: 0 }])),
      },
      TipFloorWindow: closed<TipFloorWindow>()(
        {
          landed: { type: 'integer', minimum: 0, description: 'Transactions seen landed (confirmed) in the window' },
          lamports: { oneOf: [schema('TipPercentiles'), { type: 'null' }], description: 'Tip percentiles in lamports; null when nothing landed' },
          bp: { oneOf: [schema('TipPercentiles'), { type: 'null' }], description: 'The same in points: floor(lamports / lamports_per_point)' },
        },
        ['landed', 'lamports', 'bp'],
      ),
      PriorityFeeWindow: closed<PriorityFeeWindow>()(
        {
          landed: { type: 'integer', minimum: 0, description: 'Landed transactions whose compute-unit price is known (accepted since the service started)' },
          micro_lamports_per_cu: {
            oneOf: [schema('TipPercentiles'), { type: 'null' }],
            description: 'Compute-unit price percentiles in micro-lamports per CU, no one account moving any beyond 2x of what the others pay 10 percentile points higher (half of 10 lower); null when none landed or all were one account\'s',
          },
        },
        ['landed', 'micro_lamports_per_cu'],
      ),
      TipFloor: closed<TipFloorRecord>()(
        {
          as_of: { type: 'string', format: 'date-time', description: 'When the view was computed (UTC)' },
          lamports_per_point: { type: 'integer', minimum: 1 },
          windows: {
            type: 'object',
            required: Object.keys(TIP_WINDOWS),
            additionalProperties: false,
            properties: Object.fromEntries(Object.keys(TIP_WINDOWS).map((w) => [w, schema('TipFloorWindow')])),
          },
          priority_fee: {
            type: 'object',
            description: 'The compute-unit prices the same landings paid, per window',
            required: Object.keys(TIP_WINDOWS),
            additionalProperties: false,
            properties: Object.fromEntries(Object.keys(TIP_WINDOWS).map((w) => [w, schema('PriorityFeeWindow')])),
          },
          plan_minimum: closed<PlanMinimum>()(
            { plan: schema('Plan'), min_tip_bp: { type: 'number', minimum: 0 }, min_tip_lamports: { type: 'integer', minimum: 0 } },
            ['plan', 'min_tip_bp', 'min_tip_lamports'],
            "The calling account's plan minimum (only with a key): tip at least this",
          ),
        },
        ['as_of', 'lamports_per_point', 'windows', 'priority_fee'],
      ),
      LocalTimestamp: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}$', description: 'UTC, ISO-8601 without zone designator' },
      TipAddresses: {
        type: 'object',
        required: ['tip_addresses'],
        additionalProperties: false,
        properties: { tip_addresses: { type: 'array', minItems: 1, items: schema('Address') } },
      },
      Health: {
        type: 'object',
        description: 'uptime_s and chain are the details: both or neither (see the operation)',
        required: ['status'],
        dependentRequired: { uptime_s: ['chain'], chain: ['uptime_s'] },
        additionalProperties: false,
        properties: {
          status: { enum: ['ok', 'unsynced', 'store_unavailable'], description: 'store_unavailable first when both are wrong' },
          uptime_s: { type: 'integer', minimum: 0 },
          store: closed<StoreHealthView>()(
            {
              available: { type: 'boolean' },
              reason: { type: ['string', 'null'], description: 'why it cannot commit (disk at its reserve, a failed commit); null while available' },
              since: { type: ['string', 'null'], format: 'date-time', description: 'UTC; null while available' },
              free_bytes: { type: ['integer', 'null'], minimum: 0, description: "free space on the data directory's filesystem at the last check" },
              refused_writes: { type: 'integer', minimum: 0, description: 'writes refused or failed since it became unavailable' },
            },
            ['available', 'reason', 'since', 'free_bytes', 'refused_writes'],
            'Whether the store can commit; while it cannot, sends are refused (500 Delivery failed, Retry-After)',
          ),
          log: closed<LogHealthView>()(
            {
              writing: { type: 'boolean' },
              dropped_lines: { type: 'integer', minimum: 0, description: 'log lines dropped since the start (every thread)' },
              failing_since: { type: ['string', 'null'], format: 'date-time', description: 'UTC; null while lines are written' },
            },
            ['writing', 'dropped_lines', 'failing_since'],
            'Whether log lines are written; while they cannot be (a full log filesystem), they are dropped and counted and the service serves on',
          ),
          cluster: closed<ClusterHealth>()(
            {
              node: { type: 'string', description: 'this node' },
              nats: enumOf<ClusterHealth['nats']>()(['up', 'down']),
              mode: enumOf<ClusterHealth['mode']>()(['clustered', 'degraded'], 'degraded: NATS unreachable, serving from local state, catching up when it returns'),
              nodes: { type: 'array', items: { type: 'string' }, description: 'live nodes, this one included' },
              budget: enumOf<ClusterHealth['budget']>()(['shared', 'local-share'], 'local-share: the account budgets fall back to rate / known nodes'),
              replication_backlog: { type: 'integer', minimum: 0, description: 'status events not yet acknowledged by JetStream' },
              nats_error: { type: 'string', description: 'while degraded: why NATS refused or failed this node last (authorization, TLS, permissions, unreachable), when there is such a reason' },
            },
            ['node', 'nats', 'mode', 'nodes', 'budget', 'replication_backlog'],
            'A node of several (config nats): its link to NATS JetStream and what it shares; absent on a single node',
          ),
          chain: {
            type: 'object',
            required: ['synced', 'slot', 'slot_age_ms'],
            additionalProperties: false,
            properties: {
              synced: { type: 'boolean' },
              slot: { type: 'integer', minimum: 0 },
              slot_age_ms: { type: ['integer', 'null'], minimum: 0, description: 'null before the first slot was seen' },
            },
          },
        },
      },
      StreamReady: { type: 'object', required: ['type'], additionalProperties: false, properties: { type: { const: 'ready' } } },
      StreamStatus: closed<StreamStatus>()(
        {
          type: { const: 'status' },
          ...STATUS_FIELDS,
          tip_lamports: { type: 'integer', minimum: 0, description: "Lamports the transaction tips to the service's tip addresses" },
          submit_slot: { type: 'integer', minimum: 0, description: 'Cluster slot when the service accepted it (slot − submit_slot: slots to land)' },
          post_mortem: schema('PostMortem'),
        },
        ['type', ...STATUS_REQUIRED, 'tip_lamports', 'submit_slot'],
        'A StatusRecord with "type": "status", and two facts a live view needs that the status record lacks: the tip and the slot at acceptance',
      ),
      ...rpcSchemas(),
    },
  },
};

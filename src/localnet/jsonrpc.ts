/**
 * JSON-RPC 2.0 framing as Agave's servers (jsonrpc-core) apply it, shared by the HTTP endpoint
 * and the PubSub WebSocket: parse errors, invalid requests, batches, notifications (no `id`, no
 * reply), unknown methods, and handler errors turned into error objects — never exceptions.
 */
import { INTERNAL_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, RpcError } from './rpc-params.js';

export type Id = string | number | null;

export interface Request {
  method: string;
  params: unknown;
  id: Id;
  /** A notification: the caller wants no reply. */
  notification: boolean;
}

export type Response =
  | { jsonrpc: '2.0'; result: unknown; id: Id }
  // `jsonrpc` is absent only from the answer to a call that had none (jsonrpc-core echoes the version).
  | { jsonrpc?: '2.0'; error: { code: number; message: string; data?: unknown }; id: Id };

export function errorResponse(code: number, message: string, id: Id, data?: unknown): Response {
  return { jsonrpc: '2.0', error: { code, message, ...(data !== undefined && { data }) }, id };
}

/** Run one request's handler; a handler error becomes the error response. */
export function respond(req: Request, handler: ((req: Request) => unknown) | undefined): Response | null {
  let response: Response;
  if (!handler) {
    response = errorResponse(METHOD_NOT_FOUND, 'Method not found', req.id);
  } else {
    try {
      response = { jsonrpc: '2.0', result: handler(req), id: req.id };
    } catch (e) {
      if (e instanceof RpcError) {
        response = errorResponse(e.code, e.message, req.id, e.data);
      } else {
        // A handler threw something other than an RpcError: a bug. Say so where it can be seen.
        process.stderr.write(`localnet: ${req.method} failed: ${(e as Error).stack ?? String(e)}\n`);
        response = errorResponse(INTERNAL_ERROR, 'Internal error', req.id);
      }
    }
  }
  return req.notification ? null : response;
}

function validId(v: unknown): v is Id {
  return v === null || typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
}

/** Check the envelope of one call; a `Response` when it is invalid. */
export function parseRequest(v: unknown): Request | Response {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return errorResponse(INVALID_REQUEST, 'Invalid request', null);
  const o = v as Record<string, unknown>;
  const hasId = Object.hasOwn(o, 'id');
  if (o.jsonrpc === undefined && typeof o.method === 'string') {
    // A JSON-RPC 1.0 call (a method, no version): jsonrpc-core refuses the version, and its answer has none either.
    return { error: { code: INVALID_REQUEST, message: 'Unsupported JSON-RPC protocol version' }, id: hasId && validId(o.id) ? o.id : null };
  }
  if (o.jsonrpc !== '2.0' || typeof o.method !== 'string' || (hasId && !validId(o.id))) {
    return errorResponse(INVALID_REQUEST, 'Invalid request', hasId && validId(o.id) ? o.id : null);
  }
  return { method: o.method, params: o.params, id: hasId ? (o.id as Id) : null, notification: !hasId };
}

/**
 * Answer a whole payload: one call or a batch. Returns the reply value (object or array), or
 * null when nothing is to be sent (only notifications).
 */
export function handlePayload(text: string, call: (req: Request) => Response | null): Response | Response[] | null {
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    return errorResponse(PARSE_ERROR, 'Parse error', null);
  }
  const one = (v: unknown): Response | null => {
    const req = parseRequest(v);
    return 'method' in req ? call(req) : req;
  };
  if (!Array.isArray(payload)) return one(payload);
  // An empty batch gets an empty answer (jsonrpc-core: nothing to respond to).
  if (payload.length === 0) return null;
  const out = payload.map(one).filter((r): r is Response => r !== null);
  return out.length > 0 ? out : null;
}

/**
 * Where a request's API key is read from (spec §5) and the 401s when it is missing or wrong.
 * Resolution itself is the per-thread `KeyCache`.
 */
import type { KeyCache } from '../accounts/key-cache.js';
import type { Caller } from '../submission/core.js';
import { Refusal } from '../submission/refusals.js';
import type { Ctx } from './request.js';

/**
 * The key in an `Authorization` header value: `Bearer <key>` (scheme case-insensitive, spaces
 * around the key allowed); '' for a header of another form; undefined for no header.
 */
export function bearerKey(authorization: string): string | undefined {
  if (authorization === '') return undefined;
  if (authorization.length < 8 || authorization.slice(0, 6).toLowerCase() !== 'bearer') return '';
  const sep = authorization.charCodeAt(6);
  if (sep !== 0x20 && sep !== 0x09) return '';
  const key = authorization.slice(7).trim();
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c === 0x20 || c === 0x09) return ''; // two words: not a key
  }
  return key;
}

/**
 * Resolve the caller. `allowQuery`: also accept the `api-key` / `api_key` query parameters
 * (status and account endpoints, JSON-RPC; spec §5.2–5.3). `dropIn`: also the `x-jito-auth`
 * header and the `uuid` query parameter, where Jito's clients put their credential (the drop-in
 * paths `/api/v1/transactions`, `/api/v1/bundles`, `/fast`). None of these is ever logged: the
 * request log carries the path without its query string, and no header values.
 */
export function authenticate(keys: KeyCache, ctx: Ctx, allowQuery: boolean, dropIn = false): Caller {
  return resolveKey(keys, ctx, presentedKey(ctx, allowQuery, dropIn));
}

/**
 * The API key the request presents (as `authenticate` reads it), or the 401 of a missing or
 * malformed one. Looks nothing up: `resolveKey` does, or the send's one call (`POST /v1/send`).
 */
export function presentedKey(ctx: Ctx, allowQuery: boolean, dropIn = false): string {
  let key = bearerKey(ctx.authorization);
  if (key === '') throw new Refusal('AUTH_UNAUTHORIZED', 'Authorization header must be "Bearer <API key>"');
  if (key === undefined && dropIn && ctx.jitoAuth !== '') key = ctx.jitoAuth.trim();
  if (key === undefined && allowQuery) key = ctx.queryParam('api-key') ?? ctx.queryParam('api_key');
  if (key === undefined && dropIn) key = ctx.queryParam('uuid');
  if (key === undefined || key === '') {
    throw new Refusal(
      'AUTH_UNAUTHORIZED',
      dropIn
        ? 'missing API key: use "Authorization: Bearer <key>", the x-jito-auth header, or the uuid or api-key query parameter'
        : allowQuery
          ? 'missing API key: use "Authorization: Bearer <key>" or the api-key query parameter'
          : 'missing "Authorization: Bearer <key>" header',
    );
  }
  return key;
}

/** The caller of a presented key (and the request's account for its log line), or the 401 of a wrong or revoked one. */
export function resolveKey(keys: KeyCache, ctx: Ctx, key: string): Caller {
  const who = keys.authenticate(key);
  if (!who) throw new Refusal('AUTH_UNAUTHORIZED', 'invalid or revoked API key');
  ctx.accountId = who.account.id;
  return who;
}

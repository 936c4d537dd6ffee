/**
 * The HTTP headers of a budget and of a refusal, rendered here and nowhere else: the submission
 * core and the routes say how long to wait (`Refusal.retryAfterS`) and what the budget was
 * (`Refusal.rate`, a `RateDecision`), as numbers; the REST routes and the JSON-RPC answers over
 * HTTP write them as `Retry-After` and `RateLimit-*` (docs/decisions.md, "Rate limits"). A
 * WebSocket front end has no headers: it says the refusal's reason in its close frame or error.
 */
import type { RateLimitState, Refusal } from '../submission/refusals.js';

/** `RateLimit-*` headers of a budget as a take left it (a 200's, or a 429's with its `Retry-After`). */
export function rateHeaders(d: RateLimitState): Record<string, string> {
  return {
    'RateLimit-Limit': String(d.limit),
    'RateLimit-Remaining': String(d.remaining),
    'RateLimit-Reset': String(Math.max(0, Math.ceil(d.resetMs / 1000))),
  };
}

/**
 * Every header of a refusal's answer, in this order: `Retry-After` (when it says when to come
 * back), the `RateLimit-*` of the budget that refused it (a 429), then the headers of the route
 * that refused it (`Allow` of a 405, `Upgrade` of a 426).
 */
export function refusalHeaders(e: Refusal): Record<string, string> {
  if (e.retryAfterS === undefined && e.rate === undefined) return e.headers;
  return {
    ...(e.retryAfterS !== undefined && { 'Retry-After': String(e.retryAfterS) }),
    ...(e.rate !== undefined && rateHeaders(e.rate)),
    ...e.headers,
  };
}

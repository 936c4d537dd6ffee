/**
 * How HTTP renders a refusal's numbers (`src/http/rate-headers.ts`): the submission core says when
 * to come back (`retryAfterS`) and which budget refused (`rate`, the real native bucket's
 * decision); the REST routes and JSON-RPC over HTTP write `Retry-After` and `RateLimit-*` from
 * them, in that order, then any header of the route itself (`Allow`). End to end, the same
 * headers are checked on the wire in test/e2e/api-http.test.ts and json-rpc.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Accounts } from '../../src/accounts/accounts.js';
import { DEFAULT_PLANS, type PlanTable } from '../../src/accounts/plans.js';
import { RateLimiter } from '../../src/accounts/rate-limiter.js';
import { rateHeaders, refusalHeaders } from '../../src/http/rate-headers.js';
import { Store, type AccountRecord } from '../../src/store/store.js';
import { rateRefusal } from '../../src/submission/core.js';
import { Refusal } from '../../src/submission/refusals.js';
import { tempDir } from '../../harness/tmp.js';

/** 3 sends a second: a budget a test can spend. */
const PLANS: PlanTable = { ...DEFAULT_PLANS, starter: { ...DEFAULT_PLANS.starter, maxTps: 3 } };

let tmp: ReturnType<typeof tempDir>;
let store: Store;
let account: AccountRecord;
let limiter: RateLimiter;

beforeEach(() => {
  tmp = tempDir();
  store = Store.open(tmp.dir);
  const accounts = new Accounts(store, { plans: PLANS, lamportsPerPoint: 1000 });
  account = accounts.authenticate(accounts.createAccount('headers').api_key)!.account;
  limiter = new RateLimiter(PLANS);
});
afterEach(async () => {
  await store.close();
  tmp.cleanup();
});

describe('rate headers', () => {
  it("a 200's RateLimit-* say the budget as the take left it", () => {
    const d = limiter.takeSend(account, 1);
    expect(d.granted).toBe(true);
    expect(rateHeaders(d)).toEqual({ 'RateLimit-Limit': '3', 'RateLimit-Remaining': String(d.remaining), 'RateLimit-Reset': String(Math.ceil(d.resetMs / 1000)) });
    expect(d.remaining).toBe(2);
  });

  it("a spent budget's 429: Retry-After in whole seconds (at least 1), then the decision's RateLimit-*", () => {
    limiter.takeSend(account, 3);
    const d = limiter.takeSend(account, 1);
    expect(d.granted).toBe(false);
    const e = rateRefusal(d, 'send');
    // The refusal itself knows no HTTP: numbers only.
    expect(e).toMatchObject({ code: 'SEND_RATE_LIMITED', status: 429, retryAfterS: 1, rate: d, headers: {} });
    const h = refusalHeaders(e);
    expect(Object.keys(h)).toEqual(['Retry-After', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']);
    expect(h).toEqual({ 'Retry-After': '1', 'RateLimit-Limit': '3', 'RateLimit-Remaining': String(d.remaining), 'RateLimit-Reset': String(Math.max(0, Math.ceil(d.resetMs / 1000))) });
  });

  it('a request larger than the budget can ever grant is told to come back in a minute', () => {
    const d = limiter.takeSend(account, 10);
    expect(d.granted).toBe(false);
    expect(d.retryAfterMs).toBe(Infinity);
    const h = refusalHeaders(rateRefusal(d, 'send'));
    expect(h['Retry-After']).toBe('60');
    expect(h['RateLimit-Limit']).toBe('3');
  });

  it("the in-flight cap's 429 and the metrics token throttle render as their literal headers did", () => {
    const cap = new Refusal('SEND_RATE_LIMITED', '6 transactions in flight (cap 6)', { retryAfterS: 1, rate: { limit: 6, remaining: 0, resetMs: 1000 } });
    expect(refusalHeaders(cap)).toEqual({ 'Retry-After': '1', 'RateLimit-Limit': '6', 'RateLimit-Remaining': '0', 'RateLimit-Reset': '1' });
  });

  it('a refusal with only a wait says Retry-After; one with none says nothing; a route keeps its own headers after them', () => {
    expect(refusalHeaders(new Refusal('DELIVERY_FAILED', 'store unavailable', { retryAfterS: 5 }))).toEqual({ 'Retry-After': '5' });
    expect(refusalHeaders(new Refusal('TX_INVALID', 'bad bytes'))).toEqual({});
    expect(refusalHeaders(new Refusal('REQUEST_METHOD', 'use POST', { headers: { Allow: 'POST' } }))).toEqual({ Allow: 'POST' });
    const both = refusalHeaders(new Refusal('QUERY_RATE_LIMITED', 'x', { retryAfterS: 2, rate: { limit: 10, remaining: 0, resetMs: 1500 }, headers: { Allow: 'GET' } }));
    expect(Object.entries(both)).toEqual([
      ['Retry-After', '2'],
      ['RateLimit-Limit', '10'],
      ['RateLimit-Remaining', '0'],
      ['RateLimit-Reset', '2'],
      ['Allow', 'GET'],
    ]);
  });
});

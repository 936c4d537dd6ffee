/**
 * The HTTP API on a real port, with the real LMDB store, accounts, native core and native
 * token buckets. These cases are decided before delivery: auth, content type, body limits,
 * JSON, transaction validity, tips, rate limits, status and account. Successful delivery is
 * exercised by the delivery-engine tests on the local cluster.
 */
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { Keypair, PublicKey } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Accounts } from '../../src/accounts/accounts.js';
import { DEFAULT_PLANS } from '../../src/accounts/plans.js';
import { buildApp, MAX_BATCH, SEND_BODY_LIMIT } from '../../src/http/api.js';
import { sentRecord } from '../../src/store/records.js';
import type { RunningServer } from '../../src/http/server.js';
import type { Store } from '../../src/store/store.js';
import { startBareApp, type BareApp } from '../../harness/bare-app.js';
import { legacyTx, makeLookupTable, makeTipAddresses, simpleTip, transfer, v0Tx, web3Base58 } from '../../harness/transactions.js';

let store: Store;
let accounts: Accounts;
let server: RunningServer;
let base: string;
let tips: PublicKey[];
let api: BareApp;

beforeAll(async () => {
  tips = makeTipAddresses(8);
  api = await startBareApp(tips.map((t) => t.toBase58()));
  ({ store, accounts, server, base } = api);
});

afterAll(() => api.close());

const newAccount = (plan?: 'starter' | 'whale') => api.newAccount(plan);

async function post(path: string, body: unknown, key?: string, headers: Record<string, string> = {}) {
  const r = await fetch(base + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key && { authorization: `Bearer ${key}` }), ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: r.status, headers: r.headers, body: (await r.json()) as any };
}

async function get(path: string, headers: Record<string, string> = {}) {
  const r = await fetch(base + path, { headers });
  return { status: r.status, headers: r.headers, body: (await r.json()) as any };
}

function expectError(r: { status: number; body: any }, status: number, message: string) {
  expect(r.status).toBe(status);
  expect(r.body.success).toBe(false);
  expect(r.body.error.code).toBe(status);
  expect(r.body.error.message).toBe(message);
  expect(typeof r.body.error.reason).toBe('string');
  expect(r.body.error.reason.length).toBeGreaterThan(0);
}

describe('routing', () => {
  it('answers unknown routes with a JSON 404 and wrong methods with 405 + Allow', async () => {
    expectError(await get('/v2/nothing'), 404, 'Not found');
    const r = await fetch(base + '/v1/send', { method: 'GET' });
    expect(r.status).toBe(405);
    expect(r.headers.get('allow')).toBe('POST');
    expect(((await r.json()) as any).error.message).toBe('Method not allowed');
    expect((await fetch(base + '/v1/account', { method: 'DELETE' })).status).toBe(405);
  });

  it('serves ping and the tip addresses without auth', async () => {
    const p = await fetch(base + '/ping');
    expect(await p.text()).toBe('pong');
    const t = await get('/v1/tip-addresses');
    expect(t.status).toBe(200);
    expect(t.body.tip_addresses).toEqual(tips.map((x) => x.toBase58()));
  });
});

describe('POST /v1/send refusals', () => {
  it('401 for a missing, malformed, unknown or revoked key, and for a key in the query', async () => {
    const a = newAccount();
    const tx = simpleTip(tips[0]!, 2_000_000).base64;
    expectError(await post('/v1/send', { transaction: tx }), 401, 'Unauthorized');
    expectError(await post('/v1/send', { transaction: tx }, undefined, { authorization: `Basic ${a.key}` }), 401, 'Unauthorized');
    expectError(await post('/v1/send', { transaction: tx }, 'lf_unknown'), 401, 'Unauthorized');
    expectError(await post(`/v1/send?api-key=${a.key}`, { transaction: tx }), 401, 'Unauthorized');
    const k2 = accounts.createKey(a.id, 'second');
    accounts.revokeKey(a.id, 'second');
    expectError(await post('/v1/send', { transaction: tx }, k2.api_key), 401, 'Unauthorized');
  });

  it('401 for a wrong key whatever the body: oversize, of another type, not JSON, with unknown fields or options, or not a transaction', async () => {
    const a = newAccount();
    const good = simpleTip(tips[0]!, 2_000_000).base64;
    for (const key of ['lf_unknown', undefined]) {
      for (const body of [JSON.stringify({ transaction: 'A'.repeat(SEND_BODY_LIMIT + 10) }), '{not json', '[]', JSON.stringify({ transaction: 42 }),
        JSON.stringify({ transaction: good, skip_preflight: true }), JSON.stringify({ transaction: good, options: { max_retries: 11 } }),
        JSON.stringify({ transaction: '@@@@' }), JSON.stringify({ transaction: simpleTip(tips[0]!, 1).base64 })]) {
        expectError(await post('/v1/send', body, key), 401, 'Unauthorized');
      }
      const typed = await fetch(base + '/v1/send', { method: 'POST', headers: { ...(key && { authorization: `Bearer ${key}` }), 'content-type': 'text/plain' }, body: '{}' });
      expect(typed.status).toBe(401);
    }
    // Streamed past the limit (no content-length): 401 too.
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${base}/v1/send`, { method: 'POST', headers: { authorization: 'Bearer lf_unknown', 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      for (let i = 0; i < 20; i++) req.write('x'.repeat(1024));
      req.end();
    });
    expect(status).toBe(401);
    // The right key gets the body's own refusal.
    expectError(await post('/v1/send', '{not json', a.key), 400, 'Invalid transaction');
  });

  it('415 for a missing or wrong content type', async () => {
    const a = newAccount();
    const r = await fetch(base + '/v1/send', { method: 'POST', headers: { authorization: `Bearer ${a.key}`, 'content-type': 'text/plain' }, body: '{}' });
    expect(r.status).toBe(415);
    const r2 = await fetch(base + '/v1/send', { method: 'POST', headers: { authorization: `Bearer ${a.key}` }, body: new Uint8Array([1, 2]) });
    expect(r2.status).toBe(415);
  });

  it('413 for an oversize body, declared or streamed, before parsing', async () => {
    const a = newAccount();
    const big = JSON.stringify({ transaction: 'A'.repeat(SEND_BODY_LIMIT + 10) });
    expectError(await post('/v1/send', big, a.key), 413, 'Payload too large');
    // Chunked: no content-length, the limit is enforced while the body streams.
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${base}/v1/send`, { method: 'POST', headers: { authorization: `Bearer ${a.key}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      for (let i = 0; i < 20; i++) req.write('x'.repeat(1024));
      req.end();
    });
    expect(status).toBe(413);
  });

  it('400 Invalid transaction for bad JSON, wrong shapes and bad options', async () => {
    const a = newAccount();
    const good = simpleTip(tips[0]!, 2_000_000).base64;
    for (const body of ['{not json', '[]', '"x"', JSON.stringify({}), JSON.stringify({ transaction: 42 }),
      JSON.stringify({ transaction: good, options: { max_retries: 11 } }),
      JSON.stringify({ transaction: good, options: { skip_preflight: 'no' } }),
      JSON.stringify({ transaction: good, options: [] })]) {
      expectError(await post('/v1/send', body, a.key), 400, 'Invalid transaction');
    }
  });

  it('400 with the native reason for malformed base64, truncated wire data and wrong signatures', async () => {
    const a = newAccount();
    const built = simpleTip(tips[0]!, 2_000_000);
    let r = await post('/v1/send', { transaction: '@@@@' }, a.key);
    expectError(r, 400, 'Invalid transaction');
    expect(r.body.error.reason).toMatch(/^BASE64_INVALID/);
    r = await post('/v1/send', { transaction: Buffer.from(built.bytes.subarray(0, 100)).toString('base64') }, a.key);
    expect(r.body.error.reason).toMatch(/^MALFORMED/);
    const flipped = Buffer.from(built.bytes);
    flipped[flipped.length - 1]! ^= 1;
    r = await post('/v1/send', { transaction: flipped.toString('base64') }, a.key);
    expectError(r, 400, 'Invalid transaction');
    expect(r.body.error.reason).toMatch(/^SIGNATURE_INVALID/);
  });

  it('402 Tip required without a tip, or with the tip only through a lookup table', async () => {
    const a = newAccount();
    const payer = Keypair.generate();
    let r = await post('/v1/send', { transaction: legacyTx([transfer(payer.publicKey, Keypair.generate().publicKey, 5_000_000)], { feePayer: payer }).base64 }, a.key);
    expectError(r, 402, 'Tip required');
    const viaLut = v0Tx([transfer(payer.publicKey, tips[1]!, 5_000_000)], { feePayer: payer, lookupTables: [makeLookupTable([tips[1]!])] });
    r = await post('/v1/send', { transaction: viaLut.base64 }, a.key);
    expectError(r, 402, 'Tip required');
    expect(r.body.error.reason).toMatch(/lookup table/);
  });

  it('402 Tip insufficient below the plan minimum, stating both amounts', async () => {
    const a = newAccount();
    const min = DEFAULT_PLANS.starter.minTipBp * 1000;
    const r = await post('/v1/send', { transaction: simpleTip(tips[2]!, min - 1).base64 }, a.key);
    expectError(r, 402, 'Tip insufficient');
    expect(r.body.error.reason).toContain(`${min - 1} lamports`);
    expect(r.body.error.reason).toContain(`${DEFAULT_PLANS.starter.minTipBp} BP`);
  });
});

describe('POST /v1/send/batch', () => {
  it('400 Invalid request for a missing, empty or oversize array', async () => {
    const a = newAccount('whale');
    expectError(await post('/v1/send/batch', {}, a.key), 400, 'Invalid request');
    expectError(await post('/v1/send/batch', { transactions: 'x' }, a.key), 400, 'Invalid request');
    expectError(await post('/v1/send/batch', { transactions: [] }, a.key), 400, 'Invalid request');
    const tx = simpleTip(tips[0]!, 2_000_000).base64;
    expectError(await post('/v1/send/batch', { transactions: Array(MAX_BATCH + 1).fill(tx) }, a.key), 400, 'Invalid request');
    expectError(await post('/v1/send/batch', { transactions: [] }), 401, 'Unauthorized');
  });

  it('reports each failing transaction in its own item inside a 200', async () => {
    const a = newAccount();
    const payer = Keypair.generate();
    const flipped = Buffer.from(simpleTip(tips[0]!, 2_000_000).bytes);
    flipped[flipped.length - 1]! ^= 1;
    const items = [
      '%%%',
      legacyTx([transfer(payer.publicKey, Keypair.generate().publicKey, 1)], { feePayer: payer }).base64,
      flipped.toString('base64'),
      7,
      simpleTip(tips[3]!, 10).base64,
    ];
    const r = await post('/v1/send/batch', { transactions: items }, a.key);
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    expect(r.body.results.map((x: any) => x.index)).toEqual([0, 1, 2, 3, 4]);
    for (const x of r.body.results) {
      expect(x.signature).toBeNull();
      expect(x.status).toBe('failed');
      expect(typeof x.error).toBe('string');
    }
    expect(r.body.results[0].error).toMatch(/^Invalid transaction: BASE64_INVALID/);
    expect(r.body.results[1].error).toMatch(/^Tip required/);
    expect(r.body.results[2].error).toMatch(/SIGNATURE_INVALID/);
    expect(r.body.results[3].error).toMatch(/base64 string/);
    expect(r.body.results[4].error).toMatch(/^Tip insufficient/);
  });

  it('429 for a batch of N when fewer than N send tokens are available, with Retry-After and RateLimit headers', async () => {
    const a = newAccount();
    const n = DEFAULT_PLANS.starter.maxTps + 1;
    const r = await post('/v1/send/batch', { transactions: Array(n).fill('x') }, a.key);
    expectError(r, 429, 'Rate limit exceeded');
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(r.headers.get('ratelimit-limit')).toBe(String(DEFAULT_PLANS.starter.maxTps));
    expect(r.headers.get('ratelimit-remaining')).not.toBeNull();
    // Exactly the budget: granted (and every item fails validation, so nothing is delivered).
    const ok = await post('/v1/send/batch', { transactions: Array(DEFAULT_PLANS.starter.maxTps).fill('x') }, a.key);
    expect(ok.status).toBe(200);
    // Now the send budget is spent: even one more is refused.
    expectError(await post('/v1/send/batch', { transactions: ['x'] }, a.key), 429, 'Rate limit exceeded');
  });
});

describe('GET /v1/status/{signature}', () => {
  function record(accountId: string, keyName = 'default') {
    const sig = web3Base58(Keypair.generate().secretKey); // 64 random bytes, base58
    store.insertStatus(
      sentRecord({
        signature: sig, accountId, keyName, submittedAt: Date.UTC(2026, 10, 21, 10, 0, 0, 123), submitSlot: 77, tipLamports: 1_000_000n,
        recentBlockhash: web3Base58(Keypair.generate().publicKey.toBytes()), durableNonce: false, lastValidBlockHeight: null,
      }),
    );
    return sig;
  }

  it('accepts the header, api-key and api_key equally, and returns the spec 2.4 record', async () => {
    const a = newAccount();
    const sig = record(a.id);
    await store.flushed();
    for (const r of [
      await get(`/v1/status/${sig}`, { authorization: `Bearer ${a.key}` }),
      await get(`/v1/status/${sig}?api-key=${a.key}`),
      await get(`/v1/status/${sig}?api_key=${a.key}`),
    ]) {
      expect(r.status).toBe(200);
      expect(r.body).toEqual({
        signature: sig, status: 'sent', submitted_at: '2026-11-21T10:00:00.123Z', confirmed_at: null,
        latency_ms: null, slot: null, api_key_name: 'default',
      });
    }
  });

  it('404 for another account\'s signature and for one never submitted; 400 for a malformed one; 401 without a key', async () => {
    const a = newAccount();
    const b = newAccount();
    const sig = record(a.id);
    await store.flushed();
    expectError(await get(`/v1/status/${sig}?api-key=${b.key}`), 404, 'Not found');
    expectError(await get(`/v1/status/${web3Base58(Keypair.generate().secretKey)}?api-key=${a.key}`), 404, 'Not found');
    for (const bad of ['abc', '0OIl' + 'A'.repeat(84), 'A'.repeat(200), web3Base58(new Uint8Array(32).fill(9))]) {
      expectError(await get(`/v1/status/${bad}?api-key=${a.key}`), 400, 'Invalid signature');
    }
    expectError(await get(`/v1/status/${sig}`), 401, 'Unauthorized');
    expectError(await get(`/v1/status/${sig}?api-key=lf_wrong`), 401, 'Unauthorized');
  });

  it('draws from a per-account query budget shared by all keys, separate from the send budget', async () => {
    const a = newAccount();
    const k2 = accounts.createKey(a.id, 'second').api_key;
    const sig = record(a.id);
    await store.flushed();
    const budget = DEFAULT_PLANS.starter.queryTps;
    // Three budgets' worth at once, through both keys and both query endpoints: requests made one
    // after another would each let the bucket refill a token (one per 62.5 ms) on a busy machine.
    const t0 = performance.now();
    const burst = await Promise.all(
      Array.from({ length: 3 * budget }, (_, i) => get(i % 3 === 2 ? `/v1/account?api-key=${a.key}` : `/v1/status/${sig}?api-key=${i % 2 ? k2 : a.key}`)),
    );
    const elapsed = (performance.now() - t0) / 1000;
    const granted = burst.filter((r) => r.status === 200).length;
    expect(burst.every((r) => r.status === 200 || r.status === 429)).toBe(true);
    expect(granted).toBeGreaterThanOrEqual(budget);
    expect(granted).toBeLessThanOrEqual(budget + Math.ceil(budget * elapsed) + 1);
    // Both keys and both endpoints were refused from the one budget, each 429 saying so.
    const refused = burst.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expectError(r, 429, 'Query rate limit exceeded');
      expect(r.headers.get('retry-after')).not.toBeNull();
    }
    // ...but the send budget is untouched: a full batch of the send rate is still accepted.
    const s = await post('/v1/send/batch', { transactions: Array(DEFAULT_PLANS.starter.maxTps).fill('x') }, a.key);
    expect(s.status).toBe(200);
  });

  it('applies a plan change to the very next request', async () => {
    const a = newAccount();
    const sig = record(a.id);
    await store.flushed();
    // The starter budget spent, at once (one after another, a busy machine refills it as it goes).
    const burst = await Promise.all(Array.from({ length: 3 * DEFAULT_PLANS.starter.queryTps }, () => get(`/v1/status/${sig}?api-key=${a.key}`)));
    expect(burst.map((r) => r.status)).toContain(429);
    expect(burst.find((r) => r.status === 200)!.headers.get('ratelimit-limit')).toBe(String(DEFAULT_PLANS.starter.queryTps));
    accounts.setPlan(a.id, 'whale');
    const r = await get(`/v1/status/${sig}?api-key=${a.key}`);
    expect(r.status).toBe(200);
    expect(r.headers.get('ratelimit-limit')).toBe(String(DEFAULT_PLANS.whale.queryTps));
  });

  it('serves many concurrent connections without exceeding the budget', async () => {
    const a = newAccount('whale');
    const sig = record(a.id);
    await store.flushed();
    const t0 = performance.now();
    const results = await Promise.all(Array.from({ length: 600 }, () => get(`/v1/status/${sig}?api-key=${a.key}`)));
    const elapsed = (performance.now() - t0) / 1000;
    const granted = results.filter((r) => r.status === 200).length;
    expect(results.every((r) => r.status === 200 || r.status === 429)).toBe(true);
    expect(granted).toBeGreaterThanOrEqual(DEFAULT_PLANS.whale.queryTps);
    expect(granted).toBeLessThanOrEqual(DEFAULT_PLANS.whale.queryTps + DEFAULT_PLANS.whale.queryTps * elapsed + 1);
  });
});

describe('GET /v1/account', () => {
  it('returns every field of spec 2.5 by api-key, header or api_key; 401 otherwise', async () => {
    const a = newAccount();
    for (const r of [
      await get(`/v1/account?api-key=${a.key}`),
      await get('/v1/account', { authorization: `Bearer ${a.key}` }),
      await get(`/v1/account?api_key=${a.key}`),
    ]) {
      expect(r.status).toBe(200);
      // Spec §2.5's fields, and the additive lamports_per_point (this API's accounts use 1000).
      expect(Object.keys(r.body).sort()).toEqual(['lamports_per_point', 'limits', 'member_since', 'next_tier', 'plan', 'plan_upgraded_at', 'usage']);
      expect(r.body.lamports_per_point).toBe(1000);
      expect(r.body.plan).toBe('starter');
      expect(r.body.limits).toEqual({ max_tps: 8, min_tip_bp: 1000 });
      expect(r.body.member_since).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/);
      expect(Object.keys(r.body.next_tier).sort()).toEqual(['benefits', 'plan', 'progress_percent', 'remaining_bp', 'threshold_bp']);
    }
    expectError(await get('/v1/account'), 401, 'Unauthorized');
    expectError(await get('/v1/account?api-key='), 401, 'Unauthorized');
  });

  it('reports next_tier null on whale', async () => {
    const a = newAccount('whale');
    const r = await get(`/v1/account?api-key=${a.key}`);
    expect(r.body.next_tier).toBeNull();
    expect(r.body.limits).toEqual({ max_tps: 150, min_tip_bp: 250 });
  });
});

describe('robustness', () => {
  it('survives a client that aborts mid-body and keeps serving', async () => {
    const a = newAccount();
    await new Promise<void>((resolve) => {
      const sock = connect(server.port, '127.0.0.1', () => {
        sock.write(`POST /v1/send HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"transaction":"AAAA`);
        setTimeout(() => {
          sock.destroy();
          resolve();
        }, 50);
      });
    });
    const r = await get(`/v1/account?api-key=${a.key}`);
    expect(r.status).toBe(200);
  });
});

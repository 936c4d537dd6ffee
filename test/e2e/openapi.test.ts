/**
 * The OpenAPI 3.1 document (`GET /v1/openapi.json`): it validates as OpenAPI 3.1
 * (@seriousme/openapi-schema-validator), and real responses of the running service — every
 * documented status of every endpoint, the JSON-RPC endpoints, the WebSocket upgrade and its
 * messages — validate against it with Ajv (JSON Schema 2020-12, OpenAPI 3.1's dialect), body
 * and headers. The document's response objects are closed, so an undocumented field fails.
 */
import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { Keypair } from '@solana/web3.js';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Accounts } from '../../src/accounts/accounts.js';
import { DEFAULT_PLANS } from '../../src/accounts/plans.js';
import { RateLimiter } from '../../src/accounts/rate-limiter.js';
import { DEFAULT_CONFIG } from '../../src/config.js';
import { BATCH_BODY_LIMIT, buildApp, SEND_BODY_LIMIT } from '../../src/http/api.js';
import { listen } from '../../src/http/server.js';
import { TipSet } from '../../src/native.js';
import { Store } from '../../src/store/store.js';
import { unreachableDelivery } from '../../harness/guard-delivery.js';
import { account, payer, settled, startStack, tipped, type Stack } from '../../harness/stack.js';
import { tempDir } from '../../harness/tmp.js';
import { legacyTx, makeTipAddresses, transfer, web3Base58 } from '../../harness/transactions.js';

// ajv-formats is CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const DOC_ID = 'https://landfall.invalid/openapi.json';

let s: Stack;
let doc: any;
let ajv: Ajv2020;
const compiled = new Map<string, ValidateFunction>();
/** Every (method, path, status) a real response was validated against. */
const covered = new Set<string>();

beforeAll(async () => {
  s = await startStack({ localnet: { slotMs: 100, seed: 'openapi' } });
  const r = await fetch(`${s.svc.url}/v1/openapi.json`);
  expect(r.status).toBe(200);
  doc = await r.json();
  ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
  addFormats(ajv);
  // The document's top level is not a schema; its schemas are reached by JSON pointer.
  for (const k of ['openapi', 'info', 'servers', 'tags', 'paths', 'components']) ajv.addKeyword(k);
  ajv.addSchema(doc, DOC_ID);
});
afterAll(async () => {
  await s?.close();
});

const escape = (seg: string) => seg.replace(/~/g, '~0').replace(/\//g, '~1');

function validator(at: string[]): ValidateFunction {
  const ref = `${DOC_ID}#/${at.map(escape).join('/')}`;
  let v = compiled.get(ref);
  if (!v) compiled.set(ref, (v = ajv.compile({ $ref: ref })));
  return v;
}

function expectValid(at: string[], value: unknown, what: string): void {
  const v = validator(at);
  if (!v(value)) throw new Error(`${what} does not match ${at.join('/')}: ${ajv.errorsText(v.errors)}\n${JSON.stringify(value).slice(0, 2000)}`);
}

const last = (ref: string) => ref.split('/').pop()!;

/** The response object (following a component $ref) and its JSON-pointer location. */
function documented(path: string, method: string, status: number): { response: any; at: string[] } {
  const op = doc.paths[path]?.[method];
  if (!op) throw new Error(`${method.toUpperCase()} ${path} is not in the document`);
  const res = op.responses[String(status)];
  if (!res) throw new Error(`${method.toUpperCase()} ${path} does not document status ${status}`);
  if (res.$ref) return { response: doc.components.responses[last(res.$ref)], at: ['components', 'responses', last(res.$ref)] };
  return { response: res, at: ['paths', path, method, 'responses', String(status)] };
}

/** Validate headers and body of a response object located at `at`. */
async function conforms(r: Response, response: any, at: string[], what: string): Promise<any> {
  for (const [name, h] of Object.entries<any>(response.headers ?? {})) {
    const header = h.$ref ? doc.components.headers[last(h.$ref)] : h;
    const hAt = h.$ref ? ['components', 'headers', last(h.$ref), 'schema'] : [...at, 'headers', name, 'schema'];
    const value = r.headers.get(name);
    if (header.required) expect(value, `${what}: header ${name}`).not.toBeNull();
    if (value !== null) expectValid(hAt, value, `${what}: header ${name}`);
  }
  const text = await r.text();
  if (!response.content) {
    expect(text, `${what}: no body`).toBe('');
    return null;
  }
  const media = (r.headers.get('content-type') ?? '').split(';')[0]!.trim();
  expect(Object.keys(response.content), `${what}: content type`).toContain(media);
  const body = media === 'application/json' ? JSON.parse(text) : text;
  expectValid([...at, 'content', media, 'schema'], body, `${what}: body`);
  return body;
}

/** Fetch, then validate the real response against the operation `method path` it exercised. */
async function call(path: string, method: 'get' | 'post', url: string, init: RequestInit = {}): Promise<{ status: number; body: any }> {
  const r = await fetch(`${s.svc.url}${url}`, { method: method.toUpperCase(), ...init });
  const { response, at } = documented(path, method, r.status);
  const body = await conforms(r, response, at, `${method.toUpperCase()} ${url} → ${r.status}`);
  covered.add(`${method} ${path} ${r.status}`);
  return { status: r.status, body };
}

/**
 * Until the service's chain view is fresh. The local cluster runs on this test's thread, and the
 * document's schemas compile there too (the first test): on a busy machine its slots stall
 * meanwhile, and a send right after would be refused as stale (500), a health check 503.
 */
async function synced(): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if ((await fetch(`${s.svc.url}/health`)).status === 200) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the chain view did not become fresh within 10 s');
}

const json = (key?: string) => ({ 'content-type': 'application/json', ...(key && { authorization: `Bearer ${key}` }) });
const post = (body: unknown, key?: string): RequestInit => ({ headers: json(key), body: typeof body === 'string' ? body : JSON.stringify(body) });

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document, and every schema in it compiles', async () => {
    const result = await new Validator().validate(structuredClone(doc));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(doc.openapi).toBe('3.1.0');
    for (const name of Object.keys(doc.components.schemas)) validator(['components', 'schemas', name]);
  });

  it('documents every route the server answers', () => {
    expect(Object.keys(doc.paths).sort()).toEqual(
      [
        '/',
        '/api/v1/bundles',
        '/api/v1/transactions',
        '/dashboard',
        '/dashboard/',
        '/dashboard/app.css',
        '/dashboard/app.js',
        '/fast',
        '/health',
        '/metrics',
        '/ping',
        '/v1/account',
        '/v1/analytics',
        '/v1/openapi.json',
        '/v1/rpc',
        '/v1/send',
        '/v1/send/batch',
        '/v1/status/{signature}',
        '/v1/status/{signature}/trace',
        '/v1/stream',
        '/v1/transactions',
        '/v1/tip-addresses',
        '/v1/tip-floor',
      ].sort(),
    );
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['apiKey', 'apiKeyUnderscore', 'bearer', 'jitoAuth', 'jitoUuid', 'metricsToken']);
    expect(doc.components.securitySchemes.jitoUuid).toMatchObject({ type: 'apiKey', in: 'query', name: 'uuid' });
    expect(doc.components.securitySchemes.jitoAuth).toMatchObject({ type: 'apiKey', in: 'header', name: 'x-jito-auth' });
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: 'apiKey', in: 'query', name: 'api-key' });
    expect(doc.components.securitySchemes.apiKeyUnderscore).toMatchObject({ type: 'apiKey', in: 'query', name: 'api_key' });
  });

  it('docs/openapi.json, the copy the repository carries, is exactly what the service serves (npm run docs:openapi writes it)', () => {
    const committed: unknown = JSON.parse(readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8'));
    expect(committed).toEqual(doc);
  });
});

describe('real responses match the document', () => {
  it('REST: every success and error status of send, batch, status, account and tip addresses', async () => {
    await synced();
    const whale = account(s, 'whale');
    const starter = account(s, 'starter');
    const from = await payer(s);
    const good = await tipped(s, from, 1_000_000);

    expect((await call('/v1/send', 'post', '/v1/send', post({ transaction: good.base64, options: { max_retries: 1 } }, whale.key))).status).toBe(200);
    expect((await call('/v1/send', 'post', '/v1/send', post({ transaction: 'AQAB' }, whale.key))).status).toBe(400);
    expect((await call('/v1/send', 'post', '/v1/send', post({ transaction: good.base64 }, 'lf_wrong'))).status).toBe(401);
    const untipped = legacyTx([transfer(from.publicKey, from.publicKey, 1)], { feePayer: from, blockhash: good.recentBlockhash });
    expect((await call('/v1/send', 'post', '/v1/send', post({ transaction: untipped.base64 }, whale.key))).body.error.message).toBe('Tip required');
    const low = await tipped(s, from, 1_000);
    expect((await call('/v1/send', 'post', '/v1/send', post({ transaction: low.base64 }, starter.key))).body.error.message).toBe('Tip insufficient');
    expect((await call('/v1/send', 'post', '/v1/send', post('x'.repeat(SEND_BODY_LIMIT + 1), whale.key))).status).toBe(413);
    expect((await call('/v1/send', 'post', '/v1/send', { headers: { authorization: `Bearer ${whale.key}`, 'content-type': 'text/plain' }, body: '{}' })).status).toBe(415);

    const burst = await Promise.all(Array.from({ length: 10 }, () => tipped(s, from, 1_000_000)));
    const statuses = await Promise.all(burst.map((tx) => call('/v1/send', 'post', '/v1/send', post({ transaction: tx.base64 }, starter.key))));
    expect(statuses.some((r) => r.status === 429)).toBe(true);

    const batch = await call('/v1/send/batch', 'post', '/v1/send/batch', post({ transactions: [(await tipped(s, from, 1_000_000)).base64, 'AQAB', untipped.base64] }, whale.key));
    expect(batch.status).toBe(200);
    expect(batch.body.results.map((r: any) => r.status)).toEqual(['sent', 'failed', 'failed']);
    expect((await call('/v1/send/batch', 'post', '/v1/send/batch', post({ transactions: [] }, whale.key))).status).toBe(400);
    expect((await call('/v1/send/batch', 'post', '/v1/send/batch', post({ transactions: [] }))).status).toBe(401);
    expect((await call('/v1/send/batch', 'post', '/v1/send/batch', post('x'.repeat(BATCH_BODY_LIMIT + 1), whale.key))).status).toBe(413);
    expect((await call('/v1/send/batch', 'post', '/v1/send/batch', { headers: { authorization: `Bearer ${whale.key}` }, body: '{}' })).status).toBe(415);
    const many = burst.map((tx) => tx.base64);
    expect((await call('/v1/send/batch', 'post', '/v1/send/batch', post({ transactions: many }, starter.key))).status).toBe(429);

    const statusPath = '/v1/status/{signature}';
    expect((await call(statusPath, 'get', `/v1/status/${good.signature}`, { headers: json(whale.key) })).body.status).toMatch(/sent|confirmed/);
    await settled(s, whale.key, good.signature);
    const done = await call(statusPath, 'get', `/v1/status/${good.signature}?api_key=${whale.key}`);
    expect(done.body).toMatchObject({ status: 'confirmed', latency_ms: expect.any(Number) });
    expect((await call(statusPath, 'get', `/v1/status/not-a-signature?api-key=${whale.key}`)).status).toBe(400);
    expect((await call(statusPath, 'get', `/v1/status/${good.signature}`)).status).toBe(401);
    expect((await call(statusPath, 'get', `/v1/status/${good.signature}?api-key=${starter.key}`)).status).toBe(404);
    const polls = await Promise.all(Array.from({ length: 30 }, () => call(statusPath, 'get', `/v1/status/${good.signature}?api-key=${starter.key}`)));
    expect(polls.some((r) => r.status === 429)).toBe(true);

    const tracePath = '/v1/status/{signature}/trace';
    const landed = await call(tracePath, 'get', `/v1/status/${good.signature}/trace`, { headers: json(whale.key) });
    expect(landed.body).toMatchObject({ status: 'confirmed', final_state: 'landed', cause: `landed in slot ${done.body.slot}` });
    expect(landed.body.attempts.length).toBeGreaterThan(0);
    expect((await call(tracePath, 'get', `/v1/status/not-a-signature/trace?api-key=${whale.key}`)).status).toBe(400);
    expect((await call(tracePath, 'get', `/v1/status/${good.signature}/trace`)).status).toBe(401);
    // Another account's transaction (a fresh account: the starter's query budget is spent above).
    expect((await call(tracePath, 'get', `/v1/status/${good.signature}/trace?api-key=${account(s, 'growth').key}`)).status).toBe(404);
    const tracePolls = await Promise.all(Array.from({ length: 30 }, () => call(tracePath, 'get', `/v1/status/${good.signature}/trace?api-key=${starter.key}`)));
    expect(tracePolls.some((r) => r.status === 429)).toBe(true);

    // The whale's own transactions: `good` among them; another account's never.
    const txs = await call('/v1/transactions', 'get', `/v1/transactions?limit=10&api-key=${whale.key}`);
    expect(txs.body.transactions.map((t: { signature: string }) => t.signature)).toContain(good.signature);
    expect((await call('/v1/transactions', 'get', `/v1/transactions?api-key=${account(s, 'growth').key}`)).body).toEqual({ transactions: [], next_cursor: null });
    expect((await call('/v1/transactions', 'get', `/v1/transactions?limit=0&api-key=${whale.key}`)).status).toBe(400);
    expect((await call('/v1/transactions', 'get', '/v1/transactions?api-key=lf_wrong')).status).toBe(401);
    const listReads = await Promise.all(Array.from({ length: 30 }, () => call('/v1/transactions', 'get', `/v1/transactions?api-key=${starter.key}`)));
    expect(listReads.some((r) => r.status === 429)).toBe(true);

    expect((await call('/v1/account', 'get', `/v1/account?api-key=${starter.key}`)).body.next_tier).not.toBeNull();
    expect((await call('/v1/account', 'get', `/v1/account?api-key=${whale.key}`)).body.next_tier).toBeNull();
    expect((await call('/v1/account', 'get', '/v1/account?api-key=lf_wrong')).status).toBe(401);
    const reads = await Promise.all(Array.from({ length: 30 }, () => call('/v1/account', 'get', `/v1/account?api-key=${starter.key}`)));
    expect(reads.some((r) => r.status === 429)).toBe(true);

    // Analytics: `good` landed above, so the whale's day counts it. A fresh starter account: the
    // one above has spent its query budget, and the budget refills with time, so whether a token
    // is back by now would depend on the machine's speed.
    const analyst = account(s, 'starter');
    expect((await call('/v1/analytics', 'get', `/v1/analytics?api-key=${whale.key}`)).body.landed).toBeGreaterThanOrEqual(0);
    expect((await call('/v1/analytics', 'get', `/v1/analytics?window=1h&api-key=${analyst.key}`)).body.window).toBe('1h');
    expect((await call('/v1/analytics', 'get', `/v1/analytics?window=2h&api-key=${analyst.key}`)).status).toBe(400);
    expect((await call('/v1/analytics', 'get', '/v1/analytics?api-key=lf_wrong')).status).toBe(401);
    const analyticsReads = await Promise.all(Array.from({ length: 30 }, () => call('/v1/analytics', 'get', `/v1/analytics?api-key=${analyst.key}`)));
    expect(analyticsReads.some((r) => r.status === 429)).toBe(true);

    expect((await call('/v1/tip-addresses', 'get', '/v1/tip-addresses')).body.tip_addresses).toEqual(s.svc.tipAddresses);

    // The tip floor: `good` landed above, so the hour's window counts it (the view is sent to the
    // ingress thread once a second: wait for it, bounded).
    let floor: any;
    for (let i = 0; i < 60 && !(floor?.windows['1h'].landed > 0); i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 100));
      floor = (await call('/v1/tip-floor', 'get', '/v1/tip-floor')).body;
    }
    expect(floor.windows['1h'].lamports.p99).toBeGreaterThanOrEqual(1_000_000);
    expect(floor).not.toHaveProperty('plan_minimum');
    expect((await call('/v1/tip-floor', 'get', `/v1/tip-floor?api-key=${starter.key}`)).body.plan_minimum).toEqual({ plan: 'starter', min_tip_bp: 1000, min_tip_lamports: 1_000_000 });
    expect((await call('/v1/tip-floor', 'get', '/v1/tip-floor', { headers: json('lf_wrong') })).status).toBe(401);
  });

  it('operations: health, ping, metrics, the document itself; 404 and 405 as their components', async () => {
    await synced();
    expect((await call('/health', 'get', '/health')).body.status).toBe('ok');
    expect((await call('/ping', 'get', '/ping')).body).toBe('pong');
    expect((await call('/metrics', 'get', '/metrics')).body).toMatch(/^# HELP /);
    expect((await call('/v1/openapi.json', 'get', '/v1/openapi.json')).body.openapi).toBe('3.1.0');

    const notFound = await fetch(`${s.svc.url}/v2/nothing`);
    expect(notFound.status).toBe(404);
    await conforms(notFound, doc.components.responses.NotFound, ['components', 'responses', 'NotFound'], '404');
    const wrongMethod = await fetch(`${s.svc.url}/v1/send`);
    expect(wrongMethod.status).toBe(405);
    await conforms(wrongMethod, doc.components.responses.MethodNotAllowed, ['components', 'responses', 'MethodNotAllowed'], '405');
  });

  it('the dashboard: GET / and /dashboard redirect to it, its three files are served', async () => {
    for (const path of ['/', '/dashboard']) {
      await call(path, 'get', path, { redirect: 'manual' });
    }
    expect((await call('/dashboard/', 'get', '/dashboard/')).body).toContain('<script type="module" src="app.js">');
    expect((await call('/dashboard/app.js', 'get', '/dashboard/app.js')).body).toContain('/v1/stream');
    expect((await call('/dashboard/app.css', 'get', '/dashboard/app.css')).body).toContain('.card');
  });

  it('JSON-RPC on both paths: results, errors, batches, 204, and the whole-request refusals', async () => {
    const bot = account(s, 'whale');
    const starter = account(s, 'starter');
    const from = await payer(s);
    for (const path of ['/', '/v1/rpc']) {
      const tx = await tipped(s, from, 1_000_000);
      const rpc = (body: unknown, key?: string, init: RequestInit = post(body)) => call(path, 'post', `${path}${key ? `?api-key=${key}` : ''}`, init);
      expect((await rpc({ jsonrpc: '2.0', id: 1, method: 'sendTransaction', params: [web3Base58(tx.bytes), { skipPreflight: true }] }, bot.key)).body.result).toBe(tx.signature);
      expect((await rpc({ jsonrpc: '2.0', id: 2, method: 'getTipAccounts' })).body.result).toEqual(s.svc.tipAddresses);
      const batch = await rpc([{ jsonrpc: '2.0', id: 'a', method: 'getTipAccounts' }, { jsonrpc: '2.0', id: 'b', method: 'nope' }, { jsonrpc: '2.0', id: 'c', method: 'sendTransaction', params: ['AQAB', { encoding: 'base64' }] }], bot.key);
      expect(batch.body.map((x: any) => x.error?.code ?? 0)).toEqual([0, -32601, -32602]);
      expect((await rpc('{', bot.key)).body.error.code).toBe(-32700);
      expect((await rpc({ jsonrpc: '2.0', method: 'getTipAccounts' })).status).toBe(204);

      const poor = await payer(s, 0.05);
      const failing = await tipped(s, poor, 1_000_000, { extra: [transfer(poor.publicKey, Keypair.generate().publicKey, 10n ** 9n)] });
      expect((await rpc({ jsonrpc: '2.0', id: 3, method: 'sendTransaction', params: [failing.base64, { encoding: 'base64' }] }, bot.key)).body.error.code).toBe(-32002);

      expect((await rpc({ jsonrpc: '2.0', id: 4, method: 'sendTransaction', params: [tx.base64, { encoding: 'base64' }] })).status).toBe(401);
      expect((await rpc(null, bot.key, post('x'.repeat(BATCH_BODY_LIMIT + 1)))).status).toBe(413);
      expect((await rpc(null, bot.key, { headers: { 'content-type': 'text/plain' }, body: '{}' })).status).toBe(415);
      const burst = await Promise.all(Array.from({ length: 12 }, () => tipped(s, from, 1_000_000)));
      const sends = await Promise.all(burst.map((b, i) => rpc({ jsonrpc: '2.0', id: i, method: 'sendTransaction', params: [b.base64, { encoding: 'base64', skipPreflight: true }] }, starter.key)));
      expect(sends.some((r) => r.status === 429)).toBe(true);
    }
  });

  it('JSON-RPC on the drop-in paths (Jito, Helius Sender): results, the bundle refusal, 204, and the whole-request refusals', async () => {
    const bot = account(s, 'whale');
    const starter = account(s, 'starter');
    const from = await payer(s);
    for (const path of ['/api/v1/transactions', '/api/v1/bundles', '/fast']) {
      const rpc = (body: unknown, query = '', init: RequestInit = post(body)) => call(path, 'post', `${path}${query}`, init);
      const tx = await tipped(s, from, 1_000_000);
      expect((await rpc({ jsonrpc: '2.0', id: 1, method: 'sendTransaction', params: [tx.base64, { encoding: 'base64' }] }, `?uuid=${bot.key}`)).body.result).toBe(tx.signature);
      const viaHeader = await tipped(s, from, 1_000_000);
      const init = { headers: { ...json(), 'x-jito-auth': bot.key }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'sendTransaction', params: [web3Base58(viaHeader.bytes)] }) };
      expect((await rpc(null, '', init)).body.result).toBe(viaHeader.signature);
      expect((await rpc({ jsonrpc: '2.0', id: 3, method: 'getTipAccounts' })).body.result).toEqual(s.svc.tipAddresses);
      expect((await rpc({ jsonrpc: '2.0', id: 4, method: 'sendBundle', params: [[tx.base64]] }, `?uuid=${bot.key}`)).body.error.code).toBe(-32601);
      expect((await rpc({ jsonrpc: '2.0', method: 'getTipAccounts' })).status).toBe(204);
      expect((await rpc({ jsonrpc: '2.0', id: 5, method: 'sendTransaction', params: [tx.base64, { encoding: 'base64' }] }, '?uuid=lf_wrong')).status).toBe(401);
      expect((await rpc(null, '', post('x'.repeat(BATCH_BODY_LIMIT + 1)))).status).toBe(413);
      expect((await rpc(null, '', { headers: { 'content-type': 'text/plain' }, body: '{}' })).status).toBe(415);
      const burst = await Promise.all(Array.from({ length: 12 }, () => tipped(s, from, 1_000_000)));
      const sends = await Promise.all(burst.map((b, i) => rpc({ jsonrpc: '2.0', id: i, method: 'sendTransaction', params: [b.base64, { encoding: 'base64' }] }, `?uuid=${starter.key}`)));
      expect(sends.some((r) => r.status === 429)).toBe(true);
    }
  });

  it('the WebSocket upgrade is 101 and its messages are the documented ones', async () => {
    const bot = account(s, 'whale');
    const from = await payer(s);
    const ws = new WebSocket(`${s.svc.url.replace('http', 'ws')}/v1/stream?api-key=${bot.key}`);
    const messages: any[] = [];
    ws.on('message', (m) => messages.push(JSON.parse(String(m))));
    const upgrade = await new Promise<{ statusCode?: number; headers: Record<string, string | string[] | undefined> }>((resolve, reject) => {
      ws.once('upgrade', resolve);
      ws.once('error', reject);
    });
    const { response, at } = documented('/v1/stream', 'get', upgrade.statusCode!);
    for (const name of Object.keys(response.headers)) expectValid([...at, 'headers', name, 'schema'], upgrade.headers[name.toLowerCase()], `101 header ${name}`);
    covered.add('get /v1/stream 101');
    // Not upgraded: a plain GET (426), a key that is no handshake key (400).
    expect((await call('/v1/stream', 'get', '/v1/stream')).status).toBe(426);
    expect((await call('/v1/stream', 'get', '/v1/stream', { headers: { 'sec-websocket-key': 'short' } })).status).toBe(400);

    const waitMessage = async (pred: (m: any) => boolean) => {
      for (let i = 0; i < 400 && !messages.some(pred); i++) await new Promise((r) => setTimeout(r, 25));
      return messages.find(pred);
    };
    expectValid(['components', 'schemas', 'StreamReady'], await waitMessage((m) => m.type === 'ready'), 'ready message');
    const tx = await tipped(s, from, 1_000_000);
    const sent = await fetch(`${s.svc.url}/v1/send`, { method: 'POST', ...post({ transaction: tx.base64 }, bot.key) });
    expect(sent.status).toBe(200);
    const pushed = await waitMessage((m) => m.type === 'status' && m.status === 'confirmed');
    expectValid(['components', 'schemas', 'StreamStatus'], pushed, 'status message');
    const { type, tip_lamports, submit_slot, ...record } = pushed;
    expect(type).toBe('status');
    expect(tip_lamports).toBe(1_000_000);
    expect(submit_slot).toBeLessThanOrEqual(record.slot);
    expectValid(['components', 'schemas', 'StatusRecord'], record, 'status message record');
    ws.close();
  });

  it('health 503, metrics 401 and 500 Internal error, on an API with a metrics token whose chain view is down and whose database fails', async () => {
    const tmp = tempDir();
    const store = Store.open(tmp.dir);
    const accounts = new Accounts(store, { plans: DEFAULT_PLANS, lamportsPerPoint: 1000 });
    const app = buildApp({
      config: { ...DEFAULT_CONFIG, dataDir: tmp.dir, metricsToken: 'a-metrics-token-of-the-test' },
      accounts,
      store,
      limiter: new RateLimiter(DEFAULT_PLANS, 60_000),
      tips: new TipSet(makeTipAddresses(2).map((t) => t.toBase58())),
      delivery: unreachableDelivery,
    });
    const server = await listen(app, '127.0.0.1', 0);
    const base = `http://127.0.0.1:${server.port}`;
    try {
      const health = await fetch(`${base}/health`);
      expect(health.status).toBe(503);
      const h = documented('/health', 'get', 503);
      expect((await conforms(health, h.response, h.at, 'health 503')).status).toBe('unsynced');
      covered.add('get /health 503');
      const metrics = await fetch(`${base}/metrics`);
      expect(metrics.status).toBe(401);
      const m = documented('/metrics', 'get', 401);
      await conforms(metrics, m.response, m.at, 'metrics 401');
      covered.add('get /metrics 401');
      // Wrong tokens past the throttle (10 a second): 429, no token read.
      let throttled: Response | null = null;
      for (let i = 0; i < 30 && throttled === null; i++) {
        const r = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer wrong-token-${i}` } });
        if (r.status === 429) throttled = r;
        else await r.arrayBuffer();
      }
      expect(throttled?.status).toBe(429);
      const t = documented('/metrics', 'get', 429);
      await conforms(throttled!, t.response, t.at, 'metrics 429');
      covered.add('get /metrics 429');

      const key = accounts.createAccount('db').api_key;
      await store.root.close();
      const sig = web3Base58(Keypair.generate().secretKey);
      const failed = await fetch(`${base}/v1/status/${sig}?api-key=${key}`);
      expect(failed.status).toBe(500);
      const f = documented('/v1/status/{signature}', 'get', 500);
      await conforms(failed, f.response, f.at, 'status 500');
      covered.add('get /v1/status/{signature} 500');
      const traceFailed = await fetch(`${base}/v1/status/${sig}/trace?api-key=${key}`);
      expect(traceFailed.status).toBe(500);
      const tf = documented('/v1/status/{signature}/trace', 'get', 500);
      await conforms(traceFailed, tf.response, tf.at, 'trace 500');
      covered.add('get /v1/status/{signature}/trace 500');
    } finally {
      server.close();
      tmp.cleanup();
    }
  });

  // Last: it takes every validator down.
  it('500 Delivery failed', async () => {
    const bot = account(s, 'whale');
    const from = await payer(s);
    for (const v of s.net.validators) await s.net.setFault(v.name, { down: true });
    const tx = await tipped(s, from, 1_000_000);
    expect((await call('/v1/send', 'post', '/v1/send', post({ transaction: tx.base64 }, bot.key))).body.error.message).toBe('Delivery failed');
  });

  it('every documented status was exercised by a real response (except those no test can provoke)', () => {
    // An internal error of batch, account or the transaction list needs a fault past authentication
    // that no real dependency produces on demand; the 500 schema they share is exercised by status above.
    const unprovoked = new Set(['post /v1/send/batch 500', 'get /v1/account 500', 'get /v1/transactions 500']);
    const missing: string[] = [];
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        for (const status of Object.keys(op.responses)) {
          const k = `${method} ${path} ${status}`;
          if (!covered.has(k) && !unprovoked.has(k)) missing.push(k);
        }
      }
    }
    expect(missing).toEqual([]);
  });
});

/**
 * Solana JSON-RPC compatibility (`POST /`, `POST /v1/rpc`) on the whole service and the local
 * cluster: `@solana/web3.js` `Connection.sendRawTransaction` pointed at Landfall, unchanged,
 * lands real transactions and sees a failed preflight as it would from an RPC node; the base58
 * path, `getTipAccounts`, batches, notifications, and every JSON-RPC error the endpoint answers.
 */
import { Connection, Keypair, LAMPORTS_PER_SOL, SendTransactionError } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BATCH_BODY_LIMIT } from '../../src/http/api.js';
import { MAX_RPC_BATCH, methodNotOffered, RPC_CODES } from '../../src/http/json-rpc.js';
import { account, payer, settled, startStack, status, tipped, type Stack } from '../../harness/stack.js';
import { legacyTx, transfer, web3Base58 } from '../../harness/transactions.js';

let s: Stack;
let bot: { id: string; key: string };
let from: Keypair;

beforeAll(async () => {
  s = await startStack({ localnet: { slotMs: 100, seed: 'json-rpc' } });
  bot = account(s);
  from = await payer(s);
});
afterAll(async () => {
  await s?.close();
});

interface RpcCall {
  status: number;
  headers: Headers;
  body: any;
}

/** POST a JSON-RPC body (object, array or raw text) to `path` with `query` and `headers`. */
async function rpc(body: unknown, opts: { path?: string; query?: string; headers?: Record<string, string> } = {}): Promise<RpcCall> {
  const r = await fetch(`${s.svc.url}${opts.path ?? '/'}${opts.query ?? ''}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...opts.headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, headers: r.headers, body: text === '' ? null : JSON.parse(text) };
}

const withKey = (key = bot.key) => ({ query: `?api-key=${key}` });
const sendCall = (id: unknown, params: unknown) => ({ jsonrpc: '2.0', id, method: 'sendTransaction', params });

function expectRpcError(r: RpcCall, httpStatus: number, code: number, id: unknown = null): any {
  expect(r.status).toBe(httpStatus);
  expect(r.body.jsonrpc).toBe('2.0');
  expect(r.body.id).toEqual(id);
  expect(r.body).not.toHaveProperty('result');
  expect(r.body.error.code).toBe(code);
  expect(typeof r.body.error.message).toBe('string');
  return r.body.error;
}

describe('web3.js Connection pointed at Landfall', () => {
  it('sendRawTransaction with skipPreflight returns the signature, and the transaction lands', async () => {
    const connection = new Connection(`${s.svc.url}/?api-key=${bot.key}`, 'confirmed');
    const tx = await tipped(s, from, 300_000);
    const signature = await connection.sendRawTransaction(tx.bytes, { skipPreflight: true, maxRetries: 2 });
    expect(signature).toBe(tx.signature);
    expect((await settled(s, bot.key, signature)).status).toBe('confirmed');
    // The chain agrees: it landed, without error.
    const { value } = await s.connection.getSignatureStatus(signature, { searchTransactionHistory: true });
    expect(value?.err).toBeNull();
  });

  it('with preflight on (web3.js default), a good transaction is simulated, sent and lands; the key may be a Bearer header', async () => {
    const connection = new Connection(`${s.svc.url}/v1/rpc`, { commitment: 'confirmed', httpHeaders: { authorization: `Bearer ${bot.key}` } });
    const tx = await tipped(s, from, 300_000);
    expect(await connection.sendRawTransaction(tx.bytes)).toBe(tx.signature);
    expect((await settled(s, bot.key, tx.signature)).status).toBe('confirmed');
  });

  it('a failing transaction with preflight on throws SendTransactionError with the simulation message and logs', async () => {
    const connection = new Connection(`${s.svc.url}/?api-key=${bot.key}`, 'confirmed');
    const poor = await payer(s, 0.05);
    const failing = await tipped(s, poor, 300_000, { extra: [transfer(poor.publicKey, Keypair.generate().publicKey, LAMPORTS_PER_SOL)] });
    const err = await connection.sendRawTransaction(failing.bytes).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SendTransactionError);
    const e = err as SendTransactionError;
    // Agave's words, as web3.js relays them from a node: instruction 0 is the 1 SOL transfer.
    expect(e.transactionError.message).toBe('Transaction simulation failed: Error processing Instruction 0: custom program error: 0x1');
    expect(e.message).toContain('Transaction simulation failed: Error processing Instruction 0: custom program error: 0x1');
    expect(e.logs?.some((l) => /insufficient lamports/.test(l))).toBe(true);
    // Refused before delivery: nothing recorded, nothing reached a validator.
    expect((await status(s, bot.key, failing.signature)).status).toBe(404);
    expect(s.net.receivedBy(failing.signature)).toHaveLength(0);
  });

  it('the raw -32002 error carries the simulation result as data, as Agave sends it', async () => {
    const poor = await payer(s, 0.05);
    const failing = await tipped(s, poor, 300_000, { extra: [transfer(poor.publicKey, Keypair.generate().publicKey, LAMPORTS_PER_SOL)] });
    const r = await rpc(sendCall(7, [failing.base64, { encoding: 'base64' }]), withKey());
    const error = expectRpcError(r, 200, RPC_CODES.preflightFailure, 7);
    expect(error.message).toBe('Transaction simulation failed: Error processing Instruction 0: custom program error: 0x1');
    expect(error.data.err).toEqual({ InstructionError: [0, { Custom: 1 }] });
    expect(Array.isArray(error.data.logs)).toBe(true);
  });
});

describe('sendTransaction and getTipAccounts over raw HTTP', () => {
  it('base58 is the default encoding, as on a Solana RPC node', async () => {
    const tx = await tipped(s, from, 300_000);
    const r = await rpc(sendCall(1, [web3Base58(tx.bytes), { skipPreflight: true }]), withKey());
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ jsonrpc: '2.0', result: tx.signature, id: 1 });
    expect((await settled(s, bot.key, tx.signature)).status).toBe('confirmed');
  });

  it('getTipAccounts lists the tip addresses, with no key, on both paths', async () => {
    for (const path of ['/', '/v1/rpc']) {
      const r = await rpc({ jsonrpc: '2.0', id: 'tips', method: 'getTipAccounts', params: [] }, { path });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ jsonrpc: '2.0', result: s.svc.tipAddresses, id: 'tips' });
    }
    // params may also be omitted, as block-engine clients do.
    expect((await rpc({ jsonrpc: '2.0', id: 2, method: 'getTipAccounts' })).body.result).toEqual(s.svc.tipAddresses);
  });

  it('a batch answers each call by id, skips notifications, and reports a bad item alone', async () => {
    const tx = await tipped(s, from, 300_000);
    const r = await rpc(
      [
        { jsonrpc: '2.0', id: 1, method: 'getTipAccounts' },
        sendCall('send', [tx.base64, { encoding: 'base64', skipPreflight: true }]),
        { jsonrpc: '2.0', id: 3, method: 'getBalance', params: [from.publicKey.toBase58()] },
        { jsonrpc: '2.0', method: 'getTipAccounts' }, // a notification: no answer
        42,
      ],
      withKey(),
    );
    expect(r.status).toBe(200);
    expect(r.body).toHaveLength(4);
    expect(r.body[0]).toEqual({ jsonrpc: '2.0', result: s.svc.tipAddresses, id: 1 });
    expect(r.body[1]).toEqual({ jsonrpc: '2.0', result: tx.signature, id: 'send' });
    expect(r.body[2]).toEqual({ jsonrpc: '2.0', error: { code: RPC_CODES.methodNotFound, message: methodNotOffered('getBalance') }, id: 3 });
    expect(r.body[3]).toEqual({ jsonrpc: '2.0', error: { code: RPC_CODES.invalidRequest, message: 'Invalid request' }, id: null });
    expect((await settled(s, bot.key, tx.signature)).status).toBe('confirmed');
  });

  it('a request of notifications only is answered with 204 and no body', async () => {
    const r = await rpc([{ jsonrpc: '2.0', method: 'getTipAccounts' }]);
    expect(r.status).toBe(204);
    expect(r.body).toBeNull();
    expect((await rpc({ jsonrpc: '2.0', method: 'getTipAccounts' })).status).toBe(204);
  });
});

describe('JSON-RPC errors', () => {
  it('-32700 parse error, with id null', async () => {
    expectRpcError(await rpc('{"jsonrpc":"2.0",', withKey()), 200, RPC_CODES.parseError);
  });

  it('-32600 invalid request: not an object, wrong version, no method, a bad id, bad params, an empty or oversized batch', async () => {
    for (const body of [
      '"sendTransaction"',
      { jsonrpc: '1.0', id: 1, method: 'getTipAccounts' },
      { id: 1, method: 'getTipAccounts' },
      { jsonrpc: '2.0', id: 1 },
      { jsonrpc: '2.0', id: { nested: true }, method: 'getTipAccounts' },
      { jsonrpc: '2.0', id: 1, method: 'getTipAccounts', params: 'none' },
      [],
      Array.from({ length: MAX_RPC_BATCH + 1 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'getTipAccounts' })),
    ]) {
      expectRpcError(await rpc(body), 200, RPC_CODES.invalidRequest);
    }
  });

  it('-32601 method not found, with the id echoed, naming what is offered and where to ask instead', async () => {
    const e = expectRpcError(await rpc({ jsonrpc: '2.0', id: 'x', method: 'getAccountInfo', params: [] }, withKey()), 200, RPC_CODES.methodNotFound, 'x');
    expect(e.message).toBe(
      'Method not found: Landfall answers sendTransaction, getLatestBlockhash, getSignatureStatuses, getBlockHeight, getEpochInfo, getSlot, getTipAccounts (and signatureSubscribe, slotSubscribe on its WebSocket); ask an RPC node for getAccountInfo',
    );
  });

  it('-32602 invalid params: shape, encoding, options, base58, the transaction itself', async () => {
    const tx = await tipped(s, from, 300_000);
    const cases: Array<[unknown, RegExp]> = [
      [undefined, /expected \[transaction, config\?\]/],
      [[], /expected \[transaction, config\?\]/],
      [[123], /must be a string/],
      [[tx.base64, 'base64'], /config must be an object/],
      [[tx.base64, { encoding: 'base32' }], /unsupported encoding: base32/],
      [[tx.base64, { encoding: 'base64', skipPreflight: 'yes' }], /skipPreflight must be a boolean/],
      [[tx.base64, { encoding: 'base64', maxRetries: -1 }], /maxRetries must be a non-negative integer/],
      [['0OIl'], /invalid base58/],
      [['1'.repeat(1684)], /base58 encoded transaction too large: 1684 bytes/],
      [['AQAB', { encoding: 'base64' }], /^Invalid transaction: /],
    ];
    for (const [params, message] of cases) {
      const e = expectRpcError(await rpc(sendCall(9, params), withKey()), 200, RPC_CODES.invalidParams, 9);
      expect(e.message).toMatch(message);
    }
    const e = expectRpcError(await rpc({ jsonrpc: '2.0', id: 1, method: 'getTipAccounts', params: [1] }), 200, RPC_CODES.invalidParams, 1);
    expect(e.message).toMatch(/takes none/);
    // An invalid transaction carries the REST refusal as data.
    const bad = expectRpcError(await rpc(sendCall(2, ['AQAB', { encoding: 'base64' }]), withKey()), 200, RPC_CODES.invalidParams, 2);
    expect(bad.data).toMatchObject({ status: 400, message: 'Invalid transaction' });
  });

  it('-32003 for a bad signature, as Agave reports signature verification failure', async () => {
    const tx = await tipped(s, from, 300_000);
    const forged = Buffer.from(tx.bytes);
    forged[1 + 10]! ^= 0xff; // inside the first signature
    const e = expectRpcError(await rpc(sendCall(3, [forged.toString('base64'), { encoding: 'base64', skipPreflight: true }]), withKey()), 200, RPC_CODES.signatureVerificationFailure, 3);
    expect(e.message).toBe('Transaction signature verification failure');
    expect(e.data).toMatchObject({ status: 400, message: 'Invalid transaction', reason: expect.stringMatching(/^SIGNATURE_INVALID/) });
  });

  it('-32050 with HTTP 401 for a missing, malformed or revoked key; in a batch the call fails alone', async () => {
    const tx = await tipped(s, from, 300_000);
    const call = sendCall(4, [tx.base64, { encoding: 'base64' }]);
    for (const opts of [{}, withKey('lf_not-a-key'), { headers: { authorization: 'Basic abc' } }]) {
      const e = expectRpcError(await rpc(call, opts), 401, RPC_CODES.unauthorized, 4);
      expect(e.message).toMatch(/^Unauthorized: /);
      expect(e.data).toMatchObject({ status: 401, message: 'Unauthorized' });
    }
    const r = await rpc([call, { jsonrpc: '2.0', id: 5, method: 'getTipAccounts' }]);
    expect(r.status).toBe(200);
    expect(r.body[0].error.code).toBe(RPC_CODES.unauthorized);
    expect(r.body[1].result).toEqual(s.svc.tipAddresses);
  });

  it('-32051 tip required and -32052 tip insufficient, with the REST refusal as data', async () => {
    const untipped = legacyTx([transfer(from.publicKey, from.publicKey, 1)], { feePayer: from, blockhash: (await s.connection.getLatestBlockhash()).blockhash });
    const required = expectRpcError(await rpc(sendCall(1, [untipped.base64, { encoding: 'base64' }]), withKey()), 200, RPC_CODES.tipRequired, 1);
    expect(required.data).toMatchObject({ status: 402, message: 'Tip required' });
    const starter = account(s, 'starter');
    const low = await tipped(s, from, 1_000); // 1 BP, below the starter minimum of 1000 BP
    const insufficient = expectRpcError(await rpc(sendCall(2, [low.base64, { encoding: 'base64' }]), withKey(starter.key)), 200, RPC_CODES.tipInsufficient, 2);
    expect(insufficient.message).toMatch(/^Tip insufficient: tip of 1000 lamports \(1 BP\)/);
    expect(insufficient.data).toMatchObject({ status: 402, message: 'Tip insufficient' });
  });

  it('-32053 with HTTP 429 and Retry-After past the send budget; per call inside a batch; web3.js sees the 429', async () => {
    const starter = account(s, 'starter'); // 8 sends per second, a burst of 8
    const txs = await Promise.all(Array.from({ length: 32 }, () => tipped(s, from, 1_000_000)));
    const singles = await Promise.all(txs.slice(0, 12).map((tx, i) => rpc(sendCall(i, [tx.base64, { encoding: 'base64', skipPreflight: true }]), withKey(starter.key))));
    const limited = singles.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    for (const r of limited) {
      const e = expectRpcError(r, 429, RPC_CODES.rateLimited, r.body.id);
      expect(e.data).toMatchObject({ status: 429, message: 'Rate limit exceeded' });
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(r.headers.get('ratelimit-limit')).toBe('8');
    }
    for (const r of singles.filter((x) => x.status !== 429)) expect(r.body.result).toEqual(expect.any(String));

    // 20 in one batch, each taking its own token: far more than a second of refill since.
    const batch = await rpc(txs.slice(12).map((tx, i) => sendCall(i, [tx.base64, { encoding: 'base64', skipPreflight: true }])), withKey(starter.key));
    expect(batch.status).toBe(200);
    expect(batch.body.some((x: any) => x.error?.code === RPC_CODES.rateLimited)).toBe(true);

    const connection = new Connection(`${s.svc.url}/?api-key=${starter.key}`, { disableRetryOnRateLimit: true });
    const more = await Promise.all(Array.from({ length: 12 }, () => tipped(s, from, 1_000_000)));
    const outcomes = await Promise.allSettled(more.map((tx) => connection.sendRawTransaction(tx.bytes, { skipPreflight: true })));
    const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    expect(refused.length).toBeGreaterThan(0);
    for (const o of refused) expect(String(o.reason)).toMatch(/429/);
  });

  it('415 and 413 are refused as a whole request, as JSON-RPC errors with id null', async () => {
    const e415 = await fetch(`${s.svc.url}/`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' });
    expect(e415.status).toBe(415);
    expect(((await e415.json()) as any).error.code).toBe(RPC_CODES.invalidRequest);
    const big = await rpc('x'.repeat(BATCH_BODY_LIMIT + 1));
    expectRpcError(big, 413, RPC_CODES.invalidRequest);
    expect(big.body.error.data).toMatchObject({ status: 413, message: 'Payload too large' });
  });

  it('GET / leads a browser to the dashboard; another method is 405 with Allow naming GET and POST', async () => {
    const r = await fetch(`${s.svc.url}/`, { redirect: 'manual' });
    expect(r.status).toBe(302);
    expect(r.headers.get('location')).toBe('/dashboard/');
    const put = await fetch(`${s.svc.url}/`, { method: 'PUT' });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')?.split(', ').sort()).toEqual(['GET', 'POST']);
  });

  // Last: it takes every validator down.
  it('-32054 delivery failed when the first send reaches no leader', async () => {
    for (const v of s.net.validators) await s.net.setFault(v.name, { down: true });
    const tx = await tipped(s, from, 300_000);
    const e = expectRpcError(await rpc(sendCall(6, [tx.base64, { encoding: 'base64', skipPreflight: true }]), withKey()), 200, RPC_CODES.deliveryFailed, 6);
    expect(e.message).toMatch(/^Delivery failed: no leader accepted/);
    expect(e.data).toMatchObject({ status: 500, message: 'Delivery failed' });
  });
});

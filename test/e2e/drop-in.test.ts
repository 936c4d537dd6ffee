/**
 * Drop-in paths for the clients bots already run (issue 14): Jito's own SDK (`jito-js-rpc`,
 * `new JitoJsonRpcClient(base + '/api/v1', uuid)`) and `@solana/kit`'s RPC client, unmodified,
 * pointed at Landfall's `/api/v1/transactions`, `/api/v1/bundles` and `/fast` (Helius Sender),
 * with the key where those clients put it (`uuid`, `x-jito-auth`, `api-key`). Every transaction
 * lands on the local cluster; the bundle methods answer a clear JSON-RPC error; the keys never
 * reach the request log. The service runs with one ingress thread, so the routes are served by
 * a worker's app, as in production.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createSolanaRpc, type Base64EncodedWireTransaction } from '@solana/kit';
import { Keypair, LAMPORTS_PER_SOL } from '@solana/web3.js';
import { JitoJsonRpcClient } from 'jito-js-rpc';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RPC_CODES } from '../../src/http/json-rpc.js';
import { account, payer, settled, startStack, tipped, type Stack } from '../../harness/stack.js';
import { tempDir } from '../../harness/tmp.js';
import { transfer, web3Base58 } from '../../harness/transactions.js';

let s: Stack;
let bot: { id: string; key: string };
let from: Keypair;
let logDir: ReturnType<typeof tempDir>;
let logFile: string;

beforeAll(async () => {
  logDir = tempDir();
  logFile = join(logDir.dir, 'landfall.log');
  s = await startStack({ localnet: { slotMs: 100, seed: 'drop-in' }, config: { ingressThreads: 1, logLevel: 'info', logFile, logSuccesses: 'every' } });
  bot = account(s);
  from = await payer(s);
});
afterAll(async () => {
  await s?.close();
  logDir?.cleanup();
});

/** The transaction reached the chain and executed (the service saw it confirmed, and the chain agrees). */
async function expectLanded(signature: string): Promise<void> {
  expect((await settled(s, bot.key, signature)).status).toBe('confirmed');
  const { value } = await s.connection.getSignatureStatus(signature, { searchTransactionHistory: true });
  expect(value?.err).toBeNull();
}

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  const r = await fetch(`${s.svc.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: r.status, body: (await r.json()) as any };
}

describe("Jito's jito-js-rpc client on /api/v1", () => {
  const jito = () => new JitoJsonRpcClient(`${s.svc.url}/api/v1`, bot.key);

  it('getTipAccounts answers the tip addresses, and getRandomTipAccount picks one of them', async () => {
    const r = await jito().getTipAccounts();
    expect(r.result).toEqual(s.svc.tipAddresses);
    expect(s.svc.tipAddresses).toContain(await jito().getRandomTipAccount());
  });

  it('sendTxn with base64 returns the signature (uuid in the query), and the transaction lands', async () => {
    const tx = await tipped(s, from, 300_000);
    const r = await jito().sendTxn([tx.base64, { encoding: 'base64' }]);
    expect(r).toEqual({ jsonrpc: '2.0', id: 1, result: tx.signature });
    await expectLanded(tx.signature);
  });

  it('sendTxn with base58 (the default encoding, no config) lands too', async () => {
    const tx = await tipped(s, from, 300_000);
    expect((await jito().sendTxn([web3Base58(tx.bytes)])).result).toBe(tx.signature);
    await expectLanded(tx.signature);
  });

  it('the bundle methods answer a JSON-RPC error saying bundles are not offered, never a 404', async () => {
    const tx = await tipped(s, from, 300_000);
    const answers = [
      await jito().sendBundle([[tx.base64], { encoding: 'base64' }]),
      await jito().getBundleStatuses([['0'.repeat(64)]]),
      await jito().getInFlightBundleStatuses([['0'.repeat(64)]]),
    ];
    for (const [i, method] of ['sendBundle', 'getBundleStatuses', 'getInflightBundleStatuses'].entries()) {
      expect(answers[i]!.error!.code).toBe(RPC_CODES.methodNotFound);
      expect(answers[i]!.error!.message).toBe(`${method} is not offered: Landfall delivers single transactions, not bundles; send each transaction with sendTransaction`);
    }
    // Nothing was sent: the bundle's transaction is unknown to the service.
    const r = await fetch(`${s.svc.url}/v1/status/${tx.signature}?api-key=${bot.key}`);
    expect(r.status).toBe(404);
  });

  it('bundleOnly=true is refused (a bundle-only send cannot be honoured), and nothing is sent', async () => {
    const tx = await tipped(s, from, 300_000);
    const r = await jito().sendTxn([tx.base64, { encoding: 'base64' }], true);
    expect(r.error!.code).toBe(RPC_CODES.invalidParams);
    expect(r.error!.message).toMatch(/^bundleOnly is not offered/);
    expect((await fetch(`${s.svc.url}/v1/status/${tx.signature}?api-key=${bot.key}`)).status).toBe(404);
  });

  it('a wrong uuid is HTTP 401 with error -32050 (axios throws, as it does for Jito), and nothing is sent', async () => {
    const tx = await tipped(s, from, 300_000);
    const err = await new JitoJsonRpcClient(`${s.svc.url}/api/v1`, 'lf_notakey').sendTxn([tx.base64, { encoding: 'base64' }]).catch((e: any) => e);
    expect(err.response.status).toBe(401);
    expect(err.response.data.error.code).toBe(RPC_CODES.unauthorized);
    // No key at all: the reason names every place a key is read from.
    const bare = await new JitoJsonRpcClient(`${s.svc.url}/api/v1`).sendTxn([tx.base64, { encoding: 'base64' }]).catch((e: any) => e);
    expect(bare.response.status).toBe(401);
    expect(bare.response.data.error.message).toMatch(/x-jito-auth header, or the uuid or api-key query parameter/);
    expect((await fetch(`${s.svc.url}/v1/status/${tx.signature}?api-key=${bot.key}`)).status).toBe(404);
  });
});

describe("@solana/kit's RPC client on the drop-in paths", () => {
  const kitSend = (url: string, base64: string, headers?: { 'x-jito-auth': string }, config: { skipPreflight?: boolean } = {}) =>
    createSolanaRpc(url, headers ? { headers } : undefined)
      .sendTransaction(base64 as Base64EncodedWireTransaction, { encoding: 'base64', ...config })
      .send();

  it('/api/v1/transactions with the key in x-jito-auth: the transaction lands', async () => {
    const tx = await tipped(s, from, 300_000);
    expect(await kitSend(`${s.svc.url}/api/v1/transactions`, tx.base64, { 'x-jito-auth': bot.key })).toBe(tx.signature);
    await expectLanded(tx.signature);
  });

  it('/api/v1/transactions?uuid=<key>: the transaction lands', async () => {
    const tx = await tipped(s, from, 300_000);
    expect(await kitSend(`${s.svc.url}/api/v1/transactions?uuid=${bot.key}`, tx.base64)).toBe(tx.signature);
    await expectLanded(tx.signature);
  });

  it('/fast (Helius Sender) with api-key, skipPreflight true as Sender requires: the transaction lands', async () => {
    const tx = await tipped(s, from, 300_000);
    expect(await kitSend(`${s.svc.url}/fast?api-key=${bot.key}`, tx.base64, undefined, { skipPreflight: true })).toBe(tx.signature);
    await expectLanded(tx.signature);
  });

  it('/fast with preflight asked for explicitly: simulated, sent, and it lands', async () => {
    const tx = await tipped(s, from, 300_000);
    expect(await kitSend(`${s.svc.url}/fast`, tx.base64, { 'x-jito-auth': bot.key }, { skipPreflight: false })).toBe(tx.signature);
    await expectLanded(tx.signature);
  });

  it('/api/v1/bundles serves sendTransaction too (one JSON-RPC endpoint under three paths)', async () => {
    const tx = await tipped(s, from, 300_000);
    expect(await kitSend(`${s.svc.url}/api/v1/bundles?uuid=${bot.key}`, tx.base64)).toBe(tx.signature);
    await expectLanded(tx.signature);
  });
});

describe('Helius Sender layout and the edges of the drop-in paths', () => {
  it('GET /ping answers pong', async () => {
    const r = await fetch(`${s.svc.url}/ping`);
    expect(r.status).toBe(200);
    expect(await r.text()).toBe('pong');
  });

  it('the drop-in paths default to skipPreflight (Jito, Sender): a transaction that fails on chain is sent, and lands as failed', async () => {
    const poor = await payer(s, 0.05);
    const failing = await tipped(s, poor, 300_000, { extra: [transfer(poor.publicKey, Keypair.generate().publicKey, LAMPORTS_PER_SOL)] });
    const r = await post('/fast', { jsonrpc: '2.0', id: 7, method: 'sendTransaction', params: [failing.base64, { encoding: 'base64' }] }, { 'x-jito-auth': bot.key });
    expect(r).toEqual({ status: 200, body: { jsonrpc: '2.0', id: 7, result: failing.signature } });
    expect((await settled(s, bot.key, failing.signature)).status).toBe('failed');
    // On `/`, a node's default (preflight on) refuses the same kind of transaction before sending it.
    const again = await tipped(s, poor, 300_000, { extra: [transfer(poor.publicKey, Keypair.generate().publicKey, LAMPORTS_PER_SOL)] });
    const node = await post(`/?api-key=${bot.key}`, { jsonrpc: '2.0', id: 8, method: 'sendTransaction', params: [again.base64, { encoding: 'base64' }] });
    expect(node.body.error.code).toBe(RPC_CODES.preflightFailure);
  });

  it('a wrong method on a drop-in path is 405 with Allow: POST, not a 404', async () => {
    for (const path of ['/api/v1/transactions', '/api/v1/bundles', '/fast']) {
      const r = await fetch(`${s.svc.url}${path}`);
      expect(r.status).toBe(405);
      expect(r.headers.get('allow')).toBe('POST');
    }
  });

  it('x-jito-auth and uuid are only read on the drop-in paths: /v1/rpc refuses them (401)', async () => {
    const tx = await tipped(s, from, 300_000);
    const call = { jsonrpc: '2.0', id: 1, method: 'sendTransaction', params: [tx.base64, { encoding: 'base64', skipPreflight: true }] };
    expect((await post('/v1/rpc', call, { 'x-jito-auth': bot.key })).status).toBe(401);
    expect((await post(`/v1/rpc?uuid=${bot.key}`, call)).status).toBe(401);
  });

  it('no key given on a drop-in path (uuid, x-jito-auth, a Jito UUID) reaches the request log', async () => {
    const jitoUuid = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
    await post(`/api/v1/transactions?uuid=${jitoUuid}`, { jsonrpc: '2.0', id: 1, method: 'sendTransaction', params: ['AQAB', { encoding: 'base64' }] });
    await post('/api/v1/transactions', { jsonrpc: '2.0', id: 1, method: 'sendTransaction', params: ['AQAB', { encoding: 'base64' }] }, { 'x-jito-auth': `${jitoUuid}-h` });
    const tx = await tipped(s, from, 300_000);
    await post(`/api/v1/transactions?uuid=${bot.key}`, { jsonrpc: '2.0', id: 1, method: 'sendTransaction', params: [tx.base64, { encoding: 'base64' }] });
    await post('/fast', { jsonrpc: '2.0', id: 1, method: 'getTipAccounts' }, { 'x-jito-auth': bot.key });
    // The log is written asynchronously (batched, flushed at least every 200 ms): wait until the
    // last request's line is in, bounded.
    let log = '';
    for (let i = 0; i < 100 && !log.includes(tx.signature); i++) {
      await new Promise((r) => setTimeout(r, 50));
      log = readFileSync(logFile, 'utf8');
    }
    const lines = log.trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.filter((l) => l.route === '/api/v1/transactions').length).toBeGreaterThanOrEqual(3);
    expect(log).not.toContain(jitoUuid);
    expect(log).not.toContain(bot.key.slice(3));
  });
});

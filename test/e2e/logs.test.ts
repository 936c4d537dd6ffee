/**
 * Structured logs of the running service: pino JSON lines written to a file (`logFile`), one
 * per request, whose request id is the one echoed in the response's `x-request-id`, and which
 * never contain an API key or a transaction, whatever path the key and the transaction took
 * (header, query string, JSON-RPC, a refusal, a body that is not even JSON).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Keypair, LAMPORTS_PER_SOL } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/localnet.js';
import { account, payer, settled, startStack, tipped, type Stack } from '../helpers/stack.js';
import { tempDir } from '../helpers/tmp.js';
import { transfer, web3Base58 } from '../helpers/transactions.js';

let s: Stack;
let logDir: ReturnType<typeof tempDir>;
let logFile: string;

beforeAll(async () => {
  logDir = tempDir();
  logFile = join(logDir.dir, 'logs', 'landfall.log'); // the directory is created by the logger
  s = await startStack({ localnet: { slotMs: 100, seed: 'logs' }, config: { logLevel: 'info', logFile } });
});
afterAll(async () => {
  await s?.close();
  logDir?.cleanup();
});

interface Sent {
  requestId: string;
  status: number;
}

async function request(path: string, init: RequestInit): Promise<Sent> {
  const r = await fetch(`${s.svc.url}${path}`, init);
  await r.arrayBuffer();
  return { requestId: r.headers.get('x-request-id')!, status: r.status };
}

const json = (key?: string, extra: Record<string, string> = {}) => ({
  'content-type': 'application/json',
  ...(key && { authorization: `Bearer ${key}` }),
  ...extra,
});

function lines(): any[] {
  return readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l));
}

describe('request logs', () => {
  it('one JSON line per request, with the echoed request id, and never a key or a transaction', async () => {
    const bot = account(s);
    const starter = account(s, 'starter');
    const from = await payer(s);
    const good = await tipped(s, from, 300_000);
    const viaRpc = await tipped(s, from, 300_000);
    const lowTip = await tipped(s, from, 1_000);
    const poor = await payer(s, 0.05);
    const failing = await tipped(s, poor, 300_000, { extra: [transfer(poor.publicKey, Keypair.generate().publicKey, LAMPORTS_PER_SOL)] });
    const secrets = [bot.key, starter.key];
    const transactions = [good, viaRpc, lowTip, failing].flatMap((t) => [t.base64, web3Base58(t.bytes)]);

    const sent: Array<Sent & { what: string }> = [];
    const track = async (what: string, p: Promise<Sent>) => sent.push({ what, ...(await p) });
    // A caller's id is kept; a bad one (too long) is replaced.
    await track('send', request('/v1/send', { method: 'POST', headers: json(bot.key, { 'x-request-id': 'bot-trace-0001' }), body: JSON.stringify({ transaction: good.base64 }) }));
    await track('long id', request('/v1/tip-addresses', { headers: { 'x-request-id': 'x'.repeat(200) } }));
    await track('bad key', request('/v1/send', { method: 'POST', headers: json('lf_wrong'), body: JSON.stringify({ transaction: good.base64 }) }));
    await track('low tip', request('/v1/send', { method: 'POST', headers: json(starter.key), body: JSON.stringify({ transaction: lowTip.base64 }) }));
    await track('preflight', request('/v1/send', { method: 'POST', headers: json(bot.key), body: JSON.stringify({ transaction: failing.base64, options: { skip_preflight: false } }) }));
    await track('not json', request('/v1/send', { method: 'POST', headers: json(bot.key), body: `{"transaction":"${good.base64}"` }));
    await track('status by query key', request(`/v1/status/${good.signature}?api-key=${bot.key}`, {}));
    await track('account by query key', request(`/v1/account?api_key=${starter.key}`, {}));
    await track(
      'json-rpc',
      request(`/?api-key=${bot.key}`, { method: 'POST', headers: json(), body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'sendTransaction', params: [web3Base58(viaRpc.bytes)] }) }),
    );
    await track(
      'json-rpc refused',
      request(`/v1/rpc?api-key=${starter.key}`, { method: 'POST', headers: json(), body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'sendTransaction', params: [lowTip.base64, { encoding: 'base64' }] }) }),
    );
    await track('ping', request('/ping', {}));
    await track('unknown', request('/nope', {}));
    expect(sent.map((x) => [x.what, x.status])).toEqual([
      ['send', 200],
      ['long id', 200],
      ['bad key', 401],
      ['low tip', 402],
      ['preflight', 400],
      ['not json', 400],
      ['status by query key', 200],
      ['account by query key', 200],
      ['json-rpc', 200],
      ['json-rpc refused', 200],
      ['ping', 200],
      ['unknown', 404],
    ]);
    await settled(s, bot.key, good.signature);

    // Every request but the keep-alive ping (debug) gets exactly one info line with its id.
    const logged = await waitFor('the request lines', () => {
      const all = lines().filter((l) => l.msg === 'request');
      return sent.filter((x) => x.what !== 'ping').every((x) => all.some((l) => l.req === x.requestId)) ? all : undefined;
    });
    const byWhat = new Map(sent.map((x) => [x.what, logged.filter((l) => l.req === x.requestId)]));
    for (const [what, ls] of byWhat) expect(ls, what).toHaveLength(what === 'ping' ? 0 : 1);
    const line = (what: string) => byWhat.get(what)![0];

    expect(sent[0]!.requestId).toBe('bot-trace-0001');
    // Not the caller's 200-character id: one made by the thread that served it (prefix-thread-counter).
    expect(sent[1]!.requestId).toMatch(/^[0-9a-f]{8}-\d+-[0-9a-z]+$/);
    expect(line('send')).toMatchObject({ level: 'info', method: 'POST', route: '/v1/send', path: '/v1/send', status: 200, account: bot.id, sig: good.signature });
    expect(line('send').us).toBeGreaterThan(0);
    expect(typeof line('send').time).toBe('number');
    expect(line('bad key')).toMatchObject({ status: 401, reason: 'invalid or revoked API key' });
    expect(line('bad key')).not.toHaveProperty('account');
    expect(line('low tip')).toMatchObject({ status: 402, account: starter.id, sig: lowTip.signature, reason: expect.stringMatching(/below the starter minimum/) });
    expect(line('preflight')).toMatchObject({ status: 400, reason: expect.stringMatching(/^preflight simulation failed/) });
    expect(line('status by query key')).toMatchObject({ route: '/v1/status/:signature', status: 200, account: bot.id });
    expect(line('json-rpc')).toMatchObject({ route: '/', status: 200, account: bot.id, sig: viaRpc.signature });
    expect(line('json-rpc refused')).toMatchObject({ route: '/v1/rpc', status: 200, reason: expect.stringMatching(/^Tip insufficient/) });
    expect(line('unknown')).toMatchObject({ route: '/*', path: '/nope', status: 404 });

    // The whole file, not only request lines: no key, no transaction, in any encoding.
    const text = readFileSync(logFile, 'utf8');
    for (const secret of secrets) expect(text).not.toContain(secret);
    for (const tx of transactions) expect(text).not.toContain(tx);
  });
});

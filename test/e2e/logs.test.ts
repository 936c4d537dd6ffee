/**
 * Structured logs of the running service: pino JSON lines written to a file (`logFile`), one
 * per request, whose request id is the one echoed in the response's `x-request-id`, whose
 * message names the event, and which never contain an API key or a transaction, whatever path
 * the key and the transaction took (header, query string, JSON-RPC, a refusal, a body that is not
 * even JSON). Key-less reads are at debug; 401s and 429s are counted and told once per interval;
 * a flood from one client without a key writes a bounded number of lines; outcomes are logged.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Keypair, LAMPORTS_PER_SOL } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANONYMOUS_LINES, SUMMARY_MS } from '../../src/telemetry/request-log.js';
import { waitFor } from '../../harness/localnet.js';
import { account, payer, settled, startStack, tipped, type Stack } from '../../harness/stack.js';
import { tempDir } from '../../harness/tmp.js';
import { transfer, web3Base58 } from '../../harness/transactions.js';

let s: Stack;
let logDir: ReturnType<typeof tempDir>;
let logFile: string;

beforeAll(async () => {
  logDir = tempDir();
  logFile = join(logDir.dir, 'logs', 'landfall.log'); // the directory is created by the logger
  s = await startStack({ localnet: { slotMs: 100, seed: 'logs' }, config: { logLevel: 'info', logFile, logSuccesses: 'every' } });
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
    await track('long id', request('/v1/account', { headers: { authorization: `Bearer ${bot.key}`, 'x-request-id': 'x'.repeat(200) } }));
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
    await track('tip floor', request('/v1/tip-floor', {}));
    await track('tip addresses', request('/v1/tip-addresses', {}));
    await track('openapi', request('/v1/openapi.json', {}));
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
      ['tip floor', 200],
      ['tip addresses', 200],
      ['openapi', 200],
      ['unknown', 404],
    ]);
    await settled(s, bot.key, good.signature);

    // Every request but the probes and key-less reads (debug) and the 401 (counted) gets exactly
    // one info line with its id.
    const quiet = new Set(['ping', 'tip floor', 'tip addresses', 'openapi', 'bad key']);
    const logged = await waitFor('the request lines', () => {
      const all = lines().filter((l) => l.req !== undefined);
      return sent.filter((x) => !quiet.has(x.what)).every((x) => all.some((l) => l.req === x.requestId)) ? all : undefined;
    });
    const byWhat = new Map(sent.map((x) => [x.what, logged.filter((l) => l.req === x.requestId)]));
    for (const [what, ls] of byWhat) expect(ls, what).toHaveLength(quiet.has(what) ? 0 : 1);
    const line = (what: string) => byWhat.get(what)![0];

    expect(sent[0]!.requestId).toBe('bot-trace-0001');
    // Not the caller's 200-character id: one made by the thread that served it (prefix-thread-counter).
    expect(sent[1]!.requestId).toMatch(/^[0-9a-f]{8}-\d+-[0-9a-z]+$/);
    expect(line('send')).toMatchObject({ level: 'info', msg: 'transaction accepted', method: 'POST', route: '/v1/send', path: '/v1/send', status: 200, account: bot.id, sig: good.signature });
    expect(line('send').us).toBeGreaterThan(0);
    expect(typeof line('send').time).toBe('number');
    expect(line('low tip')).toMatchObject({ msg: 'request refused', status: 402, account: starter.id, sig: lowTip.signature, reason: expect.stringMatching(/below the starter minimum/) });
    expect(line('preflight')).toMatchObject({ status: 400, reason: expect.stringMatching(/^preflight simulation failed/) });
    expect(line('status by query key')).toMatchObject({ msg: 'request served', route: '/v1/status/:signature', status: 200, account: bot.id });
    expect(line('json-rpc')).toMatchObject({ msg: 'transaction accepted', route: '/', status: 200, account: bot.id, sig: viaRpc.signature });
    expect(line('json-rpc refused')).toMatchObject({ msg: 'request refused', route: '/v1/rpc', status: 200, reason: expect.stringMatching(/^Tip insufficient/) });
    expect(line('unknown')).toMatchObject({ msg: 'request refused', route: '/*', path: '/nope', status: 404 });
    // The outcome of the transaction that landed.
    const landed = await waitFor('the landing line', () => lines().find((l) => l.msg === 'transaction landed' && l.sig === good.signature));
    expect(landed).toMatchObject({ level: 'info', account: bot.id });
    expect(landed.slot).toBeGreaterThan(0);
    // The 401, counted in the interval's summary line (told within SUMMARY_MS).
    const summary = await waitFor('the refusals summary', () => lines().find((l) => l.msg === 'requests refused (401, 429), counted'), SUMMARY_MS + 5_000);
    expect(summary.refused['401 /v1/send']).toBeGreaterThanOrEqual(1);

    // The whole file, not only request lines: no key, no transaction, in any encoding.
    const text = readFileSync(logFile, 'utf8');
    for (const secret of secrets) expect(text).not.toContain(secret);
    for (const tx of transactions) expect(text).not.toContain(tx);
  });

  it('a key-less flood writes a bounded number of lines: 404s past the per-source bound are counted, 401s only counted', async () => {
    const FLOOD = 3 * ANONYMOUS_LINES;
    const before = lines().length;
    const tag = `flood-${Date.now()}`;
    // Sequential keep-alive requests on a few connections: bounded in count, not in time.
    const hit = async (path: string, headers: Record<string, string>) => {
      for (let i = 0; i < FLOOD / 4; i++) await request(path, { headers });
    };
    await Promise.all(Array.from({ length: 4 }, () => hit(`/${tag}`, {})));
    await Promise.all(Array.from({ length: 4 }, () => hit('/v1/account', { authorization: 'Bearer lf_wrong' })));
    // Every request of the flood is either a line or counted as suppressed in a summary line.
    const floodLines = await waitFor('every flood request told', () => {
      const after = lines().slice(before);
      const told = after.filter((l) => l.path === `/${tag}`);
      const suppressed = after.filter((l) => l.msg === 'request lines suppressed (per-source bound)').reduce((a, l) => a + (l.top['127.0.0.1'] ?? 0), 0);
      return told.length + suppressed === FLOOD ? told : undefined;
    }, 2 * SUMMARY_MS + 5_000);
    // At most the bound per interval (the flood may straddle two intervals), the rest counted.
    expect(floodLines.length).toBeLessThanOrEqual(2 * ANONYMOUS_LINES);
    expect(floodLines.length).toBeGreaterThanOrEqual(ANONYMOUS_LINES);
    const counted = await waitFor('the 401s counted', () => {
      const sums = lines().slice(before).filter((l) => l.msg === 'requests refused (401, 429), counted');
      const n = sums.reduce((a, l) => a + (l.refused['401 /v1/account'] ?? 0), 0);
      return n >= FLOOD ? n : undefined;
    }, 2 * SUMMARY_MS + 5_000);
    expect(counted).toBe(FLOOD);
    expect(lines().slice(before).filter((l) => l.route === '/v1/account' && l.status === 401)).toEqual([]);
  });
});

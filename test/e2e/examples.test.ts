/**
 * The README's examples, run as a newcomer runs them (`npx tsx examples/first-bot.ts`, a child
 * process with the flags `npm start`'s banner gives) against the service on a local cluster, so
 * they cannot rot: each airdrops, tips, sends, waits for the confirmation and prints the trace,
 * and the service itself must then hold the transaction it printed as confirmed for that key,
 * landed with its tip.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settings } from '../../examples/settings.js';
import { DEFAULT_CONFIG } from '../../src/config.js';
import { account, startStack, status, type Stack } from '../../harness/stack.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

let s: Stack;
beforeAll(async () => {
  s = await startStack({ localnet: { slotMs: 100, seed: 'examples' } });
});
afterAll(async () => {
  await s?.close();
});

/** Run an example to its end with the service's URLs and a new starter key (needs `npm run build:ts`: it imports landfall/client). */
async function runExample(file: string): Promise<{ key: string; stdout: string }> {
  const { key } = account(s, 'starter');
  const args = ['--import', 'tsx', `examples/${file}`, '--url', s.svc.url, '--rpc', s.net.rpcUrl, '--key', key];
  const { stdout, stderr } = await promisify(execFile)(process.execPath, args, { cwd: ROOT, timeout: 60_000 });
  expect(stderr).toBe('');
  return { key, stdout };
}

describe.each(['first-bot.ts', 'first-bot-kit.ts'])('examples/%s', (file) => {
  it('airdrops, tips, sends through Landfall, sees it confirmed and prints the trace', async () => {
    const { key, stdout } = await runExample(file);
    expect(stdout).toMatch(/^payer \w{32,44} funded with 1 SOL$/m);
    const signature = /^sent (\w{64,88})/m.exec(stdout)?.[1];
    expect(signature, stdout).toBeDefined();
    expect(stdout).toMatch(/^status confirmed: slot \d+, \d+ ms after Landfall received it$/m);
    expect(stdout).toMatch(/^trace: landed \(landed in slot \d+\)$/m);
    expect(stdout).toMatch(/^ {2}round \d+ {2}slot \d+ {2}leader \w{32,44} 127\.0\.0\.1:\d+ {2}written$/m);

    // What the example printed is what the service recorded for this key.
    const record = await status(s, key, signature!);
    expect(record).toMatchObject({ status: 200, body: { signature, status: 'confirmed' } });
    const onChain = await s.connection.getTransaction(signature!, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });
    expect(onChain?.meta?.err).toBeNull();
    expect(onChain?.slot).toBe(record.body.slot);
  }, 90_000);
});

it('examples/high-rate-bot.ts keeps many sends in flight, waits out the 429s of a starter key and sends again, and every one confirms', async () => {
  const { key, stdout } = await runExample('high-rate-bot.ts');
  const m = /^sent 40 transactions, at most (\d+) in flight, (\d+) refusals with 429 waited out and sent again$/m.exec(stdout);
  expect(m, stdout).not.toBeNull();
  expect(Number(m![1])).toBeGreaterThan(1);
  // 40 sends at 16 in flight outrun the starter plan's 8 per second (a burst of 8): refused, waited out, resent.
  expect(Number(m![2])).toBeGreaterThan(0);
  expect(stdout).toMatch(/^confirmed 40 of 40$/m);
  // The service counted each transaction once, whatever the resends.
  const acct = (await (await fetch(`${s.svc.url}/v1/account?api-key=${key}`)).json()) as { usage: { transactions_total: number } };
  expect(acct.usage.transactions_total).toBe(40);
}, 120_000);

it('an example without a key says how to create one, and exits non-zero', async () => {
  const run = promisify(execFile)(process.execPath, ['--import', 'tsx', 'examples/first-bot.ts', '--url', s.svc.url], { cwd: ROOT, env: { ...process.env, LANDFALL_KEY: '' } });
  await expect(run).rejects.toMatchObject({ stderr: expect.stringContaining('no API key: pass --key KEY or set LANDFALL_KEY (create one with: npx landfall accounts create --name my-bot)') });
});

it("the examples' defaults are where npm start serves: the service's port and the local cluster's RPC port it passes", () => {
  const { scripts } = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { scripts: { start: string } };
  const rpcPort = /--localnet-rpc-port (\d+)/.exec(scripts.start)?.[1];
  expect(settings([], { LANDFALL_KEY: 'lf_x' })).toEqual({
    url: `http://${DEFAULT_CONFIG.host}:${DEFAULT_CONFIG.port}`,
    rpcUrl: `http://127.0.0.1:${rpcPort}`,
    apiKey: 'lf_x',
  });
});

/**
 * Wrong settings are errors, never silently ignored, through the real command line (a child
 * process, as a user runs it): a config file key with a typo (`rpcURL` used to start the embedded
 * local cluster instead of the chain it names), the removed `sendThreads`, an unknown
 * `LANDFALL_*` variable, an unknown option — each named with the nearest known one, and nothing
 * started; `wsUrl` without `rpcUrl`; admin commands on a data directory that does not exist (one
 * used to be created, empty). And the banner says loudly when no setting names a chain.
 */
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { waitFor } from '../../harness/localnet.js';
import { tempDir } from '../../harness/tmp.js';

/** The built command (`npm run build:ts`): ingress worker threads cannot run under a `-e` TypeScript loader. */
const BIN = fileURLToPath(new URL('../../bin/landfall.js', import.meta.url));
const tmp = tempDir();
afterAll(() => tmp.cleanup());

/** `landfall …`, in a child with `env` added; stopped with SIGINT after `untilOut` shows (or by itself). */
async function run(args: string[], opts: { env?: Record<string, string>; untilOut?: string } = {}): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...opts.env } });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (opts.untilOut !== undefined) {
    const marker = opts.untilOut;
    await Promise.race([waitFor(marker, () => (out.includes(marker) ? true : undefined), 30_000), exited]);
    child.kill('SIGINT');
  }
  return { code: await exited, out, err };
}

function configFile(name: string, settings: object): string {
  const path = join(tmp.dir, name);
  writeFileSync(path, JSON.stringify(settings));
  return path;
}

const refusal = (message: string) => ({ code: 2, out: '', err: `landfall: ${message}\n` });

describe('strict settings', () => {
  it('a config file key with a typo is refused, naming the nearest known key (no local cluster started)', async () => {
    const typo = configFile('typo.json', { rpcURL: 'https://api.mainnet-beta.solana.com' });
    expect(await run(['serve', '--port', '0', '--data', join(tmp.dir, 'typo'), '--config', typo])).toEqual(
      refusal(`config file ${typo}: unknown setting "rpcURL"; did you mean "rpcUrl"?`),
    );
    const removed = configFile('removed.json', { sendThreads: 2 });
    expect((await run(['serve', '--config', removed])).err).toBe(`landfall: config file ${removed}: unknown setting "sendThreads"; did you mean "ingressThreads"?\n`);
    const nested = configFile('nested.json', { tracker: { pol: false } });
    expect((await run(['serve', '--config', nested])).err).toBe(`landfall: config file ${nested}: unknown setting "tracker.pol"; did you mean "tracker.poll"?\n`);
    expect(existsSync(join(tmp.dir, 'typo'))).toBe(false);
  });

  it('an unknown LANDFALL_* variable and an unknown option are refused, naming the nearest known one', async () => {
    expect(await run(['serve', '--port', '0'], { env: { LANDFALL_RPC: 'https://api.mainnet-beta.solana.com' } })).toEqual(
      refusal('unknown environment variable "LANDFALL_RPC"; did you mean "LANDFALL_RPC_URL"?'),
    );
    expect(await run(['serve', '--prot', '8080'])).toEqual(refusal('unknown option "--prot"; did you mean "--port"?'));
    expect(await run(['accounts', 'list', '--date', tmp.dir])).toEqual(refusal('unknown option "--date"; did you mean "--data"?'));
  });

  it('admin commands on a data directory that does not exist are an error, and create nothing', async () => {
    const typo = join(tmp.dir, 'no-such-dir');
    for (const args of [['accounts', 'list'], ['accounts', 'create', '--name', 'bot'], ['keys', 'list', '--account', 'acc_x']]) {
      const r = await run([...args, '--data', typo]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.err).toMatch(new RegExp(`^landfall: data directory ${typo} does not exist`));
    }
    expect(existsSync(typo)).toBe(false);
  });

  it('no setting names a chain: the embedded cluster starts and the banner says so loudly', async () => {
    const r = await run(['serve', '--port', '0', '--data', join(tmp.dir, 'local')], { untilOut: 'create an API key' });
    expect(r.out).toContain('chain: EMBEDDED LOCAL TEST CLUSTER, NOT SOLANA');
    expect(r.out).toContain('nothing reaches mainnet, devnet or testnet');
  });

  it('loadConfig: wsUrl without rpcUrl is refused; the variables of the tooling and the client are not settings', () => {
    expect(() => loadConfig({ wsUrl: 'ws://127.0.0.1:8900' }, {})).toThrow('wsUrl needs rpcUrl');
    expect(loadConfig({}, { LANDFALL_KEY: 'lf_x', LANDFALL_NATS_SERVER: '/bin/nats-server', PATH: '/bin' }).port).toBe(8080);
    expect(() => loadConfig({}, { LANDFALL_LOGLEVEL: 'debug' })).toThrow('unknown environment variable "LANDFALL_LOGLEVEL"; did you mean "LANDFALL_LOG_LEVEL"?');
  });
});

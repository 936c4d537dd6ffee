/**
 * The typed client as a bot team uses it (issue 22, item 4): `packages/client` packed with
 * `npm pack`, installed from the tarball into a project of its own next to `@solana/web3.js` and
 * `@solana/kit` from the registry (npm's cache) — a second copy of web3.js, not the repository's
 * — and a small bot there lands a transaction through the running service on the local cluster.
 * Each bot is given a dead URL first: the connection is refused, and the client fails over to
 * the live one.
 */
import { execFile, execFileSync } from 'node:child_process';
import { copyFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, payer, startStack, type Stack } from '../../harness/stack.js';
import { tempDir } from '../../harness/tmp.js';

const ROOT = resolve(import.meta.dirname, '../..');
const BOTS = join(ROOT, 'test/client-package');
const run = promisify(execFile);

/** The version of a package the repository has installed (the bot project asks for the same). */
const installedVersion = (name: string) => (JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;

/** A loopback port nothing listens on: connecting is refused. */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe('landfall-client from its packed tarball, in a project of its own', () => {
  let s: Stack;
  let project: ReturnType<typeof tempDir>;
  let env: Record<string, string>;

  beforeAll(async () => {
    project = tempDir('landfall-bot-');
    execFileSync('npm', ['pack', '--pack-destination', project.dir], { cwd: join(ROOT, 'packages/client'), stdio: 'pipe' });
    const tarball = readdirSync(project.dir).find((f) => f.endsWith('.tgz'))!;
    writeFileSync(join(project.dir, 'package.json'), JSON.stringify({ name: 'bot', private: true, type: 'module' }));
    execFileSync(
      'npm',
      ['install', `./${tarball}`, `@solana/web3.js@${installedVersion('@solana/web3.js')}`, `@solana/kit@${installedVersion('@solana/kit')}`, '--prefer-offline', '--no-audit', '--no-fund'],
      { cwd: project.dir, stdio: 'pipe' },
    );
    for (const bot of ['web3-bot.mjs', 'kit-bot.mjs']) copyFileSync(join(BOTS, bot), join(project.dir, bot));

    s = await startStack({ localnet: { slotMs: 100, seed: 'client-package' } });
    const bot = account(s, 'starter');
    const from = await payer(s, 10);
    env = {
      LANDFALL_URLS: `http://127.0.0.1:${await deadPort()},${s.svc.url}`,
      LANDFALL_KEY: bot.key,
      RPC_URL: s.net.rpcUrl,
      PAYER: JSON.stringify([...from.secretKey]),
    };
  }, 240_000);
  afterAll(async () => {
    await s?.close();
    project?.cleanup();
  });

  /** Run a bot in the project; its one line of JSON output. */
  async function runBot(file: string): Promise<any> {
    const { stdout } = await run(process.execPath, [file], { cwd: project.dir, env: { ...process.env, ...env }, timeout: 90_000 });
    return JSON.parse(stdout.trim().split('\n').at(-1)!);
  }

  it('the package resolves its own web3.js peer: the project has one copy, the bot\'s', () => {
    const copies = execFileSync('npm', ['ls', '@solana/web3.js', '--all', '--parseable'], { cwd: project.dir, encoding: 'utf8' }).trim().split('\n');
    expect(copies).toEqual([join(project.dir, 'node_modules/@solana/web3.js')]);
  });

  it('a web3.js bot lands a tipped transaction after failing over from a dead URL; a tip below the minimum is a typed 402', async () => {
    const out = await runBot('web3-bot.mjs');
    expect(out.status).toBe('confirmed');
    expect((await s.connection.getSignatureStatus(out.signature, { searchTransactionHistory: true })).value?.err).toBeNull();
    expect(out.url).toBe(`${s.svc.url}/`);
    expect(out.stats).toMatchObject({ failovers: 1 });
    expect(out.stats.networkRetries).toBeGreaterThanOrEqual(1);
    expect(out.lowTip).toEqual({ typed: true, status: 402, message: 'Tip insufficient' });
  }, 100_000);

  it('a @solana/kit bot lands a transaction tipped by landfall-client/kit, sent as kit signed it', async () => {
    const out = await runBot('kit-bot.mjs');
    expect(out.status).toBe('confirmed');
    expect(out.instructions).toBe(2);
    expect((await s.connection.getSignatureStatus(out.signature, { searchTransactionHistory: true })).value?.err).toBeNull();
    expect(out.stats).toMatchObject({ failovers: 1 });
  }, 100_000);
});

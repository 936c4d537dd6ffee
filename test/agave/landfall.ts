/**
 * `landfall serve --rpc … --ws …` in a child process, as a user runs it against a chain node: the
 * built CLI (`bin/landfall.js`, needs `npm run build:ts`) on a temporary data directory and a
 * free port, with the admin CLI (`landfall accounts create`) run next to it on the same data.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Connection, Keypair, LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import type { Config } from '../../src/config.js';
import type { PlanName } from '../../src/accounts/plans.js';
import { waitFor } from '../../harness/localnet.js';
import { fetchMetric } from '../../harness/metrics.js';
import { tempDir } from '../../harness/tmp.js';
import type { Endpoint, TipTarget } from '../../harness/stack.js';

const BIN = new URL('../../bin/landfall.js', import.meta.url).pathname;

export interface LandfallChild extends Endpoint, TipTarget {
  /** Data directory (removed by stop()). */
  readonly dir: string;
  /** A new account on `plan` with one key, made by the admin CLI while the server runs. */
  account(plan?: PlanName): { id: string; key: string };
  /** Metric `name` from `/metrics`, summed over the label sets matching `labels`. */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  /** GET /health: status code and body. */
  health(): Promise<{ code: number; body: any }>;
  output(): string;
  /** SIGTERM (the server closes itself), SIGKILL after 5 s; removes the data directory. */
  stop(): Promise<void>;
}

/**
 * Start `landfall serve` against the node at `rpcUrl`/`wsUrl` with the settings in `config`
 * (written to a config file); resolves once its banner says where it listens.
 */
export async function startLandfallServe(rpcUrl: string, wsUrl: string, config: Partial<Config> = {}): Promise<LandfallChild> {
  const tmp = tempDir('landfall-agave-serve-');
  const configPath = join(tmp.dir, 'config.json');
  writeFileSync(configPath, JSON.stringify({ ingressThreads: 1, logLevel: 'warn', ...config }));
  const child: ChildProcess = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--data', tmp.dir, '--config', configPath, '--rpc', rpcUrl, '--ws', wsUrl], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (d: Buffer) => (out = (out + d.toString()).slice(-20_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  let url: string;
  try {
    url = await waitFor(
      'the landfall serve banner',
      () => {
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`landfall serve exited: ${out}`);
        const m = /listening on (http:\/\/\S+)/.exec(out);
        return m && out.includes('create an API key') ? m[1]! : undefined;
      },
      30_000,
    );
  } catch (e) {
    kill();
    tmp.cleanup();
    throw e;
  }
  const tips = ((await (await fetch(`${url}/v1/tip-addresses`)).json()) as { tip_addresses: string[] }).tip_addresses.map((t) => new PublicKey(t));
  const cli = (...args: string[]) => execFileSync(process.execPath, [BIN, ...args, '--data', tmp.dir], { encoding: 'utf8' });
  return {
    svc: { url },
    connection: new Connection(rpcUrl, 'confirmed'),
    tips,
    dir: tmp.dir,
    account(plan: PlanName = 'whale') {
      const a = JSON.parse(cli('accounts', 'create', '--name', `bot-${Math.random().toString(36).slice(2)}`, '--plan', plan, '--json')) as { account_id: string; api_key: string };
      return { id: a.account_id, key: a.api_key };
    },
    metric: (name, labels = {}) => fetchMetric(url, name, labels),
    async health() {
      const r = await fetch(`${url}/health`);
      return { code: r.status, body: await r.json() };
    },
    output: () => out,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const t = setTimeout(kill, 5_000);
        await exited;
        clearTimeout(t);
      }
      process.removeListener('exit', kill);
      tmp.cleanup();
    },
  };
}

/**
 * Fund each tip address on the node (an account must hold the rent-exempt minimum before a tip
 * smaller than that can land in it) and a fresh payer with `sol`; both airdrops confirmed.
 */
export async function fundTipsAndPayer(connection: Connection, tips: PublicKey[], sol: number): Promise<Keypair> {
  const payer = Keypair.generate();
  const sigs = await Promise.all([...tips.map((t) => connection.requestAirdrop(t, LAMPORTS_PER_SOL)), connection.requestAirdrop(payer.publicKey, sol * LAMPORTS_PER_SOL)]);
  await waitFor(
    'the airdrops confirmed',
    async () => {
      const { value } = await connection.getSignatureStatuses(sigs);
      return value.every((s) => s?.confirmationStatus === 'confirmed' || s?.confirmationStatus === 'finalized') ? true : undefined;
    },
    30_000,
  );
  return payer;
}

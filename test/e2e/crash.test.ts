/**
 * kill -9 under load. A real `landfall serve` child process (embedded local cluster) takes sends
 * from three accounts over keep-alive connections while the admin CLI changes plans and keys
 * next to it; then it is killed with SIGKILL mid-load. The store must open cleanly with every
 * account, key, point and plan change intact, and the only status records allowed to be missing
 * are those of the last commit window before the kill — measured here and printed.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Connection, Keypair, LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import { afterAll, describe, expect, it } from 'vitest';
import { Accounts } from '../../src/accounts/accounts.js';
import { DEFAULT_PLANS } from '../../src/accounts/plans.js';
import { Store } from '../../src/store/store.js';
import { waitFor } from '../helpers/localnet.js';
import { tempDir } from '../helpers/tmp.js';
import { legacyTx, transfer, web3Base58 } from '../helpers/transactions.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const BIN = join(ROOT, 'bin/landfall.js');
/** Records acknowledged longer ago than this before the kill must have survived it. */
const DURABLE_AFTER_MS = 1_000;
const LOAD_MS = 1_500;

const tmp = tempDir();
let child: ChildProcess | undefined;
afterAll(() => {
  child?.kill('SIGKILL');
  tmp.cleanup();
});

function cli(...args: string[]): string {
  return execFileSync(process.execPath, [BIN, ...args, '--data', tmp.dir], { encoding: 'utf8' });
}

/** Start `landfall serve`; resolves with its URL and the local cluster's RPC URL from the banner. */
async function serve(): Promise<{ url: string; rpc: string }> {
  const config = join(tmp.dir, 'config.json');
  writeFileSync(config, JSON.stringify({ localnet: { slotMs: 100 } }));
  const proc = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--data', tmp.dir, '--config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  child = proc;
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  return waitFor(
    'the serve banner',
    () => {
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
      const rpc = /RPC\s+(http:\/\/\S+)/.exec(out)?.[1];
      if (proc.exitCode !== null) throw new Error(`landfall serve exited: ${out}`);
      return url && rpc && out.includes('create an API key') ? { url, rpc } : undefined;
    },
    30_000,
  );
}

describe('kill -9 under load', () => {
  it('leaves a store that opens cleanly with accounts, keys, points and plans intact; only the last commit window of status records may be missing', async () => {
    const { url, rpc } = await serve();
    const connection = new Connection(rpc, 'confirmed');
    const tips = ((await (await fetch(`${url}/v1/tip-addresses`)).json()) as { tip_addresses: string[] }).tip_addresses.map((t) => new PublicKey(t));

    // Admin CLI next to the running server.
    const bots = [0, 1, 2].map((i) => JSON.parse(cli('accounts', 'create', '--name', `load-${i}`, '--plan', 'whale', '--json')) as { account_id: string; api_key: string });
    const second = JSON.parse(cli('keys', 'create', '--account', bots[0]!.account_id, '--name', 'second', '--json')) as { api_key: string };
    const doomed = JSON.parse(cli('keys', 'create', '--account', bots[0]!.account_id, '--name', 'doomed', '--json')) as { api_key: string };
    const upgraded = JSON.parse(cli('accounts', 'create', '--name', 'upgraded', '--json')) as { account_id: string; api_key: string };
    cli('accounts', 'set-plan', upgraded.account_id, 'pro');
    cli('keys', 'revoke', '--account', bots[0]!.account_id, '--name', 'doomed');
    await waitFor('set-plan seen by the server', async () => {
      const v = (await (await fetch(`${url}/v1/account?api-key=${upgraded.api_key}`)).json()) as { plan?: string };
      return v.plan === 'pro' ? true : undefined;
    });
    expect((await fetch(`${url}/v1/account?api-key=${doomed.api_key}`)).status).toBe(401);

    // Fund a payer; earn points with one confirmed transaction.
    const payer = Keypair.generate();
    const airdrop = await connection.requestAirdrop(payer.publicKey, 1_000 * LAMPORTS_PER_SOL);
    await waitFor('airdrop', async () => ((await connection.getSignatureStatuses([airdrop])).value[0]?.confirmationStatus ? true : undefined));
    const { blockhash } = await connection.getLatestBlockhash('confirmed');
    let n = 0;
    const build = () => {
      const tx = legacyTx([transfer(payer.publicKey, payer.publicKey, ++n), transfer(payer.publicKey, tips[n % tips.length]!, 300_000)], { feePayer: payer, blockhash });
      return { base64: tx.base64, signature: web3Base58(tx.signatures[0]!) };
    };
    const post = (key: string, base64: string) =>
      fetch(`${url}/v1/send`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify({ transaction: base64 }) });
    const first = build();
    expect((await post(bots[0]!.api_key, first.base64)).status).toBe(200);
    const pointsBefore = await waitFor('points from the first transaction', async () => {
      const v = (await (await fetch(`${url}/v1/account?api-key=${bots[0]!.api_key}`)).json()) as { usage: { service_points: number } };
      return v.usage.service_points > 0 ? v.usage.service_points : undefined;
    });

    // Load: three accounts, eight keep-alive loops each, until the kill.
    const txs = Array.from({ length: 1_500 }, build);
    const acked: { signature: string; at: number }[] = [];
    let next = 0;
    let killed = false;
    const loop = async (key: string) => {
      while (!killed && next < txs.length) {
        const tx = txs[next++]!;
        try {
          const r = await post(key, tx.base64);
          if (r.status === 200) acked.push({ signature: tx.signature, at: Date.now() });
          else await r.arrayBuffer();
        } catch {
          return; // the server is gone
        }
      }
    };
    const loops = bots.flatMap((b) => Array.from({ length: 8 }, () => loop(b.api_key)));
    await new Promise((r) => setTimeout(r, LOAD_MS));
    child!.kill('SIGKILL');
    const killAt = Date.now();
    killed = true;
    await Promise.all(loops);
    await new Promise<void>((r) => (child!.exitCode !== null || child!.signalCode !== null ? r() : child!.once('exit', () => r())));
    expect(acked.length).toBeGreaterThan(100);

    // The store opens cleanly and everything transactional is there.
    const store = Store.open(tmp.dir);
    try {
      const accounts = new Accounts(store, { plans: DEFAULT_PLANS, lamportsPerPoint: 1000 });
      const ids = accounts.list().map((a) => a.id);
      for (const id of [...bots.map((b) => b.account_id), upgraded.account_id]) expect(ids).toContain(id);
      for (const b of bots) expect(accounts.authenticate(b.api_key)?.account.id).toBe(b.account_id);
      expect(accounts.authenticate(second.api_key)?.account.id).toBe(bots[0]!.account_id);
      expect(accounts.authenticate(doomed.api_key)).toBeUndefined();
      expect(accounts.get(upgraded.account_id)!.plan).toBe('pro');
      expect(accounts.get(bots[0]!.account_id)!.points).toBeGreaterThanOrEqual(pointsBefore);

      // Status records: at most the last commit window is missing.
      const missing = acked.filter((a) => store.getStatus(a.signature) === undefined);
      const window = missing.length === 0 ? 0 : killAt - Math.min(...missing.map((m) => m.at));
      console.log(`kill -9 after ${LOAD_MS} ms of load: ${acked.length} sends acknowledged, ${missing.length} status records missing, oldest missing acknowledged ${window} ms before the kill`);
      for (const m of missing) expect(killAt - m.at).toBeLessThanOrEqual(DURABLE_AFTER_MS);
      // Every record that survived is whole.
      for (const a of acked) {
        const rec = store.getStatus(a.signature);
        if (rec) expect(rec).toMatchObject({ signature: a.signature, status: expect.stringMatching(/^(sent|confirmed|failed)$/) });
      }
    } finally {
      await store.close();
    }
  }, 90_000);
});

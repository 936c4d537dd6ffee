/**
 * `landfall cluster-demo [--nodes 3] [--slot-ms 400]` (issue 13, part 6): several Landfall nodes as
 * one service, on loopback, for a newcomer — 3 JetStream `nats-server`s (the pinned binary, built
 * into `.cache/` on first use by `scripts/nats-server.mjs`), the local Solana cluster (in this
 * process), and the nodes, each its own `landfall serve` process with its own data directory,
 * all sharing one set of tip addresses; then a demo account created through the cluster's
 * accounts bucket. Prints the URLs and the key; Ctrl-C stops everything and removes the
 * temporary directory.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair } from '@solana/web3.js';
import { LandfallError } from '../errors.js';
import { startLocalnet } from '../localnet/index.js';
import { freePort, startNatsServers } from '../cluster/nats-servers.js';
import { openKvAdmin } from '../cluster/accounts-kv.js';
import { untilStopped } from './localnet.js';
import { parseOptions } from './args.js';

const ROOT = new URL('../../', import.meta.url);
const BIN = new URL('bin/landfall.js', ROOT).pathname;
/** Lamports given to each tip address, so any tip leaves it rent-exempt (as `serve` does on its own cluster). */
const TIP_FUNDING = 1_000_000_000;
const NODE_UP_MS = 60_000;

interface NatsServerScript {
  ensureNatsServer(opts?: { log?: (line: string) => void }): string;
}

/** Start `landfall serve` as a child; resolves with its URL once its banner is out. */
function startNode(args: string[], logFile: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [BIN, 'serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LANDFALL_LOG_FILE: logFile } });
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`a node did not start in ${NODE_UP_MS / 1000} s: ${out.slice(-2000)}`)), NODE_UP_MS);
    const onData = (d: Buffer) => {
      out += d.toString();
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
      if (url && out.includes('create an API key')) {
        clearTimeout(timer);
        resolve({ child, url });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`a node exited (${code}) before it was up: ${out.slice(-2000)}`));
    });
  });
}

export async function clusterDemoCommand(argv: string[], out: (s: string) => void): Promise<number> {
  const { values } = parseOptions({ args: argv, options: { nodes: { type: 'string' }, 'slot-ms': { type: 'string' } } });
  const n = Number(values.nodes ?? 3);
  const slotMs = Number(values['slot-ms'] ?? 400);
  if (!Number.isInteger(n) || n < 1 || n > 9) throw new LandfallError('CONFIG_INVALID', `--nodes must be 1..9 (got ${values.nodes})`);
  if (!Number.isInteger(slotMs) || slotMs < 50) throw new LandfallError('CONFIG_INVALID', `--slot-ms must be a whole number ≥ 50 (got ${values['slot-ms']})`);

  const dir = mkdtempSync(join(tmpdir(), 'landfall-cluster-demo-'));
  const steps: Array<() => unknown> = [() => rmSync(dir, { recursive: true, force: true })];
  const stopAll = async () => {
    for (const step of steps.reverse()) {
      try {
        await step();
      } catch {
        // best effort: every part is stopped even if one fails to
      }
    }
    steps.length = 0;
  };
  try {
    out('obtaining nats-server (built into .cache/ on first use: about 30 s)…\n');
    const script = (await import(new URL('scripts/nats-server.mjs', ROOT).href)) as NatsServerScript;
    const nats = await startNatsServers(3, script.ensureNatsServer({ log: (l) => out(l + '\n') }), join(dir, 'nats'));
    steps.push(() => nats.close());
    const net = await startLocalnet({ validators: 4, slotMs });
    steps.push(() => net.close());
    const tips = Array.from({ length: 8 }, () => Keypair.generate().publicKey.toBase58());
    for (const t of tips) await net.airdrop(t, TIP_FUNDING);
    const config = join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({ tipAddresses: tips, ingressThreads: 1 }));

    const nodes = await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const name = `node-${i + 1}`;
        const port = await freePort();
        const args = ['--port', String(port), '--data', join(dir, name), '--config', config, '--rpc', net.rpcUrl, '--ws', net.wsUrl, '--nats', nats.urls.join(','), '--node-name', name];
        const node = await startNode(args, join(dir, `${name}.log`));
        steps.push(async () => {
          const c = node.child;
          if (c.exitCode !== null || c.signalCode !== null) return; // Ctrl-C reached it too: gone already
          const exited = new Promise((r) => c.once('exit', r));
          c.kill('SIGTERM');
          await exited;
        });
        return { name, ...node };
      }),
    );
    const { admin, close } = await openKvAdmin({ servers: nats.urls, node: 'demo', replicas: 3 });
    const account = await admin.createAccount('cluster-demo', 'starter').finally(close);

    out(
      `\nLandfall: ${n} nodes, one service (NATS JetStream, replicas 3), on loopback\n` +
        `  NATS      ${nats.urls.join('  ')}\n` +
        `  chain     ${net.rpcUrl}  (local cluster, ${slotMs} ms slots)\n` +
        nodes.map((x) => `  ${x.name.padEnd(9)} ${x.url}   log ${join(dir, `${x.name}.log`)}\n`).join('') +
        `\ndemo account ${account.account_id} (created through the accounts bucket)\n` +
        `  api key: ${account.api_key}\n\n` +
        `any node answers for the account, e.g.\n` +
        nodes.map((x) => `  curl -s ${x.url}/v1/account -H 'Authorization: Bearer ${account.api_key}'\n`).join('') +
        `  curl -s ${nodes[0]!.url}/health      (its "cluster" object: nodes, NATS, budget mode)\n` +
        `more accounts:  npx landfall accounts create --name my-bot --nats ${nats.urls.join(',')}\n` +
        `\nCtrl-C to stop.\n`,
    );
    await untilStopped();
    out('stopping…\n');
    await stopAll();
    out('cluster demo stopped\n');
    return 0;
  } catch (e) {
    await stopAll();
    throw e;
  }
}

/**
 * `landfall serve` in a child process (the built `bin/landfall.js`), so a test can kill it for
 * real with SIGKILL and start it again on the same data directory.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { logLines } from './log-lines.js';
import { waitFor } from './localnet.js';

const ROOT = new URL('../', import.meta.url).pathname;
export const BIN = join(ROOT, 'bin/landfall.js');

export interface ServeChild {
  url: string;
  proc: ChildProcess;
  /** Everything it wrote to stdout and stderr so far. */
  output(): string;
  /** The JSON log lines with message `msg`. */
  logLines(msg: string): Record<string, unknown>[];
  /** SIGKILL; resolves once the process is gone. */
  kill(): Promise<void>;
}

export interface ServeOptions {
  dataDir: string;
  /** The chain (a local cluster the test owns); omitted: the embedded one. */
  rpcUrl?: string;
  wsUrl?: string;
  /** The config file's contents. */
  config?: Record<string, unknown>;
}

/** Start `landfall serve`; resolves once it serves. */
export async function serveChild(o: ServeOptions): Promise<ServeChild> {
  const config = join(o.dataDir, '..', `config-${process.pid}.json`);
  writeFileSync(config, JSON.stringify(o.config ?? {}), { mode: 0o600 }); // it may hold metricsToken: a config with a secret must not be world-readable
  const chain = o.rpcUrl ? ['--rpc', o.rpcUrl, ...(o.wsUrl ? ['--ws', o.wsUrl] : [])] : [];
  const proc = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--data', o.dataDir, '--config', config, ...chain], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  const url = await waitFor(
    'the serve banner',
    () => {
      if (proc.exitCode !== null) throw new Error(`landfall serve exited: ${out}`);
      return /listening on (http:\/\/\S+)/.exec(out)?.[1];
    },
    30_000,
  );
  return {
    url,
    proc,
    output: () => out,
    logLines: (msg) => logLines(out).filter((l) => l.msg === msg),
    async kill() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited;
    },
  };
}

/**
 * `landfall localnet` as a user runs it: a child process that prints where the cluster is,
 * serves JSON-RPC there, and on SIGINT closes everything and exits by itself with code 0
 * (the process only exits if every port and timer was freed).
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { rpc, waitFor } from '../helpers/localnet.js';
import { tempDir } from '../helpers/tmp.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Run the CLI from source (the same `main` that bin/landfall.js runs from dist). */
function landfall(args: string[]) {
  const code = "const { main } = await import('./src/cli/main.ts'); process.exitCode = await main(process.argv.slice(1));";
  return spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
}

describe('landfall localnet', () => {
  it('prints RPC, WebSocket and validators; serves; stops cleanly on SIGINT', async () => {
    const tmp = tempDir();
    const faults = join(tmp.dir, 'faults.json');
    writeFileSync(faults, JSON.stringify({ v2: { sandwicher: true } }));
    const child = landfall(['localnet', '--validators', '2', '--slot-ms', '50', '--rpc-port', '0', '--faults', faults, '--seed', 'cli']);
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await waitFor('the cluster banner', () => (out.includes('Ctrl-C to stop.') ? true : undefined), 20_000);
      const rpcUrl = /RPC\s+(http:\/\/\S+)/.exec(out)![1]!;
      const wsUrl = /WebSocket\s+(ws:\/\/\S+)/.exec(out)![1]!;
      expect(Number(new URL(wsUrl).port)).toBe(Number(new URL(rpcUrl).port) + 1);
      expect(out).toMatch(/v1\s+\w{32,44}\s+tpuQuic 127\.0\.0\.1:\d+\n/);
      expect(out).toMatch(/v2\s+\w{32,44}\s+tpuQuic 127\.0\.0\.1:\d+\s+\[sandwicher\]/);
      expect((await rpc(rpcUrl, 'getHealth')).result).toBe('ok');
      const nodes = (await rpc(rpcUrl, 'getClusterNodes')).result as { tpuQuic: string | null }[];
      for (const m of out.matchAll(/tpuQuic (\S+)/g)) expect(nodes.map((n) => n.tpuQuic)).toContain(m[1]);

      child.kill('SIGINT');
      expect(await exited).toBe(0);
      expect(out).toContain('local cluster stopped');
      await expect(fetch(rpcUrl, { method: 'POST' })).rejects.toThrow();
    } finally {
      child.kill('SIGKILL');
      tmp.cleanup();
    }
    expect(err).toBe('');
  });

  it('--sink: the banner says so, getArrivalCounts answers, and the stop line gives the totals', async () => {
    const child = landfall(['localnet', '--validators', '2', '--slot-ms', '50', '--rpc-port', '0', '--sink']);
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await waitFor('the cluster banner', () => (out.includes('Ctrl-C to stop.') ? true : undefined), 20_000);
      expect(out).toMatch(/^local cluster: 2 validators, 50 ms slots, sink \(QUIC arrivals counted, nothing executed; JSON-RPC getArrivalCounts\)\n/);
      const rpcUrl = /RPC\s+(http:\/\/\S+)/.exec(out)![1]!;
      expect((await rpc(rpcUrl, 'getArrivalCounts')).result).toMatchObject({ sink: true, total: { received: 0, atLeader: 0, bytes: 0 } });
      child.kill('SIGINT');
      expect(await exited).toBe(0);
      expect(out).toContain('local cluster stopped (sink: 0 transactions received, 0 at the leader)\n');
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('a bad flag or faults file is a clear error and exit code 2, without a stack trace', async () => {
    const run = async (args: string[]): Promise<{ code: number | null; err: string }> => {
      const child = landfall(args);
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      return { code, err };
    };
    const slot = await run(['localnet', '--slot-ms', 'fast']);
    expect(slot).toEqual({ code: 2, err: "landfall: --slot-ms must be a whole number (got 'fast')\n" });
    const missing = await run(['localnet', '--faults', '/nonexistent/faults.json']);
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/^landfall: cannot read faults file \/nonexistent\/faults\.json/);
  });
});

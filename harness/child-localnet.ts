/**
 * The local cluster in a child process (`landfall localnet`, run from source), so a test can
 * kill the chain for real — SIGKILL: no socket is closed politely, no QUIC connection is told
 * anything, no WebSocket gets a close frame, exactly as when a chain node's process dies — and
 * start it again on the same JSON-RPC and WebSocket ports (the validators' QUIC ports are new,
 * as a restarted node's would be).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { waitFor } from './localnet.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface ChildLocalnet {
  readonly rpcUrl: string;
  readonly wsUrl: string;
  readonly rpcPort: number;
  /** Name, identity and QUIC TPU address of each validator, as the banner printed them. */
  readonly validators: { name: string; identity: string; tpuQuic: string }[];
  /** Date.now() once the banner was printed: the RPC and WebSocket were listening. */
  readonly upAt: number;
  /** SIGKILL; resolves with Date.now() once the process is gone (reaped), so every socket of it is dead. */
  kill(): Promise<number>;
}

export interface ChildLocalnetOptions {
  seed: string;
  slotMs: number;
  validators?: number;
  /** 0 (default): any free port pair. */
  rpcPort?: number;
  /** More `landfall localnet` options (the validators' QUIC limits, `--sink`). */
  args?: string[];
}

/** Start `landfall localnet` in a child process; resolves once its banner says where it listens. */
export async function startChildLocalnet(o: ChildLocalnetOptions): Promise<ChildLocalnet> {
  const args = ['localnet', '--validators', String(o.validators ?? 4), '--slot-ms', String(o.slotMs), '--rpc-port', String(o.rpcPort ?? 0), '--seed', o.seed, ...(o.args ?? [])];
  const code = "const { main } = await import('./src/cli/main.ts'); process.exitCode = await main(process.argv.slice(1));";
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  let exitedAt: number | null = null;
  const exited = new Promise<number>((resolve) =>
    child.once('exit', () => {
      exitedAt = Date.now();
      resolve(exitedAt);
    }),
  );
  try {
    await waitFor(
      'the local cluster banner',
      () => {
        if (exitedAt !== null) throw new Error(`landfall localnet exited before it was up: ${err || out}`);
        return out.includes('Ctrl-C to stop.') ? true : undefined;
      },
      30_000,
    );
  } catch (e) {
    child.kill('SIGKILL');
    throw e;
  }
  const upAt = Date.now();
  const rpcUrl = /RPC\s+(http:\/\/\S+)/.exec(out)![1]!;
  const wsUrl = /WebSocket\s+(ws:\/\/\S+)/.exec(out)![1]!;
  const validators = [...out.matchAll(/^\s+(v\d+)\s+(\w{32,44})\s+tpuQuic (\S+)/gm)].map((m) => ({ name: m[1]!, identity: m[2]!, tpuQuic: m[3]! }));
  return {
    rpcUrl,
    wsUrl,
    rpcPort: Number(new URL(rpcUrl).port),
    validators,
    upAt,
    kill() {
      if (exitedAt === null) child.kill('SIGKILL');
      return exited;
    },
  };
}

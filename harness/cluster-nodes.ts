/**
 * Landfall nodes as child processes (`node bin/landfall.js serve`, the compiled CLI: run
 * `npm run build:ts` first, as `npm test` does), joined through NATS (`--nats`, `--node-name`),
 * all pointed at one chain (`--rpc`/`--ws`, e.g. `startChildLocalnet`). Each node is its own
 * process because the native state (rate buckets, usage counters, overlay, account registry) is
 * process-wide: two nodes in one process would share it. Each keeps its data directory and ports
 * across stop/kill/restart, as a restarted node would.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ClusterHealth } from '../src/cluster/health.js';
import { waitFor } from './localnet.js';
import { freePort } from './nats-cluster.js';
import { tempDir } from './tmp.js';

const ROOT = new URL('../', import.meta.url).pathname;
export const LANDFALL_BIN = join(ROOT, 'bin/landfall.js');
const UP_MS = 40_000;

export interface ClusterNodeHealth {
  status: string;
  cluster?: ClusterHealth;
  [k: string]: unknown;
}

export interface ClusterNode {
  readonly name: string;
  /** http://127.0.0.1:<port> (the same port across restarts). */
  readonly url: string;
  readonly dataDir: string;
  /** Everything the current process wrote on stdout and stderr. */
  output(): string;
  /** Whether the process is running. */
  running(): boolean;
  /** The current process's pid (null when not running): the cluster bench reads its CPU time. */
  pid(): number | null;
  /** SIGKILL (kill -9); resolves once the process is gone. */
  kill(): Promise<void>;
  /** SIGTERM (a clean shutdown); resolves once the process exited. */
  stop(): Promise<void>;
  /** SIGSTOP: the process freezes (a GC pause, a frozen VM), its sockets stay open. */
  pause(): void;
  /** SIGCONT after `pause`. */
  resume(): void;
  /** Start again with the same name, data directory and port; resolves once /health is 200. */
  restart(): Promise<void>;
  /** GET /health (the details: no metrics token is set). */
  health(): Promise<ClusterNodeHealth>;
}

export interface ClusterNodesOptions {
  /** NATS client URLs every node is given (none: single nodes, no cluster). */
  nats: string[];
  rpcUrl: string;
  wsUrl: string;
  /** Extra config-file keys for every node (plans, lamportsPerPoint, ingressThreads, …). */
  config?: Record<string, unknown>;
  /** Replicas of the cluster's stream and buckets (default: one per NATS server, at most 3). */
  replicas?: number;
  /** Extra arguments, environment and Node options of node `name` (its NATS credentials, TLS files; a profiler). */
  nodeArgs?: (name: string) => { args?: string[]; env?: Record<string, string>; execArgv?: string[] };
}

export interface ClusterNodes {
  readonly nodes: ClusterNode[];
  /** Start one more node (an empty data directory unless `dataDir` is given). */
  add(name: string, dataDir?: string): Promise<ClusterNode>;
  /** `landfall <args>` with `--nats` of this cluster (the admin CLI's KV mode); resolves with stdout. */
  cli(...args: string[]): Promise<string>;
  /** Kill every node and remove the data directories. */
  close(): Promise<void>;
}

/** Start `names.length` nodes in parallel; resolves once every one answers /health with 200. */
export async function startClusterNodes(names: string[], o: ClusterNodesOptions): Promise<ClusterNodes> {
  const tmp = tempDir('landfall-nodes-');
  const nodes: ClusterNode[] = [];
  const config = join(tmp.dir, 'config.json');
  writeFileSync(config, JSON.stringify({ ingressThreads: 1, logLevel: 'info', ...o.config }), { mode: 0o600 }); // it may hold NATS secrets: not world-readable
  const replicas = String(o.replicas ?? Math.min(3, o.nats.length));

  async function add(name: string, dataDir = join(tmp.dir, name)): Promise<ClusterNode> {
    const port = await freePort();
    let child: ChildProcess | null = null;
    let out = '';
    const start = async () => {
      out = '';
      const args = [LANDFALL_BIN, 'serve', '--port', String(port), '--data', dataDir, '--config', config, '--rpc', o.rpcUrl, '--ws', o.wsUrl];
      // No NATS servers: a single node (the cluster bench's baseline), exactly as `npm start` runs.
      if (o.nats.length > 0) args.push('--nats', o.nats.join(','), '--node-name', name, '--nats-replicas', replicas);
      const extra = o.nodeArgs?.(name) ?? {};
      const proc = spawn(process.execPath, [...(extra.execArgv ?? []), ...args, ...(extra.args ?? [])], { stdio: ['ignore', 'pipe', 'pipe'], cwd: ROOT, env: { ...process.env, ...extra.env } });
      child = proc;
      proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
      await waitFor(
        `node ${name} healthy`,
        async () => {
          if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`node ${name} exited: ${out.slice(-3000)}`);
          if (!out.includes('listening on')) return undefined;
          const r = await fetch(`http://127.0.0.1:${port}/health`).catch(() => null);
          return r?.status === 200 ? true : undefined;
        },
        UP_MS,
      ).catch((e: unknown) => {
        proc.kill('SIGKILL');
        throw e;
      });
    };
    const signal = async (sig: NodeJS.Signals) => {
      const c = child;
      child = null;
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      const exited = new Promise((r) => c.once('exit', r));
      c.kill(sig);
      if (sig !== 'SIGKILL') c.kill('SIGCONT'); // a paused process handles the signal only once running
      await exited;
    };
    const node: ClusterNode = {
      name,
      url: `http://127.0.0.1:${port}`,
      dataDir,
      output: () => out,
      running: () => child !== null && child.exitCode === null && child.signalCode === null,
      pid: () => child?.pid ?? null,
      kill: () => signal('SIGKILL'),
      stop: () => signal('SIGTERM'),
      pause: () => void child?.kill('SIGSTOP'),
      resume: () => void child?.kill('SIGCONT'),
      restart: start,
      async health() {
        const r = await fetch(`http://127.0.0.1:${port}/health`);
        return (await r.json()) as ClusterNodeHealth;
      },
    };
    nodes.push(node); // in the order asked, whichever starts first
    await start();
    return node;
  }

  try {
    await Promise.all(names.map((n) => add(n)));
  } catch (e) {
    for (const n of nodes) await n.kill();
    tmp.cleanup();
    throw e;
  }
  return {
    nodes,
    add,
    async cli(...args: string[]) {
      const { stdout } = await promisify(execFile)(process.execPath, [LANDFALL_BIN, ...args, '--nats', o.nats.join(','), '--nats-replicas', replicas], { cwd: ROOT });
      return stdout;
    },
    async close() {
      for (const n of nodes) await n.kill();
      tmp.cleanup();
    },
  };
}

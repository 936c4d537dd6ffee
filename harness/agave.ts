/**
 * A real Agave test validator (`solana-test-validator`, Agave 4.2.2) for the Agave suite, the
 * differential test and the race bench: where its binary is, and one started on a temporary ledger
 * with ports of its own (loopback only), so it never collides with the local cluster, another
 * validator or another engineer's run.
 *
 * The binary: $LANDFALL_AGAVE_VALIDATOR (`.ci/run` sets it to the validator CI's machine
 * provides), else the cache `npm run test:agave` builds into
 * (`.cache/agave/<version>/bin/`), else `solana-test-validator` on PATH — found by
 * scripts/agave-validator.mjs, which also builds it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { createSocket } from 'node:dgram';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AGAVE_CACHE_BIN, AGAVE_VERSION, agaveMissingReason, findAgaveValidator } from '../scripts/agave-validator.mjs';

export { AGAVE_CACHE_BIN, AGAVE_VERSION, agaveMissingReason, findAgaveValidator };

export interface AgaveOptions {
  /** The binary; default findAgaveValidator(). */
  binary?: string;
  /** `--slots-per-epoch` (genesis; ignored on restart). */
  slotsPerEpoch?: number;
  /** `--ticks-per-slot` (genesis). */
  ticksPerSlot?: number;
  /** More arguments, passed as they are. */
  extraArgs?: string[];
  /** Bound on the wait for the validator to be up (RPC healthy, a confirmed slot, its TPU QUIC advertised). Default 60 s. */
  readyTimeoutMs?: number;
}

export interface AgavePorts {
  rpc: number;
  /** PubSub: always rpc + 1 (Agave's rule). */
  ws: number;
  faucet: number;
  gossip: number;
  /** `--dynamic-port-range` [from, to): TVU, TPU, TPU QUIC, repair… */
  dynamic: [number, number];
}

export interface AgaveValidator {
  readonly binary: string;
  readonly rpcUrl: string;
  readonly wsUrl: string;
  readonly faucet: string;
  readonly ports: AgavePorts;
  /** The temporary ledger (removed by stop()). */
  readonly ledger: string;
  /** The validator's identity (leader of every slot) and its TPU QUIC address, per getClusterNodes. */
  readonly identity: string;
  readonly tpuQuic: string;
  /** Process id of the running validator (changes on restart); null while it is down. */
  pid(): number | null;
  /** Date.now() when the validator was last seen ready. */
  readonly upAt: number;
  /**
   * Signal the process (default SIGKILL: no socket closed politely) and resolve with Date.now()
   * once it is reaped. The ledger is kept, for restart().
   */
  kill(signal?: NodeJS.Signals): Promise<number>;
  /** Start it again on the same ledger and ports (killing it first if it runs); resolves once ready. */
  restart(): Promise<void>;
  /** Kill it (if running) and remove the ledger. Idempotent. */
  stop(): Promise<void>;
  /** The last output of the process (stdout and stderr), for failure messages. */
  output(): string;
}

const DYNAMIC_WIDTH = 60; // Agave 4.2 binds ~17 ports of the dynamic range for one node; room to spare.
const BLOCK = DYNAMIC_WIDTH + 4; // gossip, dynamic range, rpc, ws, faucet
// Below Linux's ephemeral range (32768+), so an outgoing connection's local port cannot take one of ours.
const PORT_FLOOR = 10_000;
const PORT_CEIL = 32_000;

function tcpFree(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen({ port, host, exclusive: true }, () => s.close(() => resolve(true)));
  });
}

function udpFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createSocket('udp4');
    s.once('error', () => {
      s.close();
      resolve(false);
    });
    s.bind(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** A block of BLOCK consecutive ports free for TCP (loopback and any address: Agave's RPC binds 0.0.0.0) and UDP. */
async function freeBlock(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = PORT_FLOOR + Math.floor(Math.random() * ((PORT_CEIL - PORT_FLOOR - BLOCK) / BLOCK)) * BLOCK;
    let ok = true;
    for (let p = base; ok && p < base + BLOCK; p++) ok = (await tcpFree(p, '0.0.0.0')) && (await udpFree(p));
    if (ok) return base;
  }
  throw new Error(`no block of ${BLOCK} free ports found between ${PORT_FLOOR} and ${PORT_CEIL}`);
}

function portsAt(base: number): AgavePorts {
  const rpc = base + 1 + DYNAMIC_WIDTH;
  return { gossip: base, dynamic: [base + 1, base + 1 + DYNAMIC_WIDTH], rpc, ws: rpc + 1, faucet: rpc + 2 };
}

async function rpcCall(url: string, method: string, params?: unknown[]): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, ...(params && { params }) }),
    signal: AbortSignal.timeout(2_000),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;
/** A validator must not outlive the test process (a worker torn down, an uncaught error). */
function killOnExit(child: ChildProcess): void {
  live.add(child);
  child.once('exit', () => live.delete(child));
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const c of live) c.kill('SIGKILL');
  });
}

interface Running {
  child: ChildProcess;
  exited: Promise<number>;
  exitedAt: () => number | null;
}

/**
 * Start `solana-test-validator` on a fresh temporary ledger with free ports, `--quiet`; resolves once
 * RPC answers healthy, a slot is confirmed and getClusterNodes advertises its TPU QUIC address
 * (bounded by `readyTimeoutMs`). A start that fails because a port was taken meanwhile is retried on
 * another block, at most 3 times.
 */
export async function startAgaveValidator(opts: AgaveOptions = {}): Promise<AgaveValidator> {
  const binary = opts.binary ?? findAgaveValidator();
  if (!binary) throw new Error(agaveMissingReason() ?? 'no solana-test-validator');
  const readyTimeoutMs = opts.readyTimeoutMs ?? 60_000;
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const ledger = mkdtempSync(join(tmpdir(), 'landfall-agave-'));
    const ports = portsAt(await freeBlock());
    try {
      return await launch(binary, ledger, ports, opts, readyTimeoutMs);
    } catch (e) {
      rmSync(ledger, { recursive: true, force: true });
      lastError = e;
    }
  }
  throw lastError;
}

async function launch(binary: string, ledger: string, ports: AgavePorts, opts: AgaveOptions, readyTimeoutMs: number): Promise<AgaveValidator> {
  const rpcUrl = `http://127.0.0.1:${ports.rpc}`;
  const wsUrl = `ws://127.0.0.1:${ports.ws}`;
  let out = '';
  const genesisArgs = [
    ...(opts.slotsPerEpoch !== undefined ? ['--slots-per-epoch', String(opts.slotsPerEpoch)] : []),
    ...(opts.ticksPerSlot !== undefined ? ['--ticks-per-slot', String(opts.ticksPerSlot)] : []),
  ];
  const args = (reset: boolean): string[] => [
    '--ledger', ledger,
    '--bind-address', '127.0.0.1',
    '--rpc-port', String(ports.rpc),
    '--faucet-port', String(ports.faucet),
    '--gossip-port', String(ports.gossip),
    '--dynamic-port-range', `${ports.dynamic[0]}-${ports.dynamic[1]}`,
    '--quiet',
    ...(reset ? ['--reset', ...genesisArgs] : []),
    ...(opts.extraArgs ?? []),
  ];

  let running: Running | null = null;
  const spawnOne = (reset: boolean): Running => {
    const child = spawn(binary, args(reset), { cwd: ledger, stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (d: Buffer) => (out = (out + d.toString()).slice(-8_000));
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    let exitedAt: number | null = null;
    const exited = new Promise<number>((resolve) =>
      child.once('exit', () => {
        exitedAt = Date.now();
        resolve(exitedAt);
      }),
    );
    child.once('error', (e) => (out += `\nspawn error: ${e.message}`));
    killOnExit(child);
    return { child, exited, exitedAt: () => exitedAt };
  };

  const waitReady = async (r: Running): Promise<{ identity: string; tpuQuic: string }> => {
    const deadline = Date.now() + readyTimeoutMs;
    let last = 'no answer yet';
    for (;;) {
      if (r.exitedAt() !== null) throw new Error(`solana-test-validator exited before it was up: ${out.trim().slice(-2_000)}`);
      try {
        if ((await rpcCall(rpcUrl, 'getHealth')) === 'ok' && ((await rpcCall(rpcUrl, 'getSlot', [{ commitment: 'confirmed' }])) as number) >= 1) {
          const nodes = (await rpcCall(rpcUrl, 'getClusterNodes')) as { pubkey: string; tpuQuic?: string | null }[];
          const node = nodes.find((n) => n.tpuQuic);
          if (node) return { identity: node.pubkey, tpuQuic: node.tpuQuic! };
          last = 'getClusterNodes advertises no tpuQuic';
        } else last = 'not healthy or no confirmed slot yet';
      } catch (e) {
        last = (e as Error).message;
      }
      if (Date.now() > deadline) {
        r.child.kill('SIGKILL');
        await r.exited;
        throw new Error(`solana-test-validator not up after ${readyTimeoutMs} ms (${last}): ${out.trim().slice(-2_000)}`);
      }
      await new Promise((res) => setTimeout(res, 100));
    }
  };

  running = spawnOne(true);
  const { identity, tpuQuic } = await waitReady(running);
  let upAt = Date.now();
  let stopped = false;

  const kill = async (signal: NodeJS.Signals = 'SIGKILL'): Promise<number> => {
    const r = running;
    if (!r) return Date.now();
    if (r.exitedAt() === null) r.child.kill(signal);
    const at = await r.exited;
    running = null;
    return at;
  };

  return {
    binary,
    rpcUrl,
    wsUrl,
    faucet: `127.0.0.1:${ports.faucet}`,
    ports,
    ledger,
    identity,
    tpuQuic,
    pid: () => (running && running.exitedAt() === null ? (running.child.pid ?? null) : null),
    get upAt() {
      return upAt;
    },
    kill,
    async restart() {
      if (stopped) throw new Error('restart() after stop()');
      await kill();
      running = spawnOne(false);
      await waitReady(running);
      upAt = Date.now();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await kill();
      if (existsSync(ledger)) rmSync(ledger, { recursive: true, force: true });
    },
    output: () => out,
  };
}

/**
 * A cluster of `nats-server` processes with JetStream, joined by routes, on loopback with free
 * ports — for `landfall cluster-demo` and the multi-node tests and bench
 * (`harness/nats-cluster.ts`). Each server keeps its ports and store directory across
 * stop/restart, as a restarted server would. The binary is the pinned one from
 * `scripts/nats-server.mjs`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export interface NatsServers {
  /** Client URL of each server (nats://127.0.0.1:port). */
  readonly urls: string[];
  /** Stop server `i` (SIGTERM: a clean shutdown); resolves once it exited. */
  stop(i: number): Promise<void>;
  /** SIGKILL server `i`; resolves once it exited. */
  kill(i: number): Promise<void>;
  /** Start server `i` again (same ports, same store); resolves once it is ready. */
  restart(i: number): Promise<void>;
  /** Tell server `i` to read its config file again (SIGHUP: users and permissions change live). */
  reload(i: number): void;
  /** Freeze server `i` (SIGSTOP: a hung VM or disk; its sockets stay open and answer nothing). */
  pause(i: number): void;
  /** Let a frozen server `i` run again (SIGCONT). */
  resume(i: number): void;
  /** Names of the clients connected to server `i` now (its monitoring endpoint's `connz`). */
  clients(i: number): Promise<string[]>;
  /** Kill every server. */
  close(): Promise<void>;
}

/**
 * The first port the kernel hands out for port 0 and for outgoing connections (Linux's
 * `ip_local_port_range`; 32768 where it cannot be read).
 */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 2048 ? low : 32768;
  } catch {
    return 32768;
  }
}

const PORT_FLOOR = 10_000;

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/**
 * A TCP port free on 127.0.0.1 now, chosen below the kernel's ephemeral range. A port from
 * `listen(0)` is in that range, so between our close and the server's bind the kernel may give it
 * to anyone's outgoing connection or port-0 listener — and a server restarted on its old port
 * meets the same race again. Below the range only another explicit choice can collide
 * (`startNatsServers` starts again on fresh ports when that happens).
 */
export async function freePort(): Promise<number> {
  const high = ephemeralLow() - 1;
  for (let i = 0; i < 200; i++) {
    const port = PORT_FLOOR + Math.floor(Math.random() * (high - PORT_FLOOR));
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port on 127.0.0.1 between ${PORT_FLOOR} and ${high}`);
}

const READY_MS = 20_000;

/**
 * Start `n` servers of `bin` (JetStream, cluster `landfall`, every server routed to every
 * other), storing under `storeDir`/s<i>; resolves once each says it is ready (bounded).
 * `configFile` (optional) is a nats-server config each reads first (users, permissions, TLS);
 * `extraArgs` more flags (a test that proxies a node's connections gives `--no_advertise`, so the
 * servers do not tell it their own addresses to reconnect to); `routesOf` the `--routes` of
 * server `i` (a test that partitions the servers routes them through proxies it can cut).
 */
export async function startNatsServers(
  n: number,
  bin: string,
  storeDir: string,
  configFile?: string,
  extraArgs: string[] = [],
  routesOf?: (i: number, routePorts: number[]) => string,
): Promise<NatsServers> {
  const clientPorts: number[] = [];
  const routePorts: number[] = [];
  const monitorPorts: number[] = [];
  const choosePorts = async () => {
    const taken = new Set<number>();
    const pick = async () => {
      for (;;) {
        const port = await freePort();
        if (!taken.has(port)) {
          taken.add(port);
          return port;
        }
      }
    };
    for (let i = 0; i < n; i++) {
      clientPorts[i] = await pick();
      routePorts[i] = await pick();
      monitorPorts[i] = await pick();
    }
  };
  const children: (ChildProcess | null)[] = new Array(n).fill(null);

  async function start(i: number): Promise<void> {
    // With a config file the server keeps its own name (its ID): a name given by flag makes
    // every reload (SIGHUP) fail ("config reload not supported for ServerName").
    const name = configFile ? ['-c', configFile] : ['-n', `nats-${i}`];
    const args = [...extraArgs, ...name, '-js', '-a', '127.0.0.1', '-p', String(clientPorts[i]), '-m', String(monitorPorts[i]), '-sd', join(storeDir, `s${i}`)];
    const routes = routePorts.map((p) => `nats-route://127.0.0.1:${p}`).join(',');
    if (n > 1) args.push('--cluster_name', 'landfall', '--cluster', `nats://127.0.0.1:${routePorts[i]}`, '--routes', routesOf ? routesOf(i, routePorts) : routes);
    const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    children[i] = child;
    let log = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`nats-server ${i} not ready in ${READY_MS} ms: ${log.slice(-2000)}`)), READY_MS);
      child.stderr!.on('data', (d: Buffer) => {
        log += d.toString();
        if (log.includes('Server is ready')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`nats-server ${i} exited (${code}): ${log.slice(-2000)}`));
      });
    });
  }

  async function signal(i: number, sig: NodeJS.Signals): Promise<void> {
    const child = children[i];
    children[i] = null;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(sig);
    if (sig !== 'SIGKILL') child.kill('SIGCONT'); // a paused process handles the signal only once running
    await exited;
  }

  const closeAll = async () => {
    for (let i = 0; i < n; i++) await signal(i, 'SIGKILL');
  };
  // Another process may have chosen one of our ports between the check and the bind (rare: see
  // `freePort`); then every server starts again on fresh ports, since each knows the others' routes.
  for (let attempt = 1; ; attempt++) {
    await choosePorts();
    try {
      await Promise.all(clientPorts.map((_, i) => start(i)));
      break;
    } catch (e) {
      await closeAll();
      if (attempt >= 3 || !String((e as Error).message).includes('address already in use')) throw e;
      for (let i = 0; i < n; i++) rmSync(join(storeDir, `s${i}`), { recursive: true, force: true });
    }
  }
  return {
    urls: clientPorts.map((p) => `nats://127.0.0.1:${p}`),
    stop: (i) => signal(i, 'SIGTERM'),
    kill: (i) => signal(i, 'SIGKILL'),
    restart: (i) => start(i),
    reload: (i) => void children[i]?.kill('SIGHUP'),
    pause: (i) => void children[i]?.kill('SIGSTOP'),
    resume: (i) => void children[i]?.kill('SIGCONT'),
    async clients(i) {
      const r = await fetch(`http://127.0.0.1:${monitorPorts[i]}/connz?limit=4096`);
      const body = (await r.json()) as { connections?: { name?: string }[] };
      return (body.connections ?? []).map((c) => c.name ?? '');
    },
    close: closeAll,
  };
}

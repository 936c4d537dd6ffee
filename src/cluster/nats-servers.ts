/**
 * A cluster of `nats-server` processes with JetStream, joined by routes, on loopback with free
 * ports — for `landfall cluster-demo` and the multi-node tests and bench
 * (`harness/nats-cluster.ts`). Each server keeps its ports and store directory across
 * stop/restart, as a restarted server would. The binary is the pinned one from
 * `scripts/nats-server.mjs`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
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

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
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
  for (let i = 0; i < n; i++) {
    clientPorts.push(await freePort());
    routePorts.push(await freePort());
    monitorPorts.push(await freePort());
  }
  const routes = routePorts.map((p) => `nats-route://127.0.0.1:${p}`).join(',');
  const children: (ChildProcess | null)[] = new Array(n).fill(null);

  async function start(i: number): Promise<void> {
    // With a config file the server keeps its own name (its ID): a name given by flag makes
    // every reload (SIGHUP) fail ("config reload not supported for ServerName").
    const name = configFile ? ['-c', configFile] : ['-n', `nats-${i}`];
    const args = [...extraArgs, ...name, '-js', '-a', '127.0.0.1', '-p', String(clientPorts[i]), '-m', String(monitorPorts[i]), '-sd', join(storeDir, `s${i}`)];
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
  try {
    await Promise.all(clientPorts.map((_, i) => start(i)));
  } catch (e) {
    await closeAll();
    throw e;
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

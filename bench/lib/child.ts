/**
 * Benchmark processes. A server under load must not share its event loop with the load generator
 * or with the local cluster (LiteSVM executes every landed transaction on the cluster's event
 * loop), so each runs in its own child process, driven by the suite over the IPC channel.
 *
 * The protocol is one request → one reply: the parent sends `{ id, method, params }`, the child
 * answers `{ id, ok: true, result }` or `{ id, ok: false, error }`. `serialization: 'advanced'`
 * (structured clone) carries bigint and Buffer as they are. A child exits when its parent goes
 * away (the IPC channel disconnects), so an interrupted run leaves nothing behind.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ThreadLoopDelays } from './process-stats.js';

/** Reply timeout of a call unless the caller gives one: long enough for a 1 M-record store fill. */
const DEFAULT_CALL_TIMEOUT_MS = 120_000;
/** How long `close` waits for the child to exit by itself before it is killed. */
const EXIT_GRACE_MS = 10_000;

type Handlers = Record<string, (params: never) => unknown>;

interface Request {
  id: number;
  method: string;
  params: unknown;
}

type Reply = { id: number; ok: true; result: unknown } | { id: number; ok: false; error: string };

export interface Child {
  readonly name: string;
  readonly pid: number;
  /** Call `method` in the child; rejects with the child's error, on timeout, or if it exits. */
  call<T = unknown>(method: string, params?: unknown, timeoutMs?: number): Promise<T>;
  /** Call the child's `close` handler (if any), then wait for it to exit; kill it if it does not. */
  close(): Promise<void>;
}

/**
 * `BENCH_CPU_PROF=<dir>` profiles every benchmark process and its worker threads with V8's
 * sampling profiler (`--cpu-prof`): one `.cpuprofile` per thread (Node names them by pid and
 * thread id) in `<dir>/<process name>/`, written when it exits (Chrome DevTools, speedscope).
 */
function profileArgs(name: string): string[] {
  const dir = process.env['BENCH_CPU_PROF'];
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${join(dir, name)}`] : [];
}

/**
 * Preloads for the processes under test: `thread-names.cjs` names their threads for the CPU
 * breakdown (`proc-cpu.ts`); `loop-delay.cjs` makes each worker thread measure its own event-loop
 * delay (read with the built-in `loopDelays` call, see `serveChild`).
 */
export const INSTRUMENT = ['thread-names.cjs', 'loop-delay.cjs'].flatMap((f) => ['--require', fileURLToPath(new URL(`./${f}`, import.meta.url))]);

/**
 * Start `entry` (a module that calls `serveChild`) in a new Node process under the same loader
 * (`--import tsx`, inherited from this process's exec arguments), with `execArgv` added, and
 * wait until it is ready.
 */
export async function spawnChild(name: string, entry: URL, execArgv: string[] = []): Promise<Child> {
  const proc: ChildProcess = fork(fileURLToPath(entry), [], {
    execArgv: [...process.execArgv, ...execArgv, ...profileArgs(name)],
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  let nextId = 1;
  let exited: string | null = null;
  const exit = new Promise<void>((resolve) => {
    proc.once('exit', (code, signal) => {
      exited = `${name} exited (${signal ?? `code ${code}`})`;
      for (const p of pending.values()) {
        clearTimeout(p.timer);
        p.reject(new Error(exited));
      }
      pending.clear();
      resolve();
    });
  });
  const ready = new Promise<void>((resolve, reject) => {
    proc.once('error', reject);
    void exit.then(() => reject(new Error(exited ?? `${name} exited`)));
    proc.on('message', (m: Reply | { ready: true }) => {
      if ('ready' in m) return resolve();
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      clearTimeout(p.timer);
      if (m.ok) p.resolve(m.result);
      else p.reject(new Error(`${name}: ${m.error}`));
    });
  });
  await ready;

  const call = <T>(method: string, params?: unknown, timeoutMs = DEFAULT_CALL_TIMEOUT_MS): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      if (exited !== null) return reject(new Error(exited));
      const id = nextId++;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`${name}.${method} did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
      proc.send({ id, method, params } satisfies Request);
    });

  return {
    name,
    pid: proc.pid!,
    call,
    async close() {
      if (exited !== null) return;
      await call('close', undefined, EXIT_GRACE_MS).catch(() => undefined);
      proc.disconnect();
      const timer = setTimeout(() => proc.kill('SIGKILL'), EXIT_GRACE_MS);
      await exit;
      clearTimeout(timer);
    },
  };
}

/**
 * In a child: answer the parent's calls with `handlers`. A `close` handler, if given, runs before
 * the process exits on the parent's disconnect; a handler's exception is sent back as the error.
 *
 * Every child also answers `loopDelays` (`{ op: 'reset' }`, then `{ op: 'read' }` →
 * `ThreadLoopDelay[]`): the event-loop delay of its main thread and of each worker thread
 * running the `loop-delay.cjs` preload, since the reset. Measuring starts at the first call.
 */
export function serveChild(handlers: Handlers): void {
  if (!process.send) throw new Error('serveChild must run in a process started by spawnChild');
  const send = process.send.bind(process);
  let delays: ThreadLoopDelays | null = null;
  const builtIn: Handlers = {
    loopDelays: ({ op }: { op: 'reset' | 'read' }) => {
      delays ??= new ThreadLoopDelays();
      return op === 'reset' ? delays.reset() : delays.read();
    },
  };
  process.on('message', (m: Request) => {
    const handler = handlers[m.method] ?? builtIn[m.method];
    const reply = (r: Reply): void => {
      if (process.connected) send(r);
    };
    if (!handler) {
      reply({ id: m.id, ok: false, error: `unknown method ${m.method}` });
      return;
    }
    Promise.resolve()
      .then(() => handler(m.params as never))
      .then(
        (result) => reply({ id: m.id, ok: true, result: result ?? null }),
        (e: unknown) => reply({ id: m.id, ok: false, error: e instanceof Error ? (e.stack ?? e.message) : String(e) }),
      );
  });
  process.once('disconnect', () => process.exit(0));
  send({ ready: true });
}

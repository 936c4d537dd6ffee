/**
 * CPU time of another process, read from `/proc` by the suite (no call into the process): the
 * whole process (`/proc/<pid>/stat`, which keeps the time of threads that have exited) and each
 * of its threads (`/proc/<pid>/task/<tid>/stat` and `comm`), in clock ticks (`getconf CLK_TCK`,
 * normally 100: a resolution of 10 ms per thread, so phases are measured whole, over seconds).
 *
 * Threads are grouped by name. Node 20 names none of its own (every one is `node`), so the bench
 * hosts preload `thread-names.cjs`, which names the V8 platform threads, the libuv pool and each
 * Node worker thread; the addon's tokio threads name themselves (`landfall-quic`, and `landfall-first`
 * for first sends); the process's
 * main thread (tid = pid) is `main`.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** ns the calling thread has run on a CPU (`/proc/thread-self/schedstat`: exact, not in ticks). */
export function threadCpuNs(): number {
  return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]);
}

/** µs of CPU the whole calling process has used, user and system (`process.cpuUsage`). */
export function processCpuUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

let clkTck: number | null = null;

/** Clock ticks per second of utime/stime (`getconf CLK_TCK`; 100 if that cannot be run). */
export function clockTicks(): number {
  if (clkTck === null) {
    try {
      clkTck = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clkTck = 100;
    }
  }
  return clkTck;
}

/** utime + stime (fields 14 and 15) of a stat line; `comm` may hold spaces and parentheses. */
function statTicks(stat: string): number {
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // f[0] is field 3 (state), so field n is f[n - 3].
  return Number(f[11]) + Number(f[12]);
}

export interface ThreadTicks {
  tid: number;
  name: string;
  ticks: number;
  /** Times the thread blocked and was woken again (`voluntary_ctxt_switches` of its `status`). */
  wakeups: number;
}

/** `voluntary_ctxt_switches` of a `/proc/.../status` text (0 if missing). */
function wakeupsOf(status: string): number {
  const m = /^voluntary_ctxt_switches:\s+(\d+)$/m.exec(status);
  return m ? Number(m[1]) : 0;
}

/** One reading of a process: its total and each live thread. */
export interface CpuReading {
  pid: number;
  at: number;
  ticks: number;
  threads: ThreadTicks[];
}

/** Read process `pid` now. Throws if it is gone. */
export function readCpu(pid: number): CpuReading {
  const at = performance.now();
  const ticks = statTicks(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  const threads: ThreadTicks[] = [];
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      const tid = Number(t);
      const name = tid === pid ? 'main' : readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim();
      const ticks = statTicks(readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8'));
      threads.push({ tid, name, ticks, wakeups: wakeupsOf(readFileSync(`/proc/${pid}/task/${t}/status`, 'utf8')) });
    } catch {
      // The thread exited between the listing and the read: its time is in the process total.
    }
  }
  return { pid, at, ticks, threads };
}

/** CPU used between two readings of one process. */
export interface CpuUsage {
  /** All threads, ms (10 ms resolution at 100 ticks/s). */
  totalMs: number;
  wallMs: number;
  /** totalMs ÷ wallMs. */
  cores: number;
  /** By thread name: ms, how many threads of that name ran, and how often they were woken. */
  byName: Record<string, { ms: number; threads: number; wakeups: number }>;
  /** Time of threads that exited during the window (in the total, in no name). */
  exitedMs: number;
}

export function cpuBetween(a: CpuReading, b: CpuReading): CpuUsage {
  const msPerTick = 1000 / clockTicks();
  const before = new Map(a.threads.map((t) => [t.tid, t]));
  const byName: CpuUsage['byName'] = {};
  let named = 0;
  for (const t of b.threads) {
    const d = t.ticks - (before.get(t.tid)?.ticks ?? 0);
    const g = (byName[t.name] ??= { ms: 0, threads: 0, wakeups: 0 });
    g.ms += d * msPerTick;
    g.threads++;
    g.wakeups += t.wakeups - (before.get(t.tid)?.wakeups ?? 0);
    named += d;
  }
  const total = b.ticks - a.ticks;
  const wallMs = b.at - a.at;
  return {
    totalMs: total * msPerTick,
    wallMs: Math.round(wallMs),
    cores: wallMs > 0 ? Math.round(((total * msPerTick) / wallMs) * 100) / 100 : 0,
    byName,
    exitedMs: Math.max(0, total - named) * msPerTick,
  };
}

/**
 * CPU pinning for the per-core throughput measurement: `taskset -a -p -c <cpus> <pid>` sets the
 * affinity of every thread a process has now; threads it starts later inherit it from the thread
 * that starts them, so a pinned process stays on its cores.
 */
import { execFileSync } from 'node:child_process';
import os from 'node:os';

/** Pin every thread of `pid` to `cpus` (a taskset list: "0", "1", "0-1"). */
export function pin(pid: number, cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

/** Every core of the machine, as a taskset list. */
export function allCores(): string {
  return `0-${os.cpus().length - 1}`;
}

/** Whether `taskset` can be run here. */
export function canPin(): boolean {
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

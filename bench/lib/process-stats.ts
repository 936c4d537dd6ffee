/**
 * What a benchmark process reports about itself: resident memory, CPU time and event-loop delay.
 *
 * Resident memory of the current process, split the way Linux accounts it. LMDB reads go through
 * a memory map, so the pages of the store a process has touched count as file-backed resident
 * memory (`RssFile`): page cache the kernel can drop, not heap; the V8 and native heaps are in
 * `RssAnon`. The total (`VmRSS`) is what a resident-memory target is checked against.
 *
 * CPU time is reported beside it, so a run shows which process had the cores; event-loop delay
 * shows how long the process's main thread was busy with something else when a timer was due
 * (a request arriving then waits as long).
 */
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

export interface Memory {
  rssMiB: number;
  rssAnonMiB: number;
  rssFileMiB: number;
  heapUsedMiB: number;
}

function statusKiB(status: string, field: string): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
  return m ? Number(m[1]) : Number.NaN;
}

/** CPU time this process has used so far (user + system, all threads), ms. */
export function cpuMs(): number {
  const u = process.cpuUsage();
  return Math.round((u.user + u.system) / 1000);
}

export function memory(): Memory {
  const mib = (kib: number): number => Math.round((kib / 1024) * 10) / 10;
  let status = '';
  try {
    status = readFileSync('/proc/self/status', 'utf8');
  } catch {
    // Not Linux: only the total from Node is known.
  }
  return {
    rssMiB: status ? mib(statusKiB(status, 'VmRSS')) : mib(process.memoryUsage.rss() / 1024),
    rssAnonMiB: mib(statusKiB(status, 'RssAnon')),
    rssFileMiB: mib(statusKiB(status, 'RssFile')),
    heapUsedMiB: mib(process.memoryUsage().heapUsed / 1024),
  };
}

export interface LoopDelay {
  p50Us: number;
  p99Us: number;
  maxUs: number;
}

/** Event-loop delay since the last `reset`, sampled every millisecond. */
export class LoopDelayMonitor {
  private readonly h = monitorEventLoopDelay({ resolution: 1 });
  constructor() {
    this.h.enable();
  }
  reset(): void {
    this.h.reset();
  }
  read(): LoopDelay {
    const us = (ns: number): number => Math.round(ns / 1000);
    return { p50Us: us(this.h.percentile(50)), p99Us: us(this.h.percentile(99)), maxUs: us(this.h.max) };
  }
}

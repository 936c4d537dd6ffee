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
import { BroadcastChannel } from 'node:worker_threads';

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

/**
 * How often the event-loop delay monitors sample, ms. Each sample is a timer wake-up of the
 * measured thread: at 1 ms the monitors alone woke the main and ingress threads ~820 times a
 * second and cost an idle service 29–49 ms of CPU a second (~80 µs of every send at 400 req/s),
 * which the benchmark then charged to the server. At 10 ms they cost a tenth of that; a delay is
 * still measured to the microsecond, only sampled less often. `loop-delay.cjs` uses the same.
 */
export const LOOP_DELAY_RESOLUTION_MS = 10;

/** Event-loop delay since the last `reset`, sampled every `LOOP_DELAY_RESOLUTION_MS`. */
export class LoopDelayMonitor {
  private readonly h = monitorEventLoopDelay({ resolution: LOOP_DELAY_RESOLUTION_MS });
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

/** One thread's event-loop delay: the main thread's, or a worker's (`loop-delay.cjs`). */
export interface ThreadLoopDelay extends LoopDelay {
  /** `main`, or `worker <threadId>`. */
  thread: string;
  /** Linux thread id (0 if unknown). */
  tid: number;
}

/** The channel `loop-delay.cjs` answers on (the same name there). */
const LOOP_DELAY_CHANNEL = 'landfall-bench-loop-delay';
/** How long a reset waits for the workers' acknowledgements (the server is idle then). */
const ACK_MS = 200;
/** How long a read waits for every worker that acknowledged the reset (it may still be busy). */
const READ_TIMEOUT_MS = 2000;

/**
 * The event-loop delay of every thread of this process that has an event loop: the main thread
 * (measured here) and each worker thread running the `loop-delay.cjs` preload (asked over a
 * `BroadcastChannel`). A read answers for the workers that acknowledged the last reset.
 */
export class ThreadLoopDelays {
  private readonly main = new LoopDelayMonitor();
  private readonly channel = new BroadcastChannel(LOOP_DELAY_CHANNEL);
  private readonly tid: number;
  private workers = new Set<number>();
  private nextId = 1;
  private listener: ((m: Record<string, unknown>) => void) | null = null;

  constructor() {
    this.channel.unref();
    this.channel.onmessage = (e: unknown) => this.listener?.((e as { data: Record<string, unknown> }).data);
    this.tid = process.pid;
  }

  /** Post `op` and collect the answers until `done` says so or `ms` passed. */
  private ask(op: 'reset' | 'read', ms: number, done: (answers: Record<string, unknown>[]) => boolean): Promise<Record<string, unknown>[]> {
    const id = this.nextId++;
    const answers: Record<string, unknown>[] = [];
    return new Promise((resolve) => {
      const finish = (): void => {
        clearTimeout(timer);
        this.listener = null;
        resolve(answers);
      };
      const timer = setTimeout(finish, ms);
      this.listener = (m) => {
        if (m['id'] !== id || (m['op'] !== 'ack' && m['op'] !== 'delay')) return;
        answers.push(m);
        if (done(answers)) finish();
      };
      this.channel.postMessage({ op, id });
    });
  }

  async reset(): Promise<void> {
    this.main.reset();
    const acks = await this.ask('reset', ACK_MS, () => false);
    this.workers = new Set(acks.map((a) => Number(a['threadId'])));
  }

  async read(): Promise<ThreadLoopDelay[]> {
    const out: ThreadLoopDelay[] = [{ thread: 'main', tid: this.tid, ...this.main.read() }];
    if (this.workers.size === 0) return out;
    const answers = await this.ask('read', READ_TIMEOUT_MS, (a) => a.length >= this.workers.size);
    for (const a of answers.sort((x, y) => Number(x['threadId']) - Number(y['threadId']))) {
      out.push({ thread: `worker ${String(a['threadId'])}`, tid: Number(a['tid']), p50Us: Number(a['p50Us']), p99Us: Number(a['p99Us']), maxUs: Number(a['maxUs']) });
    }
    return out;
  }
}

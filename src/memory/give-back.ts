/**
 * Give memory back after a burst: once the service has gone quiet after a load, hand the C
 * allocator's free pages back to the OS, once.
 *
 * Why: after a burst (200 sends/s for 45 s against throttling leaders, `npm run bench --
 * saturation`) every transaction, trace and queued write is gone, yet the process's anonymous
 * memory stayed 60–130 MiB above where it started. What stayed is capacity, not objects: glibc's
 * malloc keeps the pages the burst freed (its heaps grew 17–26 → 69–88 MiB, given back by
 * nothing until the top of a heap is free), and V8 keeps the pages its heaps grew to. A
 * `malloc_trim(0)` hands malloc's free pages back at once (`native/src/memory.rs`); it walks
 * every arena under its lock, so it runs here, on the main thread's timer, never on a request's
 * path, and only once per quiet period.
 *
 * Signals, all ones the service already has, read once a second: the requests answered on every
 * thread (`RequestCount`), the transactions the tracker still watches and those with rebroadcast
 * rounds left. A second is busy when more than `quietRequestsPerSec` requests were answered in it
 * or more than `quietWatched` transactions are still watched or have rounds left; a busy second
 * arms the give-back. Once `quietMs` has passed with no busy second, an armed give-back runs and
 * disarms: the next needs a busy second first. A bot polling one status a second, or a trickle
 * of sends, is quiet; the burst before it is what is given back.
 */
import { procStatus, statusBytes } from './resident.js';

export interface GiveBackOptions {
  /** How long without a busy second before memory is given back (default 5 s). */
  quietMs: number;
  /** Requests a second at or below which the service counts as quiet (default 20). */
  quietRequestsPerSec: number;
  /** Transactions watched or with rounds left at or below which it counts as quiet (default 50). */
  quietWatched: number;
  /** How often the signals are read (default 1 s). */
  checkMs: number;
}

export const GIVE_BACK_DEFAULTS: GiveBackOptions = { quietMs: 5_000, quietRequestsPerSec: 20, quietWatched: 50, checkMs: 1_000 };

export interface GiveBackSignals {
  /** Requests answered so far, every thread (`RequestCount.total`). */
  requests(): number;
  /** Transactions still watched by the tracker or with rebroadcast rounds left. */
  watched(): number;
}

/** One give-back: when, and the process's anonymous memory just before and just after it. */
export interface GaveBack {
  atMs: number;
  /** Whether the allocator released anything (false off glibc, where nothing can be). */
  released: boolean;
  anonBeforeBytes: number | null;
  anonAfterBytes: number | null;
}

export class GiveBack {
  private readonly opts: GiveBackOptions;
  private readonly timer: NodeJS.Timeout;
  private lastRequests: number;
  private lastCheckMs: number;
  private quietSinceMs: number;
  private armed = false;
  /** Give-backs so far, the last one's numbers, and the checks made. */
  count = 0;
  checks = 0;
  last: GaveBack | null = null;

  /**
   * @param signals what the service does, read each `checkMs`
   * @param trim hands the allocator's free pages back, true when some went back (the addon's `trimFreeMemory`)
   * @param onGaveBack told after each give-back (the service logs it)
   * @param clock the time in ms (a test drives `check` with its own)
   */
  constructor(
    private readonly signals: GiveBackSignals,
    private readonly trim: () => boolean,
    private readonly onGaveBack: (g: GaveBack) => void = () => {},
    opts: Partial<GiveBackOptions> = {},
    private readonly clock: () => number = Date.now,
  ) {
    this.opts = { ...GIVE_BACK_DEFAULTS, ...opts };
    this.lastRequests = signals.requests();
    this.lastCheckMs = this.quietSinceMs = clock();
    this.timer = setInterval(() => this.check(), this.opts.checkMs).unref();
  }

  /** Whether a busy second has been seen since the last give-back (or the start). */
  get pending(): boolean {
    return this.armed;
  }

  /** Read the signals and give back if due: each `checkMs` on its timer (a test calls it itself). */
  check(): void {
    const now = this.clock();
    this.checks++;
    const requests = this.signals.requests();
    const answered = (requests - this.lastRequests) >>> 0;
    // The rate over the time since the last check, not over checkMs: a timer late by a busy
    // event loop must not make a load look heavier than it was.
    const perSec = (answered * 1000) / Math.max(1, now - this.lastCheckMs);
    this.lastRequests = requests;
    this.lastCheckMs = now;
    if (perSec > this.opts.quietRequestsPerSec || this.signals.watched() > this.opts.quietWatched) {
      this.armed = true;
      this.quietSinceMs = now;
      return;
    }
    if (!this.armed || now - this.quietSinceMs < this.opts.quietMs) return;
    this.armed = false;
    const anonBeforeBytes = rssAnonBytes();
    const released = this.trim();
    this.count++;
    this.last = { atMs: now, released, anonBeforeBytes, anonAfterBytes: rssAnonBytes() };
    this.onGaveBack(this.last);
  }

  close(): void {
    clearInterval(this.timer);
  }
}

/** The process's resident anonymous memory, null off Linux. */
function rssAnonBytes(): number | null {
  return statusBytes(procStatus(), 'RssAnon');
}

/**
 * Background pruning of status records older than the retention window.
 *
 * Runs on a timer, deletes in slices of `slice` records (one LMDB write transaction each,
 * committed off the main thread) and yields to the event loop between slices, so requests are
 * never blocked behind a large prune.
 */
import type { Store } from './store.js';

export interface RetentionOptions {
  retentionDays: number;
  /** How often to look for expired records. */
  intervalMs?: number;
  /** Records deleted per transaction. */
  slice?: number;
  now?: () => number;
}

export interface Retention {
  /** Prune everything expired now; resolves with the number deleted. */
  runOnce(): Promise<number>;
  stop(): void;
}

export function startRetention(store: Store, opts: RetentionOptions): Retention {
  const interval = opts.intervalMs ?? 60_000;
  const slice = opts.slice ?? 1000;
  const now = opts.now ?? Date.now;
  let running: Promise<number> | null = null;
  let stopped = false;

  const runOnce = (): Promise<number> => {
    if (running) return running;
    running = (async () => {
      const cutoff = now() - opts.retentionDays * 86_400_000;
      let total = 0;
      for (;;) {
        if (stopped) break;
        const n = await store.pruneStatusBefore(cutoff, slice);
        total += n;
        if (n < slice) break;
        await new Promise((r) => setImmediate(r));
      }
      return total;
    })().finally(() => {
      running = null;
    });
    return running;
  };

  const timer = setInterval(() => {
    runOnce().catch((e) => process.stderr.write(`landfall: retention prune failed: ${(e as Error).message}\n`));
  }, interval);
  timer.unref();
  return {
    runOnce,
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}

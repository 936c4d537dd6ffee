/**
 * Background pruning of status records older than the retention window.
 *
 * There is no time index (it cost a table entry per record): each run walks the status table in
 * key order with a cursor, `slice` records at a time (`Store.pruneStatusSlice`: one read pass and,
 * if anything expired, one LMDB write transaction committed off the main thread), and yields to
 * the event loop between slices, so requests are never blocked behind a large prune. A whole
 * run reads every record once, so runs are spaced minutes apart: a record outlives the window
 * by at most one interval plus one run.
 */
import type { Store } from './store.js';

export interface RetentionOptions {
  retentionDays: number;
  /** Pause between two runs (each scans the whole table). */
  intervalMs?: number;
  /** Records read per slice. */
  slice?: number;
  now?: () => number;
}

export interface Retention {
  /** Prune everything expired now; resolves with the number deleted. */
  runOnce(): Promise<number>;
  stop(): void;
}

export function startRetention(store: Store, opts: RetentionOptions): Retention {
  const interval = opts.intervalMs ?? 600_000;
  const slice = opts.slice ?? 2000;
  const now = opts.now ?? Date.now;
  let running: Promise<number> | null = null;
  let stopped = false;

  const runOnce = (): Promise<number> => {
    if (running) return running;
    running = (async () => {
      const cutoff = now() - opts.retentionDays * 86_400_000;
      let total = 0;
      let cursor: Buffer | undefined;
      do {
        if (stopped) break;
        const r = await store.pruneStatusSlice(cutoff, cursor, slice);
        total += r.deleted;
        cursor = r.next;
        await new Promise((r) => setImmediate(r));
      } while (cursor);
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

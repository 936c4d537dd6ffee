/**
 * A worker thread a test talks to by messages: every message it posts is kept in an inbox until
 * the test takes it, in order (`next`) or by a key it carries (`message`). A worker that throws
 * or exits makes every wait that its inbox cannot satisfy fail with why, instead of hanging.
 */
import { Worker } from 'node:worker_threads';

export interface WorkerHandle {
  worker: Worker;
  /** The next message not yet taken. */
  next<T = Record<string, unknown>>(): Promise<T>;
  /** The first message not yet taken that has `key`. */
  message<T = Record<string, unknown>>(key: string): Promise<T>;
  /** The exit code, once the worker has exited. */
  exited: Promise<number>;
}

export function startWorker(entry: URL, workerData: Record<string, unknown>): WorkerHandle {
  const worker = new Worker(entry, { workerData });
  const inbox: Record<string, unknown>[] = [];
  const waiting: Array<() => void> = [];
  let failure: Error | null = null;
  const wake = (): void => waiting.splice(0).forEach((w) => w());
  worker.on('message', (m: Record<string, unknown>) => {
    inbox.push(m);
    wake();
  });
  worker.on('error', (e) => {
    failure ??= e;
    wake();
  });
  const exited = new Promise<number>((resolve) =>
    worker.once('exit', (code) => {
      failure ??= new Error(`worker exited (code ${code}) before answering`);
      wake();
      resolve(code);
    }),
  );
  const take = async <T>(pick: () => number): Promise<T> => {
    for (;;) {
      const i = pick();
      if (i >= 0) return inbox.splice(i, 1)[0] as T;
      if (failure) throw failure;
      await new Promise<void>((r) => waiting.push(r));
    }
  };
  return {
    worker,
    next: () => take(() => (inbox.length > 0 ? 0 : -1)),
    message: (key) => take(() => inbox.findIndex((m) => key in m)),
    exited,
  };
}

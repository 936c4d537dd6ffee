/**
 * The piscina pool that owns QUIC sends. The main thread hands over (targets, bytes) and gets
 * the per-target results back; the sends themselves (and any handshake) happen on the native
 * tokio runtime driven from the workers, so the event loop that serves HTTP never waits on them.
 *
 * The main thread also holds a client handle of its own with the same identity: it shares the
 * process-wide connection cache, and is used only for the cheap calls (pre-warm, peer stats).
 */
import { existsSync } from 'node:fs';
import { BroadcastChannel } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { QuicClient } from '../../native/index.js';
import sendInline, { LATE_RESULTS, type SendTask, type SendTaskResult, type TargetResult } from './send-worker.js';

/**
 * The compiled worker. Under a TypeScript loader (vitest, tsx) this module runs from `src/`,
 * and piscina's worker threads cannot load `.ts`: they run the build in `dist/` (which
 * `npm test` and `npm install` produce first).
 */
function workerFile(): string {
  const here = fileURLToPath(import.meta.url);
  const sibling = here.replace(/send-pool\.(ts|js)$/, 'send-worker.js');
  if (here.endsWith('.js') || existsSync(sibling)) return sibling;
  const built = fileURLToPath(new URL('../../dist/delivery/send-worker.js', import.meta.url));
  if (!existsSync(built)) throw new Error(`send worker not built: run \`npm run build:ts\` (missing ${built})`);
  return built;
}

export interface SendPoolOptions {
  identity: Buffer;
  /** Outcomes of targets that settled after their task had resolved (counted, not awaited). */
  onLate?: (result: TargetResult) => void;
  /**
   * Worker threads (default 2: the sends are asynchronous, two keep up with a core each).
   * 0 runs the same send task on the calling thread instead: the native client is itself
   * asynchronous (its writes happen on its own tokio threads), and `npm run bench -- dispatch`
   * measures what the pool's hand-off costs against that.
   */
  threads?: number;
}

export class SendPool {
  private readonly pool: Piscina<SendTask, SendTaskResult> | null;
  private readonly client: QuicClient;
  private readonly identity: Uint8Array;
  private readonly late: BroadcastChannel;

  constructor(opts: SendPoolOptions) {
    this.identity = new Uint8Array(opts.identity);
    const threads = opts.threads ?? 2;
    this.pool = threads === 0 ? null : new Piscina({
      filename: workerFile(),
      minThreads: threads,
      maxThreads: threads,
      // Tasks are async I/O: many in flight per worker, none blocking it.
      concurrentTasksPerWorker: 256,
      idleTimeout: Infinity,
      // A send task's promise may resolve long after posting: the async notifier suits that.
      atomics: 'async',
    });
    this.client = new QuicClient({ identity: opts.identity });
    this.late = new BroadcastChannel(LATE_RESULTS);
    this.late.onmessage = (e) => opts.onLate?.((e as { data: TargetResult }).data);
    (this.late as unknown as { unref(): void }).unref();
  }

  /** The QUIC identity presented to validators (base58). */
  get identityPubkey(): string {
    return this.client.identity;
  }

  /** Resolves once one target has the stream written, or all failed (see send-worker). */
  send(targets: string[], wire: Buffer): Promise<SendTaskResult> {
    const task: SendTask = { identity: this.identity, targets, wire };
    return this.pool ? this.pool.run(task) : sendInline(task);
  }

  /** Open connections to these TPUs now, so a later send never waits for a handshake. */
  prewarm(targets: string[]): void {
    if (targets.length > 0) this.client.prewarm(targets);
  }

  peerStats(): ReturnType<QuicClient['peerStats']> {
    return this.client.peerStats();
  }

  /** Queue depth and utilisation, for metrics and the dispatch-overhead benchmark. */
  get queued(): number {
    return this.pool?.queueSize ?? 0;
  }

  async close(): Promise<void> {
    await this.pool?.destroy();
    this.late.close();
    this.client.close();
  }
}

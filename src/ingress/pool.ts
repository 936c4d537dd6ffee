/**
 * The ingress threads, seen from the main thread: start N workers listening on one port, feed
 * them the chain snapshot each slot, take their accepted transactions (in batches) to the
 * engine's rebroadcast scheduler and tracker, route status pushes to the workers that hold a
 * stream of that account, and answer `/metrics` with every thread's values added up.
 */
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Engine } from '../delivery/engine.js';
import type { Accepted } from '../delivery/delivery.js';
import { drainHandoff } from '../delivery/handoff-queue.js';
import { handoffClose, handoffOpen } from '../native.js';
import type { StatusRecord } from '../store/records.js';
import type { ClusterHealth } from '../cluster/health.js';
import type { Metrics, MetricsJson } from '../telemetry/metrics.js';
import { RenderedText } from '../telemetry/rendered-text.js';
import type { TipFloorView } from '../tracker/tip-floor.js';
import type { FromWorker, IngressInit, ToWorker } from './messages.js';

/**
 * The compiled worker. Under a TypeScript loader (vitest, tsx) this module runs from `src/`, and
 * a worker thread cannot load `.ts` by itself: it runs the build in `dist/` (which `npm test`
 * and `npm install` produce first).
 */
function workerFile(): string {
  const here = fileURLToPath(import.meta.url);
  const sibling = here.replace(/pool\.(ts|js)$/, 'worker.js');
  if (here.endsWith('.js') || existsSync(sibling)) return sibling;
  const built = fileURLToPath(new URL('../../dist/ingress/worker.js', import.meta.url));
  if (!existsSync(built)) throw new Error(`ingress worker not built: run \`npm run build:ts\` (missing ${built})`);
  return built;
}

interface Thread {
  worker: Worker;
  /** Its native hand-off queue (`handoff-queue.ts`), closed when the thread exits. */
  handoffQueue: number;
  /** Open streams per account on this thread. */
  streams: Map<string, number>;
}

export interface IngressPoolOptions {
  threads: number;
  init: Omit<IngressInit, 'index' | 'port' | 'handoffQueue'>;
  port: number;
  engine: Engine;
  metrics: Metrics;
  /** Accepted on a worker: also tell the main thread's own listeners (service hooks). */
  /** @returns with `stored` (`ackReplication: quorum`), when the cluster stored the batch's records */
  onAccepted?: (records: StatusRecord[], batch: Accepted[], stored: boolean) => void | Promise<void>;
  /** A worker died unexpectedly (it is replaced): for the error log. */
  onWorkerExit?: (index: number, code: number) => void;
}

export class IngressPool {
  private readonly threads: Thread[] = [];
  private metricsIds = 0;
  private readonly metricsWaiting = new Map<number, { left: number; parts: MetricsJson[]; done: (parts: MetricsJson[]) => void }>();
  private unsubscribeChain: (() => void) | null = null;
  /** Every thread's metrics added up, rendered at most once per interval for every scrape. */
  private readonly rendered = new RenderedText(async () => this.opts.metrics.aggregatedText(await this.gather()));
  private closing = false;
  port = 0;

  private constructor(private readonly opts: IngressPoolOptions) {}

  /**
   * Start the workers one after another, all on one port. uWS lets a port be shared
   * (SO_REUSEPORT) only when the first socket was bound to it by number: a socket bound to port 0
   * refuses company. So for port 0 a free port is picked first, then every worker binds it.
   */
  static async start(opts: IngressPoolOptions): Promise<IngressPool> {
    const pool = new IngressPool(opts);
    try {
      let port = opts.port === 0 && opts.threads > 1 ? await freePort(opts.init.config.host) : opts.port;
      for (let i = 0; i < opts.threads; i++) port = await pool.spawn(i, port);
      pool.port = port;
      pool.unsubscribeChain = opts.engine.onSnapshot((snapshot) => pool.broadcast({ type: 'chain', snapshot }));
      return pool;
    } catch (e) {
      await pool.close();
      throw e;
    }
  }

  private spawn(index: number, port: number): Promise<number> {
    const handoffQueue = handoffOpen();
    const init: IngressInit = { ...this.opts.init, index, port, handoffQueue };
    const worker = new Worker(workerFile(), { workerData: init, name: `landfall-ingress-${index}` });
    const thread: Thread = { worker, handoffQueue, streams: new Map() };
    this.threads[index] = thread;
    // The chain view before the first request can arrive.
    const current = this.opts.engine.view.snapshot;
    if (current) worker.postMessage({ type: 'chain', snapshot: { ...current, blockhashes: this.opts.engine.leaders.liveBlockhashes() } } satisfies ToWorker);
    return new Promise((resolve, reject) => {
      let listening = false;
      worker.on('error', (e) => reject(e));
      worker.on('exit', (code) => {
        // Its messages were all delivered before this: what it pushed and never named goes.
        handoffClose(handoffQueue);
        reject(new Error(`ingress thread ${index} exited with code ${code}`));
        // A worker that served and died (a bug: no request can throw out of a handler) is
        // replaced on the same port; its connections are lost, the other threads carry on.
        if (listening && !this.closing) {
          this.opts.onWorkerExit?.(index, code);
          this.spawn(index, this.port).catch((e: Error) => this.opts.onWorkerExit?.(index, -1) ?? void e);
        }
      });
      worker.on('message', (m: FromWorker) => {
        switch (m.type) {
          case 'listening':
            listening = true;
            resolve(m.port);
            break;
          case 'failed':
            reject(new Error(`ingress thread ${index}: ${m.message}`));
            break;
          default:
            this.onMessage(thread, m);
        }
      });
    });
  }

  private onMessage(from: Thread, m: FromWorker): void {
    switch (m.type) {
      case 'accepted': {
        // The payload is on the thread's native queue: the message names its entries.
        const batch = drainHandoff(from.handoffQueue, m.seqs);
        const records: StatusRecord[] = new Array(batch.length);
        for (let i = 0; i < batch.length; i++) records[i] = batch[i]!.record;
        // Before the engine: its tracker may settle one at once (a landing seen before this
        // message), and the hooks (a cluster's status events) must hear the acceptance first.
        const stored = this.opts.onAccepted?.(records, batch, m.stored === true);
        if (m.stored) {
          const signatures = records.map((r) => r.signature);
          const answer = (error: string | null): void => from.worker.postMessage({ type: 'replicated', signatures, error } satisfies ToWorker);
          if (stored) stored.then(() => answer(null), (e: Error) => answer(e.message));
          else answer('not clustered');
        }
        this.opts.engine.acceptedBatch(batch);
        this.publish(records, from);
        break;
      }
      case 'streams':
        from.streams = new Map(m.streams);
        from.worker.postMessage({ type: 'streams-seen', seq: m.seq } satisfies ToWorker);
        break;
      case 'metrics-request':
        void this.metricsText().then((text) => from.worker.postMessage({ type: 'metrics-text', id: m.id, text } satisfies ToWorker));
        break;
      case 'trace-request':
        from.worker.postMessage({ type: 'trace', id: m.id, trace: this.opts.engine.liveTrace(m.signature) } satisfies ToWorker);
        break;
      case 'analytics-request':
        from.worker.postMessage({ type: 'analytics', id: m.id, view: this.opts.engine.analytics.view(m.accountId, m.window) } satisfies ToWorker);
        break;
      case 'metrics': {
        const w = this.metricsWaiting.get(m.id);
        if (!w) break;
        w.parts.push(m.json);
        if (--w.left === 0) {
          this.metricsWaiting.delete(m.id);
          w.done(w.parts);
        }
        break;
      }
    }
  }

  /** Open streams of an account on each thread, in thread order. */
  streamsByThread(accountId: string): number[] {
    return this.threads.map((t) => t.streams.get(accountId) ?? 0);
  }

  /** Forward status changes to the threads holding a stream of their account (except `except`). */
  publish(records: StatusRecord[], except?: Thread): void {
    for (const t of this.threads) {
      if (t === except || t.streams.size === 0) continue;
      const mine = records.filter((r) => t.streams.has(r.accountId));
      if (mine.length > 0) t.worker.postMessage({ type: 'status', records: mine } satisfies ToWorker);
    }
  }

  /** The main thread's tip floor, for `/v1/tip-floor` on every thread (sent once a second). */
  tipFloor(floor: TipFloorView): void {
    this.broadcast({ type: 'tip-floor', floor });
  }

  /** The node's cluster state, for `/health` on every thread. */
  clusterHealth(health: ClusterHealth): void {
    this.broadcast({ type: 'cluster', health });
  }

  /** Every thread opens its log file again (SIGHUP after logrotate). */
  reopenLog(): void {
    this.broadcast({ type: 'reopen-log' });
  }

  /** The `/metrics` text of every thread added up (`RenderedText`: at most once per interval). */
  metricsText(): Promise<string> {
    return this.rendered.get();
  }

  /** Every worker's metric values. */
  gather(): Promise<MetricsJson[]> {
    if (this.threads.length === 0) return Promise.resolve([]);
    const id = this.metricsIds++;
    return new Promise((done) => {
      this.metricsWaiting.set(id, { left: this.threads.length, parts: [], done });
      this.broadcast({ type: 'metrics', id });
    });
  }

  private broadcast(m: ToWorker): void {
    for (const t of this.threads) t.worker.postMessage(m);
  }

  async close(): Promise<void> {
    this.closing = true;
    this.unsubscribeChain?.();
    await Promise.all(
      this.threads.map(
        (t) =>
          new Promise<void>((resolve) => {
            const timer = setTimeout(() => void t.worker.terminate().then(() => resolve()), 3_000);
            t.worker.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            t.worker.removeAllListeners('error');
            t.worker.on('error', () => {});
            t.worker.postMessage({ type: 'close' } satisfies ToWorker);
          }),
      ),
    );
    this.threads.length = 0;
  }
}

/** A port nothing listens on right now (the OS picks it), on `host`. */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

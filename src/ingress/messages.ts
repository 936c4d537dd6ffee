/**
 * Messages between the main thread and the ingress worker threads, all in one place. None is
 * sent per transaction on the latency path: chain snapshots go out once per slot, accepted
 * transactions come back coalesced (after their responses were written; `handoff.ts`), status pushes go only to the workers holding a stream of that account.
 */
import type { AnalyticsView, AnalyticsWindow } from '../tracker/landing-analytics.js';
import type { Config } from '../config.js';
import type { ChainSnapshot } from '../delivery/chain-view.js';
import type { Trace } from '../delivery/trace.js';
import type { StatusRecord } from '../store/records.js';
import type { MetricsJson } from '../telemetry/metrics.js';
import type { TipFloorView } from '../tracker/tip-floor.js';
import type { ClusterHealth } from '../cluster/health.js';

/** What a worker is started with (`workerData`). */
export interface IngressInit {
  index: number;
  config: Config;
  /** Port to listen on (the first worker may get 0 and report the real one). */
  port: number;
  rpcUrl: string;
  tipAddresses: string[];
  /** QUIC identity seed: every thread's client is a handle to the one process-wide client. */
  identity: Uint8Array;
  /** The process's open-stream counters (`StreamSlots`), shared by every thread. */
  streamSlots: SharedArrayBuffer;
  /** The process's in-flight counters (`InFlight`), shared by every thread. */
  inFlight: SharedArrayBuffer;
  /** Whether the store can commit (`StoreHealth`), shared by every thread. */
  storeHealth: SharedArrayBuffer;
  /** Whether log lines are written, and how many were dropped (`LogHealth`), shared by every thread. */
  logHealth: SharedArrayBuffer;
  /** Requests answered (`RequestCount`), shared by every thread: the main thread tells a quiet service by it. */
  requestCount: SharedArrayBuffer;
  /** This thread's native hand-off queue (`handoffOpen`), which its record calls feed. */
  handoffQueue: number;
  /** Multi-node only: this node's per-account budget shares (`BudgetShares`), else null. */
  budgetShares?: SharedArrayBuffer | null;
}

export type ToWorker =
  | { type: 'chain'; snapshot: ChainSnapshot }
  | { type: 'status'; records: StatusRecord[] }
  /** The main thread applied the `streams` message `seq`: this thread gets those accounts' changes from now on. */
  | { type: 'streams-seen'; seq: number }
  /** The tip floor as the main thread computed it (once a second). */
  | { type: 'tip-floor'; floor: TipFloorView }
  /** The node's cluster state as the main thread sees it (a clustered node, every 250 ms), for /health. */
  | { type: 'cluster'; health: ClusterHealth }
  | { type: 'metrics'; id: number }
  | { type: 'metrics-text'; id: number; text: string }
  /** The answer to a `trace-request`: the trace the engine holds, or null (read the store). */
  | { type: 'trace'; id: number; trace: Trace | null }
  /** The answer to an `analytics-request`. */
  | { type: 'analytics'; id: number; view: AnalyticsView }
  | { type: 'reopen-log' }
  /** `ackReplication: quorum`: the cluster stored (error null) or could not store these acceptances' records. */
  | { type: 'replicated'; signatures: string[]; error: string | null }
  | { type: 'close' };

export type FromWorker =
  | { type: 'listening'; port: number }
  | { type: 'failed'; message: string }
  /**
   * Accepted transactions: the numbers of their entries on the thread's native hand-off queue
   * (ascending; `src/delivery/handoff-queue.ts`), drained on receipt. `stored`
   * (`ackReplication: quorum`): answer with `replicated` once the cluster stored them.
   */
  | { type: 'accepted'; seqs: number[]; stored?: true }
  /** Open streams per account on this worker (sent whenever a stream opens or closes). */
  | { type: 'streams'; streams: Array<[string, number]>; seq: number }
  /** A `/metrics` request on the worker: the main thread answers with the aggregated text. */
  | { type: 'metrics-request'; id: number }
  | { type: 'metrics'; id: number; json: MetricsJson }
  /** A trace request on the worker for a transaction the main thread may still hold in flight. */
  | { type: 'trace-request'; id: number; signature: string }
  /** `GET /v1/analytics` on the worker: the main thread holds the counts. */
  | { type: 'analytics-request'; id: number; accountId: string; window: AnalyticsWindow }
  | { type: 'closed' };

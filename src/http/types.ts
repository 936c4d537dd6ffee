/**
 * What the HTTP modules share, in one place below all of them, so that routes, JSON-RPC, the
 * stream and the OpenAPI document import from here and never from each other in a circle.
 */
import type { AnalyticsView, AnalyticsWindow } from '../tracker/landing-analytics.js';
import type { Accounts } from '../accounts/accounts.js';
import type { InFlight } from '../accounts/in-flight.js';
import type { KeyCache } from '../accounts/key-cache.js';
import type { RateLimiter } from '../accounts/rate-limiter.js';
import type { Config } from '../config.js';
import type { Delivery } from '../delivery/delivery.js';
import type { Trace } from '../delivery/trace.js';
import type { TipSet } from '../native.js';
import type { TipFloorView } from '../tracker/tip-floor.js';
import type { ClusterHealth } from '../cluster/health.js';
import type { Store } from '../store/store.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import type { Ctx, Reply } from './request.js';
import type { StatusHub } from './stream.js';
import type { StreamSlots } from './stream-slots.js';

export interface Services {
  config: Config;
  accounts: Accounts;
  store: Store;
  limiter: RateLimiter;
  tips: TipSet;
  delivery: Delivery;
  /** API key → account, cached; built from `accounts` when absent. */
  keys?: KeyCache;
  /** Status changes for `/v1/stream`; without it the stream endpoint is not served. */
  statusHub?: StatusHub;
  /** Open streams per account, shared by every thread (a new, private one when absent). */
  streamSlots?: StreamSlots;
  /** Transactions in flight per account, shared by every thread; without it there is no cap. */
  inFlight?: InFlight;
  /** Logs and metrics; without it requests are counted but nothing is logged. */
  telemetry?: Telemetry;
  /**
   * The delivery trace of a transaction still in flight, from the main thread's engine (which
   * writes it to the store when its last round is over); null: read the store. Absent: the
   * store only.
   */
  liveTrace?: (signature: string) => Trace | null | Promise<Trace | null>;
  /** `GET /v1/analytics`: the main thread's `LandingAnalytics` (asked by message from an ingress thread); absent: every count 0. */
  analytics?: (accountId: string, window: AnalyticsWindow) => AnalyticsView | Promise<AnalyticsView>;
  /** `GET /metrics` text; defaults to this thread's own registry (the main thread aggregates workers). */
  metricsText?: () => Promise<string>;
  /**
   * `GET /v1/tip-floor`: the main thread's `TipFloor`, or on an ingress thread the view it last
   * received; absent: a floor nothing feeds (every window empty).
   */
  tipFloor?: { view(): TipFloorView };
  /** `/health`'s `cluster` object (a clustered node: `config.nats`); absent or null: not reported. */
  cluster?: () => ClusterHealth | null;
}

export type Handler = (ctx: Ctx) => Reply | Promise<Reply>;

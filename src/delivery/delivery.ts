/**
 * The seam between the submission core and delivery. For each transaction the core makes three
 * calls: the chain facts that decide its admission (`chainFacts`: slot, freshness, its
 * blockhash's lifetime, read together once), the first send written from its own thread
 * (`firstSend`), and the hand-over of the accepted transaction for rebroadcast and tracking
 * (`accepted`, which under `ackReplication: quorum` also returns what the answer waits for).
 * A preflight simulation (`simulate`) is asked only when the client wants one (the slow path).
 * Everything about leaders, QUIC, retries and confirmation lives behind this interface.
 *
 * One implementation, `ThreadDelivery` (`thread-delivery.ts`), one per thread that serves sends:
 * on the main thread over the engine's leader tracker with the engine's own hand-over as its sink,
 * on an ingress worker thread over a replica of the chain view with the batched hand-off to the
 * main thread as its sink (never a per-transaction message on the latency path).
 */
import type { SimulationResult } from '../chain/rpc.js';
import { SEND_OPTIONS, type SendOptionValues } from '../client/wire.js';
import type { ChainHealth, LatestBlockhash, Route } from './chain-view.js';
import type { AdmissionView, QuicClient, TpuTargets } from '../native.js';
import type { StatusRecord } from '../store/records.js';
import type { HandoffTarget } from '../store/status-tables.js';
import type { PackedAttempts } from './trace.js';

export type { ChainHealth, ChainSource } from './chain-view.js';

/**
 * Send options of spec §2.1, validated, with their defaults applied: one field per entry of
 * `SEND_OPTIONS` (`src/client/wire.ts`, where each option is defined once, with its meaning).
 */
export type SendOptions = SendOptionValues;

/** Every option at the default its `SEND_OPTIONS` schema gives. */
export const DEFAULT_SEND_OPTIONS: SendOptions = Object.freeze(
  Object.fromEntries(Object.values(SEND_OPTIONS).map((o) => [o.field, o.schema.default])) as SendOptions,
);
export const MAX_RETRIES_LIMIT: number = SEND_OPTIONS.max_retries.schema.maximum;

export interface FirstSend {
  /** Cluster slot at submission. */
  slot: number;
  /** Leaders the first send reached (0 when held for anti-MEV or deduplicated in its slot). */
  reached: number;
  /** Held for anti-MEV: the current leader is blocked; released at the first permitted leader. */
  held: boolean;
  /** The send's attempts, for the delivery trace (`trace.ts` `PackedAttempts`); absent when nothing was sent. */
  attempts?: PackedAttempts;
}

/** A transaction the service has accepted (recorded and first sent, or held). */
export interface Accepted {
  record: StatusRecord;
  wire: Buffer;
  options: SendOptions;
  /** process.hrtime.bigint() when the request arrived (monotonic, the same clock in every thread). */
  receivedAt: bigint;
  /** Slot of the first send, or -1 when held. */
  sentSlot: number;
  held: boolean;
  /** The first send's attempts (`FirstSend.attempts`), for the delivery trace. */
  firstAttempts?: PackedAttempts;
  /**
   * A durable-nonce transaction's nonce account (from the native inspection), which the tracker
   * checks off the hot path. Not part of the stored record: after a restart it is unknown.
   */
  nonceAccount?: string;
  /**
   * The transaction's compute-unit price in micro-lamports (0 without a SetComputeUnitPrice), for
   * the priority-fee guidance of `/v1/tip-floor` once it lands. In memory only.
   */
  computeUnitPrice?: number;
  /**
   * Where the record's key (the first signature) and its blockhash sit in `wire`, from the
   * native inspection: a clustered node's status event reads them in place rather than decoding
   * the record's base58 strings again (~10 µs each a send on the main thread).
   */
  signatureOffset?: number;
  blockhashOffset?: number;
  /**
   * Its entry's number on the thread's native hand-off queue (`handoff-queue.ts`), when its
   * record call pushed one (an ingress thread's send); the batch message names these.
   */
  handoffSeq?: number;
}

/** Raised by `firstSend` when it reached no leader at all (→ 500 Delivery failed). */
export class DeliveryError extends Error {
  override readonly name = 'DeliveryError';
}

/** The chain facts that decide one transaction's admission, as the thread's chain view has them now. */
export interface ChainFacts {
  /** The view's slot, whether it is fresh enough to send on, and its age (`health()`). */
  health: ChainHealth;
  /** True only if the service knows the transaction's blockhash can no longer land (false for a durable nonce). */
  blockhashExpired: boolean;
  /** Last valid block height of the blockhash if the service has seen it, else null (null for a durable nonce). */
  lastValidBlockHeight: number | null;
}

/**
 * Where an accepted transaction goes for rebroadcast rounds and tracking: on the main thread the
 * engine's own hand-over, on an ingress thread the batched hand-off to the main thread. Under
 * `ackReplication: quorum` it returns the wait for the cluster to store the transaction's status
 * event (resolves once stored, rejects when it could not be: NATS unreachable, a failed publish,
 * the wait's timeout); otherwise nothing, and nothing is awaited.
 */
export type HandoffSink = (a: Accepted) => Promise<void> | undefined;

/**
 * A thread's native hand-off queue as the send path sees it (`handoff-queue.ts`): its id, the
 * tail of an accepted send (what its status value lacks), and the number of each push.
 */
export interface HandoffQueue extends HandoffTarget {
  tail(a: Accepted): Uint8Array;
}

/** A route's targets: their texts (the attempts name targets by them) and the native handle. */
export interface RouteTargets {
  texts: string[];
  handle: TpuTargets;
}

/** The route one first send goes to, chosen in the slot it is sent in (`first-send.ts`). */
export interface ReadyRoute {
  route: Route;
  slot: number;
  first: RouteTargets;
  next: RouteTargets;
}

/** A route ready for the send's one native call, with the client it sends through (`SendPath.firstReady`). */
export interface EarlySend extends ReadyRoute {
  client: QuicClient;
}

/** What the submission core sees of delivery: three calls a send, and a simulation when asked. */
export interface SendPath {
  /**
   * The thread's chain facts in native memory (an ingress thread's replica), for `POST /v1/send`'s
   * one native call that inspects, admits and takes the send token (`inspectAdmit`); null or
   * absent: the core reads `chainFacts` instead.
   */
  readonly admission?: AdmissionView | null;
  /** The chain facts for a transaction with `blockhash` (null: a durable nonce, no blockhash lifetime). */
  chainFacts(blockhash: string | null): ChainFacts;
  /**
   * Simulate through the chain node: its result, as it sent it, if the transaction fails (so
   * JSON-RPC callers get the node's own `data` back); null if it would succeed.
   */
  simulate(wire: Buffer): Promise<SimulationResult | null>;
  /**
   * Write `wire` to the current and next leader(s) from the calling thread; resolves once one
   * stream is written (or the transaction is held for anti-MEV). Throws `DeliveryError` when no
   * leader accepted it, after one more round to the leaders after those.
   */
  firstSend(signature: string, wire: Buffer, options: SendOptions, receivedAt: bigint): Promise<FirstSend>;
  /**
   * Where the send's one native call (`POST /v1/send` on an ingress thread,
   * `inspectAdmitKeySend`) may write the first send itself: the route for `options` and the
   * client; null (or absent) when the first send must be `firstSend`'s (no route, a stale view,
   * a route held for anti-MEV).
   */
  firstReady?(options: SendOptions): EarlySend | null;
  /** The first send the one call made to `ready`'s route, settled as `firstSend` settles its own (the same answers and errors). */
  firstSent?(signature: string, ready: ReadyRoute, sent: Promise<Float64Array | string>): Promise<FirstSend>;
  /**
   * Hand over an accepted transaction for rebroadcast rounds and confirmation tracking (the
   * `HandoffSink`); returns the replication wait under `ackReplication: quorum`, else null.
   */
  accepted(a: Accepted): Promise<void> | null;
  /**
   * The thread's native hand-off queue (an ingress thread's; none on the main thread): the
   * record call pushes the accepted send onto it, with the tail this gives (`handoff-queue.ts`).
   */
  readonly handoffQueue?: HandoffQueue | null;
}

/** A thread's delivery as the front ends see it: the send path, and the chain facts they answer. */
export interface Delivery extends SendPath {
  /** The newest blockhash of the chain view, with the slot and block height; null until one is known. */
  latestBlockhash(): LatestBlockhash | null;
  /** Call `listener` with each new slot of the chain view (`slotSubscribe`); returns the function that stops it. */
  watchSlots(listener: (slot: number) => void): () => void;
  health(): ChainHealth;
}

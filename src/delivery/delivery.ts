/**
 * The seam between the submission core and delivery. The core asks for the chain facts that
 * decide admission (slot, blockhash lifetimes), has the first send written from its own thread,
 * and then hands the accepted transaction over for rebroadcast and tracking. Everything about
 * leaders, QUIC, retries and confirmation lives behind this interface.
 *
 * Two implementations: the `Engine` (the process's one leader tracker, rebroadcast scheduler and
 * tracker link; used directly on the main thread) and the `IngressDelivery` of an ingress worker
 * thread (a replica of the chain view, the same first sender, and a batched hand-off of accepted
 * transactions to the main thread — never a per-transaction message on the latency path).
 */
import type { SimulationResult } from '../chain/rpc.js';
import type { LatestBlockhash } from './chain-view.js';
import type { StatusRecord } from '../store/records.js';
import type { PackedAttempts } from './trace.js';

/** Send options of spec §2.1, validated, with their defaults applied. */
export interface SendOptions {
  skipPreflight: boolean;
  maxRetries: number;
  antiMev: boolean;
  /** Land by this slot or not at all: no round after it, and the status says "deadline passed". */
  deadlineSlot: number | null;
  /** `rebroadcast_until_expiry`: rounds until the blockhash expires (one per leader window), not `maxRetries` of them. */
  rebroadcastUntilExpiry: boolean;
}

export const DEFAULT_SEND_OPTIONS: SendOptions = Object.freeze({ skipPreflight: true, maxRetries: 3, antiMev: true, deadlineSlot: null, rebroadcastUntilExpiry: false });
export const MAX_RETRIES_LIMIT = 10;

export interface FirstSend {
  /** Cluster slot at submission. */
  slot: number;
  /** Leaders the first send reached (0 when held for anti-MEV or deduplicated in its slot). */
  reached: number;
  /** Held for anti-MEV: the current leader is blocked; released at the first permitted leader. */
  held: boolean;
  /** The send's attempts, for the delivery trace (`trace.ts` `packAttempt`); absent when nothing was sent. */
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
}

export interface ChainHealth {
  synced: boolean;
  slot: number;
  slotAgeMs: number;
}

/** Raised by `firstSend` when it reached no leader at all (→ 500 Delivery failed). */
export class DeliveryError extends Error {
  override readonly name = 'DeliveryError';
}

export interface Delivery {
  /** Current cluster slot. */
  currentSlot(): number;
  /** True only if the service knows this blockhash can no longer land. */
  isBlockhashExpired(blockhash: string): boolean;
  /** Last valid block height of a blockhash the service has seen, else null. */
  lastValidBlockHeight(blockhash: string): number | null;
  /** The newest blockhash of the chain view, with the slot and block height; null until one is known. */
  latestBlockhash(): LatestBlockhash | null;
  /** Call `listener` with each new slot of the chain view (`slotSubscribe`); returns the function that stops it. */
  watchSlots(listener: (slot: number) => void): () => void;
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
  /** Hand over an accepted transaction for rebroadcast rounds and confirmation tracking. */
  accepted(a: Accepted): void;
  /**
   * `ackReplication: quorum` only (absent otherwise: nothing is awaited): resolves once the
   * cluster stored the status event of the transaction just handed to `accepted`, rejects when it
   * could not (NATS unreachable, a failed publish, the wait's timeout).
   */
  replicated?(signature: string): Promise<void>;
  health(): ChainHealth;
  close(): Promise<void>;
}

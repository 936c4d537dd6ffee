/**
 * The seam between the HTTP API and the delivery engine. The API hands over a verified
 * transaction and learns whether it reached a leader; everything about leaders, QUIC, retries
 * and confirmation lives behind this interface.
 */
import type { SimulationResult } from '../chain/rpc.js';

/** Send options of spec §2.1, validated, with their defaults applied. */
export interface SendOptions {
  skipPreflight: boolean;
  maxRetries: number;
  antiMev: boolean;
}

export const DEFAULT_SEND_OPTIONS: SendOptions = { skipPreflight: true, maxRetries: 3, antiMev: true };
export const MAX_RETRIES_LIMIT = 10;

export interface SubmitRequest {
  signature: string;
  wire: Buffer;
  accountId: string;
  recentBlockhash: string;
  durableNonce: boolean;
  /** Lamports tipped to our tip addresses (points accrue from this on confirmation). */
  tipLamports: bigint;
  options: SendOptions;
  /** process.hrtime.bigint() when the request arrived (for service-added latency). */
  receivedAt: bigint;
}

export interface SubmitResult {
  /** Cluster slot at submission. */
  slot: number;
  /** Leaders the first send reached (0 when held for anti-MEV or deduplicated in its slot). */
  reached: number;
  /** Last valid block height of the transaction's blockhash, when the service knows it. */
  lastValidBlockHeight: number | null;
}

export interface ChainHealth {
  synced: boolean;
  slot: number;
  slotAgeMs: number;
}

/** Raised by `submit` when the first send reached no leader at all (→ 500 Delivery failed). */
export class DeliveryError extends Error {
  override readonly name = 'DeliveryError';
}

export interface Delivery {
  /** Current cluster slot. */
  currentSlot(): number;
  /** True only if the service knows this blockhash can no longer land. */
  isBlockhashExpired(blockhash: string): boolean;
  /**
   * Simulate through the chain node: its result, as it sent it, if the transaction fails (so
   * JSON-RPC callers get the node's own `data` back); null if it would succeed.
   */
  simulate(wire: Buffer): Promise<SimulationResult | null>;
  /** Deliver; resolves once the first send is written to at least one leader. */
  submit(req: SubmitRequest): Promise<SubmitResult>;
  health(): ChainHealth;
  close(): Promise<void>;
}

/**
 * What the Landfall API sends and takes, as the typed client exposes it. Response objects keep
 * the wire's snake_case field names (spec §2), so a record from the client, from `curl` and from
 * the stream is the same object (the stream's adds the tip and the slot at acceptance).
 */
import type { PlanName, TipFloorView } from './wire.js';
export type { Percentiles, PlanName, PriorityFeeWindow, TipFloorWindow, TipPercentile, TipWindowName } from './wire.js';

/** Spec §2.1, in camelCase; omitted fields take the service's defaults. */
export interface SendOptions {
  /** Skip preflight simulation (service default true). */
  skipPreflight?: boolean;
  /** Rebroadcast rounds after the first send, 0..10 (service default 3). */
  maxRetries?: number;
  /** Never deliver to a blocklisted leader (service default true). */
  antiMev?: boolean;
  /**
   * Land by this slot or not at all: Landfall sends no round after it, and once it has passed the
   * status says `expired` with `deadline_passed` (a slot already passed is refused, 400).
   */
  deadlineSlot?: number;
}

/** Spec §2.2, without the `success` flag (always true here: failures throw). */
export interface SendResult {
  signature: string;
  /** Cluster slot at submission. */
  slot: number;
}

/** Spec §2.3. */
export interface BatchItem {
  index: number;
  signature: string | null;
  status: 'sent' | 'failed';
  error?: string;
}

/** Spec §2.4, plus `expired` once the transaction can no longer land, and why a failed one failed. */
export interface StatusRecord {
  signature: string;
  status: 'sent' | 'confirmed' | 'failed';
  submitted_at: string;
  confirmed_at: string | null;
  /** Request received to outcome observed, for confirmed and failed transactions. */
  latency_ms: number | null;
  slot: number | null;
  api_key_name: string;
  expired?: true;
  /** Pushed by the stream only: lamports the transaction tips to the service. */
  tip_lamports?: number;
  /** Pushed by the stream only: the cluster slot when the service accepted it (`slot − submit_slot`: slots to land). */
  submit_slot?: number;
  /** With `expired`: the send's `deadlineSlot` passed before it landed (not its blockhash). */
  deadline_passed?: true;
  /** A failed transaction: the chain's error as the RPC node gives it (`{"InstructionError":[0,{"Custom":1}]}`). */
  err?: unknown;
  /** A failed transaction: `err` in Agave's words ("Error processing Instruction 0: custom program error: 0x1"). */
  err_reason?: string;
}

/** One delivery attempt of a trace (`GET /v1/status/{signature}/trace`). */
export interface DeliveryAttempt {
  /** Microseconds from the request received to the outcome (a rebroadcast: to its round being sent). */
  at_us: number;
  slot: number;
  /** 0: the first send; n: the n-th rebroadcast round. */
  round: number;
  /** Leader identity (base58), null when unknown. */
  leader: string | null;
  /** TPU QUIC address written to; null for held and released. */
  tpu: string | null;
  outcome: 'written' | 'pending' | 'refused' | 'backoff' | 'queue_full' | 'failed' | 'held' | 'released';
  /** The validator's QUIC close code behind a refusal or back-off. */
  close_code: number | null;
  /** The send failure reason, null unless it failed. */
  reason: string | null;
}

/** Every delivery attempt of one transaction, and what became of it. */
export interface DeliveryTrace {
  signature: string;
  status: 'sent' | 'confirmed' | 'failed';
  expired?: true;
  final_state: 'landed' | 'failed' | 'expired' | 'deadline_passed' | 'pending';
  /** In words: "landed in slot N", "failed on chain in slot N: <reason>", "expired: blockhash past last valid block height N, reached K of M leaders", ... */
  cause: string;
  /** As in the status record. */
  latency_ms: number | null;
  /** As in the status record. */
  err?: unknown;
  leaders_reached: number;
  leaders_tried: number;
  /** In order, at most 64. */
  attempts: DeliveryAttempt[];
  /** Attempts past the cap, not kept. */
  attempts_omitted: number;
}

/** Spec §2.5, as the server renders it (`GET /v1/account`). */
export interface AccountRecord {
  plan: PlanName;
  plan_upgraded_at: string;
  member_since: string;
  limits: { max_tps: number; min_tip_bp: number };
  usage: { service_points: number; transactions_total: number; transactions_today: number };
  next_tier: null | {
    plan: PlanName;
    threshold_bp: number;
    remaining_bp: number;
    progress_percent: number;
    benefits: { new_max_tps: number; new_tip_bp: number; tip_savings_percent: number };
  };
  /** Lamports per point (BP), the service's conversion: min tip in lamports = min_tip_bp × this. */
  lamports_per_point: number;
}

/** `GET /v1/tip-floor`: tip percentiles of what landed, and the caller's plan minimum (the client always sends its key). */
export type TipFloorRecord = TipFloorView & { plan_minimum?: { plan: PlanName; min_tip_bp: number; min_tip_lamports: number } };

/** True once a record will not change again: confirmed, failed, or expired. */
export function isFinal(r: StatusRecord): boolean {
  return r.status !== 'sent' || r.expired === true;
}

/**
 * A refusal from the service: the HTTP status and the error body's `message` (the spec's, e.g.
 * "Tip insufficient") and `reason` (the precise cause).
 */
export class LandfallApiError extends Error {
  override readonly name = 'LandfallApiError';

  constructor(
    /** HTTP status (400, 401, 402, 404, 413, 415, 429, 500, …). */
    readonly status: number,
    message: string,
    readonly reason: string,
    /** From `Retry-After` on a 429 that was not (or no longer) retried. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
  }

  override toString(): string {
    return `${this.name}: ${this.status} ${this.message}: ${this.reason}`;
  }
}

/** A request or a wait that did not finish in time. */
export class LandfallTimeoutError extends Error {
  override readonly name = 'LandfallTimeoutError';
}

/** The status stream closed (or could not open): the WebSocket close code and reason. */
export class LandfallStreamError extends Error {
  override readonly name = 'LandfallStreamError';

  constructor(
    /** 4001 unauthorized, 4008 slow consumer, 4029 too many streams, 1006 connection lost, … */
    readonly code: number,
    readonly reason: string,
  ) {
    super(`status stream closed: ${code}${reason ? ` ${reason}` : ''}`);
  }
}

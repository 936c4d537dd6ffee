/**
 * What the Landfall API sends and takes, as the typed client exposes it. Response objects keep
 * the wire's snake_case field names (spec §2), so a record from the client, from `curl` and from
 * the stream is the same object (the stream's adds the tip and the slot at acceptance).
 */
import type { SendOptionValues, StatusRecord as StatusJson } from './wire.js';
export type {
  AccountRecord,
  BatchItem,
  DeliveryAttempt,
  DeliveryTrace,
  LandingAnalytics,
  LandingRow,
  PostMortem,
  Percentiles,
  PlanName,
  PriorityFeeWindow,
  SendResult,
  TipFloorRecord,
  TipFloorWindow,
  TipPercentile,
  TipWindowName,
  TransactionPage,
} from './wire.js';

/**
 * Spec §2.1, in camelCase; omitted fields take the service's defaults. One field per entry of
 * `SEND_OPTIONS` (`wire.ts`), where each option, its default and its meaning are defined.
 */
export type SendOptions = Partial<SendOptionValues>;

/**
 * A status record as the client hands it out: `status()` and `waitForConfirmation()` give the
 * endpoint's record (`wire.ts`); the stream's also carries its tip and slot at acceptance.
 */
export interface StatusRecord extends StatusJson {
  /** Pushed by the stream only: lamports the transaction tips to the service. */
  tip_lamports?: number;
  /** Pushed by the stream only: the cluster slot when the service accepted it (`slot − submit_slot`: slots to land). */
  submit_slot?: number;
}

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

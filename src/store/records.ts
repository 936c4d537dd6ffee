/**
 * The one record of an accepted transaction, shared by every part of the service: the
 * submission core writes it, the store persists it (as a fixed binary value, see
 * `status-codec.ts`), the delivery engine and the tracker watch it, the status endpoint and the
 * stream render it. Before this there were four copies of these fields (`SubmitRequest`,
 * `StatusRecord`, `PendingRecord`, `WatchRequest`); now there is one.
 *
 * Every other shape the store keeps is here too (accounts, usage, keys, delivery traces), so the
 * store imports nothing from the parts above it.
 */
import type { PostMortem } from '../client/wire.js';

export type TxStatus = 'sent' | 'confirmed' | 'failed';

/** What is known of a transaction the moment it is accepted. Never changes afterwards. */
export interface Submission {
  /** base58 of the first signature (64 bytes). */
  signature: string;
  accountId: string;
  /** Friendly name of the API key that sent it (spec §2.4 `api_key_name`). */
  keyName: string;
  /** Lamports tipped to the service's tip addresses (points accrue from this on confirmation). */
  tipLamports: bigint;
  /** base58 of the message's recent blockhash (the nonce value for a durable-nonce transaction). */
  recentBlockhash: string;
  /** First instruction is AdvanceNonceAccount: it never expires by blockhash. */
  durableNonce: boolean;
  /** ms since the Unix epoch (wall clock at acceptance). */
  submittedAt: number;
  /** Cluster slot at submission (the `slot` of the send result). */
  submitSlot: number;
  /** Last valid block height of the blockhash when the service knew it at acceptance, else null. */
  lastValidBlockHeight: number | null;
  /** `options.deadline_slot`: land by this slot or not at all (absent: no deadline). */
  deadlineSlot?: number;
}

/** A submission and what became of it. `status === 'sent' && !expired` means still pending. */
export interface StatusRecord extends Submission {
  status: TxStatus;
  /** On the expired record pushed a second time on the stream: why it did not land. In memory only, never stored. */
  postMortem?: PostMortem;
  /** ms since the Unix epoch; set for both terminal states. */
  confirmedAt: number | null;
  /** Set for both terminal states: request received → outcome observed. */
  latencyMs: number | null;
  /** Slot the transaction was processed in (null until landed). */
  slot: number | null;
  /** Set once the blockhash can no longer land and the transaction never did. */
  expired: boolean;
  /**
   * A failed transaction's on-chain error, as the RPC node gives it (`getSignatureStatuses`'
   * `err`: `"BlockhashNotFound"`, `{"InstructionError":[0,{"Custom":1}]}`, …). Absent for every
   * other record, and for a failed one stored before the error was kept.
   */
  err?: unknown;
  /** With `expired`: it was its deadline slot that passed (not its blockhash). */
  deadlinePassed?: true;
}

/**
 * What a restarted service needs to send a pending transaction again: its wire bytes and the
 * send options rebroadcasting honours. Stored in the status value's tail only while the
 * transaction is pending (`status-codec.ts`), never part of what the API shows.
 */
export interface Resend {
  wire: Buffer;
  antiMev: boolean;
  /** Rebroadcast rounds after a send (`max_retries`). */
  maxRetries: number;
  /** `rebroadcast_until_expiry`: rounds until the blockhash dies rather than `maxRetries` (absent: false). */
  untilExpiry?: boolean;
}

/** A pending record as the store hands it back after a restart, with its resend tail if it has one. */
export type PendingRecord = StatusRecord & { resend: Resend | null };

/**
 * A fresh record in state `sent` (a `deadlineSlot` given as undefined is left out). Written
 * field by field: it is made once per accepted send, and a spread copy costs several times more.
 */
export function sentRecord(s: Submission): StatusRecord {
  const r: StatusRecord = {
    signature: s.signature,
    accountId: s.accountId,
    keyName: s.keyName,
    tipLamports: s.tipLamports,
    recentBlockhash: s.recentBlockhash,
    durableNonce: s.durableNonce,
    submittedAt: s.submittedAt,
    submitSlot: s.submitSlot,
    lastValidBlockHeight: s.lastValidBlockHeight,
    status: 'sent',
    confirmedAt: null,
    latencyMs: null,
    slot: null,
    expired: false,
  };
  if (s.deadlineSlot !== undefined) r.deadlineSlot = s.deadlineSlot;
  return r;
}

/** Still waiting for an outcome (the tracker watches it, the engine may rebroadcast it). */
export function isPending(r: StatusRecord): boolean {
  return r.status === 'sent' && !r.expired;
}

/** The plans an account may be on, lowest first (their limits: `src/accounts/plans.ts`). */
export const PLAN_ORDER = ['starter', 'growth', 'pro', 'whale'] as const;
export type PlanName = (typeof PLAN_ORDER)[number];

export interface AccountRecord {
  id: string;
  name: string;
  plan: PlanName;
  /** Cumulative points (BP). */
  points: number;
  /** ms since epoch. */
  memberSince: number;
  /** ms since epoch; equals memberSince until the first plan change. */
  planUpgradedAt: number;
}

export interface UsageRecord {
  total: number;
  /** UTC day number (ms / 86 400 000) that `today` counts. */
  day: number;
  today: number;
}

export interface KeyRecord {
  accountId: string;
  name: string;
  createdAt: number;
  revokedAt: number | null;
}

/**
 * What a confirmation earns an account (points, and the upgrades they bring), applied in the
 * transaction that commits the confirmation, only if the committed record was not confirmed yet.
 */
export type Credit = (account: AccountRecord) => AccountRecord;

/** What became of one delivery attempt (`src/delivery/trace.ts`). */
export type AttemptOutcome =
  /** The stream was written on a live connection to the leader. */
  | 'written'
  /**
   * Queued to the leader, outcome not awaited: the first send answers as soon as one leader has
   * the transaction, and the others' outcomes only reach the metrics.
   */
  | 'pending'
  /** The validator closed the connection (or stopped the stream) with a close code. */
  | 'refused'
  /** Not attempted: the leader failed recently (the close code that caused it, if any). */
  | 'backoff'
  /** Not attempted: the connection's write queue was full. */
  | 'queue_full'
  /** Any other failure (`reason` says which: handshake_timeout, connect_failed, deadline, ...). */
  | 'failed'
  /** Held for anti-MEV: the current leader is on the blocklist. */
  | 'held'
  /** Released from an anti-MEV hold (or sent again after a restart) at a permitted leader. */
  | 'released';

/** Stored by index (`trace-codec.ts`): append only. */
export const ATTEMPT_OUTCOMES: readonly AttemptOutcome[] = ['written', 'pending', 'refused', 'backoff', 'queue_full', 'failed', 'held', 'released'];

export interface Attempt {
  /** Microseconds since the request was received. */
  atUs: number;
  slot: number;
  /** 0 for the first send, n for the n-th rebroadcast round. */
  round: number;
  /** Leader identity (base58), when known. */
  leader: string | null;
  /** TPU QUIC address written to ("ip:port"); null for holds and releases. */
  tpu: string | null;
  outcome: AttemptOutcome;
  /** The validator's QUIC close code behind a failure (or a back-off), if any. */
  closeCode: number | null;
  /** The send failure reason for a failure (`connect_failed`, `backoff`, ...), else null. */
  reason: string | null;
}

/** The delivery trace of one transaction: every attempt to put it in front of a leader, in order. */
export interface Trace {
  /** At most `MAX_ATTEMPTS`, oldest first. */
  attempts: Attempt[];
  /** Attempts made after the cap was reached, not kept. */
  omitted: number;
  /** Why it did not land (src/delivery/post-mortem.ts): in memory only, never stored. */
  postMortem?: PostMortem;
}

/**
 * The post-mortem of one transaction that did not land: the wire's shape itself (snake_case), one
 * definition in `src/client/wire.ts` (the client sits below the store, so the store may import it).
 */
export type { PostMortem };


/** Attempts kept per transaction: a first send and 10 rounds to 2 leaders need 22; the rest is counted. */
export const MAX_ATTEMPTS = 64;

/**
 * The one record of an accepted transaction, shared by every part of the service: the
 * submission core writes it, the store persists it (as a fixed binary value, see
 * `status-codec.ts`), the delivery engine and the tracker watch it, the status endpoint and the
 * stream render it. Before this there were four copies of these fields (`SubmitRequest`,
 * `StatusRecord`, `PendingRecord`, `WatchRequest`); now there is one.
 */

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

/**
 * Which validator received which transaction, when, and what became of it: the record tests
 * and benchmarks assert delivery against ("reached the leader", "went to a non-leader", "was
 * delayed by the fault"). Kept for the same number of slots as the ledger's history.
 */

/** What a validator did with a transaction it received. */
export type Outcome =
  /** Executed in a block (with or without an error). */
  | 'included'
  /** Arrived at a validator that was not leader (nor within the grace at a boundary): dropped. */
  | 'dropped-not-leader'
  /** Already landed: ignored. */
  | 'duplicate'
  /** Blockhash unknown or older than 150 slots (and no valid durable nonce). */
  | 'expired'
  /** Refused before execution: undecodable, bad signature, fee payer cannot pay, unloadable accounts. */
  | 'rejected'
  /** Reached the leader of a slot it skipped (no block): lost with the slot. */
  | 'skipped'
  /** Did not fit in the leader's blocks (compute-unit limit, higher-priced transactions first) before its window ended. */
  | 'dropped-block-full'
  /** Arrived just before the validator's leader window (within the grace): waiting for it. */
  | 'held';

export interface Receipt {
  /** Validator name (`v1` …). */
  validator: string;
  /** First signature, or null when the bytes were not a transaction. */
  signature: string | null;
  /** Slot (by the cluster clock) at the moment of arrival. */
  slot: number;
  /** Was the receiving validator the leader of that slot? */
  wasLeader: boolean;
  /** When the validator had it, ms since the Unix epoch: the stream's end, plus any injected delay. */
  arrivalMs: number;
  /** The sender's identity (base58) from its TLS certificate, if it presented one. */
  peer: string | null;
  /** The sender's UDP address. */
  remoteAddr: string;
  outcome: Outcome;
  /** The slot it landed in, when included. */
  landedSlot?: number;
  /** Why it was not included (the transaction error text), when rejected or expired. */
  reason?: string;
}

/** Counts of outcomes (every receipt is counted once, by its final outcome). */
export interface Counters {
  received: number;
  included: number;
  /** Included but failed during execution (fee charged): a subset of `included`. */
  landedWithError: number;
  droppedNotLeader: number;
  duplicate: number;
  expired: number;
  rejected: number;
  skipped: number;
  droppedBlockFull: number;
}

const OUTCOME_COUNTER: Record<Exclude<Outcome, 'held'>, keyof Counters> = {
  included: 'included',
  'dropped-not-leader': 'droppedNotLeader',
  duplicate: 'duplicate',
  expired: 'expired',
  rejected: 'rejected',
  skipped: 'skipped',
  'dropped-block-full': 'droppedBlockFull',
};

export function emptyCounters(): Counters {
  return { received: 0, included: 0, landedWithError: 0, droppedNotLeader: 0, duplicate: 0, expired: 0, rejected: 0, skipped: 0, droppedBlockFull: 0 };
}

export class ReceiveLog {
  /** Receipts by arrival slot, in insertion order (≈ slot order; pruning stops at the first young slot). */
  private readonly bySlot = new Map<number, Receipt[]>();
  private readonly bySignature = new Map<string, Receipt[]>();
  private readonly total = emptyCounters();
  private readonly perValidator = new Map<string, Counters>();

  constructor(private readonly keepSlots: number) {}

  /** Record an arrival; its outcome may still be `held`, to be settled with `settle`. */
  add(r: Receipt): void {
    let list = this.bySlot.get(r.slot);
    if (!list) this.bySlot.set(r.slot, (list = []));
    list.push(r);
    if (r.signature !== null) {
      let sigs = this.bySignature.get(r.signature);
      if (!sigs) this.bySignature.set(r.signature, (sigs = []));
      sigs.push(r);
    }
    this.bump(r.validator, 'received');
    if (r.outcome !== 'held') this.count(r);
  }

  /** Give a held receipt its final outcome. */
  settle(r: Receipt, outcome: Exclude<Outcome, 'held'>, detail: { landedSlot?: number; reason?: string; failed?: boolean }): void {
    r.outcome = outcome;
    if (detail.landedSlot !== undefined) r.landedSlot = detail.landedSlot;
    if (detail.reason !== undefined) r.reason = detail.reason;
    this.count(r, detail.failed);
  }

  private count(r: Receipt, failed = false): void {
    if (r.outcome === 'held') return;
    this.bump(r.validator, OUTCOME_COUNTER[r.outcome]);
    if (failed) this.bump(r.validator, 'landedWithError');
  }

  private bump(validator: string, key: keyof Counters): void {
    this.total[key]++;
    let c = this.perValidator.get(validator);
    if (!c) this.perValidator.set(validator, (c = emptyCounters()));
    c[key]++;
  }

  /** Every receipt of `signature`, in arrival order. */
  receivedBy(signature: string): Receipt[] {
    return [...(this.bySignature.get(signature) ?? [])];
  }

  /** Every receipt at validator `name`, in arrival order. */
  receivedAt(name: string): Receipt[] {
    const out: Receipt[] = [];
    for (const list of this.bySlot.values()) for (const r of list) if (r.validator === name) out.push(r);
    return out;
  }

  counters(validator?: string): Counters {
    return { ...(validator === undefined ? this.total : (this.perValidator.get(validator) ?? emptyCounters())) };
  }

  /** Forget receipts of slots more than `keepSlots` before `slot` (counters keep counting). */
  prune(slot: number): void {
    for (const [s, list] of this.bySlot) {
      if (s > slot - this.keepSlots) break;
      for (const r of list) {
        if (r.signature === null) continue;
        const sigs = this.bySignature.get(r.signature);
        if (!sigs) continue;
        sigs.splice(sigs.indexOf(r), 1);
        if (sigs.length === 0) this.bySignature.delete(r.signature);
      }
      this.bySlot.delete(s);
    }
  }
}

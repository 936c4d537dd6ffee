/**
 * The delivery trace of one transaction: every attempt to put it in front of a leader, in order
 * (`GET /v1/status/{signature}/trace`). An attempt is one (transaction, target) write of the first
 * send or of a rebroadcast round, or an anti-MEV hold or release.
 *
 * Where the facts come from, at no cost a send did not already pay:
 * - the first send: the result `QuicClient.sendFirstRoute` already resolves with on the thread
 *   that took the request (the written target, the failures known by then, the targets not
 *   heard back from, as numbers), packed flat and carried by the `Accepted` hand-off that
 *   already goes to the main thread;
 * - rebroadcast rounds: the client's outcome word of each (transaction, target) (written, or the
 *   reason and the validator's close code), appended natively by the rebroadcast flight table
 *   (native/src/quic/flights.rs) and handed over once when the flight ends (`Rebroadcaster`);
 * - holds and releases: the rebroadcast scheduler's own decisions (releases appended natively).
 * The main thread keeps a transaction's trace in memory while it is in flight (`TraceBook`) and
 * writes it once, with the status records' grouped commit, when its last round is over; the
 * final state is read off the status record when the trace is shown (`traceView`, src/http/api.ts).
 */
import { describeTransactionError } from '../chain/tx-error.js';
import { ATTEMPT_OUTCOMES, MAX_ATTEMPTS, type Attempt, type AttemptOutcome, type StatusRecord, type Trace } from '../store/records.js';

export { ATTEMPT_OUTCOMES, MAX_ATTEMPTS, type Attempt, type AttemptOutcome, type Trace } from '../store/records.js';

/** The outcome a send failure reason (and close code) means in a trace. */
export function outcomeOf(reason: string, closeCode: number | null): AttemptOutcome {
  if (reason === 'backoff') return 'backoff';
  if (reason === 'queue_full') return 'queue_full';
  return closeCode !== null ? 'refused' : 'failed';
}

/** A trace being built: attempts appended until the cap, then only counted. */
export class TraceBuilder implements Trace {
  protected list: Attempt[] = [];
  protected dropped = 0;

  constructor(from?: Trace) {
    if (from) {
      this.list = from.attempts.slice();
      this.dropped = from.omitted;
    }
  }

  /** Accessors, so that a trace whose rounds are kept elsewhere (`LiveTrace`) can show them. */
  get attempts(): Attempt[] {
    return this.list;
  }

  get omitted(): number {
    return this.dropped;
  }

  push(a: Attempt): void {
    if (this.list.length < MAX_ATTEMPTS) this.list.push(a);
    else this.dropped++;
  }

  /** Attempts made and not kept elsewhere (past another cap), counted here. */
  addOmitted(n: number): void {
    this.dropped += n;
  }
}

/**
 * A first send's attempts as the ingress thread ships them in `Accepted.firstAttempts` (from
 * the numbers `sendFirstRoute` resolves with: `FirstSender`): flat,
 * `PACKED_STRIDE` entries per attempt (target, outcome index, close code or -1, µs since the
 * request, failure reason or ''), so the hand-off message carries a few primitives, not objects.
 * The slot is the send's; the leader identity is resolved on the main thread from the address.
 */
export type PackedAttempts = Array<string | number>;
export const PACKED_STRIDE = 5;

export function packAttempt(out: PackedAttempts, target: string, outcome: AttemptOutcome, closeCode: number | null, atUs: number, reason = ''): void {
  pushPacked(out, target, ATTEMPT_OUTCOMES.indexOf(outcome), closeCode ?? -1, Math.max(0, Math.round(atUs)), reason);
}

/**
 * One attempt appended in the packed layout, from values already in it: `outcome` an index of
 * `ATTEMPT_OUTCOMES`, `closeCode` -1 for none, `atUs` whole µs (as `sendFirstRoute` gives them).
 */
export function pushPacked(out: PackedAttempts, target: string, outcome: number, closeCode: number, atUs: number, reason: string): void {
  out.push(target, outcome, closeCode, atUs, reason);
}

/** The attempts `packAttempt` packed, as the first send's (round 0) attempts in `slot`. */
export function unpackAttempts(packed: PackedAttempts, slot: number, leaderOf: (tpu: string) => string | null, into: TraceBuilder): void {
  for (let i = 0; i + PACKED_STRIDE <= packed.length; i += PACKED_STRIDE) {
    const tpu = packed[i] as string;
    const code = packed[i + 2] as number;
    const reason = packed[i + 4] as string;
    into.push({
      atUs: packed[i + 3] as number,
      slot,
      round: 0,
      leader: leaderOf(tpu),
      tpu,
      outcome: ATTEMPT_OUTCOMES[packed[i + 1] as number] ?? 'failed',
      closeCode: code < 0 ? null : code,
      reason: reason === '' ? null : reason,
    });
  }
}

/** Final state of a transaction, with its cause in words. */
export interface FinalState {
  state: 'landed' | 'failed' | 'expired' | 'deadline_passed' | 'pending';
  cause: string;
}

/** Distinct leaders an attempt was made to (M), and those that had the transaction written (K). */
export function leadersReached(t: Trace): { reached: number; tried: number } {
  const tried = new Set<string>();
  const reached = new Set<string>();
  for (const a of t.attempts) {
    const who = a.leader ?? a.tpu;
    if (who === null || a.tpu === null) continue;
    tried.add(who);
    if (a.outcome === 'written') reached.add(who);
  }
  return { reached: reached.size, tried: tried.size };
}

/** What became of the transaction, from its status record and its trace. */
export function finalState(rec: StatusRecord, t: Trace): FinalState {
  if (rec.status === 'confirmed') return { state: 'landed', cause: `landed in slot ${rec.slot}` };
  if (rec.status === 'failed') {
    const why = rec.err !== undefined ? `: ${describeTransactionError(rec.err)}` : '';
    return { state: 'failed', cause: `failed on chain${rec.slot !== null ? ` in slot ${rec.slot}` : ''}${why}` };
  }
  const { reached, tried } = leadersReached(t);
  const leaders = `reached ${reached} of ${tried} leader${tried === 1 ? '' : 's'}`;
  if (rec.expired && rec.deadlinePassed) {
    return { state: 'deadline_passed', cause: `deadline passed: slot ${rec.deadlineSlot} passed before it landed, ${leaders}` };
  }
  if (rec.expired) {
    const why = rec.durableNonce
      ? 'durable nonce advanced'
      : rec.lastValidBlockHeight !== null
        ? `blockhash past last valid block height ${rec.lastValidBlockHeight}`
        : 'blockhash no longer valid';
    return { state: 'expired', cause: `expired: ${why}, ${leaders}` };
  }
  return { state: 'pending', cause: `pending: not landed yet, ${leaders}` };
}

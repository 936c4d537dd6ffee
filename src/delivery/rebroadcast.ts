/**
 * The rebroadcast scheduler: one per process, on the main thread, fed with every accepted
 * transaction (from this thread directly, from ingress threads in batches). A thin facade over
 * the native flight table (`RebroadcastFlights`, native/src/quic/flights.rs), which keeps every
 * flight (its wire bytes, options, schedule, the leaders that have it) and its trace's rounds on
 * the QUIC runtime's side; the rules of each round, and why each is what it is, are there.
 *
 * Once per slot, ONE native call (`round`) decides which transactions are due and queues their
 * writes on the slot's targets; the outcomes are applied by the QUIC runtime (no promise per
 * group comes back into JavaScript). Before, the round ran here: a loop over every flight each
 * slot, a `sendMany` promise per target group and its outcome words walked into trace objects,
 * ~39 µs of the main thread's time a send at the maximum; a flight table alone in native code,
 * the round and the traces left here, saved nothing.
 *
 * Rounds: `max_retries` of them at most, spread over the blockhash's life (`roundOffset`: the
 * first due in the next slot, then further and further apart, the last drawn in the last quarter
 * of the span, ending a few slots before the blockhash's last valid block height), never twice in
 * one slot, and to a leader that throttles us only if it did not get the transaction yet while
 * leading its current window, until the tracker settles the transaction, its blockhash dies, its
 * `deadline_slot` passes, or the rounds run out. With `rebroadcast_until_expiry`, a round every
 * slot for the first leader window, then one per leader window (`UNTIL_EXPIRY_GAP`) until the
 * blockhash dies, whatever `max_retries` says. A round is counted when it is handed to the QUIC
 * client, and a transaction whose last round is still queued gets no new one, so a transaction is
 * written at most `max_retries` + 1 times (the first send and its rounds).
 *
 * Landed: the tracker tells the scheduler as soon as the chain's push says a transaction was
 * processed or confirmed (`landed`): nothing is written for it again unless `LANDED_PAUSE_SLOTS`
 * pass without the tracker settling it, when its remaining rounds resume.
 *
 * After a restart (`resume`), a pending transaction whose bytes the store kept is sent again in
 * the first round (the first permitted leader's, for anti-MEV), then gets its `max_retries`
 * rounds afresh: the rounds it had used are not stored (a write per slot per transaction), and
 * the send it was acknowledged for may have died with the process.
 *
 * Traces: each round's attempts (and a released hold) are appended to the flight natively; a
 * `LiveTrace` reads them there while the flight is in the table (`/v1/trace`), and gets them once
 * when the flight ends and its last round's outcomes are in — reported in bulk by `round` — when
 * the `TraceBook` writes it, as before.
 */
import { REBROADCAST_LANDED_PAUSE_SLOTS, REBROADCAST_UNTIL_EXPIRY_GAP, RebroadcastFlights, rebroadcastRoundOffset, sendOutcomeReasons, type QuicClient } from '../native.js';
import type { Resend } from '../store/records.js';
import type { Route } from './chain-view.js';
import type { Accepted } from './delivery.js';
import { ATTEMPT_OUTCOMES, MAX_ATTEMPTS, outcomeOf, PACKED_STRIDE, type Attempt, type AttemptOutcome } from './trace.js';
import type { KeptRounds, LiveTrace, TraceBook } from './trace-book.js';

/** The client's outcome word for a written transaction (low byte); failures are 2 + the reason's index. */
const WORD_WRITTEN = 1;
const WORD_FAILED_BASE = 2;
/** The native send failure reasons, in the order outcome words number them. */
const REASONS = sendOutcomeReasons();

/** Why a pending transaction from the store is sent again. */
export type ResumeCause = 'restart' | 'rollback';

/**
 * Slots a transaction's rounds stay stopped after the push said it landed, waiting for the
 * tracker to settle it (the native table's: native/src/quic/flights.rs says why).
 */
export const LANDED_PAUSE_SLOTS: number = REBROADCAST_LANDED_PAUSE_SLOTS;

/** With `rebroadcast_until_expiry`: a round every slot for the first this many, then one every this many slots (a leader window). */
export const UNTIL_EXPIRY_GAP: number = REBROADCAST_UNTIL_EXPIRY_GAP;

/**
 * The slot offset (from the first send) of round `k` (1-based) of `n`, spread over `span` slots:
 * the native table's schedule (`round_offset` in native/src/quic/flights.rs, which says why).
 * For 3 rounds over 148 slots: slots 1, 12, 148; for 10: 1, 2, 3, 5, 9, 16, 28, 49, 85, 148. The
 * last round is moved earlier by `draw` modulo a quarter of the span: for 3 rounds over 148
 * slots, somewhere in slots 111–148.
 */
export function roundOffset(k: number, n: number, span: number, draw = 0): number {
  return rebroadcastRoundOffset(k, n, span, draw);
}

/** A number drawn from a signature (base58: its characters are already uniform), for `roundOffset`'s `draw`. */
export function drawOf(signature: string): number {
  let h = 0;
  for (let i = 0; i < 8 && i < signature.length; i++) h = h * 58 + signature.charCodeAt(i);
  return h;
}

/**
 * Did the first send reach its slot's leader (`current`: its TPU address), written or still
 * queued? Only that one covers anything (`covers` in flights.rs): a copy the next leader received
 * before its window began may not have been kept for it (the local cluster drops what arrives
 * more than its 20 ms grace early; Agave holds packets for an imminent leader slot), so it covers
 * nothing (measured with one leader in four skipping its slots: counting it left sends to the
 * round at +12 slots, p90 11 slots).
 */
function firstReached(a: Accepted, current: string | null): boolean {
  const p = a.firstAttempts;
  if (!p || a.sentSlot < 0 || current === null) return false;
  const written = ATTEMPT_OUTCOMES.indexOf('written');
  const pending = ATTEMPT_OUTCOMES.indexOf('pending');
  for (let i = 0; i + PACKED_STRIDE <= p.length; i += PACKED_STRIDE) {
    if (p[i] === current && (p[i + 1] === written || p[i + 1] === pending)) return true;
  }
  return false;
}

export interface RoundCounters {
  rebroadcasts: number;
  released: number;
  held: number;
  heldExpired: number;
  /** Transactions whose rounds stopped because their `deadline_slot` passed. */
  deadlinePassed: number;
  roundErrors: number;
  /** Pending transactions sent again after a restart. */
  resent: number;
}

/** `RebroadcastFlights.add`'s flags. */
const ANTI_MEV = 1;
const UNTIL_EXPIRY = 2;
const HELD = 4;
const RESUMED_RESTART = 8;
const RESUMED_ROLLBACK = 16;

/** A flight of the native table, as this side knows it. */
interface Entry {
  id: number;
  signature: string;
  trace: LiveTrace | null;
}

export class Rebroadcaster {
  private readonly table: RebroadcastFlights;
  /** Flights in the rounds, by signature. */
  private readonly bySignature = new Map<string, Entry>();
  /** Flights in the rounds, and ended ones whose trace waits for its last round's outcomes. */
  private readonly byId = new Map<number, Entry>();
  /** A flight's rounds so far, read from the table (a `LiveTrace`'s `rounds`: one function for all). */
  private readonly read = (id: number): KeptRounds | null => {
    const kept = this.table.trace(id);
    return kept ? keptRounds(kept, this.namesFor(kept)) : null;
  };

  /** The table's names so far (`namesFor`): a slot's few leaders, each crossing once. */
  private readonly names: string[] = [];

  constructor(
    client: QuicClient,
    private readonly traces: TraceBook | null = null,
  ) {
    this.table = new RebroadcastFlights(client, MAX_ATTEMPTS);
  }

  get size(): number {
    return this.bySignature.size;
  }

  /** The rounds' counters, from the native table. */
  get counters(): RoundCounters {
    const c = this.table.counters();
    return { rebroadcasts: c[0]!, released: c[1]!, held: c[2]!, heldExpired: c[3]!, deadlinePassed: c[4]!, roundErrors: c[5]!, resent: c[6]! };
  }

  /**
   * Start rebroadcasting (or holding) an accepted transaction. Returns false when it has no
   * rounds to go (not held, `max_retries` 0): its trace, if given, is the caller's to finish.
   */
  add(a: Accepted, trace: LiveTrace | null = null, current: string | null = null): boolean {
    const { maxRetries, antiMev } = a.options;
    if (!a.held && maxRetries === 0 && !a.options.rebroadcastUntilExpiry) return false;
    const sig = a.record.signature;
    const earlier = this.bySignature.get(sig);
    if (earlier) this.drop(earlier, earlier.trace !== trace);
    const flags = (antiMev ? ANTI_MEV : 0) | (a.options.rebroadcastUntilExpiry ? UNTIL_EXPIRY : 0) | (a.held ? HELD : 0);
    const covered = firstReached(a, current) ? current : null;
    const lastValid = a.record.durableNonce ? null : a.record.lastValidBlockHeight;
    const id = this.table.add(a.wire, maxRetries, flags, a.sentSlot, lastValid, a.options.deadlineSlot ?? Infinity, -1, drawOf(sig), trace?.acceptedUs ?? null, covered, a.sentSlot);
    this.enter(id, sig, trace);
    return true;
  }

  /**
   * A pending transaction found in the store after a restart (or a chain rollback, once its
   * rounds were over): sent in the next round (held until then, so anti-MEV still waits for a
   * permitted leader; the send is not a retry), then `resend.maxRetries` rounds. A signature
   * already in flight is left alone.
   * @param lastValid its blockhash's last valid block height (null: durable nonce or unknown)
   * @param replayUntil after a rollback: sent every slot up to this one (see `rewind`)
   * @param deadline its `deadline_slot` (Infinity without one)
   */
  resume(
    signature: string,
    resend: Resend,
    lastValid: number | null,
    trace: LiveTrace | null = null,
    cause: ResumeCause = 'restart',
    replayUntil = -1,
    deadline = Infinity,
  ): void {
    if (this.bySignature.has(signature)) return;
    const flags = (resend.antiMev ? ANTI_MEV : 0) | (resend.untilExpiry === true ? UNTIL_EXPIRY : 0) | HELD | (cause === 'restart' ? RESUMED_RESTART : RESUMED_ROLLBACK);
    const id = this.table.add(resend.wire, resend.maxRetries, flags, -1, lastValid, deadline, replayUntil, drawOf(signature), trace?.acceptedUs ?? null, null, -1);
    this.enter(id, signature, trace);
  }

  private enter(id: number, signature: string, trace: LiveTrace | null): void {
    const e: Entry = { id, signature, trace };
    this.bySignature.set(signature, e);
    this.byId.set(id, e);
    if (trace !== null) {
      trace.rounds = this.read;
      trace.flight = id;
    }
  }

  /**
   * The chain came back at a lower slot (`LeaderTracker.onRollback`): every flight goes again from
   * the next slot on (their last slots were the old chain's, higher than the new one's), and
   * every slot up to `replayUntil` without spending its rounds — what landed in the lost slots is
   * gone, and a restarted validator may not take transactions at once.
   */
  rewind(replayUntil: number): void {
    this.table.rewind(replayUntil);
  }

  /**
   * A transaction in flight gets its rounds afresh (`maxRetries`, and the free ones): after a
   * rollback, rounds it spent on slots that are gone bought nothing. False if not in flight.
   */
  refill(signature: string, maxRetries: number): boolean {
    const e = this.bySignature.get(signature);
    return e !== undefined && this.table.refill(e.id, maxRetries);
  }

  /**
   * The chain's push says `signature` landed (processed or confirmed) in the current slot `slot`:
   * no round for it while the tracker reads and writes its status (`LANDED_PAUSE_SLOTS` at most).
   * False if not in flight.
   */
  landed(signature: string, slot: number): boolean {
    const e = this.bySignature.get(signature);
    return e !== undefined && this.table.landed(e.id, slot);
  }

  /** The slot of the next round due for `signature` (null: not in flight, or no round left). For tests and the trace. */
  nextRoundSlot(signature: string): number | null {
    const e = this.bySignature.get(signature);
    return e === undefined ? null : (this.table.nextRoundSlot(e.id) ?? null);
  }

  /** The tracker settled it (confirmed, failed, expired): no more rounds. */
  settle(signature: string): void {
    const e = this.bySignature.get(signature);
    if (e) this.drop(e, true);
  }

  /** Every transaction in flight is dropped (the service is closing): their traces are finished, with the rounds in so far. */
  clear(): void {
    for (const e of [...this.byId.values()]) {
      this.bySignature.delete(e.signature);
      this.table.end(e.id);
      this.finish(e, true);
    }
  }

  /**
   * Out of the rounds. Its trace is finished (`endTrace`) once its last round's outcomes are in:
   * now, or when a later `onSlot` hears of it. A flight replaced by a new one with the same trace
   * (`add`) gives the trace its rounds so far now.
   */
  private drop(e: Entry, endTrace: boolean): void {
    if (this.bySignature.get(e.signature) === e) this.bySignature.delete(e.signature);
    const complete = this.table.end(e.id);
    if (complete || !endTrace || e.trace === null) this.finish(e, endTrace);
  }

  /** The table's names (leader identities, TPU addresses), fetched when `packed` numbers one not seen yet. */
  private namesFor(packed: Float64Array): string[] {
    for (let i = 2 + 4; i < packed.length; i += STRIDE) {
      if (packed[i]! >= this.names.length || packed[i + 1]! >= this.names.length) {
        this.names.push(...this.table.names(this.names.length));
        break;
      }
    }
    return this.names;
  }

  /** Its trace gets its rounds from the table (the record there is let go if complete), and is ended if `end`. */
  private finish(e: Entry, end: boolean): void {
    this.byId.delete(e.id);
    const kept = this.table.take(e.id);
    const t = e.trace;
    if (t === null) return;
    t.rounds = null;
    if (kept) {
      const r = keptRounds(kept, this.namesFor(kept));
      for (const a of r.attempts) t.push(a);
      t.addOmitted(r.omitted);
    }
    if (end) this.traces?.end(t);
  }

  /**
   * This slot's round, in the native table (one call): who is due, their writes queued on the
   * slot's targets. It answers with the flights it dropped (expired, deadline passed, rounds
   * over) and the ended ones whose traces are now complete.
   * @param routes the slot's targets per policy (as first sends use them)
   */
  onSlot(slot: number, height: number, routes: { plain: Route; antiMev: Route }): void {
    if (this.byId.size === 0) return;
    const r = this.table.round(slot, height, routes.plain.first, routes.plain.hold, routes.antiMev.first, routes.antiMev.hold);
    const dropped = r[0]!;
    for (let i = 1; i <= dropped; i++) {
      const e = this.byId.get(r[i]!);
      if (e === undefined) continue;
      if (this.bySignature.get(e.signature) === e) this.bySignature.delete(e.signature);
      if (e.trace === null) this.byId.delete(e.id);
    }
    for (let i = 1 + dropped; i < r.length; i++) {
      const e = this.byId.get(r[i]!);
      if (e !== undefined) this.finish(e, true);
      else this.table.take(r[i]!); // a replaced flight's late rounds: let its record go
    }
  }
}

/** Numbers per attempt in a packed trace (after its two-number head: omitted, outstanding). */
const STRIDE = 6;

/**
 * The attempts of a flight's rounds, from the table's packed form (`RebroadcastFlights.take`):
 * `[omitted, outstanding]`, then per attempt `atUs, slot, round, word, leader, tpu`, the last two
 * indexes into `names` (-1: none), word 0 a released hold. Exported for bench/trace.ts.
 */
export function keptRounds(p: Float64Array, names: readonly string[]): KeptRounds {
  const attempts: Attempt[] = [];
  for (let i = 2; i + STRIDE <= p.length; i += STRIDE) {
    const word = p[i + 3]!;
    const li = p[i + 4]!;
    const ti = p[i + 5]!;
    const leader = li < 0 ? null : (names[li] ?? null);
    if (word === 0) {
      attempts.push({ atUs: p[i]!, slot: p[i + 1]!, round: p[i + 2]!, leader, tpu: null, outcome: 'released', closeCode: null, reason: null });
      continue;
    }
    const low = word & 0xff;
    const closeCode = word >> 8 === 0 ? null : (word >> 8) - 1;
    let outcome: AttemptOutcome = 'written';
    let reason: string | null = null;
    if (low !== WORD_WRITTEN) {
      reason = REASONS[low - WORD_FAILED_BASE] ?? 'other';
      outcome = outcomeOf(reason, closeCode);
    }
    attempts.push({ atUs: p[i]!, slot: p[i + 1]!, round: p[i + 2]!, leader, tpu: ti < 0 ? null : (names[ti] ?? null), outcome, closeCode, reason });
  }
  return { attempts, omitted: p[0]!, outstanding: p[1]! };
}

/**
 * The rebroadcast scheduler: one per process, on the main thread, fed with every accepted
 * transaction (from this thread directly, from ingress threads in batches).
 *
 * Once per slot, every transaction with rounds left (or held for anti-MEV and now releasable)
 * is written again to that slot's targets: all of them in ONE native call per routing policy
 * (`QuicClient.sendMany`), not one call — let alone one cross-thread message — per transaction.
 *
 * Rounds: up to `max_retries`, never twice in one slot, until the tracker settles the
 * transaction, its blockhash dies, its `deadline_slot` passes, or the rounds run out. A round counts only when it reached
 * the leader of its slot: rounds spent while that leader was unreachable (down, refusing, in
 * back-off) are free, up to `MAX_FREE_ROUNDS`, or a transaction accepted early in a dead
 * leader's window would use its retries there and never reach the next leader.
 *
 * After a restart (`resume`), a pending transaction whose bytes the store kept is sent again in
 * the first round (the first permitted leader's, for anti-MEV), then gets its `max_retries`
 * rounds afresh: the rounds it had used are not stored (a write per slot per transaction), and
 * the send it was acknowledged for may have died with the process.
 *
 * Each round's outcomes go to the transaction's delivery trace (`TraceBook`): `sendMany` resolves
 * with one outcome word per (transaction, target) — written, or the reason and the validator's
 * close code — and a released hold is an attempt of its own. The trace is finished when the
 * flight is dropped here, whatever the reason.
 */
import { sendOutcomeReasons, type QuicClient } from '../../native/index.js';
import type { Resend } from '../store/records.js';
import type { Leader, Route } from './chain-view.js';
import type { Accepted } from './delivery.js';
import { tpuTargets } from './first-send.js';
import { outcomeOf, type AttemptOutcome } from './trace.js';
import { hrtimeUs, type LiveTrace, type TraceBook } from './trace-book.js';

/** `sendMany`'s outcome word for a written transaction (low byte); failures are 2 + the reason's index. */
const WORD_WRITTEN = 1;
const WORD_FAILED_BASE = 2;
/** The native send failure reasons, in the order outcome words number them. */
const REASONS = sendOutcomeReasons();

/** Why a pending transaction from the store is sent again. */
export type ResumeCause = 'restart' | 'rollback';

/** Rounds a transaction may spend on unreachable leaders: two leader windows of 4 slots. */
export const MAX_FREE_ROUNDS = 8;

interface Flight {
  wire: Buffer;
  antiMev: boolean;
  retriesLeft: number;
  freeRoundsLeft: number;
  lastSentSlot: number;
  held: boolean;
  /** Held until the first round after a restart or a chain rollback (`resume`), rather than for anti-MEV. */
  resumed: ResumeCause | null;
  /** Last valid block height; null for durable nonces and unknown blockhashes (the tracker expires those). */
  lastValid: number | null;
  /** Its delivery trace (null when the engine keeps none). */
  trace: LiveTrace | null;
  /** Rounds sent by this scheduler (the trace's round number). */
  rounds: number;
  /** `deadline_slot`: no round in a later slot (Infinity without one). */
  deadline: number;
  /** After a chain rollback: sent every slot up to this one without spending its rounds; -1 otherwise. */
  replayUntil: number;
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

export class Rebroadcaster {
  private readonly flights = new Map<string, Flight>();
  readonly counters: RoundCounters = { rebroadcasts: 0, released: 0, held: 0, heldExpired: 0, deadlinePassed: 0, roundErrors: 0, resent: 0 };

  constructor(
    private readonly client: QuicClient,
    private readonly traces: TraceBook | null = null,
  ) {}

  get size(): number {
    return this.flights.size;
  }

  /**
   * Start rebroadcasting (or holding) an accepted transaction. Returns false when it has no
   * rounds to go (not held, `max_retries` 0): its trace, if given, is the caller's to finish.
   */
  add(a: Accepted, trace: LiveTrace | null = null): boolean {
    const { maxRetries, antiMev } = a.options;
    if (!a.held && maxRetries === 0) return false;
    if (a.held) this.counters.held++;
    const earlier = this.flights.get(a.record.signature);
    if (earlier && earlier.trace !== trace) this.end(earlier);
    this.flights.set(a.record.signature, {
      wire: a.wire,
      antiMev,
      retriesLeft: maxRetries,
      freeRoundsLeft: maxRetries > 0 ? MAX_FREE_ROUNDS : 0,
      lastSentSlot: a.sentSlot,
      held: a.held,
      resumed: null,
      lastValid: a.record.durableNonce ? null : a.record.lastValidBlockHeight,
      trace,
      rounds: 0,
      deadline: a.options.deadlineSlot ?? Infinity,
      replayUntil: -1,
    });
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
    if (this.flights.has(signature)) return;
    this.flights.set(signature, {
      wire: resend.wire,
      antiMev: resend.antiMev,
      retriesLeft: resend.maxRetries,
      freeRoundsLeft: resend.maxRetries > 0 ? MAX_FREE_ROUNDS : 0,
      lastSentSlot: -1,
      held: true,
      resumed: cause,
      lastValid,
      trace,
      rounds: 0,
      deadline,
      replayUntil,
    });
  }

  /**
   * The chain came back at a lower slot (`LeaderTracker.onRollback`): every flight goes again from
   * the next slot on (their last slots were the old chain's, higher than the new one's), and
   * every slot up to `replayUntil` without spending its rounds — what landed in the lost slots is
   * gone, and a restarted validator may not take transactions at once.
   */
  rewind(replayUntil: number): void {
    for (const f of this.flights.values()) {
      f.lastSentSlot = -1;
      f.replayUntil = replayUntil;
    }
  }

  /**
   * A transaction in flight gets its rounds afresh (`maxRetries`, and the free ones): after a
   * rollback, rounds it spent on slots that are gone bought nothing. False if not in flight.
   */
  refill(signature: string, maxRetries: number): boolean {
    const f = this.flights.get(signature);
    if (!f) return false;
    f.retriesLeft = Math.max(f.retriesLeft, maxRetries);
    if (maxRetries > 0) f.freeRoundsLeft = MAX_FREE_ROUNDS;
    return true;
  }

  /** The tracker settled it (confirmed, failed, expired): no more rounds. */
  settle(signature: string): void {
    const f = this.flights.get(signature);
    if (f) this.drop(signature, f);
  }

  /** Every transaction in flight is dropped (the service is closing): their traces are finished. */
  clear(): void {
    for (const [sig, f] of this.flights) this.drop(sig, f);
  }

  private drop(signature: string, f: Flight): void {
    this.flights.delete(signature);
    this.end(f);
  }

  private end(f: Flight): void {
    if (f.trace) this.traces?.end(f.trace);
  }

  /**
   * This slot's round: decide who is due in one pass, then one `sendMany` per policy.
   * @param routes the slot's targets per policy (as first sends use them)
   */
  onSlot(slot: number, height: number, routes: { plain: Route; antiMev: Route }): void {
    const due = { plain: [] as Array<[Flight, boolean]>, antiMev: [] as Array<[Flight, boolean]> };
    for (const [sig, f] of this.flights) {
      if (f.lastValid !== null && height > f.lastValid) {
        this.drop(sig, f);
        if (f.held && !f.resumed) this.counters.heldExpired++;
        continue;
      }
      if (slot > f.deadline) {
        // Its deadline passed: a landing now is one the bot no longer wants (nor pays for).
        this.drop(sig, f);
        this.counters.deadlinePassed++;
        continue;
      }
      if (f.lastSentSlot >= slot) continue;
      const route = f.antiMev ? routes.antiMev : routes.plain;
      let retry: boolean;
      if (f.held) {
        if (route.hold) continue;
        f.held = false;
        if (f.resumed === 'restart') this.counters.resent++;
        else if (f.resumed === null) this.counters.released++;
        retry = false; // a held transaction's first send is not a retry
        f.trace?.push({ atUs: f.trace.sinceUs(hrtimeUs()), slot, round: f.rounds + 1, leader: route.first[0]?.identity ?? null, tpu: null, outcome: 'released', closeCode: null, reason: null });
      } else if (slot <= f.replayUntil) {
        this.counters.rebroadcasts++;
        retry = false; // a slot of the lost chain made again: not a retry
      } else if (f.retriesLeft > 0) {
        this.counters.rebroadcasts++;
        retry = true;
      } else {
        this.drop(sig, f);
        continue;
      }
      f.lastSentSlot = slot;
      (f.antiMev ? due.antiMev : due.plain).push([f, retry]);
    }
    this.round(slot, routes.plain, due.plain);
    this.round(slot, routes.antiMev, due.antiMev);
  }

  private round(slot: number, route: Route, due: Array<[Flight, boolean]>): void {
    if (due.length === 0) return;
    for (const [f] of due) f.rounds++;
    const targets = tpuTargets(route.first);
    if (targets.length === 0) {
      for (const [f, retry] of due) if (retry) spend(f, false);
      return;
    }
    const leaders = route.first.filter((l) => l.tpuQuic !== null);
    // Index of the slot's own leader among the targets, if it has an address.
    const current = route.first[0]?.slot === slot && route.first[0].tpuQuic ? 0 : -1;
    const sentUs = hrtimeUs();
    for (const [f] of due) if (f.trace) f.trace.outstanding++;
    this.client.sendMany(targets, due.map(([f]) => f.wire)).then(
      (words) => {
        for (let i = 0; i < due.length; i++) {
          const [f, retry] = due[i]!;
          if (retry) spend(f, current >= 0 && (words[i * targets.length + current]! & 0xff) === WORD_WRITTEN);
          if (f.trace) {
            traceRound(f.trace, f.trace.sinceUs(sentUs), slot, f.rounds, leaders, words, i * targets.length);
            this.traces?.roundDone(f.trace);
          }
        }
      },
      () => {
        this.counters.roundErrors++;
        for (const [f] of due) if (f.trace) this.traces?.roundDone(f.trace);
      },
    );
  }
}

/** One round's attempts of one transaction, from its outcome words (`sendMany`; `at`: its first word). */
export function traceRound(t: LiveTrace, atUs: number, slot: number, round: number, leaders: Leader[], words: Uint16Array, at: number): void {
  for (let k = 0; k < leaders.length; k++) {
    const w = words[at + k]!;
    const low = w & 0xff;
    const closeCode = w >> 8 === 0 ? null : (w >> 8) - 1;
    let outcome: AttemptOutcome = 'written';
    let reason: string | null = null;
    if (low !== WORD_WRITTEN) {
      reason = REASONS[low - WORD_FAILED_BASE] ?? 'other';
      outcome = outcomeOf(reason, closeCode);
    }
    const l = leaders[k]!;
    t.push({ atUs, slot, round, leader: l.identity, tpu: l.tpuQuic, outcome, closeCode, reason });
  }
}

/** Count a rebroadcast round: a real retry if it reached the slot's leader, else a free one while any are left. */
function spend(f: Flight, reachedLeader: boolean): void {
  if (reachedLeader || f.freeRoundsLeft === 0) f.retriesLeft--;
  else f.freeRoundsLeft--;
}

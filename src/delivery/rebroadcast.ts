/**
 * The rebroadcast scheduler: one per process, on the main thread, fed with every accepted
 * transaction (from this thread directly, from ingress threads in batches).
 *
 * Once per slot, every transaction with rounds left (or held for anti-MEV and now releasable)
 * is written again to that slot's targets: all of them in ONE native call per routing policy
 * (`QuicClient.sendMany`), not one call — let alone one cross-thread message — per transaction.
 *
 * Rounds: `max_retries` of them at most, spread over the blockhash's life (`roundOffset`: the
 * first due in the next slot, then further and further apart, the last drawn in the last quarter
 * of the span, ending a few slots before the blockhash's last valid block height), never twice in
 * one slot, and to a leader that throttles us only if it did not get the transaction yet while
 * leading its current window (`covers`: a round with no target left waits for the next leader),
 * until the tracker settles the transaction, its blockhash dies, its `deadline_slot` passes, or
 * the rounds run out. With
 * `rebroadcast_until_expiry`, a round every slot for the first leader window, then one per leader
 * window (`UNTIL_EXPIRY_GAP`) until the blockhash dies, whatever `max_retries` says.
 *
 * A round is counted when it is handed to the QUIC client, not when its write resolves, and a
 * transaction whose last round is still queued gets no new one: against a leader that throttles
 * (an unstaked sender's normal case) the queues back up and writes resolve late, and counting at
 * resolution resent every transaction in flight every slot until its blockhash died (measured:
 * 127 writes a transaction dropped `queue_full`, up to 374 attempts where 4 were due). So a
 * transaction is written at most `max_retries` + 1 times (the first send and its rounds).
 *
 * Landed: the tracker tells the scheduler as soon as the chain's push says a transaction was
 * processed or confirmed (`landed`), before its status is read and written. Its rounds stop
 * there: nothing is written for it again unless `LANDED_PAUSE_SLOTS` pass without the tracker
 * settling it (a push about a fork that was then abandoned, or a status the node never
 * confirmed), when its remaining rounds resume.
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
import { sendOutcomeReasons, type QuicClient } from '../native.js';
import type { Resend } from '../store/records.js';
import type { Leader, Route } from './chain-view.js';
import type { Accepted } from './delivery.js';
import { tpuTargets } from './first-send.js';
import { ATTEMPT_OUTCOMES, outcomeOf, PACKED_STRIDE, type AttemptOutcome } from './trace.js';
import { hrtimeUs, type LiveTrace, type TraceBook } from './trace-book.js';

/** `sendMany`'s outcome word for a written transaction (low byte); failures are 2 + the reason's index. */
const WORD_WRITTEN = 1;
const WORD_FAILED_BASE = 2;
/** The native send failure reasons, in the order outcome words number them. */
const REASONS = sendOutcomeReasons();

/** Why a pending transaction from the store is sent again. */
export type ResumeCause = 'restart' | 'rollback';

/**
 * Slots a transaction's rounds stay stopped after the push said it landed, waiting for the
 * tracker to settle it: confirmation normally follows processing within 1–2 slots, and the
 * tracker's targeted status read a few hundred ms after that. Past this, the landing is doubted
 * (an abandoned fork) and the rounds left resume.
 */
export const LANDED_PAUSE_SLOTS = 8;

/** Slots from a round's slot to its blockhash's expiry kept clear: a round that late may not be processed in time. */
export const EXPIRY_MARGIN_SLOTS = 2;

/** A blockhash's life in blocks (`getLatestBlockhash`'s lastValidBlockHeight − blockHeight + 1). */
export const BLOCKHASH_LIFE_BLOCKS = 150;

/** With `rebroadcast_until_expiry`: a round every slot for the first this many, then one every this many slots (a leader window). */
export const UNTIL_EXPIRY_GAP = 4;

/** Consecutive slots a leader holds (Agave's `NUM_CONSECUTIVE_LEADER_SLOTS`): one leader window. */
export const LEADER_WINDOW_SLOTS = 4;

/**
 * A leader seen throttling us (`seeThrottling`: it reads our streams slower than we write them,
 * Agave's stream limit) counts as throttling for this many slots after — a blockhash's life, so
 * every round of a transaction in flight then sees it: a round then writes it no copy it already
 * has (`covers`). Remembered for 8 slots only, the marks lapsed whenever the queues had just
 * drained, the second copies came back and the queues with them (at 200 sends/s: 1,808 duplicate
 * streams read by leaders, arrivals p50 1.7 s after acceptance, 0–0.22 % expired; against 79–201,
 * 41–494 ms and 0 % when every covered leader was skipped).
 */
export const THROTTLE_MEMORY_SLOTS = 150;

/**
 * The last round of a transaction goes out somewhere in the last `1 / LAST_ROUND_SPREAD` of its
 * schedule, the place drawn from its signature. Without it, every transaction signed on one
 * blockhash — a bot's whole second of sends — had its last round in the same slot, a few slots
 * before the blockhash died: against a leader that takes 200 streams a second (an unstaked
 * sender's limit) a burst of 781 such writes took 4 s to be read, and every one of them arrived
 * after the blockhash had expired (measured: 781 of 781 last rounds, 8.7 % of a saturating run).
 */
export const LAST_ROUND_SPREAD = 4;

/**
 * The slot offset (from the first send) of round `k` (1-based) of `n`, spread over `span` slots
 * (the slots the blockhash has left, minus `EXPIRY_MARGIN_SLOTS`): a geometric series from 1 to
 * `span`, so each round waits a constant ratio of the transaction's age. Round 1 is in the next
 * slot (most misses are one lost write or one leader not taking it: the next slot's leader
 * does), the last near the end of the blockhash's life (a leader that drops everything for
 * seconds — a validator before its first root, a burst of loss, a run of skipped slots — gets
 * the transaction again once it is back). For 3 rounds over 148 slots: slots 1, 12, 148; for 10:
 * 1, 2, 3, 5, 9, 16, 28, 49, 85, 148. Always at least one slot after the round before. The last
 * round is moved earlier by `draw` modulo a quarter of the span (`LAST_ROUND_SPREAD`): for 3
 * rounds over 148 slots, somewhere in slots 111–148.
 */
export function roundOffset(k: number, n: number, span: number, draw = 0): number {
  if (k <= 1 || n <= 1) return k;
  const s = Math.max(span, n);
  const at = Math.max(k, Math.round(Math.pow(s, (k - 1) / (n - 1))));
  if (k < n) return at;
  // The last round: drawn in the last quarter of the span, still after the round before.
  return Math.max(roundOffset(k - 1, n, span) + 1, at - (draw % Math.ceil(s / LAST_ROUND_SPREAD)));
}

/** A number drawn from a signature (base58: its characters are already uniform), for `roundOffset`'s `draw`. */
export function drawOf(signature: string): number {
  let h = 0;
  for (let i = 0; i < 8 && i < signature.length; i++) h = h * 58 + signature.charCodeAt(i);
  return h;
}

interface Flight {
  wire: Buffer;
  antiMev: boolean;
  /** `max_retries`: the rounds it may have (its schedule's length). */
  maxRetries: number;
  /** Rounds written so far (rollback replays and anti-MEV releases are not counted). */
  retries: number;
  /** `rebroadcast_until_expiry`: a round per leader window until the blockhash dies. */
  untilExpiry: boolean;
  /** The slot its schedule counts from (its first send's; set at the first slot seen when unknown). */
  baseSlot: number;
  /** Slots its rounds are spread over; -1 until the first slot seen (the block height is known then). */
  span: number;
  /** A round of it is queued in the QUIC client (written, outcome not in): no new round until it resolves. */
  queued: boolean;
  /** The slot in which the push said it landed (rounds stop); -1 when not. */
  landedSlot: number;
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
  /** `drawOf(signature)`: where in the last quarter of its schedule its last round goes. */
  draw: number;
  /**
   * The leaders it is written to (or queued for) in their current window: TPU address, then the
   * slot the write was aimed at (see `covers`), flat. A round skips them.
   */
  written: Array<string | number>;
}

/**
 * Does a write to `tpu` made in slot `aimed`, while it led, still cover `leader` (one of this
 * slot's targets, whose `slot` is the first slot from now it leads)? Yes within the same leader
 * window: a leader reads what it was sent while leading, and a second copy of a transaction it already has only
 * takes a stream from its budget — against a leader that throttles (20 streams per 100 ms for an
 * unstaked sender), a stream another transaction needed. Measured at 200 sends/s against those
 * limits: round 1, written to the same two leaders as the first send one slot earlier, was 1,642
 * of the 9,000 streams the leaders read during their windows as duplicates.
 *
 * Only against a leader that throttles us (`THROTTLE_MEMORY_SLOTS`): from one that reads our
 * streams as fast as we write them, a second copy costs nothing, and under loss it is an
 * independent chance — measured with a 5 s burst of 10 % loss at 150 ms and 200 ms slots,
 * skipping every covered leader left one transaction of 40 to its round at +12 slots (p99 12
 * slots, was 3).
 */
function covers(written: Array<string | number>, leader: Leader): boolean {
  if (leader.tpuQuic === null) return false;
  for (let i = 0; i < written.length; i += 2) {
    if (written[i] === leader.tpuQuic) return leader.slot - (written[i + 1] as number) <= LEADER_WINDOW_SLOTS;
  }
  return false;
}

function cover(written: Array<string | number>, tpu: string, aimed: number): void {
  for (let i = 0; i < written.length; i += 2) {
    if (written[i] === tpu) {
      written[i + 1] = aimed;
      return;
    }
  }
  written.push(tpu, aimed);
}

/** The write to `tpu` aimed at `aimed` failed: not covered after all (unless a later write covers it). */
function uncover(written: Array<string | number>, tpu: string, aimed: number): void {
  for (let i = 0; i < written.length; i += 2) {
    if (written[i] === tpu && written[i + 1] === aimed) {
      written.splice(i, 2);
      return;
    }
  }
}

/**
 * The first send's leader of its slot (`current`: its TPU address), if the send reached it
 * (written, or still queued), from its packed attempts. Only that one: a copy the next leader
 * received before its window began may not have been kept for it (the local cluster drops what
 * arrives more than its 20 ms grace early; Agave holds packets for an imminent leader slot), so
 * it covers nothing (measured with one leader in four skipping its slots: counting it left sends
 * to the round at +12 slots, p90 11 slots).
 */
function firstWritten(a: Accepted, current: string | null): Array<string | number> {
  const out: Array<string | number> = [];
  const p = a.firstAttempts;
  if (!p || a.sentSlot < 0 || current === null) return out;
  const written = ATTEMPT_OUTCOMES.indexOf('written');
  const pending = ATTEMPT_OUTCOMES.indexOf('pending');
  for (let i = 0; i + PACKED_STRIDE <= p.length; i += PACKED_STRIDE) {
    if (p[i] === current && (p[i + 1] === written || p[i + 1] === pending)) cover(out, current, a.sentSlot);
  }
  return out;
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
  /** TPU address → the last slot it counts as throttling us (`THROTTLE_MEMORY_SLOTS`). */
  private readonly throttling = new Map<string, number>();
  /** TPU addresses whose connection is backing off after a failure, as of this slot's round. */
  private readonly backingOff = new Set<string>();
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
  add(a: Accepted, trace: LiveTrace | null = null, current: string | null = null): boolean {
    const { maxRetries, antiMev } = a.options;
    if (!a.held && maxRetries === 0 && !a.options.rebroadcastUntilExpiry) return false;
    if (a.held) this.counters.held++;
    const earlier = this.flights.get(a.record.signature);
    if (earlier && earlier.trace !== trace) this.end(earlier);
    this.flights.set(a.record.signature, {
      wire: a.wire,
      antiMev,
      maxRetries,
      retries: 0,
      untilExpiry: a.options.rebroadcastUntilExpiry,
      baseSlot: a.sentSlot,
      span: -1,
      queued: false,
      landedSlot: -1,
      lastSentSlot: a.sentSlot,
      held: a.held,
      resumed: null,
      lastValid: a.record.durableNonce ? null : a.record.lastValidBlockHeight,
      trace,
      rounds: 0,
      deadline: a.options.deadlineSlot ?? Infinity,
      replayUntil: -1,
      draw: drawOf(a.record.signature),
      written: firstWritten(a, current),
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
      maxRetries: resend.maxRetries,
      retries: 0,
      untilExpiry: resend.untilExpiry === true,
      baseSlot: -1,
      span: -1,
      queued: false,
      landedSlot: -1,
      lastSentSlot: -1,
      held: true,
      resumed: cause,
      lastValid,
      trace,
      rounds: 0,
      deadline,
      replayUntil,
      draw: drawOf(signature),
      written: [],
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
      f.written.length = 0; // what the lost chain's leaders had is gone
    }
  }

  /**
   * A transaction in flight gets its rounds afresh (`maxRetries`, and the free ones): after a
   * rollback, rounds it spent on slots that are gone bought nothing. False if not in flight.
   */
  refill(signature: string, maxRetries: number): boolean {
    const f = this.flights.get(signature);
    if (!f) return false;
    f.maxRetries = Math.max(f.maxRetries, maxRetries);
    f.retries = 0;
    f.baseSlot = -1;
    f.span = -1;
    f.landedSlot = -1;
    return true;
  }

  /**
   * The chain's push says `signature` landed (processed or confirmed) in the current slot `slot`:
   * no round for it while the tracker reads and writes its status (`LANDED_PAUSE_SLOTS` at most).
   * False if not in flight.
   */
  landed(signature: string, slot: number): boolean {
    const f = this.flights.get(signature);
    if (!f) return false;
    if (f.landedSlot < 0) f.landedSlot = slot;
    return true;
  }

  /** The slot of the next round due for `signature` (null: not in flight, or no round left). For tests and the trace. */
  nextRoundSlot(signature: string): number | null {
    const f = this.flights.get(signature);
    if (!f || f.baseSlot < 0) return null;
    if (f.span < 0) return f.baseSlot + 1; // the first round is always in the next slot
    const due = this.dueSlot(f);
    return due === Infinity ? null : due;
  }

  /** The slot its next round is due in (Infinity: none left). */
  private dueSlot(f: Flight): number {
    if (f.untilExpiry) {
      const k = f.retries + 1;
      const offset = k <= UNTIL_EXPIRY_GAP ? k : UNTIL_EXPIRY_GAP * (k - UNTIL_EXPIRY_GAP + 1);
      // A durable nonce (no expiry known) goes on until the tracker settles or expires it.
      return f.lastValid === null || offset <= f.span ? f.baseSlot + offset : Infinity;
    }
    if (f.retries >= f.maxRetries) return Infinity;
    return f.baseSlot + roundOffset(f.retries + 1, f.maxRetries, f.span, f.draw);
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
    // Due flights grouped by the targets they get (a policy's leaders, less those a flight's
    // earlier write still covers): one `sendMany` per group.
    const groups = new Map<string, { leaders: Leader[]; due: Array<[Flight, boolean]> }>();
    if (this.flights.size > 0) this.seeThrottling(slot);
    const throttles = (l: Leader): boolean => l.tpuQuic !== null && (this.throttling.get(l.tpuQuic) ?? -1) >= slot;
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
      // Its last round is still queued: a new one would only queue behind it.
      if (f.queued) continue;
      if (f.baseSlot < 0) f.baseSlot = f.held || f.resumed ? slot : slot - 1;
      if (f.span < 0) f.span = spanOf(f.lastValid, height, f.baseSlot, slot);
      if (f.landedSlot >= 0) {
        // Landed, as far as the push knows: nothing more while the tracker settles it.
        if (slot <= f.landedSlot + LANDED_PAUSE_SLOTS) continue;
        f.landedSlot = -1; // not settled in time: doubted, the rounds left resume
      }
      const route = f.antiMev ? routes.antiMev : routes.plain;
      let retry: boolean;
      let leaders = route.first;
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
      } else {
        const due = this.dueSlot(f);
        if (due === Infinity) {
          this.drop(sig, f);
          continue;
        }
        if (slot < due) continue;
        // Only leaders that do not have it yet in their window (`covers`); when every target
        // does, the round waits for the next leader — unless the blockhash is about to die
        // (every copy then counts) or the bot asked for a round every slot until it dies.
        if (!f.untilExpiry && (f.lastValid === null || f.lastValid - height > LEADER_WINDOW_SLOTS)) {
          // The current leader is known unreachable (its connection is backing off after a
          // failure): the round waits for the first slot of a leader that can take it. Written
          // now, its only live copy would reach the next leader before its window (Agave holds
          // such packets; the local cluster drops them, and a round timed into a dead leader's
          // window then lands nowhere), so waiting costs nothing on mainnet either.
          const current = route.first[0];
          if (current !== undefined && current.slot <= slot && current.tpuQuic !== null && this.backingOff.has(current.tpuQuic)) continue;
          leaders = route.first.filter((l) => !(throttles(l) && covers(f.written, l)));
          if (leaders.length === 0) continue;
        }
        this.counters.rebroadcasts++;
        retry = true;
      }
      f.lastSentSlot = slot;
      const key = (f.antiMev ? 'm' : 'p') + (leaders === route.first ? '*' : leaders.map((l) => l.tpuQuic).join(','));
      let g = groups.get(key);
      if (!g) groups.set(key, (g = { leaders, due: [] }));
      g.due.push([f, retry]);
    }
    for (const g of groups.values()) this.round(slot, g.leaders, g.due);
  }

  /**
   * Which leaders throttle us now: those whose connection waits for stream credit (the leader
   * reads our streams slower than we write them). Not writes merely queued: a handshake under
   * way, or a congestion window shrunk by loss, queues writes too, and under loss the second
   * copy is what lands.
   */
  private seeThrottling(slot: number): void {
    this.backingOff.clear();
    for (const p of this.client.peerStats()) {
      if (p.creditWaitMs !== undefined && p.creditWaitMs !== null) this.throttling.set(p.target, slot + THROTTLE_MEMORY_SLOTS);
      if (p.backoffRemainingMs > 0) this.backingOff.add(p.target);
    }
    for (const [tpu, until] of this.throttling) if (until < slot) this.throttling.delete(tpu);
  }

  private round(slot: number, route: Leader[], due: Array<[Flight, boolean]>): void {
    if (due.length === 0) return;
    const leaders = route.filter((l) => l.tpuQuic !== null);
    const targets = tpuTargets(leaders);
    // No target with an address: nothing is written, so nothing is counted (the next slot tries).
    if (targets.length === 0) {
      for (const [f] of due) f.lastSentSlot = -1;
      return;
    }
    // Counted now, as it is handed to the client: its number is its own, whenever it resolves.
    const numbers = due.map(([f, retry]) => {
      if (retry) f.retries++;
      f.queued = true;
      for (const l of leaders) if (l.slot <= slot) cover(f.written, l.tpuQuic!, l.slot);
      return ++f.rounds;
    });
    const sentUs = hrtimeUs();
    for (const [f] of due) if (f.trace) f.trace.outstanding++;
    this.client.sendMany(targets, due.map(([f]) => f.wire)).then(
      (words) => {
        for (let i = 0; i < due.length; i++) {
          const [f] = due[i]!;
          f.queued = false;
          // A write that failed covers nothing: the next round may try that leader again.
          for (let k = 0; k < leaders.length; k++) if ((words[i * targets.length + k]! & 0xff) !== WORD_WRITTEN) uncover(f.written, leaders[k]!.tpuQuic!, leaders[k]!.slot);
          if (f.trace) {
            traceRound(f.trace, f.trace.sinceUs(sentUs), slot, numbers[i]!, leaders, words, i * targets.length);
            this.traces?.roundDone(f.trace);
          }
        }
      },
      () => {
        this.counters.roundErrors++;
        for (const [f] of due) {
          f.queued = false;
          for (const l of leaders) uncover(f.written, l.tpuQuic!, l.slot);
          if (f.trace) this.traces?.roundDone(f.trace);
        }
      },
    );
  }
}

/**
 * Slots a transaction's rounds are spread over, from `baseSlot`: what its blockhash has left at
 * block height `height` (in slot `slot`), less `EXPIRY_MARGIN_SLOTS`; a blockhash's whole life
 * when its last valid height is unknown (a durable nonce, an unknown blockhash). Block height
 * advances one per produced block, never faster than the slot: a schedule in slots that fits the
 * blocks left ends before the blockhash dies, even with skipped slots.
 */
function spanOf(lastValid: number | null, height: number, baseSlot: number, slot: number): number {
  const left = lastValid === null ? BLOCKHASH_LIFE_BLOCKS : lastValid - height;
  return Math.max(1, left - EXPIRY_MARGIN_SLOTS + (slot - baseSlot));
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


/**
 * The delivery traces of the transactions in flight, on the main thread (one per process, owned
 * by the `Engine`). A trace is opened when the accepted transaction reaches this thread (with its
 * first send's attempts), grows with each rebroadcast round, and is written to the store once,
 * in the status records' grouped commit, when its last round's outcomes are in — not per round:
 * a write per round per transaction would cost the send path a put and an encode each time.
 * Until its write is committed it is served from here (`current`); after that, from the store.
 *
 * Memory: a trace lives here exactly as long as the rebroadcast scheduler keeps its flight (the
 * rounds, a few slots; an anti-MEV hold, at most a blockhash lifetime), plus one commit window.
 */
import { signatureIn } from '../store/status-codec.js';
import type { Accepted } from './delivery.js';
import { TraceBuilder, unpackAttempts, type Attempt, type Trace } from './trace.js';

/** Where finished traces go (the `Store`). */
export interface TraceStore {
  /** `key`: the signature's 64 bytes where the caller holds them (else decoded from `signature`). */
  putTrace(signature: string, trace: Trace, key?: Buffer): Promise<boolean>;
  getTrace(signature: string): Trace | undefined;
}

/** A flight's rebroadcast rounds as the native flight table keeps them (`Rebroadcaster`). */
export interface KeptRounds {
  attempts: Attempt[];
  omitted: number;
  /** Rounds sent whose outcomes are not in yet. */
  outstanding: number;
}

/** The trace of one transaction in flight. */
export class LiveTrace extends TraceBuilder {
  /**
   * While its flight is in the native flight table (`Rebroadcaster`): its rounds' attempts,
   * read there on demand (a live `/v1/trace`); appended here once, when the flight ends.
   */
  rounds: ((flight: number) => KeptRounds | null) | null = null;
  /** Its flight's number in that table (the argument of `rounds`). */
  flight = -1;
  /** The flight ended: written when `end` is called (its rounds are all in by then). */
  ended = false;
  /**
   * The signature's 64 bytes (the trace's key), in the transaction's wire when the hand-off
   * said where: the write then does not decode the base58 again (~2 µs a send on the main thread).
   */
  key: Buffer | undefined = undefined;

  constructor(
    readonly signature: string,
    /** When the request was received, µs on the `process.hrtime` clock (the same in every thread). */
    readonly acceptedUs: number,
    from?: Trace,
  ) {
    super(from);
  }

  /** Rounds sent whose outcomes are not in yet (0 once the flight's rounds are appended here). */
  get outstanding(): number {
    return this.rounds?.(this.flight)?.outstanding ?? 0;
  }

  override get attempts(): Attempt[] {
    return this.rounds === null ? this.list : this.view().attempts;
  }

  override get omitted(): number {
    return this.rounds === null ? this.dropped : this.view().omitted;
  }

  /** Its own attempts and the native table's so far, capped as one trace. */
  private view(): Trace {
    const kept = this.rounds?.(this.flight) ?? null;
    const b = new TraceBuilder({ attempts: this.list, omitted: this.dropped });
    if (kept !== null) {
      for (const a of kept.attempts) b.push(a);
      b.addOmitted(kept.omitted);
    }
    return b;
  }

  /** µs since the request was received, at `nowUs` (`hrtimeUs()`). */
  sinceUs(nowUs: number): number {
    return Math.max(0, Math.round(nowUs - this.acceptedUs));
  }
}

/** `process.hrtime` in µs (a double: exact to well below a µs for centuries of uptime). */
export function hrtimeUs(): number {
  return Number(process.hrtime.bigint()) / 1000;
}

export class TraceBook {
  private readonly live = new Map<string, LiveTrace>();
  /** Written, not committed yet: still served from here. */
  private readonly writing = new Map<string, Trace>();
  /** The commit window the latest writes went into. */
  private batch: WriteBatch | null = null;
  /** Where finished traces are written; none (tests of the engine alone): they are dropped. */
  store: TraceStore | null = null;
  /** Traces the store did not take (closed, or unavailable too long). */
  lost = 0;

  /** @param leaderOf the leader identity of a TPU address, if known */
  constructor(private readonly leaderOf: (tpu: string) => string | null) {}

  get size(): number {
    return this.live.size;
  }

  /**
   * Open the trace of an accepted transaction: its first send's attempts, or its hold (the
   * leader then is blocked for anti-MEV). A signature this thread still holds a trace of (two
   * threads accepted it at once) keeps it and gains the new attempts. The store is not read:
   * only a new record is handed over, so there is nothing stored to continue (a read per send
   * on this thread would cost more than the rest of the trace).
   * @param holdLeader the leader of the submission slot, for a held transaction
   */
  open(a: Accepted, holdLeader: string | null): LiveTrace {
    const sig = a.record.signature;
    let t = this.live.get(sig);
    if (t === undefined) {
      t = new LiveTrace(sig, Number(a.receivedAt) / 1000, this.writing.get(sig));
      // A copy, not a view: an ingress thread's wire is a view into its whole drained hand-off
      // batch, which a view kept here would hold for as long as the trace lives (until the
      // flight ends, a minute and more on a node where nothing lands).
      if (a.signatureOffset !== undefined) t.key = Buffer.from(signatureIn(a.wire, a.signatureOffset));
      this.live.set(sig, t);
    }
    t.ended = false;
    const slot = a.record.submitSlot;
    if (a.held) {
      t.push({ atUs: t.sinceUs(hrtimeUs()), slot, round: 0, leader: holdLeader, tpu: null, outcome: 'held', closeCode: null, reason: null });
    } else if (a.firstAttempts) {
      unpackAttempts(a.firstAttempts, slot, this.leaderOf, t);
    }
    return t;
  }

  /**
   * Reopen the trace of a pending transaction after a restart, to trace its resend. Its clock
   * starts at the record's submission time (the old process's monotonic clock is gone).
   */
  reopen(signature: string, submittedAtMs: number): LiveTrace {
    const existing = this.live.get(signature);
    if (existing) return existing;
    const acceptedUs = hrtimeUs() - Math.max(0, Date.now() - submittedAtMs) * 1000;
    const t = new LiveTrace(signature, acceptedUs, this.stored(signature));
    this.live.set(signature, t);
    return t;
  }

  /**
   * The flight ended (settled, expired, rounds done) and its last round's outcomes are in (the
   * `Rebroadcaster` calls this only then): write the trace.
   */
  end(t: LiveTrace): void {
    t.ended = true;
    this.write(t);
  }

  /** The trace of `signature` while this thread still holds it (in flight or being written), else null. */
  current(signature: string): Trace | null {
    const t = this.live.get(signature) ?? this.writing.get(signature);
    return t === undefined ? null : { attempts: t.attempts.slice(), omitted: t.omitted };
  }

  /** Write every trace still in flight (the service is closing; each resumes after a restart). */
  flush(): void {
    for (const t of [...this.live.values()]) this.write(t);
  }

  private stored(signature: string): Trace | undefined {
    try {
      return this.store?.getTrace(signature);
    } catch {
      return undefined; // an unreadable old trace is started afresh rather than failing the send
    }
  }

  private write(t: LiveTrace): void {
    // Written once: a round that comes in after `flush` wrote it (closing) is not written again.
    if (this.live.get(t.signature) !== t) return;
    this.live.delete(t.signature);
    if (this.store === null) return;
    this.writing.set(t.signature, t);
    const promise = this.store.putTrace(t.signature, t, t.key);
    // One reaction per commit window, not per trace: the writes of a window share its promise.
    let batch = this.batch;
    if (batch === null || batch.promise !== promise) {
      const mine: WriteBatch = (batch = this.batch = { promise, traces: [] });
      const done = (committed: boolean) => {
        for (const w of mine.traces) {
          if (!committed) this.lost++;
          if (this.writing.get(w.signature) === w) this.writing.delete(w.signature);
        }
        if (this.batch === mine) this.batch = null;
      };
      promise.then(done, () => done(false));
    }
    batch.traces.push(t);
  }
}

/** The traces written in one commit window (they share its promise). */
interface WriteBatch {
  promise: Promise<boolean>;
  traces: LiveTrace[];
}

/**
 * The delivery engine: the process's one leader tracker, rebroadcast scheduler and link to the
 * confirmation tracker, on the main thread. It holds the main thread's `Delivery` (`delivery`: a
 * `ThreadDelivery` over the leader tracker, for requests served on the main thread, whose sink is
 * the engine's own hand-over), takes the ingress threads' accepted transactions in batches
 * (`acceptedBatch`), and publishes a chain snapshot per slot for those threads' chain views.
 *
 * Per slot (`onSlot`), once:
 *   1. routes for both policies: the current and next distinct leader(s) (`fanout`), the
 *      leaders after those for a second try, and whether the current leader is blocked
 *      (anti-MEV: a blocklisted validator is never a target; when it leads, transactions are
 *      held and released in the first slot whose leader is permitted);
 *   2. the snapshot (slot, routes, new blockhashes) applied to this thread's view and sent to
 *      every ingress thread;
 *   3. pre-warm: connections to the next `prewarm` distinct leaders, so a send never waits for
 *      a handshake;
 *   4. the rebroadcast round (`Rebroadcaster`).
 *
 * Send outcomes of every thread (first sends, their late outcomes, rebroadcasts) are counted by
 * the native client and drained here for the metrics: no per-send callback into JavaScript.
 * Each transaction's own attempts make its delivery trace (`traces`, see `trace-book.ts`).
 */
import { QuicClient } from '../native.js';
import type { PendingRecord, StatusRecord } from '../store/records.js';
import type { StatusChange, Tracker } from '../tracker/tracker.js';
import { Blocklist } from './blocklist.js';
import { BLOCKHASH_VALIDITY_BLOCKS, ChainViewReplica, type ChainSnapshot, type Route } from './chain-view.js';
import type { Accepted, ChainHealth, ChainSource } from './delivery.js';
import { FirstSender } from './first-send.js';
import { LeaderTracker } from './leaders.js';
import { PostMortems } from './post-mortem.js';
import { LandingAnalytics } from '../tracker/landing-analytics.js';
import { Rebroadcaster, type ResumeCause } from './rebroadcast.js';
import type { Trace } from './trace.js';
import { TraceBook } from './trace-book.js';
import { ThreadDelivery } from './thread-delivery.js';
import { BoundedLabel } from '../telemetry/bounded-label.js';

export { SERVICE_LATENCY_BUCKETS } from './first-send.js';

/**
 * Leader identities with a `leader` label of their own in `landfall_leader_sends_total`; the
 * rest count as "other" (`BoundedLabel`), so the series stay bounded on mainnet's ~1,500 leaders.
 */
export const LEADER_LABELS = 32;

/** How far ahead a route looks for distinct permitted leaders, slots. */
const ROUTE_HORIZON = 64;

/**
 * Writes waiting per leader connection. A slot's rebroadcast round queues every due transaction
 * at once (the native flight table's `round`): at 4,000 accepted/s and 400 ms slots that is ~1,600 per policy, past the
 * client's default of 1,024 (measured: half a round refused with `queue_full`).
 */
export const QUIC_QUEUE_PER_PEER = 16_384;

export interface EngineOptions {
  rpcUrl: string;
  wsUrl: string;
  /** 32-byte ed25519 seed of the QUIC identity. */
  identity: Buffer;
  fanout?: number;
  prewarm?: number;
  blocklistPath?: string | null;
  /** Slot age beyond which the engine reports itself unsynced. */
  staleMs?: number;
}

export class Engine {
  readonly leaders: LeaderTracker;
  readonly blocklist: Blocklist;
  readonly client: QuicClient;
  /** This thread's chain view (ingress threads hold replicas of it). */
  readonly view = new ChainViewReplica();
  readonly first: FirstSender;
  /**
   * The chain as the main thread's sends see it: the leader tracker's slot, freshness and
   * blockhashes (current the moment they change, not once per snapshot), this thread's view for
   * the newest blockhash and the slot listeners.
   */
  readonly chain: ChainSource;
  /**
   * The main thread's `Delivery` (`ingressThreads: 0`): the same class as an ingress thread's,
   * over `chain`, with the engine's own hand-over (and `onAccepted`, `replicated`) as its sink.
   */
  readonly delivery: ThreadDelivery;
  readonly rebroadcaster: Rebroadcaster;
  /** Delivery traces of the transactions in flight; set `traces.store` to keep them. */
  readonly traces: TraceBook;
  /** Why the transactions that did not land did not (the last `MAX_KEPT`, in memory). */
  readonly postMortems: PostMortems;
  /** Per-account landing rate and slots to land, by leader and over time (`GET /v1/analytics`). */
  readonly analytics = new LandingAnalytics();
  private tracker: Tracker | null = null;
  /**
   * Told when the chain came back at a lower slot (after the flights in the air were rewound):
   * the service hands every pending transaction it tracks to `rearm`.
   */
  onRollback: ((from: number, to: number) => void) | null = null;
  /** Pending transactions sent again after chain rollbacks (`rearm`). */
  rearmed = 0;
  /**
   * After the last rollback, re-armed transactions are sent every slot up to this one: a
   * blockhash's lifetime past the slot the chain came back at (or the lost chain's highest, if
   * later). Measured on a real Agave test validator restarted from its snapshot (188 → 120): it
   * replayed its ledger to 189 within ~1 s and did not take five writes made in that second, so a
   * few rounds are not enough; until the transaction lands, fails or expires is.
   */
  private replayUntil = -1;
  private readonly fanout: number;
  private readonly prewarmCount: number;
  private readonly snapshotListeners = new Set<(s: ChainSnapshot) => void>();
  /** The `leader` label of the per-leader counts: at most {@link LEADER_LABELS} identities, the rest "other". */
  private readonly leaderLabel = new BoundedLabel(LEADER_LABELS);
  private readonly tally = {
    /** Writes per leader identity (ok: stream written; failed: not), bounded by `leaderLabel`. */
    sends: new Map<string, { ok: number; failed: number }>(),
    /** Failed writes by reason. */
    drops: new Map<string, number>(),
    /** First sends of this thread that reached no leader (`DeliveryError`; the ingress threads' are not counted here). */
    deliveryFailed: 0,
  };

  /** Send outcomes of every thread, up to date (the native counts are drained on each read). */
  get counters(): Engine['tally'] {
    this.drainOutcomes();
    return this.tally;
  }

  constructor(private readonly opts: EngineOptions) {
    this.fanout = opts.fanout ?? 2;
    this.prewarmCount = opts.prewarm ?? 8;
    this.blocklist = new Blocklist(opts.blocklistPath ?? null);
    this.client = new QuicClient({ identity: opts.identity, maxQueuePerPeer: QUIC_QUEUE_PER_PEER });
    this.first = new FirstSender(this.client, this.view);
    this.traces = new TraceBook((tpu) => this.leaders.identityOfTpu(tpu));
    this.rebroadcaster = new Rebroadcaster(this.client, this.traces);
    this.leaders = new LeaderTracker({
      rpcUrl: opts.rpcUrl,
      wsUrl: opts.wsUrl,
      staleMs: opts.staleMs,
      onSlot: (slot) => this.onSlot(slot),
      onRollback: (from, to) => {
        this.replayUntil = Math.max(from, to + BLOCKHASH_VALIDITY_BLOCKS);
        this.rebroadcaster.rewind(this.replayUntil);
        this.onRollback?.(from, to);
      },
      // The slot's blockhash arrives just after the slot: refresh the snapshot with it.
      onBlockhash: () => {
        if (this.view.snapshot !== null) this.publish(this.leaders.currentSlot());
      },
    });
    this.postMortems = new PostMortems({ rpc: this.leaders.rpc, leaderAt: (slot) => this.leaders.leaderAt(slot), slot: () => this.leaders.currentSlot() });
    const { leaders, view } = this;
    this.chain = {
      health: () => this.health(),
      isBlockhashExpired: (blockhash) => leaders.isBlockhashExpired(blockhash),
      lastValidBlockHeight: (blockhash) => leaders.lastValidBlockHeight(blockhash),
      latestBlockhash: () => view.latestBlockhash(),
      onSlot: (listener) => view.onSlot(listener),
    };
    // The main thread's first sends, with those that reached no leader counted (`tally`).
    const first = this.first;
    const counted: Pick<FirstSender, 'send'> = {
      send: async (signature, wire, options, receivedAt) => {
        try {
          return await first.send(signature, wire, options, receivedAt);
        } catch (e) {
          this.tally.deliveryFailed++;
          throw e;
        }
      },
    };
    this.delivery = new ThreadDelivery(this.chain, counted, leaders.rpc, (a) => {
      this.hand(a);
      this.onAccepted?.(a.record, a);
      return this.replicated?.(a.record.signature);
    });
  }

  /** Wait until the chain view is complete (slot, leaders, addresses, a blockhash). */
  async ready(timeoutMs?: number): Promise<void> {
    await this.leaders.ready(timeoutMs);
    this.publish(this.leaders.currentSlot());
  }

  /** Connect the tracker: the engine tells it what to watch, it tells the engine what settled. */
  attach(tracker: Tracker): (change: StatusChange) => void {
    this.tracker = tracker;
    return (change) => this.rebroadcaster.settle(change.record.signature);
  }

  /** The tracker's push says `signature` landed: its rounds stop while the tracker settles it (`Rebroadcaster.landed`). */
  landed(signature: string): void {
    this.rebroadcaster.landed(signature, this.leaders.currentSlot());
  }

  /** Get every chain snapshot from now on (the current one at once); returns the unsubscribe. */
  onSnapshot(listener: (s: ChainSnapshot) => void): () => void {
    this.snapshotListeners.add(listener);
    const current = this.view.snapshot;
    if (current) listener({ ...current, blockhashes: this.leaders.liveBlockhashes() });
    return () => this.snapshotListeners.delete(listener);
  }

  get identity(): string {
    return this.client.identity;
  }

  get serviceLatency() {
    return this.first.serviceLatency;
  }

  get nativeLatency() {
    return this.first.nativeLatency;
  }

  health(): ChainHealth {
    return { synced: this.leaders.synced(), slot: this.leaders.currentSlot(), slotAgeMs: this.leaders.slotAgeMs() };
  }

  /** Told of each transaction accepted on this thread (the main thread's status stream). */
  onAccepted: ((record: StatusRecord, accepted: Accepted) => void) | null = null;
  /**
   * `ackReplication: quorum` on a cluster (set by the service): the wait for the cluster to store
   * the status event of a transaction accepted on this thread (`HandoffSink`).
   */
  replicated?: (signature: string) => Promise<void>;

  /**
   * The compute-unit price of a transaction handed over, until it settles or expires (then
   * `takeComputeUnitPrice`): what the priority-fee guidance counts once it lands.
   */
  private readonly computeUnitPrices = new Map<string, number>();

  /** The compute-unit price of an accepted transaction, forgotten as it is read (undefined if unknown). */
  takeComputeUnitPrice(signature: string): number | undefined {
    const price = this.computeUnitPrices.get(signature);
    this.computeUnitPrices.delete(signature);
    return price;
  }

  /** Rebroadcast rounds, tracking and the delivery trace of one accepted transaction. */
  private hand(a: Accepted): void {
    // Before the tracker watches it: it may settle at once (an outcome seen before the hand-over).
    if (a.computeUnitPrice !== undefined) this.computeUnitPrices.set(a.record.signature, a.computeUnitPrice);
    const trace = this.traces.open(a, a.held ? this.leaders.leaderAt(a.record.submitSlot) : null);
    const leader = a.sentSlot >= 0 ? this.leaders.leaderAt(a.sentSlot) : null;
    if (!this.rebroadcaster.add(a, trace, leader === null ? null : this.leaders.tpuOf(leader))) this.traces.end(trace);
    this.tracker?.watch(a.record, a.receivedAt, a.nonceAccount);
  }

  /**
   * The delivery trace of a transaction this thread still holds (in flight), else null: read the
   * store. With a post-mortem kept here (it did not land), the stored trace with it.
   */
  liveTrace(signature: string): Trace | null {
    const t = this.traces.current(signature);
    const pm = this.postMortems.get(signature);
    if (pm === undefined) return t;
    let base = t;
    try {
      base ??= this.traces.store?.getTrace(signature) ?? null;
    } catch {
      base = null;
    }
    return { ...(base ?? { attempts: [], omitted: 0 }), postMortem: pm };
  }

  /** The trace of `signature` as it stands: in flight or being written here, else the store's. */
  traceNow(signature: string): Trace {
    return this.traces.current(signature) ?? this.traces.store?.getTrace(signature) ?? { attempts: [], omitted: 0 };
  }

  /**
   * After a restart: send a pending transaction from the store again, through the rebroadcast
   * scheduler's next round, if its bytes were kept (records migrated from the old layout have
   * none: they are only tracked) and it can still land — a durable nonce, or a blockhash whose
   * last valid block height the chain has not passed (an unknown one: not known to be expired).
   * Call once the chain view is ready. Returns whether it will be sent.
   */
  resume(rec: PendingRecord): boolean {
    return this.resumeFrom(rec, 'restart');
  }

  private resumeFrom(rec: PendingRecord, cause: ResumeCause, replayUntil = -1): boolean {
    if (rec.resend === null) return false;
    if (!rec.durableNonce) {
      const last = rec.lastValidBlockHeight;
      const dead = last !== null ? this.leaders.currentBlockHeight() > last : this.leaders.isBlockhashExpired(rec.recentBlockhash);
      if (dead) return false;
    }
    const deadline = rec.deadlineSlot ?? Infinity;
    if (this.leaders.currentSlot() > deadline) return false;
    const trace = this.traces.reopen(rec.signature, rec.submittedAt);
    this.rebroadcaster.resume(rec.signature, rec.resend, rec.durableNonce ? null : rec.lastValidBlockHeight, trace, cause, replayUntil, deadline);
    return true;
  }

  /**
   * After a chain rollback (`onRollback`): a pending transaction may have landed in a slot that
   * is gone, so it goes out again — every slot until it lands, fails or expires (at most a
   * blockhash's lifetime, `replayUntil`), then its rounds afresh: refilled if still in flight,
   * else resumed from the store as after a restart (if its bytes were kept and it can still
   * land). Returns whether it will be sent.
   */
  rearm(rec: PendingRecord): boolean {
    const again = (rec.resend !== null && this.rebroadcaster.refill(rec.signature, rec.resend.maxRetries)) || this.resumeFrom(rec, 'rollback', this.replayUntil);
    if (again) this.rearmed++;
    return again;
  }

  /** Accepted transactions from an ingress thread (one message per batch, off the latency path). */
  acceptedBatch(batch: Accepted[]): void {
    for (const a of batch) this.hand(a);
  }

  async close(): Promise<void> {
    // What is still in flight keeps its trace so far (a restart resumes it).
    this.rebroadcaster.clear();
    this.traces.flush();
    this.leaders.close();
    this.blocklist.close();
    this.client.close();
  }

  /** Held for anti-MEV or with rebroadcast rounds left. */
  get inFlight(): number {
    return this.rebroadcaster.size;
  }

  /** Fold the native client's outcome counts (every thread's sends) into the counters. */
  private drainOutcomes(): void {
    for (const o of this.client.drainOutcomes()) {
      const leader = this.leaderLabel.of(this.leaders.identityOfTpu(o.target) ?? o.target);
      let c = this.tally.sends.get(leader);
      if (!c) this.tally.sends.set(leader, (c = { ok: 0, failed: 0 }));
      if (o.reason === 'ok') c.ok += o.count;
      else {
        c.failed += o.count;
        this.tally.drops.set(o.reason, (this.tally.drops.get(o.reason) ?? 0) + o.count);
      }
    }
  }

  private route(slot: number, antiMev: boolean): Route {
    const permit = antiMev ? (id: string) => !this.blocklist.has(id) : () => true;
    const leader = this.leaders.leaderAt(slot);
    const first = this.leaders.upcoming(this.fanout, permit, ROUTE_HORIZON, slot);
    const after = first.length > 0 ? first[first.length - 1]!.slot + 1 : slot + 1;
    const tried = new Set(first.map((l) => l.identity));
    const next = this.leaders.upcoming(this.fanout, (id) => permit(id) && !tried.has(id), ROUTE_HORIZON, after);
    return { first, next, hold: leader !== null && !permit(leader) };
  }

  /** Build this slot's snapshot, apply it here and send it to the ingress threads. */
  private publish(slot: number): ChainSnapshot {
    const snapshot: ChainSnapshot = {
      slot,
      seenAtMs: this.leaders.slotSeenAtMs(),
      blockHeight: this.leaders.currentBlockHeight(),
      leader: this.leaders.leaderAt(slot),
      plain: this.route(slot, false),
      antiMev: this.route(slot, true),
      blockhashes: this.leaders.takeNewBlockhashes(),
      staleMs: this.leaders.staleMs,
      epoch: this.leaders.epochAt(slot),
    };
    this.view.apply(snapshot);
    for (const l of this.snapshotListeners) l(snapshot);
    return snapshot;
  }

  private onSlot(slot: number): void {
    const snapshot = this.publish(slot);
    const upcoming = this.leaders.upcoming(this.prewarmCount, () => true, 256);
    const warm = upcoming.flatMap((l) => (l.tpuQuic ? [l.tpuQuic] : []));
    if (warm.length > 0) this.client.prewarm(warm);
    this.rebroadcaster.onSlot(slot, snapshot.blockHeight, snapshot);
  }
}

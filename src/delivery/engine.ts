/**
 * The delivery engine: `Delivery` over a real chain node (JSON-RPC + PubSub) and QUIC.
 *
 * First send: the current leader and the next distinct leader(s) (`fanout`, default 2), written
 * by the piscina pool. If no target accepted the stream, one more round goes to the leaders
 * after those; only if that reaches no one either does `submit` fail (→ 500 Delivery failed).
 *
 * Then, once per slot, up to `max_retries` rebroadcast rounds to the then-current targets,
 * never twice in one slot for one signature, until the tracker settles it (confirmed, failed),
 * its blockhash dies, or the rounds run out.
 *
 * Anti-MEV (`anti_mev: true`): a leader on the blocklist is never a target. If the current
 * leader is blocked the transaction is held and released in the first slot whose leader is
 * permitted, as long as that is within the blockhash's lifetime; a validator only includes what
 * reaches it while it leads, so sending ahead to a permitted future leader would be wasted.
 *
 * Pre-warm: on every slot, connections to the next `prewarm` distinct leaders are opened, so a
 * send never waits for a handshake.
 */
import { Histogram } from 'prom-client';
import { Blocklist } from './blocklist.js';
import { DeliveryError, type ChainHealth, type Delivery, type SubmitRequest, type SubmitResult } from './delivery.js';
import { LeaderTracker, type Leader } from './leaders.js';
import { SendPool } from './send-pool.js';
import type { TargetResult } from './send-worker.js';
import type { SimulationResult } from '../chain/rpc.js';
import type { StatusChange, Tracker } from '../tracker/tracker.js';

/** Rebroadcasts dispatched per event-loop turn. */
const REBROADCAST_SLICE = 64;
/** Rounds a transaction may spend on unreachable leaders: two leader windows of 4 slots. */
const MAX_FREE_ROUNDS = 8;

export interface EngineOptions {
  rpcUrl: string;
  wsUrl: string;
  /** 32-byte ed25519 seed of the QUIC identity. */
  identity: Buffer;
  fanout?: number;
  prewarm?: number;
  blocklistPath?: string | null;
  sendThreads?: number;
  /** Slot age beyond which the engine reports itself unsynced. */
  staleMs?: number;
}

interface Flight {
  req: SubmitRequest;
  /**
   * Rebroadcast rounds left. A round counts only when it reached the leader of its slot: rounds
   * spent while that leader was unreachable (down, refusing, backing off) are free, or a
   * transaction accepted early in a dead leader's window would use up its retries there and never
   * reach the next one. Free rounds are capped by `freeRoundsLeft` (and by the blockhash).
   */
  retriesLeft: number;
  freeRoundsLeft: number;
  lastSentSlot: number;
  held: boolean;
  lastValid: number | null;
}

/**
 * Bucket bounds of the service-added latency histogram, seconds: 50 µs to 100 ms, finest where
 * a send on a warm connection falls (a few hundred µs), so the percentiles mean something there.
 */
export const SERVICE_LATENCY_BUCKETS = [
  0.00005, 0.0001, 0.00015, 0.0002, 0.0003, 0.0005, 0.00075, 0.001, 0.0015, 0.002, 0.003, 0.005, 0.01, 0.02, 0.05, 0.1,
];

export class Engine implements Delivery {
  readonly leaders: LeaderTracker;
  readonly pool: SendPool;
  readonly blocklist: Blocklist;
  private tracker: Tracker | null = null;
  private readonly flights = new Map<string, Flight>();
  private readonly fanout: number;
  private readonly prewarmCount: number;
  /**
   * Request received → first QUIC stream written, seconds: the latency this service adds. A
   * prom-client histogram in no registry; the service's metrics register it (`GET /metrics`).
   */
  readonly serviceLatency = new Histogram({
    name: 'landfall_service_latency_seconds',
    help: 'Service-added latency: request received to first QUIC stream written to a leader',
    buckets: SERVICE_LATENCY_BUCKETS,
    registers: [],
  });
  readonly counters = {
    sends: new Map<string, { ok: number; failed: number }>(),
    drops: new Map<string, number>(),
    held: 0,
    released: 0,
    rebroadcasts: 0,
    deliveryFailed: 0,
  };

  constructor(private readonly opts: EngineOptions) {
    this.fanout = opts.fanout ?? 2;
    this.prewarmCount = opts.prewarm ?? 8;
    this.blocklist = new Blocklist(opts.blocklistPath ?? null);
    this.pool = new SendPool({ identity: opts.identity, threads: opts.sendThreads, onLate: (r) => this.count(r) });
    this.leaders = new LeaderTracker({
      rpcUrl: opts.rpcUrl,
      wsUrl: opts.wsUrl,
      staleMs: opts.staleMs,
      onSlot: (slot) => this.onSlot(slot),
    });
  }

  /** Wait until the chain view is complete (slot, leaders, addresses, a blockhash). */
  ready(timeoutMs?: number): Promise<void> {
    return this.leaders.ready(timeoutMs);
  }

  /** Connect the tracker: the engine tells it what to watch, it tells the engine what settled. */
  attach(tracker: Tracker): (change: StatusChange) => void {
    this.tracker = tracker;
    return (change) => this.flights.delete(change.record.signature);
  }

  get identity(): string {
    return this.pool.identityPubkey;
  }

  currentSlot(): number {
    return this.leaders.currentSlot();
  }

  isBlockhashExpired(blockhash: string): boolean {
    return this.leaders.isBlockhashExpired(blockhash);
  }

  async simulate(wire: Buffer): Promise<SimulationResult | null> {
    const { value } = await this.leaders.rpc.simulateTransaction(wire);
    return value.err === null || value.err === undefined ? null : value;
  }

  health(): ChainHealth {
    return { synced: this.leaders.synced(), slot: this.leaders.currentSlot(), slotAgeMs: this.leaders.slotAgeMs() };
  }

  async submit(req: SubmitRequest): Promise<SubmitResult> {
    const slot = this.leaders.currentSlot();
    const lastValid = req.durableNonce ? null : this.leaders.lastValidBlockHeight(req.recentBlockhash);
    const known = this.flights.get(req.signature);
    if (known && known.lastSentSlot >= slot) {
      // Resubmitted within the slot it was already sent in: deduplicated, not resent.
      return { slot, reached: 0, lastValidBlockHeight: lastValid };
    }
    const permit = this.permit(req.options.antiMev);
    const current = this.leaders.leaderAt(slot);
    const flight: Flight = known ?? {
      req,
      retriesLeft: req.options.maxRetries,
      freeRoundsLeft: req.options.maxRetries > 0 ? MAX_FREE_ROUNDS : 0,
      lastSentSlot: -1,
      held: false,
      lastValid,
    };
    if (current !== null && !permit(current)) {
      flight.held = true;
      this.counters.held++;
      this.flights.set(req.signature, flight);
      this.watch(req, lastValid);
      return { slot, reached: 0, lastValidBlockHeight: lastValid };
    }

    const first = this.leaders.upcoming(this.fanout, permit);
    let reached = (await this.sendTo(req, first, true)).size;
    if (reached === 0) {
      // One more round, to the leaders after the first ones.
      const after = first.length > 0 ? first[first.length - 1]!.slot + 1 : slot + 1;
      const tried = new Set(first.map((l) => l.identity));
      const next = this.leaders.upcoming(this.fanout, (id) => permit(id) && !tried.has(id), 64, after);
      reached = (await this.sendTo(req, next, true)).size;
      if (reached === 0) {
        this.counters.deliveryFailed++;
        const names = [...first, ...next].map((l) => l.tpuQuic ?? l.identity).join(', ');
        throw new DeliveryError(`no leader accepted the transaction (tried ${names || 'no leader with a TPU QUIC address'})`);
      }
    }
    flight.lastSentSlot = slot;
    if (flight.retriesLeft > 0) this.flights.set(req.signature, flight);
    this.watch(req, lastValid);
    return { slot, reached, lastValidBlockHeight: lastValid };
  }

  async close(): Promise<void> {
    this.leaders.close();
    this.blocklist.close();
    await this.pool.close();
  }

  /** Active flights (held or with rebroadcasts left). */
  get inFlight(): number {
    return this.flights.size;
  }

  private permit(antiMev: boolean): (identity: string) => boolean {
    return antiMev ? (id) => !this.blocklist.has(id) : () => true;
  }

  private watch(req: SubmitRequest, lastValid: number | null): void {
    this.tracker?.watch({
      signature: req.signature,
      accountId: req.accountId,
      tipLamports: req.tipLamports,
      receivedAt: req.receivedAt,
      submittedAtMs: Date.now(),
      lastValidBlockHeight: lastValid,
      durableNonce: req.durableNonce,
    });
  }

  /** Write to the leaders' TPUs; returns the TPU addresses known to have accepted the stream. */
  private async sendTo(req: SubmitRequest, leaders: Leader[], firstSend: boolean): Promise<Set<string>> {
    const reached = new Set<string>();
    const targets: string[] = [];
    for (const l of leaders) {
      if (l.tpuQuic) targets.push(l.tpuQuic);
      else this.drop('no_tpu_address');
    }
    if (targets.length === 0) return reached;
    const { results, firstWrittenAt } = await this.pool.send(targets, req.wire);
    if (firstWrittenAt !== null && firstSend) this.serviceLatency.observe(Number(firstWrittenAt - req.receivedAt) / 1e9);
    for (const r of results) if (this.count(r)) reached.add(r.target);
    return reached;
  }

  /** Count one target's outcome under its leader's identity (and its reason, if dropped). */
  private count(r: TargetResult): boolean {
    const leader = this.leaders.identityOfTpu(r.target) ?? r.target;
    let c = this.counters.sends.get(leader);
    if (!c) this.counters.sends.set(leader, (c = { ok: 0, failed: 0 }));
    if (r.ok) c.ok++;
    else {
      c.failed++;
      this.drop(r.reason ?? 'unknown');
    }
    return r.ok;
  }

  private drop(reason: string): void {
    this.counters.drops.set(reason, (this.counters.drops.get(reason) ?? 0) + 1);
  }

  private onSlot(slot: number): void {
    const upcoming = this.leaders.upcoming(this.prewarmCount, () => true, 256);
    this.pool.prewarm(upcoming.flatMap((l) => (l.tpuQuic ? [l.tpuQuic] : [])));
    const height = this.leaders.currentBlockHeight();
    const leader = this.leaders.leaderAt(slot);
    // This slot's targets, once per policy rather than once per transaction.
    const targets = {
      plain: this.leaders.upcoming(this.fanout, this.permit(false)),
      antiMev: this.leaders.upcoming(this.fanout, this.permit(true)),
    };
    const due: Flight[] = [];
    const retry = new Set<Flight>();
    for (const [sig, f] of this.flights) {
      if (f.lastValid !== null && height > f.lastValid) {
        this.flights.delete(sig);
        if (f.held) this.drop('held_expired');
        continue;
      }
      if (f.lastSentSlot >= slot) continue;
      if (f.held) {
        if (leader === null || !this.permit(f.req.options.antiMev)(leader)) continue;
        f.held = false;
        this.counters.released++;
      } else if (f.retriesLeft > 0) {
        this.counters.rebroadcasts++;
        retry.add(f);
      } else {
        this.flights.delete(sig);
        continue;
      }
      f.lastSentSlot = slot;
      due.push(f);
    }
    this.dispatchRound(due, retry, targets, 0);
  }

  /**
   * Send a slot's rebroadcasts in slices, yielding to the event loop between them: a round of
   * thousands must not hold up the requests arriving meanwhile.
   */
  private dispatchRound(due: Flight[], retry: Set<Flight>, targets: { plain: Leader[]; antiMev: Leader[] }, from: number): void {
    const end = Math.min(due.length, from + REBROADCAST_SLICE);
    for (let i = from; i < end; i++) {
      const f = due[i]!;
      const leaders = f.req.options.antiMev ? targets.antiMev : targets.plain;
      const current = leaders[0]?.slot === f.lastSentSlot ? leaders[0].tpuQuic : null;
      void this.sendTo(f.req, leaders, false).then(
        (reached) => {
          if (!retry.has(f)) return; // a held transaction's first send is not a retry
          if ((current !== null && reached.has(current)) || f.freeRoundsLeft === 0) f.retriesLeft--;
          else f.freeRoundsLeft--;
        },
        () => this.drop('send_error'),
      );
    }
    if (end < due.length) setImmediate(() => this.dispatchRound(due, retry, targets, end));
  }
}

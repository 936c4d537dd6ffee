/**
 * Node leases and takeover (issue 13, part 4; issue 19, items 2 and 5).
 *
 * Every node puts `node.<name>` = {node, started, seq, at} into the KV bucket `landfall-nodes`
 * every HEARTBEAT_MS. The live nodes race to create `takeover.<dead>.<started>.<seq>` for a dead
 * node, named by the last lease it wrote (KV create is a compare-and-set on "no such key", so
 * exactly one wins per death of the node, whoever sees it first), and the winner takes the dead
 * node's pending transactions over (`onTakeover`). Every node learns who won from the same key
 * (`heirOf`), so what a taker held passes on when the taker dies too (`takeover.ts`). The
 * takeover ends when the node writes its lease again (issue 32): a node that was only frozen owns
 * its new records, and when it dies again, the same incarnation or a new one, it is another death.
 *
 * The clocks (src/cluster/timing.ts) are derived from the NATS client's stall detection: a live
 * node stuck on a stalled server moves to another one and writes its lease well within
 * DEAD_AFTER_MS, so a stalled server never makes a live node look dead.
 *
 * The view of the bucket is a KV watch kept current by the server, not a listing per round: after
 * a server is killed a listing (`kv.keys`) can hang for seconds while puts and gets go through,
 * and a round that could not read made every other lease look unchanged. A node is judged dead
 * only on evidence: its lease stayed the same through DEAD_AFTER_MS and at least as many rounds
 * of this node that were *known*, i.e. whose own heartbeat came back through the watch (the
 * bucket is one ordered stream: a watch that delivered this node's put delivered everything
 * stored before it). A round whose put failed or did not come back is unknown and proves nothing
 * (a leaderless bucket for the 4-9 s of a raft election stalls every node's writes alike). Time
 * is local: no clock skew between nodes matters, except on first sight, where a lease the server
 * says is older than DEAD_AFTER_MS is already quiet. And a node only judges others once its own
 * rounds have been known for DEAD_AFTER_MS: a node cut off from NATS sees nobody's heartbeat and
 * must not conclude that everyone died. A round is known only if this node's put was made
 * within FRESH_ROUND_MS: an observer that was itself frozen judges nothing from its first rounds.
 */
import type { KV, KvEntry } from '@nats-io/kv';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { DEAD_AFTER_MS, FRESH_ROUND_MS, HEARTBEAT_MS } from './timing.js';

// How often a lease is written, when it is dead, and when a round is evidence: derived from the
// client's stall detection in one place (src/cluster/timing.ts).
export { DEAD_AFTER_MS, HEARTBEAT_MS };
export const NODES_BUCKET = 'landfall-nodes';
/** Rounds in a row whose acknowledged heartbeat did not come back through the watch before it is made again. */
const WATCH_STALL_ROUNDS = 2;
/** Entries live this long in the bucket (a dead node's lease and its takeover key then vanish), ms. */
const BUCKET_TTL_MS = 24 * 3_600_000;

/** What a node writes under `node.<name>`. */
export interface NodeLease {
  node: string;
  /** ms since epoch the process started: one incarnation of the node (the takeover epoch). */
  started: number;
  /** Heartbeats written by this incarnation. */
  seq: number;
  /** The writer's clock, ms since epoch (informational only: liveness never reads it). */
  at: number;
}

/** The `landfall-nodes` bucket, created (idempotently) with `replicas`. */
export function openNodesBucket(nc: NatsConnection, replicas: number): Promise<KV> {
  return new Kvm(nc).create(NODES_BUCKET, { replicas, history: 1, ttl: BUCKET_TTL_MS });
}

/** A node name usable as a KV key token (and a NATS subject token). */
export function validNodeName(name: string): boolean {
  return /^[A-Za-z0-9_-]{1,64}$/.test(name);
}

interface Seen {
  lease: NodeLease;
  revision: number;
  /** Local time the revision last changed. */
  changedAt: number;
  /** Known rounds of this node since the revision last changed (the evidence of a death). */
  quietRounds: number;
  /** The lease (`deathOf`) already handled as dead (taken over by us or someone), or null. */
  handled: string | null;
}

/**
 * One death of a node: its incarnation and the last heartbeat it wrote (`<started>.<seq>`). A node
 * that was taken over and writes again (it was only frozen) has a new last heartbeat, so when it
 * dies again, same incarnation or a new one, that is another death, taken over again.
 */
const deathOf = (l: NodeLease): string => `${l.started}.${l.seq}`;

export interface LeasesOptions {
  kv: KV;
  node: string;
  /** Whether the NATS connection is up (the link's `up`): while down, a round fails at once. */
  up(): boolean;
  /** A dead node's incarnation this node won: take its pending transactions over. */
  onTakeover(dead: NodeLease): void | Promise<void>;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
  /** Tests shorten the clock; defaults HEARTBEAT_MS / DEAD_AFTER_MS / FRESH_ROUND_MS (2 heartbeats). */
  heartbeatMs?: number;
  deadAfterMs?: number;
  freshRoundMs?: number;
}

export class Leases {
  private readonly seen = new Map<string, Seen>();
  /** Who won each `takeover.<dead>.<started>.<seq>` key (`<dead>.<started>.<seq>` → taker). */
  private readonly heirs = new Map<string, string>();
  private readonly started = Date.now();
  private seq = 0;
  /** Seq of this node's last put the server acknowledged (0: the last put failed). */
  private putSeq = 0;
  /** Local time that put was made. */
  private putAt = 0;
  /** Highest seq of this incarnation's own lease the watch delivered. */
  private watchedSeq = 0;
  /** Rounds in a row whose acknowledged put the watch did not deliver. */
  private stalledRounds = 0;
  /** Since when every round was known (null: the last one was not). */
  private healthySince: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private watcher: { stop(): void } | null = null;
  private watching: Promise<void> | null = null;
  private stopped = false;
  private readonly heartbeatMs: number;
  private readonly deadAfterMs: number;
  private readonly freshRoundMs: number;
  /** Known rounds without a change that make a lease dead (with DEAD_AFTER_MS of local time). */
  private readonly deadRounds: number;
  /** Takeovers this node won, for /metrics and tests. */
  readonly takeovers: NodeLease[] = [];

  constructor(private readonly opts: LeasesOptions) {
    if (!validNodeName(opts.node)) throw new Error(`node name must be 1-64 letters, digits, '-' or '_' (got ${JSON.stringify(opts.node)})`);
    this.heartbeatMs = opts.heartbeatMs ?? HEARTBEAT_MS;
    this.deadAfterMs = opts.deadAfterMs ?? DEAD_AFTER_MS;
    this.freshRoundMs = opts.freshRoundMs ?? (opts.heartbeatMs !== undefined ? 2 * opts.heartbeatMs : FRESH_ROUND_MS);
    this.deadRounds = Math.ceil(this.deadAfterMs / this.heartbeatMs);
  }

  /** Start the watch and the rounds (a failed first write is retried by them). */
  start(): void {
    this.watching = this.watch();
    this.kick();
    this.timer = setInterval(() => this.kick(), this.heartbeatMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.watcher?.stop();
    await this.running;
    await this.watching;
  }

  /** This node and the nodes not judged dead, sorted. */
  liveNodes(now = Date.now()): string[] {
    const live = new Set([this.opts.node]);
    for (const [name, s] of this.seen) if (!this.isDead(s, now)) live.add(name);
    return [...live].sort();
  }

  /** Whether this node's own lease is being written and read back (NATS reachable). */
  healthy(): boolean {
    return this.healthySince !== null;
  }

  /**
   * The node that took over `node` as it last wrote its lease (null: none did, or `node` wrote
   * again since — a new incarnation, or the same one back from a freeze — and owns its records
   * again). A takeover is thus a lease with an end: it lasts while the dead node's lease stays
   * as it was when it was judged dead.
   */
  heirOf(node: string): string | null {
    const s = this.seen.get(node);
    return s ? (this.heirs.get(`${node}.${deathOf(s.lease)}`) ?? null) : null;
  }

  private isDead(s: Seen, now: number): boolean {
    return s.quietRounds >= this.deadRounds && now - s.changedAt > this.deadAfterMs;
  }

  /** Keep the view current from a KV watch, made again whenever it ends or stalls. */
  private async watch(): Promise<void> {
    while (!this.stopped) {
      try {
        const w = await this.opts.kv.watch({ key: ['node.*', 'takeover.>'] });
        this.watcher = w;
        if (this.stopped) w.stop();
        for await (const e of w) this.sawSafely(e);
      } catch (e) {
        if (!this.stopped) this.opts.log?.('cluster: node leases watch failed, made again', { error: (e as Error).message });
      }
      this.watcher = null;
      if (!this.stopped) await new Promise((r) => setTimeout(r, this.heartbeatMs));
    }
  }

  /** An entry this version cannot read is skipped (logged): it must not end the watch over and over. */
  private sawSafely(e: KvEntry): void {
    try {
      this.saw(e, Date.now());
    } catch (err) {
      this.opts.log?.('cluster: unreadable node leases entry skipped', { key: e.key, error: (err as Error).message });
    }
  }

  /** One entry of the watch: a lease (this node's own, or another's) or a takeover key. */
  private saw(e: KvEntry, now: number): void {
    if (e.operation !== 'PUT') return;
    if (e.key.startsWith('takeover.')) {
      this.heirs.set(e.key.slice('takeover.'.length), e.json<{ by: string }>().by);
      return;
    }
    const lease = e.json<NodeLease>();
    if (lease.node === this.opts.node) {
      if (lease.started === this.started) this.watchedSeq = Math.max(this.watchedSeq, lease.seq);
      return;
    }
    const s = this.seen.get(lease.node);
    if (s && s.revision === e.revision) return; // the watch made again: the same entry
    // First sight: the lease is as old as the server says it is (a node long dead is quiet now).
    const old = !s && now - e.created.getTime() > this.deadAfterMs;
    this.seen.set(lease.node, {
      lease,
      revision: e.revision,
      changedAt: old ? e.created.getTime() : now,
      quietRounds: old ? this.deadRounds : 0,
      handled: null, // a lease that moved is a live node: its next death is a new one
    });
  }

  private kick(): void {
    if (this.running || this.stopped) return; // a round still waiting on NATS: do not pile up
    this.running = this.round().finally(() => (this.running = null));
  }

  /**
   * Judge the previous round (known or not), then write this round's heartbeat. A round is known
   * only if its put was made within `freshRoundMs` and came back: after this process was frozen
   * (a GC pause, a stopped VM), the first round judged finds a put of long ago "known" while the
   * watch has not yet delivered what the others wrote meanwhile.
   */
  private async round(): Promise<void> {
    const now = Date.now();
    const known = this.putSeq > 0 && this.watchedSeq >= this.putSeq && now - this.putAt <= this.freshRoundMs;
    this.judgeRound(known, this.putSeq > 0 && this.watchedSeq < this.putSeq);
    this.putSeq = 0;
    try {
      if (!this.opts.up()) throw new Error('NATS is down');
      const seq = ++this.seq;
      this.putAt = now;
      const lease: NodeLease = { node: this.opts.node, started: this.started, seq, at: now };
      // A put waits at most one beat: a round stuck on a server that went away is unknown.
      await this.opts.kv.put(`node.${this.opts.node}`, JSON.stringify(lease), { timeout: this.heartbeatMs });
      this.putSeq = seq;
    } catch (e) {
      if (this.healthySince !== null) this.opts.log?.('cluster: node leases unreachable', { error: (e as Error).message });
      this.healthySince = null;
      return;
    }
    if (this.healthySince !== null && Date.now() - this.healthySince >= this.deadAfterMs) await this.takeOverDead(Date.now());
  }

  /**
   * A known round is evidence against every lease that did not change in it; an unknown one
   * proves nothing (and a watch that keeps missing this node's acknowledged puts is made again).
   */
  private judgeRound(known: boolean, missed: boolean): void {
    if (!known) {
      this.healthySince = null;
      if (missed && ++this.stalledRounds >= WATCH_STALL_ROUNDS) {
        this.opts.log?.('cluster: node leases watch stalled, made again', { rounds: this.stalledRounds });
        this.stalledRounds = 0;
        this.watcher?.stop();
      }
      return;
    }
    this.stalledRounds = 0;
    this.healthySince ??= Date.now();
    for (const s of this.seen.values()) s.quietRounds++;
  }

  private async takeOverDead(now: number): Promise<void> {
    for (const [name, s] of this.seen) {
      const death = deathOf(s.lease);
      if (!this.isDead(s, now) || s.handled === death) continue;
      s.handled = death;
      const key = `takeover.${name}.${death}`;
      try {
        await this.opts.kv.create(key, JSON.stringify({ by: this.opts.node, at: now }));
      } catch {
        // Another node created it first, or the answer was lost: the key says who won (a create
        // that reached NATS but timed out here may be ours). No key: try again next round.
        const e = await this.opts.kv.get(key).catch(() => null);
        if (!e) s.handled = null;
        if (!e || e.json<{ by: string }>().by !== this.opts.node) continue;
      }
      this.heirs.set(`${name}.${death}`, this.opts.node);
      this.takeovers.push(s.lease);
      this.opts.log?.('cluster: taking over a dead node', { dead: name, started: s.lease.started, silentMs: now - s.changedAt, quietRounds: s.quietRounds });
      try {
        await this.opts.onTakeover(s.lease);
      } catch (e) {
        this.opts.log?.('cluster: takeover failed', { dead: name, error: (e as Error).message });
      }
    }
  }
}

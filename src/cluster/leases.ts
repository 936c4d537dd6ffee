/**
 * Node leases and takeover (issue 13, part 4; issue 19, items 2 and 5).
 *
 * Every node puts `node.<name>` = {node, started, seq, at} into the KV bucket `landfall-nodes`
 * every HEARTBEAT_MS. The live nodes race to create `takeover.<dead>.<started>` for a dead node
 * (KV create is a compare-and-set on "no such key", so exactly one wins per incarnation of the
 * dead node, whoever sees it first), and the winner takes the dead node's pending transactions
 * over (`onTakeover`). Every node learns who won from the same key (`heirOf`), so what a taker
 * held passes on when the taker dies too (`takeover.ts`).
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
 * must not conclude that everyone died.
 */
import type { KV, KvEntry } from '@nats-io/kv';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';

export const NODES_BUCKET = 'landfall-nodes';
/** How often a node writes its lease and reads the others', ms. */
export const HEARTBEAT_MS = 1_000;
/** A lease unchanged for this long is a dead node, ms. */
export const DEAD_AFTER_MS = 3_000;
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
  /** The incarnation (`started`) already handled as dead (taken over by us or someone). */
  handled: number | null;
}

export interface LeasesOptions {
  kv: KV;
  node: string;
  /** Whether the NATS connection is up (the link's `up`): while down, a round fails at once. */
  up(): boolean;
  /** A dead node's incarnation this node won: take its pending transactions over. */
  onTakeover(dead: NodeLease): void | Promise<void>;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
  /** Tests shorten the clock; defaults HEARTBEAT_MS / DEAD_AFTER_MS. */
  heartbeatMs?: number;
  deadAfterMs?: number;
}

export class Leases {
  private readonly seen = new Map<string, Seen>();
  /** Who won each `takeover.<dead>.<started>` key (`<dead>.<started>` → taker). */
  private readonly heirs = new Map<string, string>();
  private readonly started = Date.now();
  private seq = 0;
  /** Seq of this node's last put the server acknowledged (0: the last put failed). */
  private putSeq = 0;
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
  /** Known rounds without a change that make a lease dead (with DEAD_AFTER_MS of local time). */
  private readonly deadRounds: number;
  /** Takeovers this node won, for /metrics and tests. */
  readonly takeovers: NodeLease[] = [];

  constructor(private readonly opts: LeasesOptions) {
    if (!validNodeName(opts.node)) throw new Error(`node name must be 1-64 letters, digits, '-' or '_' (got ${JSON.stringify(opts.node)})`);
    this.heartbeatMs = opts.heartbeatMs ?? HEARTBEAT_MS;
    this.deadAfterMs = opts.deadAfterMs ?? DEAD_AFTER_MS;
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
   * The node that took over `node`'s current incarnation (null: none did, or it is live again
   * as a new incarnation, which resumes its own records).
   */
  heirOf(node: string): string | null {
    const s = this.seen.get(node);
    return s ? (this.heirs.get(`${node}.${s.lease.started}`) ?? null) : null;
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
      handled: s && s.lease.started === lease.started ? s.handled : null,
    });
  }

  private kick(): void {
    if (this.running || this.stopped) return; // a round still waiting on NATS: do not pile up
    this.running = this.round().finally(() => (this.running = null));
  }

  /** Judge the previous round (known or not), then write this round's heartbeat. */
  private async round(): Promise<void> {
    const known = this.putSeq > 0 && this.watchedSeq >= this.putSeq;
    this.judgeRound(known);
    this.putSeq = 0;
    try {
      if (!this.opts.up()) throw new Error('NATS is down');
      const seq = ++this.seq;
      const lease: NodeLease = { node: this.opts.node, started: this.started, seq, at: Date.now() };
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
  private judgeRound(known: boolean): void {
    if (!known) {
      this.healthySince = null;
      if (this.putSeq > 0 && ++this.stalledRounds >= WATCH_STALL_ROUNDS) {
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
      if (!this.isDead(s, now) || s.handled === s.lease.started) continue;
      s.handled = s.lease.started;
      const key = `takeover.${name}.${s.lease.started}`;
      try {
        await this.opts.kv.create(key, JSON.stringify({ by: this.opts.node, at: now }));
      } catch {
        // Another node created it first, or the answer was lost: the key says who won (a create
        // that reached NATS but timed out here may be ours). No key: try again next round.
        const e = await this.opts.kv.get(key).catch(() => null);
        if (!e) s.handled = null;
        if (!e || e.json<{ by: string }>().by !== this.opts.node) continue;
      }
      this.heirs.set(`${name}.${s.lease.started}`, this.opts.node);
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

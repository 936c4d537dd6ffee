/**
 * Node leases and takeover (issue 13, part 4).
 *
 * Every node puts `node.<name>` = {node, started, seq, at} into the KV bucket `landfall-nodes`
 * every HEARTBEAT_MS. A node whose lease has not changed for DEAD_AFTER_MS is dead; the live
 * nodes then race to create `takeover.<dead>.<started>` (KV create is a compare-and-set on "no
 * such key", so exactly one wins per incarnation of the dead node, whoever sees it first), and
 * the winner takes the dead node's pending transactions over (`onTakeover`).
 *
 * Liveness is judged by when THIS node saw a lease change (its revision), never by the
 * `at` inside it: no clock skew between nodes matters. And a node only judges others once its
 * own link has been healthy (its own heartbeat written, every poll answered) for DEAD_AFTER_MS:
 * a node cut off from NATS sees nobody's heartbeat and must not conclude that everyone died.
 *
 * Polling (`keys` + `get`, once per heartbeat) rather than a KV watch: a poll that fails is a
 * plain error, and after a reconnect the next poll is simply right again.
 */
import type { KV } from '@nats-io/kv';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';

export const NODES_BUCKET = 'landfall-nodes';
/** How often a node writes its lease and reads the others', ms. */
export const HEARTBEAT_MS = 1_000;
/** A lease unchanged for this long is a dead node, ms. */
export const DEAD_AFTER_MS = 3_000;
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
  private readonly started = Date.now();
  private seq = 0;
  /** Since when every round succeeded (null: the last one failed). */
  private healthySince: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private readonly heartbeatMs: number;
  private readonly deadAfterMs: number;
  /** Takeovers this node won, for /metrics and tests. */
  readonly takeovers: NodeLease[] = [];

  constructor(private readonly opts: LeasesOptions) {
    if (!validNodeName(opts.node)) throw new Error(`node name must be 1-64 letters, digits, '-' or '_' (got ${JSON.stringify(opts.node)})`);
    this.heartbeatMs = opts.heartbeatMs ?? HEARTBEAT_MS;
    this.deadAfterMs = opts.deadAfterMs ?? DEAD_AFTER_MS;
  }

  /** Write the first heartbeat and start the rounds (a failed first write is retried by them). */
  start(): void {
    this.kick();
    this.timer = setInterval(() => this.kick(), this.heartbeatMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** This node and the nodes whose lease changed within the dead-after window, sorted. */
  liveNodes(now = Date.now()): string[] {
    const live = new Set([this.opts.node]);
    for (const [name, s] of this.seen) if (now - s.changedAt <= this.deadAfterMs) live.add(name);
    return [...live].sort();
  }

  /** Whether this node's own lease is being written and read back (NATS reachable). */
  healthy(): boolean {
    return this.healthySince !== null;
  }

  private kick(): void {
    if (this.running) return; // a round still waiting on NATS: do not pile up
    this.running = this.round(Date.now()).finally(() => (this.running = null));
  }

  private async round(now: number): Promise<void> {
    try {
      if (!this.opts.up()) throw new Error('NATS is down');
      const lease: NodeLease = { node: this.opts.node, started: this.started, seq: ++this.seq, at: now };
      // A put waits at most one beat: a round stuck on a server that went away must not keep
      // this node counted healthy.
      await this.opts.kv.put(`node.${this.opts.node}`, JSON.stringify(lease), { timeout: this.heartbeatMs });
      await this.readLeases(Date.now());
      this.healthySince ??= Date.now();
    } catch (e) {
      if (this.healthySince !== null) this.opts.log?.('cluster: node leases unreachable', { error: (e as Error).message });
      this.healthySince = null;
      return;
    }
    if (Date.now() - this.healthySince >= this.deadAfterMs) await this.takeOverDead(Date.now());
  }

  private async readLeases(now: number): Promise<void> {
    const names: string[] = [];
    for await (const k of await this.opts.kv.keys('node.*')) names.push(k.slice('node.'.length));
    for (const name of names) {
      if (name === this.opts.node) continue;
      const e = await this.opts.kv.get(`node.${name}`);
      if (!e || e.operation !== 'PUT') continue;
      const s = this.seen.get(name);
      if (s && s.revision === e.revision) continue;
      const lease = e.json<NodeLease>();
      // First sight: the lease is as old as the server says it is (a node long dead is dead now).
      const changedAt = s ? now : Math.min(now, e.created.getTime());
      this.seen.set(name, { lease, revision: e.revision, changedAt, handled: s && s.lease.started === lease.started ? s.handled : null });
    }
  }

  private async takeOverDead(now: number): Promise<void> {
    for (const [name, s] of this.seen) {
      if (now - s.changedAt <= this.deadAfterMs || s.handled === s.lease.started) continue;
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
      this.takeovers.push(s.lease);
      this.opts.log?.('cluster: taking over a dead node', { dead: name, started: s.lease.started, silentMs: now - s.changedAt });
      try {
        await this.opts.onTakeover(s.lease);
      } catch (e) {
        this.opts.log?.('cluster: takeover failed', { dead: name, error: (e as Error).message });
      }
    }
  }
}

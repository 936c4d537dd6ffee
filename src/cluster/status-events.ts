/**
 * Status records across nodes (issue 13, part 3): every acceptance and every tracker change of
 * a node is an event on the JetStream stream `LANDFALL_STATUS` (subject `lf.status.<node>`),
 * and every node applies every node's events into its local store.
 *
 * Publishing never blocks the hot path: events go into an in-memory outbox (bounded) that a
 * loop publishes while the link is up, up to MESSAGE_EVENTS events per JetStream message (after
 * a LINGER_MS wait for company), keeping what failed for after the reconnect. A message's msgID
 * is its first event's `<signature>:<state>` and its size, so JetStream's duplicate window drops
 * a message published again after a lost ack; a restarted node re-publishes its still-pending
 * records from LMDB, and whatever repeats gets through is harmless (applying is forward only).
 *
 * Live copies (issue 19, item 3): every message also goes at once, as a plain NATS message on
 * `lf.live.<node>`, to the nodes connected now, which apply it as they get it. JetStream stays
 * the durable path (catch-up, a node that was away, a copy lost with a server), but it cannot be
 * the fast one through a server's death: a stream or consumer whose raft leader died is leaderless
 * until an election, 4-9 s in nats-server (hard-coded election timeouts), and publishes and
 * deliveries wait for it; a plain message only waits for its publisher's and receiver's
 * reconnects. The copy JetStream delivers later finds its records applied (nothing written).
 *
 * Applying (a durable consumer per node, named after it, from the stream's first event for a
 * new node; a message this process published itself comes back through it too, and is only
 * acknowledged: its records were written here before it was published — `ownInFlight`): a
 * record absent here is inserted whole; a pending one moves forward to a terminal
 * state; a terminal one never changes; the message is acknowledged once the local write
 * committed (a node killed before that gets it again). State derived from records is computed
 * by EACH node from its OWN local transitions, so it is exactly once per node with no
 * coordination:
 * - usage (`transactions_total`/`today`): counted when a record is inserted here the first time
 *   (the hot path counts its own acceptances; applying counts the others', by submission day);
 * - points: credited when a record becomes confirmed here (the tracker credits its own
 *   settlements; applying credits the others'; a record already confirmed here never again),
 *   upgrade time = the record's confirmedAt, the same on every node;
 * - `/v1/stream`: an applied change is published to this node's StatusHub and ingress threads
 *   exactly like a local one.
 */
import { AckPolicy, DeliverPolicy, type ConsumerMessages, type JsMsg, type PubAck } from '@nats-io/jetstream';
import type { Msg, Subscription } from '@nats-io/transport-node';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { Accounts } from '../accounts/accounts.js';
import { isPending, type Resend, type StatusRecord } from '../store/records.js';
import { decodeStatus, encodeStatus, resendOf, signatureOfKey, statusKey, type RecordBytes } from '../store/status-codec.js';
import type { Store } from '../store/store.js';
import { STATUS_STREAM, statusSubject, type Link, type LinkLog } from './link.js';
// Live copies a node sends again when a node reconnects, ms back: copies in flight through a
// server that died or stalled are lost (the publisher's, or those routed to a receiver connected
// there), and JetStream's copy of them waits out the election. Derived from the stall detection.
import { REPLAY_MS } from './timing.js';

/** Events kept while NATS is unreachable; past it the oldest are dropped (counted, logged). */
export const OUTBOX_MAX = 200_000;
/** Events per JetStream message at most (each ~120 B, up to ~1.4 KB with its wire bytes). */
export const MESSAGE_EVENTS = 64;
/** Messages in flight per publishing round. */
const MESSAGES_IN_FLIGHT = 8;
/**
 * How long a first event waits for others to share its message. Each JetStream publish is a
 * request with its own ack, and each message costs every node a delivery and an ack: one message
 * per event doubled a node's CPU per send; the price of sharing is this much replication lag.
 */
export const LINGER_MS = 50;
const RETRY_MS = 250;
/** A dropped forged event is logged at most once per this interval (with the count since). */
const FORGED_LOG_MS = 10_000;
/**
 * How long a JetStream publish waits for its ack before the message is tried again. Acks take
 * milliseconds; a publish that timed out is one that met a leaderless stream, and a shorter wait
 * retries soon after the election.
 */
const PUBLISH_TIMEOUT_MS = 2_000;
/**
 * msgIDs of this process's messages remembered until the consumer brings them back, at most
 * (oldest forgotten first: such a message is then applied like any other, which is harmless).
 */
const OWN_IN_FLIGHT_MAX = 100_000;
/** Live copies waiting for a reconnect at most (events; ~0.6 MB). */
const LIVE_WAITING_MAX = 4_096;
/**
 * Where a node that reconnected asks the others to send their recent live copies again:
 * `lf.live-replay.<node>` (each node publishes only on subjects of its own name).
 */
export const replaySubject = (node: string): string => `lf.live-replay.${node}`;
const EVENT_VERSION = 1;
const MESSAGE_VERSION = 2;

/** One status event as it travels. */
export interface StatusEvent {
  origin: string;
  /** ms since epoch on the origin: the acceptance (for `sent`) or the change. */
  ts: number;
  record: StatusRecord;
  resend: Resend | null;
}

/**
 * `<version u8><signature 64 B><origin len u8><origin><ts f64><status value (status-codec)>`.
 * @param bytes the record's signature and blockhash bytes where the caller holds them (read in
 *   place from the wire, not decoded from base58 again)
 */
export function encodeEvent(e: StatusEvent, bytes?: RecordBytes): Uint8Array {
  const origin = Buffer.from(e.origin, 'utf8');
  const value = encodeStatus(e.record, e.resend, bytes?.blockhash);
  const out = Buffer.allocUnsafe(1 + 64 + 1 + origin.length + 8 + value.length);
  out[0] = EVENT_VERSION;
  out.set(bytes?.signature ?? statusKey(e.record.signature)!, 1);
  out[65] = origin.length;
  origin.copy(out, 66);
  out.writeDoubleBE(e.ts, 66 + origin.length);
  value.copy(out, 74 + origin.length);
  return out;
}

/** The event in `data`, or null for one this version cannot read. */
export function decodeEvent(data: Uint8Array): StatusEvent | null {
  try {
    const b = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    if (b.length < 75 || b[0] !== EVENT_VERSION) return null;
    const n = b[65]!;
    const origin = b.toString('utf8', 66, 66 + n);
    const ts = b.readDoubleBE(66 + n);
    const value = b.subarray(74 + n);
    const record = decodeStatus(signatureOfKey(b.subarray(1, 65)), value);
    return { origin, ts, record, resend: resendOf(value) };
  } catch {
    return null;
  }
}

/** `<version 2 u8><count u16>` then each event as `<length u32><event>` ({@link encodeEvent}). */
export function encodeMessage(events: readonly Uint8Array[]): Uint8Array {
  const out = Buffer.allocUnsafe(3 + events.reduce((n, e) => n + 4 + e.length, 0));
  out[0] = MESSAGE_VERSION;
  out.writeUInt16BE(events.length, 1);
  let at = 3;
  for (const e of events) {
    out.writeUInt32BE(e.length, at);
    out.set(e, at + 4);
    at += 4 + e.length;
  }
  return out;
}

/** The events of a message (a batch, or one bare event), or null for one this version cannot read. */
export function decodeMessage(data: Uint8Array): StatusEvent[] | null {
  if (data[0] === EVENT_VERSION) {
    const e = decodeEvent(data);
    return e ? [e] : null;
  }
  const b = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (b.length < 3 || b[0] !== MESSAGE_VERSION) return null;
  const out: StatusEvent[] = [];
  let at = 3;
  for (let i = b.readUInt16BE(1); i > 0; i--) {
    if (at + 4 > b.length) return null;
    const n = b.readUInt32BE(at);
    if (at + 4 + n > b.length) return null;
    const e = decodeEvent(b.subarray(at + 4, at + 4 + n));
    if (!e) return null;
    out.push(e);
    at += 4 + n;
  }
  return at === b.length ? out : null;
}

/** Subject of a node's live copies of its status messages (plain NATS, no ack): `lf.live.<node>`. */
export const liveSubject = (node: string): string => `lf.live.${node}`;

/** The state word of a record, in the msgID: each state is published once. */
function stateOf(r: StatusRecord): string {
  return r.expired ? 'expired' : r.status;
}

/** A (re)started node publishes again every record submitted this recently (see `republishPending`). */
const REPUBLISH_RECENT_MS = 10 * 60_000;

interface Outgoing {
  msgID: string;
  data: Uint8Array;
  /**
   * `ackReplication: quorum`: told once, when JetStream acknowledged the message carrying this
   * event (null) or when a publish of it failed (the error; the event is kept and tried again).
   */
  stored?: (err: Error | null) => void;
}

export interface StatusEventsOptions {
  link: Link;
  store: Store;
  accounts: Accounts;
  log: LinkLog;
  registry: Registry;
  /** Hand an applied change to `/v1/stream` (the StatusHub and the ingress threads). */
  publishLocal(rec: StatusRecord): void;
  /** Start applying only once this resolves (the accounts mirror: points need the account). */
  after?: Promise<void>;
}

export class StatusEvents {
  private outbox: Outgoing[] = [];
  private flushing = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private lingerTimer: NodeJS.Timeout | null = null;
  /** Events whose live copy waits for the linger, or for the link to come back. */
  private liveQueue: Uint8Array[] = [];
  private liveTimer: NodeJS.Timeout | null = null;
  /** Live copies sent within REPLAY_MS, oldest first. */
  private recentLive: { at: number; data: Uint8Array }[] = [];
  private replayRequests: Subscription | null = null;
  private messages: ConsumerMessages | null = null;
  private live: Subscription | null = null;
  /**
   * msgIDs of the messages this process published whose copy the consumer has not brought back
   * yet. A node's own events come back through its consumer (it reads the whole stream, so a
   * node restarted on an empty disk under its old name would get its records back); decoding
   * and looking up every event of a message this process wrote itself bought nothing and cost
   * the main thread most of its replication work per send (docs/several-nodes.md).
   */
  private readonly ownInFlight = new Set<string>();
  private closed = false;
  /** Events in the outbox whose acceptance waits for their JetStream ack (`ackReplication: quorum`). */
  private waited = 0;
  /** Dropped from a full outbox (they reach the other nodes only if re-published after a restart). */
  dropped = 0;
  /** Events JetStream acknowledged. */
  published = 0;
  /** JetStream messages acknowledged (each carries up to MESSAGE_EVENTS events). */
  readonly messagesPublished: Counter;
  applied = 0;
  readonly lag: Histogram;
  /** Events dropped because their origin is not the node of the subject they came on. */
  readonly forged: Counter;
  private forgedUnlogged = 0;
  private forgedLoggedAt = -Infinity;
  /** Told of every applied event after it was written (takeover bookkeeping). */
  onApplied: ((rec: StatusRecord, origin: string) => void) | null = null;

  constructor(private readonly o: StatusEventsOptions) {
    this.lag = new Histogram({
      name: 'landfall_cluster_replication_lag_seconds',
      help: "Acceptance on another node to its record written here (the event's origin timestamp to the local write)",
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [o.registry],
    });
    this.messagesPublished = new Counter({
      name: 'landfall_cluster_status_messages_total',
      help: 'JetStream messages of status events this node published (acknowledged); events per message is the batching: see LINGER_MS',
      registers: [o.registry],
    });
    this.forged = new Counter({
      name: 'landfall_cluster_forged_events_total',
      help: "Status events dropped because their origin is not the node of the subject they came on (lf.status.<node>)",
      registers: [o.registry],
    });
  }

  /** Events waiting to be acknowledged by JetStream. */
  get backlog(): number {
    return this.outbox.length;
  }

  start(): void {
    this.o.link.onReady(() => {
      this.republishPending();
      this.kick();
      void (this.o.after ?? Promise.resolve()).then(() => {
        if (this.closed) return;
        this.subscribeLive();
        void this.consume();
      });
    });
    this.o.link.onChange((up) => {
      if (!up) return;
      this.kick();
      this.recoverLive();
      // (H6) After an outage of every server the pull consumer's iterator stalls without an
      // error (its pulls died with the old connections): end it, so `consume` makes it again.
      void this.messages?.close().catch(() => undefined);
    });
  }

  /**
   * Acceptances (main thread: the engine's own, or an ingress batch). Never waits.
   * @param stored `ackReplication: quorum`: called once, when JetStream acknowledged this event
   *   (null) or could not (the error); such an event is published at once, not after the linger
   */
  accepted(rec: StatusRecord, resend: Resend | null, bytes?: RecordBytes, stored?: (err: Error | null) => void): void {
    this.enqueue({ origin: this.o.link.node, ts: rec.submittedAt, record: rec, resend }, bytes, stored);
  }

  /** A tracker change (settled or expired). Never waits. */
  changed(rec: StatusRecord): void {
    this.enqueue({ origin: this.o.link.node, ts: rec.confirmedAt ?? Date.now(), record: rec, resend: null });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.lingerTimer) clearTimeout(this.lingerTimer);
    if (this.liveTimer) clearTimeout(this.liveTimer);
    this.live?.unsubscribe();
    this.replayRequests?.unsubscribe();
    await this.messages?.close().catch(() => undefined);
  }

  private enqueue(e: StatusEvent, bytes?: RecordBytes, stored?: (err: Error | null) => void): void {
    if (this.outbox.length >= OUTBOX_MAX) {
      const gone = this.outbox.shift();
      if (gone?.stored) {
        this.waited--;
        gone.stored(new Error('the outbox of status events is full'));
      }
      if (this.dropped++ % 10_000 === 0) this.o.log.warn({ dropped: this.dropped }, 'cluster: outbox full, oldest status events dropped');
    }
    const data = encodeEvent(e, bytes);
    this.outbox.push({ msgID: `${e.record.signature}:${stateOf(e.record)}`, data, ...(stored && { stored }) });
    if (stored) this.waited++;
    this.kick();
    this.queueLive(data);
  }

  /**
   * The live copy goes out after the same linger (or at once with a message's worth), never
   * behind the JetStream publishes: those stall through a stream leader's election, this does not.
   * While the link is down (a reconnect to another server) copies wait for it, up to
   * LIVE_WAITING_MAX (past that, oldest dropped: JetStream carries them).
   */
  private queueLive(data: Uint8Array): void {
    if (!this.o.link.ready || this.closed) return;
    this.liveQueue.push(data);
    if (this.liveQueue.length > LIVE_WAITING_MAX) this.liveQueue.shift();
    if (this.liveQueue.length >= MESSAGE_EVENTS) this.flushLive();
    else this.liveTimer ??= setTimeout(() => this.flushLive(), LINGER_MS);
  }

  private flushLive(): void {
    if (this.liveTimer) clearTimeout(this.liveTimer);
    this.liveTimer = null;
    const nc = this.o.link.nc;
    if (!nc || !this.o.link.up || this.closed) return; // sent by `recoverLive` once up again
    const subject = liveSubject(this.o.link.node);
    const at = Date.now();
    for (let i = 0; i < this.liveQueue.length; i += MESSAGE_EVENTS) {
      const data = encodeMessage(this.liveQueue.slice(i, i + MESSAGE_EVENTS));
      nc.publish(subject, data);
      this.recentLive.push({ at, data });
    }
    this.liveQueue = [];
    this.pruneRecent(at);
  }

  private pruneRecent(now: number): void {
    let old = 0;
    while (old < this.recentLive.length && now - this.recentLive[old]!.at > REPLAY_MS) old++;
    if (old > 0) this.recentLive.splice(0, old);
  }

  /** Send this node's recent live copies again (a node reconnected: some may have been lost). */
  private replayLive(): void {
    const nc = this.o.link.nc;
    if (!nc || !this.o.link.up || this.closed) return;
    this.pruneRecent(Date.now());
    const subject = liveSubject(this.o.link.node);
    for (const m of this.recentLive) nc.publish(subject, m.data);
  }

  /**
   * After this node's reconnect: what it sent lately may have died with its server, and what the
   * others sent to it while it was away did not reach it: send its own again, ask for theirs.
   */
  private recoverLive(): void {
    // Not applying yet: then neither is anyone missing this node's copies for long.
    if (this.live) {
      this.replayLive();
      this.o.link.nc?.publish(replaySubject(this.o.link.node));
    }
    this.flushLive(); // what waited for the reconnect
  }

  /**
   * After a (re)start: this node's pending records again, and every record submitted in the last
   * `REPUBLISH_RECENT_MS` in its current state — an acceptance acknowledged just before a crash
   * may be in the store (committed, or replayed from the acknowledgement log) but not in the
   * stream. Appliers keep only what moves a record forward; JetStream drops a duplicate msgID.
   */
  private republishPending(): void {
    let n = 0;
    for (const rec of this.o.store.pendingEntries(Date.now() - REPUBLISH_RECENT_MS)) {
      const { resend, ...record } = rec;
      if (isPending(record)) this.accepted(record, resend);
      else this.changed(record);
      n++;
    }
    if (n > 0) this.o.log.info({ records: n }, 'cluster: pending and recent records published again');
  }

  /** Publish soon: at once with a message's worth of events, else after the linger. */
  private kick(): void {
    if (this.flushing || this.closed || !this.o.link.up || !this.o.link.ready || this.outbox.length === 0) return;
    // An event a response waits for goes at once (with whatever else waits): the linger would be
    // added to that response. Events that arrive during its publish share the next message.
    if (this.outbox.length < MESSAGE_EVENTS && this.waited === 0) {
      this.lingerTimer ??= setTimeout(() => {
        this.lingerTimer = null;
        this.flushNow();
      }, LINGER_MS);
      return;
    }
    this.flushNow();
  }

  private flushNow(): void {
    if (this.lingerTimer) clearTimeout(this.lingerTimer);
    this.lingerTimer = null;
    if (this.flushing || this.closed || !this.o.link.up || !this.o.link.ready || this.outbox.length === 0) return;
    this.flushing = true;
    const after = (ok: boolean): void => {
      this.flushing = false;
      if (this.outbox.length === 0 || this.closed) return;
      // What arrived during the last publish waits for company like any other event; what
      // failed is tried again later.
      if (ok) this.kick();
      else
        this.retryTimer ??= setTimeout(() => {
          this.retryTimer = null;
          this.flushNow();
        }, RETRY_MS);
    };
    void this.flush().then(after, () => after(false));
  }

  /**
   * Publish the outbox as messages of up to MESSAGE_EVENTS events: all of it once, then again
   * only while a whole message's worth has arrived meanwhile (a short remainder goes back to
   * `kick` and its linger: publishing whatever arrived during each ack's round trip made one
   * message per event at a few hundred sends/s). Stops at a failed publish, its events kept, in
   * order, for the next try; returns false then. A message's msgID is its first event's and its
   * size: a message published again after a lost ack is dropped as a duplicate (and a duplicate
   * that gets through is harmless: applying is forward only).
   */
  private async flush(): Promise<boolean> {
    let first = true;
    while (this.outbox.length > 0 && (first || this.outbox.length >= MESSAGE_EVENTS) && this.o.link.up && !this.closed) {
      first = false;
      const taken = this.outbox.slice(0, MESSAGE_EVENTS * MESSAGES_IN_FLIGHT);
      const chunks: Outgoing[][] = [];
      for (let i = 0; i < taken.length; i += MESSAGE_EVENTS) chunks.push(taken.slice(i, i + MESSAGE_EVENTS));
      const results = await Promise.allSettled(chunks.map((c) => this.publishMessage(c)));
      const failed = chunks.filter((_, i) => results[i]!.status === 'rejected').flat();
      if (this.waited > 0) this.tellStored(chunks, results);
      this.outbox.splice(0, taken.length, ...failed);
      this.published += taken.length - failed.length;
      this.messagesPublished.inc(results.filter((r) => r.status === 'fulfilled').length);
      if (failed.length > 0) return false;
    }
    return true;
  }

  /** Tell the waiting acceptances of published chunks their outcome (each once; a failed one stays queued). */
  private tellStored(chunks: Outgoing[][], results: PromiseSettledResult<PubAck>[]): void {
    chunks.forEach((chunk, i) => {
      const r = results[i]!;
      const err = r.status === 'fulfilled' ? null : r.reason instanceof Error ? r.reason : new Error(String(r.reason));
      for (const o of chunk) {
        if (!o.stored) continue;
        const tell = o.stored;
        delete o.stored;
        this.waited--;
        tell(err);
      }
    });
  }

  /** One message to JetStream (its msgID: its first event's and its size). */
  private publishMessage(events: Outgoing[]): Promise<PubAck> {
    const data = encodeMessage(events.map((m) => m.data));
    const msgID = `${events[0]!.msgID}+${events.length}`;
    this.ownInFlight.add(msgID);
    if (this.ownInFlight.size > OWN_IN_FLIGHT_MAX) this.ownInFlight.delete(this.ownInFlight.values().next().value!);
    return this.o.link.js!.publish(statusSubject(this.o.link.node), data, { msgID, timeout: PUBLISH_TIMEOUT_MS });
  }

  /**
   * Apply the other nodes' live copies as they arrive (the subscription is made again by the
   * client after a reconnect). A write that fails is left to JetStream's copy; an event whose
   * origin is not the node of its subject is dropped and counted (`fromNode`). And answer
   * another node's replay request (it reconnected) with this node's recent copies.
   */
  private subscribeLive(): void {
    const own = liveSubject(this.o.link.node);
    const prefix = liveSubject('');
    this.live = this.o.link.nc!.subscribe(liveSubject('*'), {
      callback: (err: Error | null, m: Msg) => {
        if (err !== null || m.subject === own) return;
        for (const e of this.fromNode(m.subject.slice(prefix.length), m.subject, decodeMessage(m.data) ?? [])) this.applyLive(e);
      },
    });
    const ownRequest = replaySubject(this.o.link.node);
    this.replayRequests = this.o.link.nc!.subscribe(replaySubject('*'), {
      callback: (err: Error | null, m: Msg) => {
        if (err === null && m.subject !== ownRequest) this.replayLive();
      },
    });
  }

  /** One live event: applied, or left to JetStream's copy if that fails (never thrown into the client). */
  private applyLive(e: StatusEvent): void {
    try {
      void this.applyEvent(e)?.catch(() => false);
    } catch (err) {
      this.o.log.warn({ err: (err as Error).message, sig: e.record.signature }, 'cluster: live status event not applied (JetStream delivers it again)');
    }
  }

  /** Apply every node's events, for ever: the consumer is made again after any failure. */
  private async consume(): Promise<void> {
    const durable = `node-${this.o.link.node}`;
    const settings = { durable_name: durable, ack_policy: AckPolicy.Explicit, ack_wait: 30_000_000_000, max_ack_pending: 20_000 };
    let firstOfProcess = true;
    while (!this.closed) {
      try {
        const jsm = this.o.link.jsm!;
        const info = await jsm.consumers.info(STATUS_STREAM, durable).catch(() => null);
        if (info === null) await jsm.consumers.add(STATUS_STREAM, { ...settings, deliver_policy: DeliverPolicy.All });
        else if (firstOfProcess && info.num_ack_pending > 0) {
          // Messages delivered to the process before this one (killed) and never acknowledged:
          // JetStream would hold them for ack_wait (30 s) before delivering them again, and this
          // node would miss those records meanwhile. Start again from the acknowledgement floor
          // at once; applying an event twice changes nothing (forward only).
          await jsm.consumers.delete(STATUS_STREAM, durable);
          await jsm.consumers.add(STATUS_STREAM, { ...settings, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: info.ack_floor.stream_seq + 1 });
        }
        firstOfProcess = false;
        const consumer = await this.o.link.js!.consumers.get(STATUS_STREAM, durable);
        // (H6) Pull every 5 s at most: a pull lost with a server (all restarted) is replaced soon.
        this.messages = await consumer.consume({ max_messages: 1_000, expires: 5_000 });
        for await (const m of this.messages) this.apply(m);
      } catch (e) {
        if (!this.closed) this.o.log.warn({ err: (e as Error).message }, 'cluster: status consumer failed, retrying');
      }
      await new Promise((r) => setTimeout(r, RETRY_MS));
    }
  }

  /** Apply a message's events; acknowledged once every write it caused committed. */
  private apply(m: JsMsg): void {
    if (m.subject === statusSubject(this.o.link.node)) {
      const id = m.headers?.get('Nats-Msg-Id');
      if (id && this.ownInFlight.delete(id)) {
        m.ack(); // this process wrote its records before publishing it
        return;
      }
    }
    const events = decodeMessage(m.data);
    if (!events) {
      this.o.log.warn({ seq: m.seq }, 'cluster: unreadable status message skipped');
      m.ack();
      return;
    }
    const writes = this.fromNode(m.subject.slice(statusSubject('').length), m.subject, events).map((e) => this.applyEvent(e)).filter((w) => w !== null);
    if (writes.length === 0) {
      // Nothing to write, but what made it nothing (the live copy of the same event, applied a
      // moment ago) may still be in the commit window: acknowledged only once every write so far
      // is committed. Acknowledged at once, a kill before that commit lost the record on this
      // node for good: JetStream does not deliver an acknowledged message again (a restarted node
      // missed a send another node acknowledged 86-118 ms before the kill, at load ~10).
      void this.o.store.flushed().then(
        (ok) => (ok ? m.ack() : m.nak()),
        () => m.nak(),
      );
    } else void Promise.all(writes).then((ok) => (ok.every(Boolean) ? m.ack() : m.nak()));
  }

  /**
   * The events whose origin is `node`, the node of the subject they came on (`lf.status.<node>`,
   * `lf.live.<node>`); the others are dropped, counted and logged (sampled: a flood of them
   * cannot flood the log). With NATS permissions each node may publish only on its own subjects,
   * so the subject names the node the server authenticated; an event that claims another origin
   * is a forgery or a bug, and applying it would credit that node's records (takeover
   * bookkeeping) to the wrong node.
   */
  private fromNode(node: string, subject: string, events: StatusEvent[]): StatusEvent[] {
    const kept = events.filter((e) => e.origin === node);
    const dropped = events.length - kept.length;
    if (dropped === 0) return events;
    this.forged.inc(dropped);
    this.forgedUnlogged += dropped;
    const now = Date.now();
    if (now - this.forgedLoggedAt >= FORGED_LOG_MS) {
      const claimed = events.find((e) => e.origin !== node)!.origin;
      this.o.log.warn({ subject, claimed_origin: claimed, dropped: this.forgedUnlogged }, 'cluster: status events whose origin is not their subject dropped');
      this.forgedLoggedAt = now;
      this.forgedUnlogged = 0;
    }
    return kept;
  }

  /**
   * Apply one event to the local store; returns the write's commit (null: nothing to write).
   * Exposed for tests of the rules.
   */
  applyEvent(e: StatusEvent): Promise<boolean> | null {
    const { record: rec, origin } = e;
    const cur = this.o.store.getStatus(rec.signature);
    // Forward only: a record here that is terminal, or as far as the event, stays as it is.
    if (cur && (!isPending(cur) || isPending(rec))) return null;
    // A confirmation's points commit with it, once, whichever node's event or tracker wrote it first.
    const credit = rec.status === 'confirmed' ? this.o.accounts.confirmationCredit(rec.tipLamports, rec.confirmedAt ?? e.ts) : undefined;
    const written = this.o.store.updateStatus(rec, isPending(rec) ? e.resend : null, credit);
    this.applied++;
    if (!cur) {
      this.o.accounts.countSubmissions(rec.accountId, 1, rec.submittedAt);
      if (origin !== this.o.link.node && isPending(rec)) this.lag.observe(Math.max(0, Date.now() - e.ts) / 1000);
    }
    this.o.publishLocal(rec);
    this.onApplied?.(rec, origin);
    return written;
  }
}

/**
 * Status records across nodes (issue 13, part 3): every acceptance and every tracker change of
 * a node is an event on the JetStream stream `LANDFALL_STATUS` (subject `lf.status.<node>`),
 * and every node applies every node's events into its local store.
 *
 * Publishing never blocks the hot path: events go into an in-memory outbox (bounded) that a
 * loop publishes in batches while the link is up, keeping what failed for after the reconnect.
 * Each event's msgID is `<signature>:<state>`, so JetStream's duplicate window drops a repeat
 * (a restarted node re-publishes its still-pending records from LMDB: what was lost in its
 * outbox goes out, what was not is dropped as a duplicate).
 *
 * Applying (a durable consumer per node, named after it, from the stream's first event for a
 * new node): a record absent here is inserted whole; a pending one moves forward to a terminal
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
import { AckPolicy, DeliverPolicy, type ConsumerMessages, type JsMsg } from '@nats-io/jetstream';
import { Histogram, type Registry } from 'prom-client';
import type { Accounts } from '../accounts/accounts.js';
import { isPending, type Resend, type StatusRecord } from '../store/records.js';
import { decodeStatus, encodeStatus, resendOf, signatureOfKey, statusKey } from '../store/status-codec.js';
import type { Store } from '../store/store.js';
import { STATUS_STREAM, statusSubject, type Link, type LinkLog } from './link.js';

/** Events kept while NATS is unreachable; past it the oldest are dropped (counted, logged). */
export const OUTBOX_MAX = 200_000;
const PUBLISH_BATCH = 512;
const RETRY_MS = 250;
const EVENT_VERSION = 1;

/** One status event as it travels. */
export interface StatusEvent {
  origin: string;
  /** ms since epoch on the origin: the acceptance (for `sent`) or the change. */
  ts: number;
  record: StatusRecord;
  resend: Resend | null;
}

/** `<version u8><signature 64 B><origin len u8><origin><ts f64><status value (status-codec)>`. */
export function encodeEvent(e: StatusEvent): Uint8Array {
  const origin = Buffer.from(e.origin, 'utf8');
  const value = encodeStatus(e.record, e.resend);
  const out = Buffer.allocUnsafe(1 + 64 + 1 + origin.length + 8 + value.length);
  out[0] = EVENT_VERSION;
  statusKey(e.record.signature)!.copy(out, 1);
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

/** The state word of a record, in the msgID: each state is published once. */
function stateOf(r: StatusRecord): string {
  return r.expired ? 'expired' : r.status;
}

interface Outgoing {
  msgID: string;
  data: Uint8Array;
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
  private messages: ConsumerMessages | null = null;
  private closed = false;
  /** Dropped from a full outbox (they reach the other nodes only if re-published after a restart). */
  dropped = 0;
  published = 0;
  applied = 0;
  readonly lag: Histogram;
  /** Told of every applied event after it was written (takeover bookkeeping). */
  onApplied: ((rec: StatusRecord, origin: string) => void) | null = null;

  constructor(private readonly o: StatusEventsOptions) {
    this.lag = new Histogram({
      name: 'landfall_cluster_replication_lag_seconds',
      help: "Acceptance on another node to its record written here (the event's origin timestamp to the local write)",
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
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
      void (this.o.after ?? Promise.resolve()).then(() => this.consume());
    });
    this.o.link.onChange((up) => {
      if (!up) return;
      this.kick();
      // (H6) After an outage of every server the pull consumer's iterator stalls without an
      // error (its pulls died with the old connections): end it, so `consume` makes it again.
      void this.messages?.close().catch(() => undefined);
    });
  }

  /** Acceptances (main thread: the engine's own, or an ingress batch). Never waits. */
  accepted(rec: StatusRecord, resend: Resend | null): void {
    this.enqueue({ origin: this.o.link.node, ts: rec.submittedAt, record: rec, resend });
  }

  /** A tracker change (settled or expired). Never waits. */
  changed(rec: StatusRecord): void {
    this.enqueue({ origin: this.o.link.node, ts: rec.confirmedAt ?? Date.now(), record: rec, resend: null });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.messages?.close().catch(() => undefined);
  }

  private enqueue(e: StatusEvent): void {
    if (this.outbox.length >= OUTBOX_MAX) {
      this.outbox.shift();
      if (this.dropped++ % 10_000 === 0) this.o.log.warn({ dropped: this.dropped }, 'cluster: outbox full, oldest status events dropped');
    }
    this.outbox.push({ msgID: `${e.record.signature}:${stateOf(e.record)}`, data: encodeEvent(e) });
    this.kick();
  }

  /** After a restart: this node's pending records again (a duplicate is dropped by JetStream). */
  private republishPending(): void {
    let n = 0;
    for (const rec of this.o.store.pendingEntries()) {
      const { resend, ...record } = rec;
      this.accepted(record, resend);
      n++;
    }
    if (n > 0) this.o.log.info({ pending: n }, 'cluster: pending records published again');
  }

  private kick(): void {
    if (this.flushing || this.closed || !this.o.link.up || !this.o.link.ready || this.outbox.length === 0) return;
    this.flushing = true;
    void this.flush().finally(() => {
      this.flushing = false;
      if (this.outbox.length > 0 && !this.closed) {
        this.retryTimer ??= setTimeout(() => {
          this.retryTimer = null;
          this.kick();
        }, RETRY_MS);
      }
    });
  }

  /** Publish batches until the outbox is empty or a publish fails (kept for the next try). */
  private async flush(): Promise<void> {
    const js = this.o.link.js!;
    while (this.outbox.length > 0 && this.o.link.up && !this.closed) {
      const batch = this.outbox.slice(0, PUBLISH_BATCH);
      const subject = statusSubject(this.o.link.node);
      const results = await Promise.allSettled(batch.map((m) => js.publish(subject, m.data, { msgID: m.msgID, timeout: 5_000 })));
      // Keep the failed ones, in order, ahead of what was queued meanwhile.
      const failed = batch.filter((_, i) => results[i]!.status === 'rejected');
      this.outbox.splice(0, batch.length, ...failed);
      this.published += batch.length - failed.length;
      if (failed.length > 0) return;
    }
  }

  /** Apply every node's events, for ever: the consumer is made again after any failure. */
  private async consume(): Promise<void> {
    const durable = `node-${this.o.link.node}`;
    while (!this.closed) {
      try {
        const jsm = this.o.link.jsm!;
        await jsm.consumers.info(STATUS_STREAM, durable).catch(() =>
          jsm.consumers.add(STATUS_STREAM, {
            durable_name: durable,
            ack_policy: AckPolicy.Explicit,
            deliver_policy: DeliverPolicy.All,
            ack_wait: 30_000_000_000,
            max_ack_pending: 20_000,
          }),
        );
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

  private apply(m: JsMsg): void {
    const e = decodeEvent(m.data);
    if (!e) {
      this.o.log.warn({ seq: m.seq }, 'cluster: unreadable status event skipped');
      m.ack();
      return;
    }
    const written = this.applyEvent(e);
    if (written === null) m.ack();
    else void written.then((ok) => (ok ? m.ack() : m.nak()));
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
    const written = this.o.store.updateStatus(rec, isPending(rec) ? e.resend : null);
    this.applied++;
    if (!cur) {
      this.o.accounts.countSubmissions(rec.accountId, 1, rec.submittedAt);
      if (origin !== this.o.link.node && isPending(rec)) this.lag.observe(Math.max(0, Date.now() - e.ts) / 1000);
    }
    if (rec.status === 'confirmed') void this.o.accounts.accrueTip(rec.accountId, rec.tipLamports, rec.confirmedAt ?? e.ts);
    this.o.publishLocal(rec);
    this.onApplied?.(rec, origin);
    return written;
  }
}

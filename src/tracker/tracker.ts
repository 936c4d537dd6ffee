/**
 * The confirmation tracker: turns "sent" into `confirmed` / `failed` (with `confirmed_at`,
 * `latency_ms` and `slot`; a failed one also with the chain's `err`), or marks `expired: true` once a transaction can no longer land, and
 * credits points for confirmed ones.
 *
 * Sources, push first:
 * - `logsSubscribe` with `mentions: [tip address]` at `confirmed` commitment, one subscription
 *   per tip address: every transaction of ours that lands mentions one. A notification is a
 *   signal, not the outcome: it triggers an immediate `getSignatureStatuses` of the signatures
 *   it named (batched: what arrives in one turn of the event loop goes in one call, 256 a call),
 *   and the record takes its slot, error and time from that status — the slot the chain reports
 *   for the transaction itself. A notification's `context.slot` is the slot of the bank that
 *   produced it, and Agave's can name a transaction in a slot it did not land in: its logs are
 *   collected as the transaction executes, before it is recorded into the slot, and a
 *   transaction executed at a slot's very end whose record misses the slot is executed again in
 *   the next one. Against a real Agave validator 1–3 records in 240 said `confirmed` one slot
 *   early, with a `latency_ms` (73–163) shorter than any real confirmation there (~340–400):
 *   measured to a notification of the earlier slot's confirmation, not to the transaction's.
 *   The read costs one RPC round trip (a few ms on a nearby node), paid in the latency.
 * - `logsSubscribe` at `processed` for the same addresses: the earliest sign a transaction
 *   landed, passed to `onLanded` so its rebroadcast rounds stop at once (the confirmation
 *   arrives about a slot later, often after the next round would have gone out). Nothing is
 *   written from it.
 * - Every `sweepMs`, `getSignatureStatuses` in batches of 256 for whatever the push has not
 *   settled (a missed notification, a reconnect gap, a restart). While the push is live, the poll
 *   is its safety net and backs off per transaction (`nextPollGap`: at 1, 2, 4, 8, 12, … s of
 *   age, not every second): a transaction that never lands (a sink, a dead blockhash) was polled
 *   ~60 times in its blockhash's lifetime, most of the main thread's tracker work. Every watched
 *   transaction is polled every sweep while the push is off, down, refused, or back for less
 *   than `PUSH_SETTLE_MS` (the notifications of a gap are never replayed).
 *
 * Latency is measured from the monotonic clock: request received (process.hrtime) → the status
 * read that showed the transaction confirmed (or failed) arrived here. After a restart the monotonic origin is gone and the wall clock is used instead
 * (`submitted_at` → observation), which docs/api.md states.
 *
 * Deadline: a transaction sent with `deadline_slot` whose slot is `DEADLINE_GRACE_SLOTS` behind
 * the cluster gets the same last look and is then marked expired with `deadlinePassed` (its
 * rounds stopped after that slot: `Rebroadcaster`).
 *
 * Expiry: a transaction whose blockhash's last valid block height is behind the cluster's block
 * height is checked one last time (`searchTransactionHistory`) and then marked expired. When the
 * blockhash was not known at submission, its lifetime is an estimate (see `estimateLastValid`),
 * confirmed with `isBlockhashValid` before anything is marked.
 *
 * Durable-nonce transactions never expire by blockhash. Instead their nonce account is checked
 * off the hot path (`checkNonces`, batched `getMultipleAccounts`): first about a second after
 * acceptance, then every few seconds while they stay pending, a bounded number per sweep. If the
 * account does not exist, is not a current, initialized nonce account of the System program, or
 * holds another nonce than the message's blockhash (never had it, or moved on), the transaction
 * can no longer land: after one last look (`searchTransactionHistory`) it is marked expired,
 * with the reason in the change. After a restart the nonce account is unknown (it is not in the
 * stored record), so a resumed durable-nonce transaction is only polled.
 *
 * In flight: every transaction the tracker stops watching (settled or expired) is given back to
 * its account's in-flight count (`InFlight`), and what `resume` finds is counted in it.
 */
import { PubSub } from '../chain/pubsub.js';
import { MAX_MULTIPLE_ACCOUNTS, type AccountInfo, type Rpc, type SignatureStatus } from '../chain/rpc.js';
import type { Accounts } from '../accounts/accounts.js';
import type { InFlight } from '../accounts/in-flight.js';
import type { PendingRecord, StatusRecord, TxStatus } from '../store/records.js';
import type { Store } from '../store/store.js';
import { nonceRefusal } from './nonce-check.js';

export const STATUS_BATCH = 256;
/** Slack added to an estimated blockhash lifetime (a client's node may be a few slots ahead). */
const ESTIMATE_SLACK_BLOCKS = 32;
/**
 * Slots after a `deadline_slot` before the transaction is given up: a round written in the
 * deadline slot can still be processed in the next one.
 */
export const DEADLINE_GRACE_SLOTS = 2;
/** How long a push about a transaction not watched yet is remembered. */
const EARLY_OUTCOME_MS = 120_000;
/** While the push is live, a transaction's polls back off to one every this many ms at most. */
export const MAX_POLL_GAP_MS = 4_000;
/** After the push (re)connects, every sweep polls everything this long (its subscriptions are being made again). */
const PUSH_SETTLE_MS = 2_000;

/** After a push, a status read that does not show the transaction confirmed yet is tried again after this many ms… */
export const CHECK_RETRY_MS = 100;
/** …this many times, then it is left to the poll. */
export const CHECK_TRIES = 20;

/** The wait before the next poll of a transaction after one that found nothing: doubled, capped. */
export function nextPollGap(gap: number): number {
  return Math.min(gap * 2, MAX_POLL_GAP_MS);
}

interface Watched {
  signature: string;
  accountId: string;
  tipLamports: bigint;
  /** process.hrtime.bigint() at request arrival; null when resumed after a restart. */
  receivedAt: bigint | null;
  /** performance.now() when watching began. */
  since: number;
  lastValid: number | null;
  estimated: boolean;
  /** Outcome observed but not yet written (status record not visible yet). */
  outcome: Outcome | null;
  /** Status reads left after a push said it landed (`CHECK_TRIES`), 0 when none is under way. */
  checks: number;
  /** A durable-nonce transaction whose nonce account is known: when to check it next. */
  nonce: NonceCheck | null;
  /** `deadline_slot`, or null. */
  deadline: number | null;
  /** performance.now() from which the poll looks at it again (while the push is live). */
  nextPoll: number;
  /** The wait after its last poll (`nextPollGap`). */
  pollGap: number;
}

interface NonceCheck {
  /** The nonce account, base58. */
  account: string;
  blockhash: string;
  /** performance.now() of the next check. */
  due: number;
}

export interface Outcome {
  slot: number;
  err: unknown;
  /** process.hrtime.bigint() when observed. */
  observedAt: bigint;
  source: 'push' | 'poll';
}

export interface StatusChange {
  record: StatusRecord;
  source: 'push' | 'poll' | 'expiry';
  /** Why an expiry was decided, when it was not the blockhash's lifetime (for the log). */
  reason?: string;
}

export interface TrackerOptions {
  rpc: Rpc;
  wsUrl: string;
  store: Store;
  accounts: Accounts;
  tipAddresses: readonly string[];
  /** The cluster's current block height, as the leader tracker last saw it. */
  blockHeight: () => number;
  /** The cluster's current slot (for `deadline_slot`); without it deadlines are not watched. */
  slot?: () => number;
  sweepMs?: number;
  /**
   * A transaction is polled only once it has been watched this long: the push normally settles
   * it first, and polling everything just sent would cost one RPC call per 256 sends per sweep.
   */
  pollAfterMs?: number;
  /** Subscribe to `logsSubscribe` mentions of the tip addresses (default true). */
  push?: boolean;
  /**
   * Poll `getSignatureStatuses` for what the push has not settled (default true). Off, only the
   * push settles transactions (the expiry's last look with history still runs).
   */
  poll?: boolean;
  /** Called after each status change is written (terminal or expired). */
  onChange?: (change: StatusChange) => void;
  /**
   * Called when the push says a transaction landed (processed or confirmed), before its status
   * is read and written: its rebroadcast rounds can stop. Also for one seen before its `watch`.
   */
  onLanded?: (signature: string) => void;
  /** Subscribe at `processed` as well, for `onLanded` (default true with the push on). */
  pushProcessed?: boolean;
  /** Transactions in flight per account: given back when one settles or expires. */
  inFlight?: InFlight;
  /** First check of a durable-nonce transaction's nonce account, ms after acceptance (1000). */
  nonceFirstCheckMs?: number;
  /** Then every this many ms while it stays pending (5000). */
  nonceRecheckMs?: number;
  /** At most this many nonce transactions checked per sweep (1000: 10 `getMultipleAccounts` calls at most). */
  nonceChecksPerSweep?: number;
}

export class Tracker {
  private readonly watching = new Map<string, Watched>();
  /** The watched durable-nonce transactions whose nonce account is known. */
  private readonly nonces = new Set<Watched>();
  /**
   * Named by a push before their `watch` call, oldest first (insertion order): when, and whether
   * at `confirmed` (its status is then read once it is watched).
   */
  private readonly early = new Map<string, { pushedAt: bigint; confirmed: boolean }>();
  /** Signatures a push named, waiting for their targeted status read (`readPushed`). */
  private readonly pushed = new Set<Watched>();
  private pushTimer: NodeJS.Immediate | NodeJS.Timeout | null = null;
  /** null with the push off: no WebSocket at all. */
  private readonly pubsub: PubSub | null;
  private readonly timer: NodeJS.Timeout;
  private sweeping = false;
  /** performance.now() when the push connected; -Infinity while it is down (or off, or refused). */
  private pushUpAt = -Infinity;
  readonly stats = { confirmed: 0, failed: 0, expired: 0, push: 0, poll: 0, sweepErrors: 0, lastSweepMs: 0, nonceChecks: 0, nonceExpired: 0, pushReads: 0 };

  constructor(private readonly opts: TrackerOptions) {
    let refused = false;
    const pubsub = opts.push === false ? null : new PubSub(opts.wsUrl, { onState: (up) => (this.pushUpAt = up && !refused ? performance.now() : -Infinity) });
    this.pubsub = pubsub;
    const levels = opts.pushProcessed === false ? (['confirmed'] as const) : (['confirmed', 'processed'] as const);
    for (const tip of pubsub ? opts.tipAddresses : []) {
      for (const commitment of levels) {
        pubsub!.subscribe(
          'logsSubscribe',
          [{ mentions: [tip] }, { commitment }],
          (r) => {
            const v = (r as { value?: { signature?: string } }).value;
            if (typeof v?.signature === 'string') this.onPush(v.signature, commitment === 'confirmed');
          },
          // A node without the subscription: the poll is the only source.
          () => {
            if (commitment !== 'confirmed') return;
            refused = true;
            this.pushUpAt = -Infinity;
          },
        );
      }
    }
    this.timer = setInterval(() => void this.sweep(), opts.sweepMs ?? 1_000);
    this.timer.unref();
  }

  get size(): number {
    return this.watching.size;
  }

  isWatching(signature: string): boolean {
    return this.watching.has(signature);
  }

  /** The signatures watched now (a copy: the caller may start or stop watching while it reads). */
  watchedSignatures(): string[] {
    return [...this.watching.keys()];
  }

  /**
   * Start watching an accepted transaction (idempotent). Its acceptance counted it in flight; a
   * second acceptance of the same signature (two requests racing) counted it twice, so that one
   * is given back here.
   * @param receivedAt process.hrtime.bigint() at request arrival; null when resumed after a restart
   * @param nonceAccount a durable-nonce transaction's nonce account, to check off the hot path
   */
  watch(rec: StatusRecord, receivedAt: bigint | null, nonceAccount?: string): void {
    if (this.watching.has(rec.signature)) {
      this.opts.inFlight?.release(rec.accountId);
      return;
    }
    const w: Watched = {
      signature: rec.signature,
      accountId: rec.accountId,
      tipLamports: rec.tipLamports,
      receivedAt,
      since: performance.now(),
      lastValid: rec.durableNonce ? null : (rec.lastValidBlockHeight ?? this.estimateLastValid()),
      estimated: rec.lastValidBlockHeight === null && !rec.durableNonce,
      outcome: null,
      checks: 0,
      nonce:
        rec.durableNonce && nonceAccount !== undefined
          ? { account: nonceAccount, blockhash: rec.recentBlockhash, due: performance.now() + (this.opts.nonceFirstCheckMs ?? 1_000) }
          : null,
      deadline: rec.deadlineSlot ?? null,
      nextPoll: 0,
      pollGap: this.opts.pollAfterMs ?? 1_000,
    };
    this.watching.set(rec.signature, w);
    if (w.nonce) this.nonces.add(w);
    const seen = this.early.get(rec.signature);
    if (seen) {
      this.early.delete(rec.signature);
      this.opts.onLanded?.(rec.signature);
      if (seen.confirmed) this.readSoon(w);
    }
  }

  /**
   * Watch again everything the store says is still pending (after a restart), counting it in
   * flight; `each` is handed every record resumed (with its resend tail: the engine sends it again).
   */
  resume(each?: (rec: PendingRecord) => void): number {
    let n = 0;
    for (const rec of this.opts.store.pendingEntries()) n += this.resumeOne(rec, each);
    return n;
  }

  /**
   * `resume` for some signatures only (a cluster node taking over a dead node's transactions),
   * each read as `getStatus` reads it: a record applied from another node's event a moment ago
   * is in the overlay, not yet in what `pendingEntries` scans, and must not be missed.
   */
  resumeSignatures(signatures: Iterable<string>, each?: (rec: PendingRecord) => void): number {
    let n = 0;
    for (const sig of signatures) {
      if (this.watching.has(sig)) continue;
      const rec = this.opts.store.pendingRecord(sig);
      if (rec) n += this.resumeOne(rec, each);
    }
    return n;
  }

  private resumeOne(rec: PendingRecord, each: ((rec: PendingRecord) => void) | undefined): number {
    if (this.watching.has(rec.signature)) return 0;
    this.opts.inFlight?.add(rec.accountId);
    this.watch(rec, null);
    each?.(rec);
    return 1;
  }

  /** Stop watching `w` and give its place in flight back. */
  private forget(w: Watched): void {
    if (!this.watching.delete(w.signature)) return;
    this.nonces.delete(w);
    this.pushed.delete(w);
    this.opts.inFlight?.release(w.accountId);
  }

  close(): void {
    clearInterval(this.timer);
    if (this.pushTimer !== null) {
      clearTimeout(this.pushTimer as NodeJS.Timeout);
      clearImmediate(this.pushTimer as NodeJS.Immediate);
    }
    this.pushed.clear();
    this.pubsub?.close();
  }

  /**
   * A blockhash this service never saw can't be younger than the newest it has seen by more
   * than a client node's lead, so it is dead once the current height passes 150 + slack.
   */
  private estimateLastValid(): number {
    return this.opts.blockHeight() + 150 + ESTIMATE_SLACK_BLOCKS;
  }

  /**
   * A push named `signature`: it landed (processed, or confirmed). Its rounds can stop now; once
   * confirmed, its status is read at once (`readSoon`). One not watched yet is remembered.
   */
  private onPush(signature: string, confirmed: boolean): void {
    const w = this.watching.get(signature);
    if (!w) {
      const seen = this.early.get(signature);
      if (seen || this.early.size < 100_000) this.early.set(signature, { pushedAt: seen?.pushedAt ?? process.hrtime.bigint(), confirmed: confirmed || seen?.confirmed === true });
      return;
    }
    this.opts.onLanded?.(signature);
    if (confirmed) this.readSoon(w);
  }

  /** Read `w`'s status in the next turn of the event loop, with whatever else a push named by then. */
  private readSoon(w: Watched): void {
    if (w.checks === 0) w.checks = CHECK_TRIES;
    this.pushed.add(w);
    this.pushTimer ??= setImmediate(() => void this.readPushed());
  }

  /**
   * The targeted status read of the signatures a push named: `getSignatureStatuses`, 256 a call.
   * Confirmed (or failed) ones settle with the status's slot; one not confirmed yet in the
   * node's answer (its commitment a moment behind its push) is read again after
   * `CHECK_RETRY_MS`, `CHECK_TRIES` times at most, and then left to the poll.
   */
  private async readPushed(): Promise<void> {
    this.pushTimer = null;
    const batch = [...this.pushed].filter((w) => this.watching.get(w.signature) === w && !w.outcome);
    this.pushed.clear();
    const again: Watched[] = [];
    await Promise.all(
      chunks(batch, STATUS_BATCH).map(async (part) => {
        try {
          const { value } = await this.opts.rpc.getSignatureStatuses(part.map((w) => w.signature));
          this.stats.pushReads++;
          this.applyStatuses(part, value, 'push');
        } catch {
          this.stats.sweepErrors++;
        }
        for (const w of part) if (this.watching.get(w.signature) === w && !w.outcome && --w.checks > 0) again.push(w);
      }),
    );
    if (again.length === 0) return;
    for (const w of again) this.pushed.add(w);
    if (this.pushTimer === null) {
      const t = setTimeout(() => void this.readPushed(), CHECK_RETRY_MS);
      t.unref();
      this.pushTimer = t;
    }
  }

  /** Write the terminal state. Keeps the outcome for the next sweep if the record isn't visible yet. */
  private settle(w: Watched, o: Outcome): void {
    const rec = this.opts.store.getStatus(w.signature);
    if (!rec) {
      w.outcome = o;
      return;
    }
    this.forget(w);
    if (rec.status !== 'sent') return;
    const status: TxStatus = o.err === null ? 'confirmed' : 'failed';
    const confirmedAt = Date.now();
    const latency = w.receivedAt !== null ? Number(o.observedAt - w.receivedAt) / 1e6 : confirmedAt - rec.submittedAt;
    // A failed transaction keeps its latency (how long until the chain said no) and its error.
    const next: StatusRecord = {
      ...rec,
      status,
      confirmedAt,
      latencyMs: Math.max(0, Math.round(latency)),
      slot: o.slot,
      expired: false,
      ...(status === 'failed' && { err: o.err }),
    };
    // The status and the points it earns commit together, once (`Store.updateStatus`).
    const credit = status === 'confirmed' ? this.opts.accounts.confirmationCredit(w.tipLamports, confirmedAt) : undefined;
    void this.opts.store.updateStatus(next, null, credit);
    this.stats[status]++;
    this.stats[o.source]++;
    this.opts.onChange?.({ record: next, source: o.source });
  }

  private async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    const t0 = performance.now();
    try {
      await this.pollStatuses();
      await this.expire();
      // Last, and on its own: a node without getMultipleAccounts must not stop the expiry above.
      try {
        await this.checkNonces();
      } catch {
        this.stats.sweepErrors++;
      }
      const now = Date.now();
      const oldest = process.hrtime.bigint() - BigInt(EARLY_OUTCOME_MS) * 1_000_000n;
      for (const [sig, o] of this.early) {
        if (o.pushedAt >= oldest) break;
        this.early.delete(sig);
      }
    } catch {
      this.stats.sweepErrors++;
    } finally {
      this.stats.lastSweepMs = performance.now() - t0;
      this.sweeping = false;
    }
  }

  /** The push is on, connected, not refused, and has been for `PUSH_SETTLE_MS`: the poll may back off. */
  private pushLive(now: number): boolean {
    return this.pubsub !== null && this.pubsub.connected && now - this.pushUpAt >= PUSH_SETTLE_MS;
  }

  private async pollStatuses(): Promise<void> {
    const open: Watched[] = [];
    const now = performance.now();
    const cutoff = now - (this.opts.pollAfterMs ?? 1_000);
    // Due by the next sweep's half-way point: a poll is never put off a whole sweep for a few ms.
    const due = this.pushLive(now) ? now + (this.opts.sweepMs ?? 1_000) / 2 : Infinity;
    for (const w of this.watching.values()) {
      if (w.outcome) this.settle(w, w.outcome);
      else if (w.since <= cutoff && w.nextPoll <= due && this.opts.poll !== false) open.push(w);
    }
    for (let i = 0; i < open.length; i += STATUS_BATCH) {
      const batch = open.slice(i, i + STATUS_BATCH);
      const { value } = await this.opts.rpc.getSignatureStatuses(batch.map((w) => w.signature));
      this.applyStatuses(batch, value);
      const polledAt = performance.now();
      for (const w of batch) {
        w.nextPoll = polledAt + w.pollGap;
        w.pollGap = nextPollGap(w.pollGap);
      }
    }
  }

  private applyStatuses(batch: Watched[], statuses: (SignatureStatus | null)[], source: Outcome['source'] = 'poll'): void {
    const observedAt = process.hrtime.bigint();
    batch.forEach((w, j) => {
      const s = statuses[j];
      // Settled meanwhile (the push's read and the poll's can cross): written once.
      if (this.watching.get(w.signature) !== w) return;
      if (s && (s.confirmationStatus === 'confirmed' || s.confirmationStatus === 'finalized')) {
        this.settle(w, { slot: s.slot, err: s.err ?? null, observedAt, source });
      }
    });
  }

  private async expire(): Promise<void> {
    const height = this.opts.blockHeight();
    const due = [...this.watching.values()].filter((w) => ((w.lastValid !== null && height > w.lastValid) || this.deadlinePassed(w)) && !w.outcome);
    for (let i = 0; i < due.length; i += STATUS_BATCH) {
      const batch = due.slice(i, i + STATUS_BATCH);
      // One last look, through history: it may have landed while nobody was looking.
      const { value } = await this.opts.rpc.getSignatureStatuses(batch.map((w) => w.signature), true);
      this.applyStatuses(batch, value);
      for (const [j, w] of batch.entries()) {
        if (!this.watching.has(w.signature) || value[j]) continue;
        if (this.deadlinePassed(w)) {
          this.markExpired(w, `deadline passed: slot ${w.deadline} passed before it landed`, true);
          continue;
        }
        if (w.estimated && (await this.stillValid(w))) continue;
        this.markExpired(w);
      }
    }
  }

  /** For an estimated lifetime: ask the node; if the blockhash is still valid, extend. */
  private async stillValid(w: Watched): Promise<boolean> {
    const rec = this.opts.store.getStatus(w.signature);
    if (!rec) return true;
    const { value } = await this.opts.rpc.isBlockhashValid(rec.recentBlockhash);
    if (value) w.lastValid = this.opts.blockHeight() + ESTIMATE_SLACK_BLOCKS;
    return value;
  }

  /**
   * Check the nonce accounts of the durable-nonce transactions that are due (at most
   * `nonceChecksPerSweep`), each distinct account read once, 100 per `getMultipleAccounts`. A
   * transaction that can no longer land gets one last look through history and is expired.
   */
  private async checkNonces(): Promise<void> {
    const now = performance.now();
    const limit = this.opts.nonceChecksPerSweep ?? 1_000;
    const due: Array<Watched & { nonce: NonceCheck }> = [];
    for (const w of this.nonces) {
      if (due.length >= limit) break;
      if (w.nonce && !w.outcome && w.nonce.due <= now) due.push(w as Watched & { nonce: NonceCheck });
    }
    if (due.length === 0) return;
    const refusals = new Map<Watched, string>();
    const accounts = await this.readAccounts(due.map((w) => w.nonce.account));
    for (const w of due) {
      const refusal = nonceRefusal(w.nonce.account, accounts.get(w.nonce.account) ?? null, w.nonce.blockhash);
      if (refusal !== null) refusals.set(w, refusal);
    }
    this.stats.nonceChecks += due.length;
    const next = performance.now() + (this.opts.nonceRecheckMs ?? 5_000);
    for (const w of due) w.nonce.due = next;
    const failed = [...refusals.keys()];
    for (let i = 0; i < failed.length; i += STATUS_BATCH) {
      const batch = failed.slice(i, i + STATUS_BATCH);
      // One last look, through history: the nonce moves on when the transaction itself lands.
      const { value } = await this.opts.rpc.getSignatureStatuses(batch.map((w) => w.signature), true);
      this.applyStatuses(batch, value);
      for (const [j, w] of batch.entries()) {
        if (!this.watching.has(w.signature) || value[j]) continue;
        this.stats.nonceExpired++;
        this.markExpired(w, refusals.get(w));
      }
    }
  }

  /** Accounts at `addresses` (each read once), `MAX_MULTIPLE_ACCOUNTS` per call, at `processed`. */
  private async readAccounts(addresses: string[]): Promise<Map<string, AccountInfo | null>> {
    const distinct = [...new Set(addresses)];
    const out = new Map<string, AccountInfo | null>();
    for (let i = 0; i < distinct.length; i += MAX_MULTIPLE_ACCOUNTS) {
      const batch = distinct.slice(i, i + MAX_MULTIPLE_ACCOUNTS);
      // processed: the newest state. A client signs with the nonce it just read from its node, so
      // an account (or a nonce) only a confirmed read would not show yet must not expire it.
      const { value } = await this.opts.rpc.getMultipleAccounts(batch, 'processed');
      batch.forEach((a, j) => out.set(a, value[j] ?? null));
    }
    return out;
  }

  /** Its `deadline_slot` is more than `DEADLINE_GRACE_SLOTS` behind the cluster. */
  private deadlinePassed(w: Watched): boolean {
    return w.deadline !== null && this.opts.slot !== undefined && this.opts.slot() > w.deadline + DEADLINE_GRACE_SLOTS;
  }

  private markExpired(w: Watched, reason?: string, deadline = false): void {
    const rec = this.opts.store.getStatus(w.signature);
    this.forget(w);
    if (!rec || rec.status !== 'sent') return;
    const next: StatusRecord = { ...rec, expired: true, ...(deadline && { deadlinePassed: true as const }) };
    void this.opts.store.updateStatus(next);
    this.stats.expired++;
    this.opts.onChange?.({ record: next, source: 'expiry', ...(reason !== undefined && { reason }) });
  }
}

/** `items` in consecutive parts of `size`. */
function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

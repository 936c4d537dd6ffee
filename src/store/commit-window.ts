/**
 * The commit window and the overlay. Status (and trace) writes are not committed one LMDB
 * transaction per event-loop turn: each is held for a window of `COMMIT_WINDOW_MS` (cut short
 * once `MAX_GROUP` wait) and the window is issued as one lmdb-js `transaction`, one commit with
 * one sync (measurements and the reasons: docs/store.md). Until it commits, and for a grace period
 * after, each status write sits in the native process-wide overlay, so every thread reads it.
 * While the store is unavailable, windows are held (in memory and in the overlay) and committed by
 * the first window after it is available again.
 */
import { join } from 'node:path';
import { overlay } from '../native.js';
import { AckLog, type Segment } from './ack-log.js';
import { PROBE_MS, type DiskGuard } from './disk-guard.js';
import type { Credit } from './records.js';
import { isConfirmedValue } from './status-codec.js';
import { accountTxKey, INDEX_VALUE, putAccount, type Tables } from './tables.js';
import { UsageDelta } from './usage-delta.js';

/** Status writes wait at most this long for the commit that groups them. */
export const COMMIT_WINDOW_MS = 50;
/** A window is cut short once this many writes wait (a burst commits in bounded transactions). */
export const MAX_GROUP = 2000;
/** A committed write stays in the overlay this long (up to twice) for stale read snapshots. */
export const RELEASE_GRACE_MS = 100;
/** Status writes a thread holds while the store is unavailable before it drops the oldest. */
export const MAX_RETAINED = 100_000;
/** The acknowledgement logs' folder in the data directory. */
export const ACKS_DIR = 'acks';

/** A committed write still held in the overlay. */
export type Held = [key: Buffer, token: number];

/** A status (or trace) write waiting for its commit window. */
export interface QueuedWrite {
  key: Buffer;
  value: Buffer;
  /** The overlay token of a status write; `TRACE_WRITE` for a trace (traces are not in the overlay). */
  token: number;
  /** An acceptance: written only if the record is not in LMDB yet. Its acknowledgement log segment. */
  logged?: Segment;
  /** A status write's owner and submission time: a record new to LMDB counts in its usage. */
  owner?: { accountId: string; submittedAt: number };
  /** A confirmation's credit, applied at most once per record (`Credit`). */
  credit?: Credit;
  /** The account as the credit leaves it, shown from the overlay until this write commits. */
  account?: Held;
}

/** `QueuedWrite.token` of a trace write. */
export const TRACE_WRITE = -1;

/** The writes of one window and the promise their callers hold. */
interface Group {
  writes: QueuedWrite[];
  promise: Promise<boolean>;
  /** true once committed; false if dropped (the store logged why). */
  resolve: (committed: boolean) => void;
  /** A commit of this group failed or was not attempted: it is held for a later window. */
  held: boolean;
}

export class CommitWindow {
  /** The current window's writes; created with the window. */
  private current: Group | null = null;
  private windowTimer: NodeJS.Timeout | null = null;
  /** Windows that could not be committed, oldest first; committed by the next window that can. */
  private retained: Group[] = [];
  private retainedWrites = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  /** Committed writes to release from the overlay: the newer generation and the older one. */
  private heldNew: Held[] = [];
  private heldOld: Held[] = [];
  private releaseTimer: NodeJS.Timeout | null = null;
  /** This thread's acknowledgement log, opened by its first acceptance (`logAcceptance`). */
  private acks: AckLog | null = null;
  /** Commits of windows issued and not yet settled (`flushed` waits for them). */
  private readonly inflight = new Set<Promise<unknown>>();

  constructor(
    private readonly t: Tables,
    private readonly guard: DiskGuard,
    private readonly path: string,
    private readonly windowMs: number,
    private readonly ackSyncMs: number | undefined,
  ) {
    guard.heldWrites = () => this.retainedWrites;
  }

  /** Append an acceptance to this thread's acknowledgement log (opened by the first); throws if it cannot. */
  logAcceptance(key: Buffer, value: Buffer): Segment {
    return this.ackLog().append(key, value);
  }

  /** This thread's acknowledgement log (opened by the first call; throws if its folder cannot be made). */
  ackLog(): AckLog {
    return (this.acks ??= new AckLog(join(this.path, ACKS_DIR), { syncMs: this.ackSyncMs }));
  }

  /** Queue one write for the current commit window (opened if there is none). */
  queue(write: QueuedWrite): Promise<boolean> {
    if (!this.current) {
      let resolve!: (committed: boolean) => void;
      const promise = new Promise<boolean>((r) => (resolve = r));
      this.current = { writes: [], promise, resolve, held: false };
      this.windowTimer = setTimeout(this.commit, this.windowMs);
    }
    const group = this.current;
    group.writes.push(write);
    if (group.writes.length >= MAX_GROUP) this.commit();
    return group.promise;
  }

  /** Commit the windows held while the store was unavailable, if any (the probe found it available). */
  commitHeld(): void {
    if (this.retained.length > 0) this.commit();
  }

  /**
   * Issue the window's writes — after any held from windows that could not commit, so a newer
   * write of a record comes last — in one event turn: lmdb-js commits them in one transaction.
   * While the store cannot write, the window is held instead.
   */
  private readonly commit = (): void => {
    if (this.windowTimer) clearTimeout(this.windowTimer);
    this.windowTimer = null;
    const groups = this.retained;
    if (this.current) groups.push(this.current);
    this.retained = [];
    this.retainedWrites = 0;
    this.current = null;
    if (groups.length === 0) return;
    if (!this.guard.writable()) return this.retain(groups);
    const writes: QueuedWrite[] = [];
    for (const g of groups) {
      // A write whose record was written again since (by any thread: the overlay holds the
      // newest, or nothing once the newer one committed) is not written: the newer one is, by its
      // own window. Held windows need it, and so do two threads' windows committing out of order
      // (a busy ingress thread's window with the settlement committing before the main thread's
      // with an expiry would turn the record back for good). Acceptances and credited
      // confirmations are always issued: the transaction itself decides (`writeWindow`).
      for (const w of g.writes) {
        if (w.token === TRACE_WRITE || w.logged || w.credit || overlay.get(w.key)?.equals(w.value)) writes.push(w);
      }
    }
    // One lmdb-js transaction, whose promise is ours to handle (see the open options).
    let committed: Promise<unknown>;
    // A window that credits an account marks the write in the generation file (from inside its
    // transaction, before the commit) and bumps the account generation once the commit settles.
    const credited = { mark: -1 };
    try {
      // (Promise.resolve: inside another write transaction lmdb-js runs the callback at once.)
      committed = Promise.resolve(this.t.root.transaction(() => this.writeWindow(writes, credited)));
    } catch (e) {
      committed = Promise.reject(e as Error);
    }
    const ended = (): void => {
      if (credited.mark >= 0) this.t.generations?.end(credited.mark, { accounts: true });
    };
    const settled = committed.then(
      () => {
        ended();
        this.holdForRelease(writes);
        for (const w of writes) if (w.logged) this.acks?.committed(w.logged);
        for (const g of groups) g.resolve(true);
      },
      (e: unknown) => {
        ended();
        this.retain(groups);
        this.guard.writeFailed('status records', e);
      },
    );
    this.inflight.add(settled);
    void settled.finally(() => this.inflight.delete(settled));
  };

  /**
   * The body of a window's transaction. An acceptance is written only if LMDB has no record of
   * its signature (a settlement from another thread may have committed first); a confirmation's
   * credit is applied only if the committed record is not confirmed yet; a record new to LMDB
   * counts once in its account's usage. So a restart, a replayed log or a second writer never
   * counts or credits anything twice.
   */
  private writeWindow(writes: QueuedWrite[], credited: { mark: number }): void {
    const { status, traces, accounts, accountTxs } = this.t;
    const usage = new UsageDelta();
    for (const w of writes) {
      if (w.token === TRACE_WRITE) {
        traces.putSync(w.key, w.value);
        continue;
      }
      const cur = status.getBinaryFast(w.key);
      if (cur !== undefined && w.logged) continue;
      if (cur === undefined && w.owner) {
        usage.add(w.owner.accountId, w.owner.submittedAt);
        accountTxs.putSync(accountTxKey(w.owner.accountId, w.owner.submittedAt, w.key), INDEX_VALUE);
      }
      if (w.credit && w.owner && (cur === undefined || !isConfirmedValue(cur))) {
        const a = accounts.get(w.owner.accountId);
        if (a) {
          if (credited.mark < 0 && this.t.generations) credited.mark = this.t.generations.begin();
          putAccount(this.t, w.credit(a));
        }
      }
      status.putSync(w.key, w.value);
    }
    usage.apply(this.t.usage);
  }

  /**
   * Hold windows that could not be committed (in the overlay, in order) for the first window
   * after the store is available again; checked every `PROBE_MS`. Past `MAX_RETAINED` writes the
   * oldest windows are dropped: released from the overlay, their callers told false, logged.
   */
  private retain(groups: Group[]): void {
    for (const g of groups) {
      g.held = true;
      this.retained.push(g);
      this.retainedWrites += g.writes.length;
    }
    let dropped = 0;
    while (this.retainedWrites > MAX_RETAINED && this.retained.length > 1) {
      const g = this.retained.shift()!;
      this.retainedWrites -= g.writes.length;
      dropped += g.writes.length;
      releaseGroup(g);
      g.resolve(false);
    }
    if (dropped > 0) this.guard.log.error({ dropped, held: this.retainedWrites }, 'status writes dropped: the store has been unavailable too long');
    if (this.guard.closed) return;
    if (!this.retryTimer) {
      this.retryTimer = setInterval(() => {
        if (this.retained.length === 0) {
          clearInterval(this.retryTimer!);
          this.retryTimer = null;
        } else if (this.guard.health.available) this.commit();
      }, PROBE_MS);
      this.retryTimer.unref();
    }
  }

  /** Release committed writes from the overlay after the grace period (two generations). */
  private holdForRelease(writes: QueuedWrite[]): void {
    for (const w of writes) {
      if (w.token !== TRACE_WRITE) this.heldNew.push([w.key, w.token]);
      if (w.account) this.heldNew.push(w.account);
    }
    if (this.guard.closed) return this.releaseAll();
    if (!this.releaseTimer) {
      this.releaseTimer = setTimeout(this.releaseTick, RELEASE_GRACE_MS);
      this.releaseTimer.unref();
    }
  }

  private readonly releaseTick = (): void => {
    this.releaseTimer = null;
    for (const [key, token] of this.heldOld) overlay.release(key, token);
    this.heldOld = this.heldNew;
    this.heldNew = [];
    if (this.heldOld.length > 0) {
      this.releaseTimer = setTimeout(this.releaseTick, RELEASE_GRACE_MS);
      this.releaseTimer.unref();
    }
  };

  private releaseAll(): void {
    if (this.releaseTimer) clearTimeout(this.releaseTimer);
    this.releaseTimer = null;
    for (const [key, token] of this.heldOld) overlay.release(key, token);
    for (const [key, token] of this.heldNew) overlay.release(key, token);
    this.heldOld = [];
    this.heldNew = [];
  }

  /** Resolves once every window issued so far is committed (the current one is issued now). */
  async flushed(): Promise<void> {
    if (this.current) this.commit();
    await Promise.all([...this.inflight]);
  }

  /** Before closing: commit what is held if the store can, and wait for every window issued. */
  async drain(): Promise<void> {
    if (this.guard.health.available && this.retained.length > 0) this.commit();
    await this.flushed();
  }

  /**
   * After `drain`, with the store marked closed: what is still held is lost (logged) and released
   * from the overlay. What committed leaves the acknowledgement log; what did not stays for the
   * next start to replay.
   */
  close(): void {
    if (this.retryTimer) clearInterval(this.retryTimer);
    this.retryTimer = null;
    if (this.retainedWrites > 0) this.guard.log.error({ lost: this.retainedWrites }, 'status writes never committed: the store closed while unavailable');
    for (const g of this.retained) {
      releaseGroup(g);
      g.resolve(false);
    }
    this.retained = [];
    this.retainedWrites = 0;
    this.releaseAll();
    this.acks?.close();
  }
}

/** Release a dropped window's writes from the overlay. */
function releaseGroup(g: Group): void {
  for (const w of g.writes) {
    if (w.token !== TRACE_WRITE) overlay.release(w.key, w.token);
    if (w.account) overlay.release(w.account[0], w.account[1]);
  }
}

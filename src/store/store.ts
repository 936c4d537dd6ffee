/**
 * The LMDB environment and its databases. This is the only code that knows key layouts.
 *
 * | db               | key                          | value                               |
 * |------------------|------------------------------|-------------------------------------|
 * | accounts         | account id (string)          | AccountRecord                       |
 * | usage            | account id                   | UsageRecord                         |
 * | api_keys         | sha256(api key), 32 bytes    | KeyRecord                           |
 * | key_names        | [account id, key name]       | sha256 (bytes)                      |
 * | status_records   | signature, 64 raw bytes      | StatusRecord, `status-codec.ts`     |
 * | status_traces    | signature, 64 raw bytes      | delivery Trace, `trace-codec.ts`    |
 * | meta             | string                       | any                                 |
 *
 * There is no pending table and no time index: a record is pending while `status === 'sent' &&
 * !expired` (one flags byte, read without decoding the rest), and both the tracker's resume and
 * retention scan the one table (~0.5 µs a record). A status record is a 64-byte key and a
 * ~120-byte value, ~194 B in a leaf with LMDB's node header and slot; leaves filled in random
 * key order stay about two-thirds full, so it takes ~308 B of the table's pages and ~342 B of
 * data file at 1 M records (was ~1,300 B; `bench/status.ts` measures both).
 *
 * Durability. Account, key, points and plan changes are LMDB transactions (`transactionSync`
 * from the CLI, `transaction` from the server), each atomic, committed at once. Status records
 * are not committed one transaction per event-loop turn (lmdb-js's default, where each commit
 * and its sync cost the write thread ~170 µs per record at 400 req/s): `insertStatus` and
 * `updateStatus` hold the encoded value for a commit window of `COMMIT_WINDOW_MS` (cut short
 * once `MAX_GROUP` wait) and then issue them as one lmdb-js async `transaction`, which it commits as one
 * transaction with one (overlapping) sync. Measured with `bench/commit-grouping.ts` (4 000 puts
 * at 400/s, one per event turn; CPU of the libuv pool, where lmdb-js commits and syncs, from
 * /proc/self/task/<tid>/schedstat; shared 2-core machine, load ~2.7):
 *
 * | grouping                          | commits / 1000 puts | write-thread CPU / 1000 puts |
 * |-----------------------------------|---------------------|------------------------------|
 * | one per event turn (before)       | 975                 | 172 ms                       |
 * | 10 ms window                      | 232                 | 97 ms                        |
 * | 25 ms window                      | 96                  | 50 ms                        |
 * | 50 ms window (chosen)             | 49                  | 31 ms                        |
 * | 100 ms window                     | 25                  | 17 ms                        |
 * | one per event turn, `noSync`      | 975                 | 58 ms                        |
 * | 50 ms window, `noSync`            | 49                  | 12 ms                        |
 *
 * 50 ms takes ~140 µs per request off the write thread; 100 ms would save 14 µs more for twice
 * the loss window. `noSync` is not used: it saves little more once commits are grouped and
 * gives up the store's consistency after an OS crash. lmdb-js's own `commitDelay` (with
 * `eventTurnBatching: false`) would group commits too, but in 3.5.6 it starts the commit from a
 * `setTimeout` that `startWriting` then cancels with `clearImmediate`, which corrupts Node's
 * timer lists (a process then waiting only on a timer exits with code 13), so the window is
 * kept here instead.
 *
 * Durability. An acceptance is appended to the thread's acknowledgement log (`ack-log.ts`)
 * before the client is answered, so a `kill -9` (process killed, OS alive) loses nothing that
 * was acknowledged: the next start replays the log into LMDB (`recoverAcknowledged`). What the
 * commit window delays is only the LMDB commit. An OS crash or power loss may lose the
 * acceptances of the last `ackSyncMs` (the log's fdatasync cadence) and the commit whose sync was
 * in flight. LMDB is copy-on-write: either way the store opens consistent. The window's
 * transaction also derives usage (a record new to LMDB counts once) and applies a confirmation's
 * credit only if the committed record is not confirmed yet (`writeWindow`), so neither a replay
 * nor a second writer counts anything twice. `test/e2e/crash.test.ts` checks both.

 * Read-your-writes across threads. Several threads of one process open the store; lmdb-js shows
 * a write to readers only once it commits. So every status write is first put in the native
 * process-wide overlay (`overlay.put` → token), and released (`overlay.release(key, token)`,
 * which leaves a newer write of the same key in place) `RELEASE_GRACE_MS` to 2× that after its
 * commit: a reader on another thread whose read snapshot predates the commit still finds it in
 * the overlay. `getStatus` reads the overlay first; on a miss in both it renews its read snapshot
 * once, so a record released meanwhile is found in LMDB.
 *
 * Disk full and failed commits. LMDB is never allowed to write into a full filesystem: before
 * every write it issues (a status window, usage counts, an account update, a retention slice,
 * the CLI's transactions) the store checks the free space of the data directory's filesystem
 * (`statfs`, ~1 µs) and writes nothing while it is at or below a reserve (10 % of the
 * filesystem, at most 32 MiB). The reason is lmdb-js 3.5.6 itself: a page write that fails with
 * ENOSPC formats its error message into a 100-byte `malloc` that the message overruns
 * (`mdb.c`, "Attempting to write page at position …"), corrupting the heap; the process then
 * aborts at some later `free` (measured: 3 of 6 runs of a script filling a 1 MiB tmpfs until the
 * first failed commit died with "corrupted size vs. prev_size"). It also
 * opens with `eventTurnBatching: false`: with lmdb-js's default event-turn batching a failed
 * commit also rejects an internal promise no caller can handle, and Node exits on it. (Without
 * it, the puts of one turn may be split over several commits, so each window is one explicit
 * async `transaction`: one transaction, whose promise the store handles.)
 * A commit that fails anyway (EIO, a filesystem filled by another process between the check and
 * the write) is caught, its `commitError` handled, and logged at `error`.
 *
 * Either way the store becomes unavailable for the whole process (`StoreHealth`, shared with
 * every thread): the submission core refuses sends (`500 Delivery failed`, reason "store
 * unavailable: …", `Retry-After`) so nothing is sent that cannot be recorded; reads go on; the
 * main thread's probe (`startProbe`, every second) makes it available again once the
 * filesystem has more than 1.5 × the reserve free and a probe write committed. Status writes
 * that could not be committed — the window that failed, and the tracker's updates made while
 * unavailable — are kept in memory and in the overlay (so what a client was answered is what it
 * reads) and committed by the first window after the store is available again; a newer write of
 * the same record by any thread supersedes them. They are the records a `kill -9` loses if the
 * process dies before space returns (the durability window, stretched for as long as the store
 * is unavailable). Past `MAX_RETAINED` held writes per thread the oldest are dropped from the
 * overlay and logged, so the overlay never serves without bound what may never commit. Usage
 * counts and account updates that fail are retried by their owners (`Accounts`).
 *
 * Files: the data directory is created 0700, the LMDB files 0600 (they hold key hashes). A new
 * store is not created on a filesystem at or below the reserve: LMDB would die of SIGBUS
 * touching its freshly mapped lock file there (measured on a full tmpfs), so this is a clear
 * error instead.
 */
import { chmodSync, existsSync, mkdirSync, statfsSync, statSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { join } from 'node:path';
import { open, type Database, type DatabaseOptions, type RootDatabase, type RootDatabaseOptionsWithPath } from 'lmdb';
import type { PlanName } from '../accounts/plans.js';
import { overlay, utcDay } from '../native.js';
import { AckLog, readDeadLogs, type Segment } from './ack-log.js';
import type { PendingRecord, Resend, StatusRecord } from './records.js';
import { decodeStatus, encodeStatus, isConfirmedValue, type RecordBytes, isPendingValue, resendOf, signatureOfKey, statusKey, submittedAtOf } from './status-codec.js';
import { StoreHealth } from './store-health.js';
import { decodeTrace, encodeTrace } from './trace-codec.js';
import type { Trace } from '../delivery/trace.js';

export type { PendingRecord, Resend, StatusRecord, Submission, TxStatus } from './records.js';

export interface AccountRecord {
  id: string;
  name: string;
  plan: PlanName;
  /** Cumulative points (BP). */
  points: number;
  /** ms since epoch. */
  memberSince: number;
  /** ms since epoch; equals memberSince until the first plan change. */
  planUpgradedAt: number;
}

export interface UsageRecord {
  total: number;
  /** UTC day number (ms / 86 400 000) that `today` counts. */
  day: number;
  today: number;
}

export interface KeyRecord {
  accountId: string;
  name: string;
  createdAt: number;
  revokedAt: number | null;
}

export interface StoreOptions {
  /** Open without write access (inspection tools). An old layout is then left unmigrated. */
  readOnly?: boolean;
  /** Status writes are grouped into one commit per window of this many ms. */
  commitWindowMs?: number;
  /** The process-wide store state shared by every thread (default: this store's own). */
  health?: StoreHealth;
  /** Where write failures are logged (pino's logger fits; default: stderr). */
  log?: StoreLog;
  /** Free bytes at or below which nothing is written (default: `reserveFor` the filesystem's size). */
  reserveBytes?: number;
  /** `fdatasync` cadence of the acknowledgement log, ms (`ack-log.ts`; 0: every append). */
  ackSyncMs?: number;
}

/**
 * What a confirmation earns an account (points, and the upgrades they bring), applied in the
 * transaction that commits the confirmation, only if the committed record was not confirmed yet.
 */
export type Credit = (account: AccountRecord) => AccountRecord;

/** The two levels the store logs at. */
export interface StoreLog {
  error(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

const STDERR_LOG: StoreLog = {
  error: (obj, msg) => process.stderr.write(`landfall: ${msg} ${JSON.stringify(obj)}\n`),
  info: () => {},
};

/** A write the store did not make: unavailable (disk full, a failed commit), or closed. */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
  readonly code = 'STORE_UNAVAILABLE';
}

/** One slice of the retention scan (`pruneStatusSlice`). */
export interface PruneSlice {
  /** Records read. */
  scanned: number;
  /** Records deleted (submitted before the cutoff). */
  deleted: number;
  /** Where the next slice starts, or undefined when the scan reached the end. */
  next: Buffer | undefined;
}

/** Status writes wait at most this long for the commit that groups them. */
export const COMMIT_WINDOW_MS = 50;
/** A window is cut short once this many writes wait (a burst commits in bounded transactions). */
export const MAX_GROUP = 2000;
/** A committed write stays in the overlay this long (up to twice) for stale read snapshots. */
export const RELEASE_GRACE_MS = 100;
/** At most this much free space is kept back on a large filesystem. */
export const RESERVE_MAX_BYTES = 32 * 1024 * 1024;
/** Share of a small filesystem kept back. */
const RESERVE_FRACTION = 0.1;
/** Free space must exceed the reserve by this factor before the probe makes the store available. */
const RECOVER_FACTOR = 1.5;
/** How often the main thread's probe checks the store (and a thread retries its held writes). */
export const PROBE_MS = 1000;
/** Status writes a thread holds while the store is unavailable before it drops the oldest. */
export const MAX_RETAINED = 100_000;
/** `meta` key the probe writes. */
const PROBE_KEY = 'store_probe';
/** Records moved per write transaction when migrating an old layout. */
const MIGRATION_SLICE = 10_000;
const DIR_MODE = 0o700;
const FILE_MODE = 0o600;
const LMDB_FILES = ['data.mdb', 'lock.mdb'];

/**
 * A pass-through lmdb-js encoder whose `decode` returns the bytes it is given. Without
 * `needsStableBuffer`, lmdb-js passes its shared read buffer, uncopied (`decoderCopies`).
 */
const BORROW = { encode: (v: Buffer): Buffer => v, decode: (b: Buffer): Buffer => b };

/** A status (or trace) write waiting for its commit window. */
interface QueuedWrite {
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
const TRACE_WRITE = -1;

/** The writes of one window and the promise their callers hold. */
interface Group {
  writes: QueuedWrite[];
  promise: Promise<boolean>;
  /** true once committed; false if dropped (the store logged why). */
  resolve: (committed: boolean) => void;
  /** A commit of this group failed or was not attempted: it is held for a later window. */
  held: boolean;
}

/** The reserve of free space for a filesystem of `totalBytes`: 10 %, at most 32 MiB. */
export function reserveFor(totalBytes: number): number {
  return Math.min(RESERVE_MAX_BYTES, Math.floor(totalBytes * RESERVE_FRACTION));
}

/** Free and total bytes of the filesystem holding `path` (what an unprivileged writer may use). */
export function filesystemSpace(path: string): { free: number; total: number } {
  const s = statfsSync(path);
  return { free: s.bavail * s.bsize, total: s.blocks * s.bsize };
}

/** `12.3 MiB`. */
function mib(n: number): string {
  return `${(n / 1048576).toFixed(n < 10 * 1048576 ? 2 : 1)} MiB`;
}

/** An lmdb-js write error as `ENOSPC (No space left on device)`. */
function describeWriteError(e: unknown): string {
  const err = e as { code?: unknown; message?: string };
  const message = (err.message ?? String(e)).split(': Attempting to write page')[0]!;
  const name = typeof err.code === 'number' ? Object.entries(osConstants.errno).find(([, n]) => n === err.code)?.[0] : typeof err.code === 'string' ? err.code : undefined;
  return name && !message.startsWith(name) ? `${name} (${message})` : message;
}

/** A commit lmdb-js could not make (as opposed to an error thrown by a transaction's own code). */
function isCommitFailure(e: unknown): boolean {
  const err = e as { commitError?: unknown; code?: unknown } | null;
  return err !== null && typeof err === 'object' && (err.commitError !== undefined || typeof err.code === 'number');
}

/** A committed write still held in the overlay. */
type Held = [key: Buffer, token: number];

/** `meta` key of the key-revocation generation (see `keysGeneration`). */
const KEYS_GENERATION = 'keys_generation';
/** `meta` key of the account generation (see `accountsGeneration`). */
const ACCOUNTS_GENERATION = 'accounts_generation';

export class Store {
  readonly root: RootDatabase;
  readonly accounts: Database<AccountRecord, string>;
  readonly usage: Database<UsageRecord, string>;
  readonly apiKeys: Database<KeyRecord, Buffer>;
  readonly keyNames: Database<Buffer, [string, string]>;
  /** Status records: signature bytes → `status-codec.ts` value. */
  readonly status: Database<Buffer, Buffer>;
  /** Delivery traces (`trace-codec.ts`), keyed like `status`, pruned with it. */
  readonly traces: Database<Buffer, Buffer>;
  /**
   * The same table for scans, its values borrowed: lmdb-js hands the decoder its shared read
   * buffer, valid only until the iterator moves on (read it at once, keep nothing). A copied
   * value costs ~1.5 µs (a new ArrayBuffer each); borrowed, a scan reads ~0.5 µs per record.
   */
  private readonly statusScan: Database<Buffer, Buffer>;
  readonly meta: Database<unknown, string>;
  /** Status records moved from the old layout when this store was opened (0 if none). */
  readonly migrated: number;

  /** Whether the store can commit: one state for every thread of the process. */
  readonly health: StoreHealth;
  readonly log: StoreLog;
  private readonly commitWindowMs: number;
  private readonly reserveBytes: number | undefined;
  /** The current window's writes; created with the window. */
  private current: Group | null = null;
  private windowTimer: NodeJS.Timeout | null = null;
  /** Windows that could not be committed, oldest first; committed by the next window that can. */
  private retained: Group[] = [];
  private retainedWrites = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private probeTimer: NodeJS.Timeout | null = null;
  private probing = false;
  /** Committed writes to release from the overlay: the newer generation and the older one. */
  private heldNew: Held[] = [];
  private heldOld: Held[] = [];
  private releaseTimer: NodeJS.Timeout | null = null;
  private closed = false;
  /** This thread's acknowledgement log, opened by its first acceptance (`insertStatus`). */
  private acks: AckLog | null = null;
  private readonly ackSyncMs: number | undefined;
  /** Commits of windows issued and not yet settled (`flushed` waits for them). */
  private readonly inflight = new Set<Promise<unknown>>();

  private constructor(
    readonly path: string,
    opts: StoreOptions,
  ) {
    const readOnly = opts.readOnly ?? false;
    this.commitWindowMs = opts.commitWindowMs ?? COMMIT_WINDOW_MS;
    this.health = opts.health ?? new StoreHealth();
    this.log = opts.log ?? STDERR_LOG;
    this.reserveBytes = opts.reserveBytes;
    this.ackSyncMs = opts.ackSyncMs;
    if (!readOnly) {
      // A new store's files on a full filesystem: LMDB dies of SIGBUS on its mapped lock file.
      if (!LMDB_FILES.every((f) => existsSync(join(path, f)))) {
        try {
          mkdirSync(path, { recursive: true, mode: DIR_MODE });
        } catch (e) {
          throw new StoreUnavailableError(`cannot create the store in ${path}: ${(e as Error).message}`);
        }
        const room = this.room();
        if (!room.ok) throw new StoreUnavailableError(`cannot create the store in ${path}: ${room.reason}`);
      }
    }
    const options: RootDatabaseOptionsWithPath & { permissionsMode: number; eventTurnBatching: boolean } = {
      path,
      // noSubdir: false — lmdb-js would otherwise treat a directory name containing a dot as a file.
      noSubdir: false,
      maxDbs: 16,
      readOnly,
      // Undocumented lmdb-js option, passed to mdb_env_open as the files' mode (default 0664).
      permissionsMode: FILE_MODE,
      // With event-turn batching, a failed commit also rejects a promise lmdb-js keeps to itself
      // (nobody can catch it: Node exits on the unhandled rejection). Without it, lmdb-js starts
      // a commit from a setImmediate and may split one turn's puts over several commits, so a
      // status window is one explicit transaction (`commitWindow`).
      eventTurnBatching: false,
    };
    this.root = open(options);
    if (!readOnly) restrictFiles(path);
    this.accounts = this.root.openDB({ name: 'accounts' });
    this.usage = this.root.openDB({ name: 'usage' });
    this.apiKeys = this.root.openDB({ name: 'api_keys', keyEncoding: 'binary' });
    this.keyNames = this.root.openDB({ name: 'key_names', encoding: 'binary' });
    this.status = this.root.openDB({ name: 'status_records', keyEncoding: 'binary', encoding: 'binary' });
    const scanOptions: DatabaseOptions & { name: string; encoder: typeof BORROW } = { name: 'status_records', keyEncoding: 'binary', encoder: BORROW };
    this.statusScan = this.root.openDB(scanOptions);
    this.traces = this.root.openDB({ name: 'status_traces', keyEncoding: 'binary', encoding: 'binary' });
    this.meta = this.root.openDB({ name: 'meta' });
    this.migrated = readOnly ? 0 : this.migrateOldLayout();
  }

  // ---- disk space and failed writes -----------------------------------------------------

  /** Whether the data directory's filesystem has more free space than the reserve (`factor` ×). */
  private room(factor = 1): { ok: true; free: number } | { ok: false; reason: string } {
    let space: { free: number; total: number };
    try {
      space = filesystemSpace(this.path);
    } catch (e) {
      return { ok: false, reason: `cannot read the free space of ${this.path}: ${(e as Error).message}` };
    }
    this.health.setFreeBytes(space.free);
    const reserve = this.reserveBytes ?? reserveFor(space.total);
    if (space.free > reserve * factor) return { ok: true, free: space.free };
    return {
      ok: false,
      reason: `${mib(space.free)} free on the data directory's filesystem (${this.path}), at or below the reserve of ${mib(reserve)} the store keeps`,
    };
  }

  /** Mark the whole process's store unavailable (the first reason wins); logs the change. */
  private unavailable(reason: string): void {
    if (this.health.markUnavailable(reason)) {
      this.log.error({ store: { reason } }, 'store unavailable: sends are refused until it can commit again');
    }
  }

  /**
   * May this thread write now? Fast path: the shared state says available and there is room.
   * Slow path: it says unavailable (the write is counted as refused), or the filesystem is at or
   * below the reserve (the store becomes unavailable).
   */
  private writable(): boolean {
    if (!this.health.available) {
      this.health.countRefused();
      return false;
    }
    const room = this.room();
    if (room.ok) return true;
    this.unavailable(room.reason);
    return false;
  }

  /** The error a refused write rejects with. */
  private refused(what: string): StoreUnavailableError {
    const u = this.health.unavailable();
    return new StoreUnavailableError(`${what} not written: store unavailable${u ? `: ${u.reason}` : ''}`);
  }

  /**
   * A write lmdb-js could not commit: the store becomes unavailable, the failure is logged at
   * `error`. lmdb-js rejects the write with "Commit failed" and a second promise
   * (`commitError`) with the errno a moment later; that one is handled here too, or Node would
   * exit on it.
   */
  private writeFailed(what: string, e: unknown): void {
    const commitError = (e as { commitError?: Promise<unknown> } | null)?.commitError;
    if (commitError && typeof commitError.then === 'function') {
      this.unavailable(`${what}: commit failed`);
      commitError.then(undefined, (cause: unknown) => {
        const detail = describeWriteError(cause);
        this.health.refineReason(`${what}: commit failed: ${detail}`);
        this.log.error({ what, err: detail, held: this.retainedWrites }, 'store write failed');
      });
      return;
    }
    const detail = describeWriteError(e);
    this.unavailable(`${what}: ${detail}`);
    this.log.error({ what, err: detail, held: this.retainedWrites }, 'store write failed');
  }

  /**
   * An asynchronous write other than a status window, checked and guarded: refused (rejected
   * with `StoreUnavailableError`) while the store is unavailable or the disk at its reserve; a
   * commit failure makes the store unavailable and rejects with `StoreUnavailableError`. Errors
   * thrown by the write's own code (not the commit) pass through unchanged.
   */
  private guarded<T>(what: string, write: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new StoreUnavailableError(`${what} not written: store is closed`));
    if (!this.writable()) return Promise.reject(this.refused(what));
    let p: Promise<T>;
    try {
      p = write();
    } catch (e) {
      p = Promise.reject(e);
    }
    return p.catch((e: unknown) => {
      if (!isCommitFailure(e)) throw e;
      this.writeFailed(what, e);
      throw new StoreUnavailableError(`${what} not written: ${describeWriteError(e)}`);
    });
  }

  /** Synchronous writes (the CLI's) refuse with a clear error rather than write into a full disk. */
  private assertWritable(what: string): void {
    const room = this.room();
    if (!room.ok) throw new StoreUnavailableError(`${what} not written: ${room.reason}`);
  }

  /**
   * The main thread's probe, every `intervalMs` (unref'd), and once now so a service started on
   * a full disk knows before it serves. While the store is available it only checks the free
   * space (marking the store unavailable at or below the reserve); while unavailable it waits for
   * 1.5 × the reserve free, writes one small `meta` value, and makes the store available again
   * once that commits.
   */
  startProbe(intervalMs = PROBE_MS): void {
    if (this.probeTimer) return;
    void this.probe();
    this.probeTimer = setInterval(() => void this.probe(), intervalMs);
    this.probeTimer.unref();
  }

  private async probe(): Promise<void> {
    if (this.probing || this.closed) return;
    this.probing = true;
    try {
      if (this.health.available) {
        const room = this.room();
        if (!room.ok) this.unavailable(room.reason);
        return;
      }
      if (!this.room(RECOVER_FACTOR).ok) return;
      try {
        await this.meta.put(PROBE_KEY, Date.now());
      } catch (e) {
        if (isCommitFailure(e)) this.writeFailed('probe write', e);
        else this.log.error({ err: (e as Error).message }, 'store probe failed');
        return;
      }
      const back = this.health.markAvailable();
      if (back) {
        this.log.info({ unavailable_ms: back.unavailableMs, refused_writes: back.refused, held: this.retainedWrites }, 'store available again: sends are accepted');
      }
      if (this.retained.length > 0) this.commitWindow();
    } finally {
      this.probing = false;
    }
  }

  /** Open (creating if needed) the store in directory `path`; migrates an old layout first. */
  static open(path: string, opts: StoreOptions = {}): Store {
    return new Store(path, opts);
  }

  // ---- accounts and keys (transactional) ---------------------------------------------

  /**
   * The account, with the credits of confirmations not yet committed: a confirmation's status is
   * readable at once (the overlay), and so are the points it earns (`updateStatus`).
   */
  getAccount(id: string): AccountRecord | undefined {
    return this.heldAccount(accountOverlayKey(id)) ?? this.accounts.get(id);
  }

  listAccounts(): AccountRecord[] {
    return [...this.accounts.getRange().map(({ value }) => value)];
  }

  getUsage(accountId: string): UsageRecord | undefined {
    return this.usage.get(accountId);
  }

  keyByHash(hash: Buffer): KeyRecord | undefined {
    return this.apiKeys.get(hash);
  }

  keyHashByName(accountId: string, name: string): Buffer | undefined {
    return this.keyNames.get([accountId, name]);
  }

  listKeys(accountId: string): KeyRecord[] {
    const out: KeyRecord[] = [];
    for (const { value: hash } of this.keyNames.getRange({ start: [accountId], end: [accountId, '\uffff'] })) {
      const k = this.apiKeys.get(hash);
      if (k) out.push(k);
    }
    return out;
  }

  /** Create an account and its first key in one transaction. */
  createAccountSync(account: AccountRecord, keyHash: Buffer, key: KeyRecord): void {
    this.assertWritable('createAccount');
    this.root.transactionSync(() => {
      if (this.accounts.get(account.id)) throw new Error(`account ${account.id} exists`);
      this.putAccount(account);
      this.apiKeys.putSync(keyHash, key);
      this.keyNames.putSync([account.id, key.name], keyHash);
    });
  }

  /** Add a key; false if the account already has a key of that name. */
  addKeySync(keyHash: Buffer, key: KeyRecord): boolean {
    this.assertWritable('addKey');
    return this.root.transactionSync(() => {
      if (this.keyNames.get([key.accountId, key.name])) return false;
      this.apiKeys.putSync(keyHash, key);
      this.keyNames.putSync([key.accountId, key.name], keyHash);
      return true;
    });
  }

  /** Mark a key revoked; false if there is no such live key. */
  revokeKeySync(accountId: string, name: string, at: number): boolean {
    this.assertWritable('revokeKey');
    return this.root.transactionSync(() => {
      const hash = this.keyNames.get([accountId, name]);
      const k = hash && this.apiKeys.get(hash);
      if (!hash || !k || k.revokedAt !== null) return false;
      this.apiKeys.putSync(hash, { ...k, revokedAt: at });
      // In the same transaction: every thread's and process's key cache drops what it holds.
      this.meta.putSync(KEYS_GENERATION, this.keysGeneration() + 1);
      return true;
    });
  }

  /**
   * Mirror an account of the cluster's accounts bucket (`src/cluster/accounts-kv.ts`): created
   * with no points when absent; its name always, and its plan only from a bucket revision newer
   * than the last one mirrored (a node restarting sees the same revision again, and must keep
   * the upgrades its points earned since). Returns whether anything changed.
   */
  mirrorAccountSync(a: Pick<AccountRecord, 'id' | 'name' | 'plan' | 'memberSince' | 'planUpgradedAt'>, revision: number): boolean {
    this.assertWritable('mirrorAccount');
    return this.root.transactionSync(() => {
      const revKey = `kv-rev:acc.${a.id}`;
      const newPlan = revision > ((this.meta.get(revKey) as number | undefined) ?? 0);
      if (newPlan) this.meta.putSync(revKey, revision);
      const cur = this.accounts.get(a.id);
      const next: AccountRecord = cur
        ? { ...cur, name: a.name, ...(newPlan && { plan: a.plan, planUpgradedAt: a.planUpgradedAt }) }
        : { ...a, points: 0 };
      if (cur && cur.name === next.name && cur.plan === next.plan && cur.planUpgradedAt === next.planUpgradedAt) return false;
      this.putAccount(next);
      return true;
    });
  }

  /**
   * Mirror a key of the cluster's accounts bucket: the record under its hash and its name. A key
   * revoked by it bumps the key generation in the same transaction, as `revokeKeySync` does.
   */
  mirrorKeySync(keyHash: Buffer, key: KeyRecord): void {
    this.assertWritable('mirrorKey');
    this.root.transactionSync(() => {
      const cur = this.apiKeys.get(keyHash);
      this.apiKeys.putSync(keyHash, key);
      this.keyNames.putSync([key.accountId, key.name], keyHash);
      if (key.revokedAt !== null && cur?.revokedAt == null) this.meta.putSync(KEYS_GENERATION, this.keysGeneration() + 1);
    });
  }

  /**
   * Bumped by every key revocation, in the revoking transaction; a key cache (`KeyCache`) trusts
   * an entry only while the generation it was read under is current.
   */
  keysGeneration(): number {
    return (this.meta.get(KEYS_GENERATION) as number | undefined) ?? 0;
  }

  /**
   * Bumped by every write of an account record, in the writing transaction (CLI, cluster mirror,
   * a committed confirmation credit), so a cached account (`KeyCache`) is trusted only while the
   * generation it was read under is current.
   */
  accountsGeneration(): number {
    return (this.meta.get(ACCOUNTS_GENERATION) as number | undefined) ?? 0;
  }

  /** The committed account record, without the overlay (see `getAccount`). */
  committedAccount(id: string): AccountRecord | undefined {
    return this.accounts.get(id);
  }

  /** A confirmation's credit to the account not committed yet, from the overlay (`accountOverlayKey`). */
  heldAccount(overlayKey: Buffer): AccountRecord | undefined {
    const held = overlay.get(overlayKey);
    return held ? (JSON.parse(held.toString('utf8')) as AccountRecord) : undefined;
  }

  /** Write an account record; must run inside a write transaction. */
  private putAccount(a: AccountRecord): void {
    this.accounts.putSync(a.id, a);
    this.meta.putSync(ACCOUNTS_GENERATION, this.accountsGeneration() + 1);
  }

  /**
   * Read-modify-write an account atomically. `update` runs inside the write transaction (so
   * it sees every committed change, from this process or another) and returns the new record,
   * or undefined to leave it unchanged.
   */
  updateAccount(
    id: string,
    update: (a: AccountRecord) => AccountRecord | undefined,
  ): Promise<AccountRecord | undefined> {
    return this.guarded('account update', () => this.root.transaction(() => this.applyAccountUpdate(id, update)));
  }

  /** Synchronous variant of `updateAccount` for the CLI. */
  updateAccountSync(id: string, update: (a: AccountRecord) => AccountRecord | undefined): AccountRecord | undefined {
    this.assertWritable('updateAccount');
    return this.root.transactionSync(() => this.applyAccountUpdate(id, update));
  }

  /** The body of both account updates; must run inside a write transaction. */
  private applyAccountUpdate(id: string, update: (a: AccountRecord) => AccountRecord | undefined): AccountRecord | undefined {
    const a = this.accounts.get(id);
    if (!a) return undefined;
    const next = update(a);
    if (next) this.putAccount(next);
    return next ?? a;
  }

  // ---- status records (grouped commits, overlay for read-your-writes) ---------------

  /**
   * The record of `signature`, from any thread's writes, committed or not; undefined if there is
   * none (or `signature` is not the base58 of 64 bytes).
   */
  getStatus(signature: string): StatusRecord | undefined {
    const key = statusKey(signature);
    const value = key && this.statusValue(key);
    return value ? decodeStatus(signature, value) : undefined;
  }

  /**
   * Whether there is a record of the signature whose 64 bytes are `key`, from any thread's
   * writes, committed or not: `getStatus` without decoding the key's base58 or the value.
   */
  hasStatus(key: Buffer): boolean {
    return this.statusValue(key) !== undefined;
  }

  /** The value under a status key, read as `getStatus` reads it. */
  private statusValue(key: Buffer): Uint8Array | undefined {
    // Fast path: a write not yet released from the overlay (recent, any thread).
    const held = overlay.get(key);
    if (held) return held;
    const value = this.status.getBinaryFast(key);
    if (value !== undefined) return value;
    // Slow path (a miss): our read snapshot may predate a commit whose overlay entry was
    // released since; a fresh snapshot sees it.
    this.root.resetReadTxn();
    return this.status.getBinaryFast(key);
  }

  /**
   * Record an accepted transaction (state `sent`): appended to this thread's acknowledgement log
   * before this returns (so the caller may acknowledge it: a process crash cannot lose it), and
   * committed to LMDB within a window, where it is written only if no record of the signature is
   * there yet (a settlement committed first by another thread wins) and counted in its account's
   * usage in the same transaction. Throws `StoreUnavailableError` if it could not be logged (the
   * store becomes unavailable: nothing is accepted that cannot be kept).
   * @param resend the wire bytes and options, kept in the value while the record is pending so a
   *   restarted service can send it again (`status-codec.ts`)
   * @param bytes the signature and blockhash bytes, where the caller holds them (not decoded again)
   */
  insertStatus(rec: StatusRecord, resend?: Resend, bytes?: RecordBytes): void {
    if (this.closed) throw new StoreUnavailableError(`status record ${rec.signature} not written: store is closed`);
    const { key, value } = encodeOrThrow(rec, resend, bytes);
    let logged: Segment;
    try {
      this.acks ??= new AckLog(join(this.path, ACKS_DIR), { syncMs: this.ackSyncMs });
      logged = this.acks.append(key, value);
    } catch (e) {
      const reason = `acknowledgement log: ${describeWriteError(e)}`;
      this.unavailable(reason);
      throw new StoreUnavailableError(`status record ${rec.signature} not written: ${reason}`);
    }
    void this.queue({ key, value, token: overlay.put(key, value), logged, owner: rec });
  }

  /**
   * Replace a status record. Resolves true once it is committed, false if the store dropped it
   * (closed, or too many writes held while unavailable; logged). Rejects only for a record that
   * cannot be encoded.
   * @param resend the resend tail, for a pending record written whole (a cluster node applying
   *   another node's acceptance: a takeover can then send it again)
   * @param credit what a confirmation earns its account: applied in the transaction that commits
   *   this write, and only if the committed record is not confirmed already, so a confirmation is
   *   credited exactly once whoever writes it and however often (a restart, another node's event)
   */
  updateStatus(rec: StatusRecord, resend?: Resend | null, credit?: Credit): Promise<boolean> {
    if (this.closed) {
      this.log.error({ sig: rec.signature }, 'status record not written: store is closed');
      return Promise.resolve(false);
    }
    let encoded: { key: Buffer; value: Buffer };
    try {
      encoded = encodeOrThrow(rec, resend ?? undefined);
    } catch (e) {
      return Promise.reject(e as Error);
    }
    const { key, value } = encoded;
    // The points show with the status, from the overlay, unless this confirmation is shown already.
    let account: Held | undefined;
    if (credit && this.getStatus(rec.signature)?.status !== 'confirmed') {
      const a = this.getAccount(rec.accountId);
      if (a) {
        const k = accountOverlayKey(a.id);
        account = [k, overlay.put(k, Buffer.from(JSON.stringify(credit(a)), 'utf8'))];
      }
    }
    return this.queue({ key, value, token: overlay.put(key, value), owner: rec, ...(credit && { credit }), ...(account && { account }) });
  }

  /**
   * Replay the acknowledgement logs of processes that died (`ack-log.ts`): every record LMDB
   * does not have is written, and counted in its account's usage, in one transaction; then the
   * logs are deleted. Call once at start, before anything reads what is pending. Returns the
   * records written (acknowledged, never committed before the crash).
   */
  recoverAcknowledged(): StatusRecord[] {
    const found = readDeadLogs(join(this.path, ACKS_DIR));
    if (found.segments === 0) return [];
    this.assertWritable('recovery of acknowledged sends');
    const recovered = this.root.transactionSync(() => {
      const out: StatusRecord[] = [];
      const usage = new UsageDelta();
      for (const { key, value } of found.records) {
        if (this.status.getBinaryFast(key) !== undefined) continue;
        const rec = decodeStatus(signatureOfKey(key), value);
        this.status.putSync(key, value);
        usage.add(rec.accountId, rec.submittedAt);
        out.push(rec);
      }
      usage.apply(this.usage);
      return out;
    });
    found.done();
    this.log.info({ segments: found.segments, logged: found.records.length, recovered: recovered.length, damaged: found.damaged }, 'acknowledgement logs replayed');
    return recovered;
  }

  /**
   * Write a transaction's delivery trace, in the status records' commit window (no transaction
   * of its own). Resolves as `updateStatus` does. Read back by `getTrace` once committed: the
   * delivery engine keeps serving it from memory until then.
   */
  putTrace(signature: string, trace: Trace): Promise<boolean> {
    if (this.closed) {
      this.log.error({ sig: signature }, 'trace not written: store is closed');
      return Promise.resolve(false);
    }
    const key = statusKey(signature);
    if (!key) return Promise.reject(new RangeError(`trace: ${JSON.stringify(signature)} is not a 64-byte base58 signature`));
    return this.queue({ key, value: encodeTrace(trace), token: TRACE_WRITE });
  }

  /** The committed delivery trace of `signature`, or undefined. Throws `TraceDecodeError` for a value it cannot read. */
  getTrace(signature: string): Trace | undefined {
    const key = statusKey(signature);
    if (!key) return undefined;
    let value = this.traces.getBinaryFast(key);
    if (value === undefined) {
      // As in `getStatus`: our read snapshot may predate the commit that wrote it.
      this.root.resetReadTxn();
      value = this.traces.getBinaryFast(key);
    }
    return value === undefined ? undefined : decodeTrace(value);
  }

  /** Queue one write for the current commit window (opened if there is none). */
  private queue(write: QueuedWrite): Promise<boolean> {
    if (!this.current) {
      let resolve!: (committed: boolean) => void;
      const promise = new Promise<boolean>((r) => (resolve = r));
      this.current = { writes: [], promise, resolve, held: false };
      this.windowTimer = setTimeout(this.commitWindow, this.commitWindowMs);
    }
    const group = this.current;
    group.writes.push(write);
    if (group.writes.length >= MAX_GROUP) this.commitWindow();
    return group.promise;
  }

  /**
   * Issue the window's writes — after any held from windows that could not commit, so a newer
   * write of a record comes last — in one event turn: lmdb-js commits them in one transaction.
   * While the store cannot write, the window is held instead (see the module comment).
   */
  private readonly commitWindow = (): void => {
    if (this.windowTimer) clearTimeout(this.windowTimer);
    this.windowTimer = null;
    const groups = this.retained;
    if (this.current) groups.push(this.current);
    this.retained = [];
    this.retainedWrites = 0;
    this.current = null;
    if (groups.length === 0) return;
    if (!this.writable()) return this.retain(groups);
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
    try {
      // (Promise.resolve: inside another write transaction lmdb-js runs the callback at once.)
      committed = Promise.resolve(this.root.transaction(() => this.writeWindow(writes)));
    } catch (e) {
      committed = Promise.reject(e as Error);
    }
    const settled = committed.then(
      () => {
        this.holdForRelease(writes);
        for (const w of writes) if (w.logged) this.acks?.committed(w.logged);
        for (const g of groups) g.resolve(true);
      },
      (e: unknown) => {
        this.retain(groups);
        this.writeFailed('status records', e);
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
  private writeWindow(writes: QueuedWrite[]): void {
    const usage = new UsageDelta();
    for (const w of writes) {
      if (w.token === TRACE_WRITE) {
        this.traces.putSync(w.key, w.value);
        continue;
      }
      const cur = this.status.getBinaryFast(w.key);
      if (cur !== undefined && w.logged) continue;
      if (cur === undefined && w.owner) usage.add(w.owner.accountId, w.owner.submittedAt);
      if (w.credit && w.owner && (cur === undefined || !isConfirmedValue(cur))) {
        const a = this.accounts.get(w.owner.accountId);
        if (a) this.putAccount(w.credit(a));
      }
      this.status.putSync(w.key, w.value);
    }
    usage.apply(this.usage);
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
    if (dropped > 0) this.log.error({ dropped, held: this.retainedWrites }, 'status writes dropped: the store has been unavailable too long');
    if (this.closed) return;
    if (!this.retryTimer) {
      this.retryTimer = setInterval(() => {
        if (this.retained.length === 0) {
          clearInterval(this.retryTimer!);
          this.retryTimer = null;
        } else if (this.health.available) this.commitWindow();
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
    if (this.closed) return this.releaseAll();
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

  /**
   * Pending records (`status === 'sent' && !expired`), for the tracker to resume and the engine
   * to send again, each with its resend tail (wire bytes and options) when it has one. Scans the
   * table reading each value's flags byte only; a record with a newer write in the overlay is
   * judged by that write. A record inserted but not yet committed is not seen (at startup,
   * when the tracker resumes, there is none).
   * @param submittedSince also yield every record submitted at or after this time (ms), whatever
   *   its state (a restarted cluster node publishes those again: their events may not have left)
   */
  *pendingEntries(submittedSince = Infinity): Generator<PendingRecord> {
    for (const { key, value } of this.statusScan.getRange()) {
      const recent = submittedAtOf(value) >= submittedSince;
      if (!recent && !isPendingValue(value)) continue;
      const held = overlay.get(key);
      if (held && !recent && !isPendingValue(held)) continue;
      const v = held ?? value;
      yield { ...decodeStatus(signatureOfKey(key), v), resend: resendOf(v) };
    }
  }

  /**
   * One slice of the retention scan: reads up to `scan` records in key order after `after`
   * (from the start if undefined) and deletes, in one write transaction, those submitted before
   * `cutoffMs`. Callers loop on `next`, yielding to the event loop between slices.
   */
  async pruneStatusSlice(cutoffMs: number, after: Buffer | undefined, scan: number): Promise<PruneSlice> {
    // The smallest key above `after`: LMDB orders keys bytewise, a longer key after its prefix.
    const start = after ? Buffer.concat([after, Buffer.alloc(1)]) : undefined;
    const victims: Buffer[] = [];
    let scanned = 0;
    let last: Buffer | undefined;
    for (const { key, value } of this.statusScan.getRange({ start, limit: scan })) {
      scanned++;
      last = key;
      if (submittedAtOf(value) < cutoffMs) victims.push(key);
    }
    if (victims.length > 0) {
      await this.guarded('retention prune', () =>
        this.root.transaction(() => {
          for (const k of victims) {
            // Checked again inside the write transaction: a record rewritten since is kept.
            const v = this.status.getBinaryFast(k);
            if (v !== undefined && submittedAtOf(v) < cutoffMs) {
              this.status.removeSync(k);
              this.traces.removeSync(k); // the record's trace goes with it
            }
          }
        }),
      );
    }
    return { scanned, deleted: victims.length, next: scanned < scan ? undefined : last };
  }

  /**
   * Resolves once every write issued so far (status windows included) is committed; rejects if
   * the last commit failed. Writes held while the store is unavailable are not waited for.
   */
  async flushed(): Promise<boolean> {
    if (this.current) this.commitWindow();
    await Promise.all([...this.inflight]);
    return this.root.committed;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (this.probeTimer) clearInterval(this.probeTimer);
    this.probeTimer = null;
    try {
      if (this.health.available && this.retained.length > 0) this.commitWindow();
      await this.flushed();
    } catch {
      // logged by the window that failed; what it held is counted below
    }
    this.closed = true;
    if (this.retryTimer) clearInterval(this.retryTimer);
    this.retryTimer = null;
    if (this.retainedWrites > 0) this.log.error({ lost: this.retainedWrites }, 'status writes never committed: the store closed while unavailable');
    for (const g of this.retained) {
      releaseGroup(g);
      g.resolve(false);
    }
    this.retained = [];
    this.retainedWrites = 0;
    this.releaseAll();
    // What committed leaves the log; what did not stays for the next start to replay.
    this.acks?.close();
    await this.root.close();
  }

  // ---- migration ------------------------------------------------------------------------

  /**
   * Move the status records of the old layout (`status`: base58 string → msgpack record,
   * `pending`: signature → resume record, `status_by_time`: time index) into `status_records`,
   * in write transactions of `MIGRATION_SLICE` records, then drop the old tables. Each slice
   * reads what is left inside its own write transaction, so two openers (threads or processes)
   * never move a record twice. Returns how many records were moved.
   */
  private migrateOldLayout(): number {
    const old = this.openOld<OldStatusRecord>('status');
    if (!old) return 0;
    this.assertWritable('migration of the old layout');
    const pending = this.openOld<OldPendingRecord>('pending');
    const byTime = this.openOld<null>('status_by_time');
    let migrated = 0;
    let skipped = 0;
    for (;;) {
      const moved = this.root.transactionSync(() => {
        const slice = [...old.getRange({ limit: MIGRATION_SLICE })];
        for (const { key: signature, value } of slice) {
          old.removeSync(signature);
          const key = statusKey(signature);
          let encoded: Buffer | undefined;
          try {
            encoded = key && encodeStatus(fromOldRecord(signature, value, pending?.get(signature)));
          } catch {
            encoded = undefined;
          }
          if (!key || !encoded) {
            skipped++;
            continue;
          }
          // A record already in the new table was written after the old one: it wins.
          if (this.status.getBinaryFast(key) === undefined) this.status.putSync(key, encoded);
          migrated++;
        }
        return slice.length;
      });
      if (moved < MIGRATION_SLICE) break;
    }
    old.dropSync();
    pending?.dropSync();
    byTime?.dropSync();
    process.stderr.write(
      `landfall: migrated ${migrated} status records to the compact layout` + (skipped > 0 ? ` (${skipped} unreadable, dropped)` : '') + '\n',
    );
    return migrated;
  }

  /**
   * A table of the old layout, opened exactly as the old code did, or undefined if absent. (The
   * root database lists the named ones: `openDB` with `create: false` does not throw for a
   * missing name in lmdb-js 3.5.6.)
   */
  private openOld<V>(name: string): Database<V, string> | undefined {
    for (const k of this.root.getKeys()) if (k === name) return this.root.openDB<V, string>({ name });
    return undefined;
  }
}

/** The old layout's status record (`tipLamports` a decimal string). */
interface OldStatusRecord {
  signature: string;
  accountId: string;
  keyName: string;
  status: StatusRecord['status'];
  submittedAt: number;
  confirmedAt: number | null;
  latencyMs: number | null;
  slot: number | null;
  submitSlot: number;
  expired: boolean;
  tipLamports: string;
  recentBlockhash: string;
  durableNonce: boolean;
}

/** The old layout's pending entry: the only place it kept `lastValidBlockHeight`. */
interface OldPendingRecord {
  lastValidBlockHeight: number | null;
}

function fromOldRecord(signature: string, r: OldStatusRecord, p: OldPendingRecord | undefined): StatusRecord {
  return {
    signature,
    accountId: r.accountId,
    keyName: r.keyName,
    tipLamports: BigInt(r.tipLamports),
    recentBlockhash: r.recentBlockhash,
    durableNonce: r.durableNonce,
    submittedAt: r.submittedAt,
    submitSlot: r.submitSlot,
    lastValidBlockHeight: p?.lastValidBlockHeight ?? null,
    status: r.status,
    confirmedAt: r.confirmedAt,
    latencyMs: r.latencyMs,
    slot: r.slot,
    expired: r.expired,
  };
}

/** The overlay key of an account's credited record (never 64 bytes long, unlike a status key). */
export function accountOverlayKey(id: string): Buffer {
  return Buffer.from(`account:${id}`, 'utf8');
}

/** Release a dropped window's writes from the overlay. */
function releaseGroup(g: Group): void {
  for (const w of g.writes) {
    if (w.token !== TRACE_WRITE) overlay.release(w.key, w.token);
    if (w.account) overlay.release(w.account[0], w.account[1]);
  }
}

/** The acknowledgement logs' folder in the data directory. */
const ACKS_DIR = 'acks';

/** The key and value of a status record; throws for one that cannot be stored. */
function encodeOrThrow(rec: StatusRecord, resend?: Resend, bytes?: RecordBytes): { key: Buffer; value: Buffer } {
  if (bytes) return { key: bytes.signature, value: encodeStatus(rec, resend, bytes.blockhash) };
  const key = statusKey(rec.signature);
  if (!key) throw new RangeError(`status record: ${JSON.stringify(rec.signature)} is not a 64-byte base58 signature`);
  return { key, value: encodeStatus(rec, resend) };
}

/** New records per account and UTC day, added to the usage table inside a write transaction. */
class UsageDelta {
  private readonly counts = new Map<string, Map<number, number>>();

  add(accountId: string, submittedAt: number): void {
    let days = this.counts.get(accountId);
    if (!days) this.counts.set(accountId, (days = new Map()));
    const day = utcDay(submittedAt);
    days.set(day, (days.get(day) ?? 0) + 1);
  }

  /** Must run inside a write transaction. A record of a later day starts that day's count. */
  apply(table: Database<UsageRecord, string>): void {
    for (const [accountId, days] of this.counts) {
      const u: UsageRecord = { ...(table.get(accountId) ?? { total: 0, day: 0, today: 0 }) };
      for (const [day, n] of [...days].sort((a, b) => a[0] - b[0])) {
        u.total += n;
        if (day > u.day) {
          u.day = day;
          u.today = n;
        } else if (day === u.day) u.today += n;
      }
      table.putSync(accountId, u);
    }
  }
}

/** LMDB files 0600 (also those an older version created 0644). */
function restrictFiles(dir: string): void {
  for (const f of LMDB_FILES) {
    const p = join(dir, f);
    if (existsSync(p) && (statSync(p).mode & 0o777) !== FILE_MODE) chmodSync(p, FILE_MODE);
  }
}

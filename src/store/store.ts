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
 * once `MAX_GROUP` wait) and then issue them in one event turn, so lmdb-js commits them in one
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
 * Durability window: a `kill -9` (process killed, OS alive) loses at most the status writes of
 * the window not yet committed, i.e. those issued in the last `COMMIT_WINDOW_MS` plus the commit
 * itself (a few ms): committed pages are in the page cache and, with overlapping sync, lmdb-js
 * reopens at the last committed transaction while the boot id is unchanged. An OS crash or power
 * loss may also lose the commit whose sync was in flight. LMDB is copy-on-write: either way the
 * store opens consistent. `test/e2e/crash.test.ts` checks the kill -9 bound.
 *
 * Read-your-writes across threads. Several threads of one process open the store; lmdb-js shows
 * a write to readers only once it commits. So every status write is first put in the native
 * process-wide overlay (`overlay.put` → token), and released (`overlay.release(key, token)`,
 * which leaves a newer write of the same key in place) `RELEASE_GRACE_MS` to 2× that after its
 * commit: a reader on another thread whose read snapshot predates the commit still finds it in
 * the overlay. `getStatus` reads the overlay first; on a miss in both it renews its read snapshot
 * once, so a record released meanwhile is found in LMDB.
 *
 * Files: the data directory is created 0700, the LMDB files 0600 (they hold key hashes).
 */
import { chmodSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { open, type Database, type DatabaseOptions, type RootDatabase, type RootDatabaseOptionsWithPath } from 'lmdb';
import type { PlanName } from '../accounts/plans.js';
import { overlay } from '../native.js';
import type { StatusRecord } from './records.js';
import { decodeStatus, encodeStatus, isPendingValue, signatureOfKey, statusKey, submittedAtOf } from './status-codec.js';

export type { StatusRecord, Submission, TxStatus } from './records.js';

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

/** A status write waiting for its commit window. */
interface QueuedWrite {
  key: Buffer;
  value: Buffer;
  token: number;
}

/** A committed write still held in the overlay. */
type Held = [key: Buffer, token: number];

/** `meta` key of the key-revocation generation (see `keysGeneration`). */
const KEYS_GENERATION = 'keys_generation';

export class Store {
  readonly root: RootDatabase;
  readonly accounts: Database<AccountRecord, string>;
  readonly usage: Database<UsageRecord, string>;
  readonly apiKeys: Database<KeyRecord, Buffer>;
  readonly keyNames: Database<Buffer, [string, string]>;
  /** Status records: signature bytes → `status-codec.ts` value. */
  readonly status: Database<Buffer, Buffer>;
  /**
   * The same table for scans, its values borrowed: lmdb-js hands the decoder its shared read
   * buffer, valid only until the iterator moves on (read it at once, keep nothing). A copied
   * value costs ~1.5 µs (a new ArrayBuffer each); borrowed, a scan reads ~0.5 µs per record.
   */
  private readonly statusScan: Database<Buffer, Buffer>;
  readonly meta: Database<unknown, string>;
  /** Status records moved from the old layout when this store was opened (0 if none). */
  readonly migrated: number;

  private readonly commitWindowMs: number;
  private queue: QueuedWrite[] = [];
  private windowTimer: NodeJS.Timeout | null = null;
  /** Settles when the current window's writes commit; created with the window. */
  private windowDone: { promise: Promise<boolean>; resolve: (p: Promise<boolean>) => void } | null = null;
  /** Committed writes to release from the overlay: the newer generation and the older one. */
  private heldNew: Held[] = [];
  private heldOld: Held[] = [];
  private releaseTimer: NodeJS.Timeout | null = null;
  private closed = false;

  private constructor(
    readonly path: string,
    opts: StoreOptions,
  ) {
    const readOnly = opts.readOnly ?? false;
    this.commitWindowMs = opts.commitWindowMs ?? COMMIT_WINDOW_MS;
    if (!readOnly) mkdirSync(path, { recursive: true, mode: DIR_MODE });
    const options: RootDatabaseOptionsWithPath & { permissionsMode: number } = {
      path,
      // noSubdir: false — lmdb-js would otherwise treat a directory name containing a dot as a file.
      noSubdir: false,
      maxDbs: 16,
      readOnly,
      // Undocumented lmdb-js option, passed to mdb_env_open as the files' mode (default 0664).
      permissionsMode: FILE_MODE,
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
    this.meta = this.root.openDB({ name: 'meta' });
    this.migrated = readOnly ? 0 : this.migrateOldLayout();
  }

  /** Open (creating if needed) the store in directory `path`; migrates an old layout first. */
  static open(path: string, opts: StoreOptions = {}): Store {
    return new Store(path, opts);
  }

  // ---- accounts and keys (transactional) ---------------------------------------------

  getAccount(id: string): AccountRecord | undefined {
    return this.accounts.get(id);
  }

  listAccounts(): AccountRecord[] {
    return [...this.accounts.getRange().map(({ value }) => value)];
  }

  getUsage(accountId: string): UsageRecord | undefined {
    return this.usage.get(accountId);
  }

  /** Fire-and-forget: batched with the turn's other writes. */
  putUsage(accountId: string, u: UsageRecord): Promise<boolean> {
    return this.usage.put(accountId, u);
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
    this.root.transactionSync(() => {
      if (this.accounts.get(account.id)) throw new Error(`account ${account.id} exists`);
      this.accounts.putSync(account.id, account);
      this.apiKeys.putSync(keyHash, key);
      this.keyNames.putSync([account.id, key.name], keyHash);
    });
  }

  /** Add a key; false if the account already has a key of that name. */
  addKeySync(keyHash: Buffer, key: KeyRecord): boolean {
    return this.root.transactionSync(() => {
      if (this.keyNames.get([key.accountId, key.name])) return false;
      this.apiKeys.putSync(keyHash, key);
      this.keyNames.putSync([key.accountId, key.name], keyHash);
      return true;
    });
  }

  /** Mark a key revoked; false if there is no such live key. */
  revokeKeySync(accountId: string, name: string, at: number): boolean {
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
   * Bumped by every key revocation, in the revoking transaction; a key cache (`KeyCache`) trusts
   * an entry only while the generation it was read under is current.
   */
  keysGeneration(): number {
    return (this.meta.get(KEYS_GENERATION) as number | undefined) ?? 0;
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
    return this.root.transaction(() => this.applyAccountUpdate(id, update));
  }

  /** Synchronous variant of `updateAccount` for the CLI. */
  updateAccountSync(id: string, update: (a: AccountRecord) => AccountRecord | undefined): AccountRecord | undefined {
    return this.root.transactionSync(() => this.applyAccountUpdate(id, update));
  }

  /** The body of both account updates; must run inside a write transaction. */
  private applyAccountUpdate(id: string, update: (a: AccountRecord) => AccountRecord | undefined): AccountRecord | undefined {
    const a = this.accounts.get(id);
    if (!a) return undefined;
    const next = update(a);
    if (next) this.accounts.putSync(id, next);
    return next ?? a;
  }

  // ---- status records (grouped commits, overlay for read-your-writes) ---------------

  /**
   * The record of `signature`, from any thread's writes, committed or not; undefined if there is
   * none (or `signature` is not the base58 of 64 bytes).
   */
  getStatus(signature: string): StatusRecord | undefined {
    const key = statusKey(signature);
    if (!key) return undefined;
    // Fast path: a write not yet released from the overlay (recent, any thread).
    const held = overlay.get(key);
    if (held) return decodeStatus(signature, held);
    let value = this.status.getBinaryFast(key);
    if (value === undefined) {
      // Slow path (a miss): our read snapshot may predate a commit whose overlay entry was
      // released since; a fresh snapshot sees it.
      this.root.resetReadTxn();
      value = this.status.getBinaryFast(key);
    }
    return value === undefined ? undefined : decodeStatus(signature, value);
  }

  /** Write a new status record (state `sent`). Fire-and-forget: committed within a window. */
  insertStatus(rec: StatusRecord): void {
    void this.writeStatus(rec).catch((e) => process.stderr.write(`landfall: status write failed: ${(e as Error).message}\n`));
  }

  /** Replace a status record; resolves once it is committed. */
  updateStatus(rec: StatusRecord): Promise<boolean> {
    return this.writeStatus(rec);
  }

  private writeStatus(rec: StatusRecord): Promise<boolean> {
    if (this.closed) return Promise.reject(new Error('store is closed'));
    const key = statusKey(rec.signature);
    if (!key) return Promise.reject(new RangeError(`status record: ${JSON.stringify(rec.signature)} is not a 64-byte base58 signature`));
    let value: Buffer;
    try {
      value = encodeStatus(rec);
    } catch (e) {
      return Promise.reject(e as Error);
    }
    const token = overlay.put(key, value);
    this.queue.push({ key, value, token });
    if (!this.windowDone) {
      let resolve!: (p: Promise<boolean>) => void;
      const promise = new Promise<Promise<boolean>>((r) => (resolve = r)).then((p) => p);
      this.windowDone = { promise, resolve };
      this.windowTimer = setTimeout(this.commitWindow, this.commitWindowMs);
    }
    const done = this.windowDone.promise;
    if (this.queue.length >= MAX_GROUP) this.commitWindow();
    return done;
  }

  /** Issue the window's writes in one event turn: lmdb-js commits them in one transaction. */
  private readonly commitWindow = (): void => {
    if (this.windowTimer) clearTimeout(this.windowTimer);
    this.windowTimer = null;
    const writes = this.queue;
    const done = this.windowDone;
    this.queue = [];
    this.windowDone = null;
    if (!done) return;
    let committed: Promise<boolean> = Promise.resolve(true);
    try {
      for (const w of writes) committed = this.status.put(w.key, w.value);
    } catch (e) {
      committed = Promise.reject(e as Error);
    }
    const release = (): void => this.holdForRelease(writes);
    committed.then(release, release);
    done.resolve(committed);
  };

  /** Release committed writes from the overlay after the grace period (two generations). */
  private holdForRelease(writes: QueuedWrite[]): void {
    for (const w of writes) this.heldNew.push([w.key, w.token]);
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
   * Pending records (`status === 'sent' && !expired`), for the tracker to resume. Scans the
   * table reading each value's flags byte only; a record with a newer write in the overlay is
   * judged by that write. A record inserted but not yet committed is not seen (at startup,
   * when the tracker resumes, there is none).
   */
  *pendingEntries(): Generator<StatusRecord> {
    for (const { key, value } of this.statusScan.getRange()) {
      if (!isPendingValue(value)) continue;
      const held = overlay.get(key);
      if (held && !isPendingValue(held)) continue;
      yield decodeStatus(signatureOfKey(key), held ?? value);
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
      await this.root.transaction(() => {
        for (const k of victims) {
          // Checked again inside the write transaction: a record rewritten since is kept.
          const v = this.status.getBinaryFast(k);
          if (v !== undefined && submittedAtOf(v) < cutoffMs) this.status.removeSync(k);
        }
      });
    }
    return { scanned, deleted: victims.length, next: scanned < scan ? undefined : last };
  }

  /** Resolves once every write issued so far (status windows included) is committed. */
  flushed(): Promise<boolean> {
    if (this.windowDone) this.commitWindow();
    return this.root.committed;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.flushed();
    this.closed = true;
    this.releaseAll();
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

/** LMDB files 0600 (also those an older version created 0644). */
function restrictFiles(dir: string): void {
  for (const f of LMDB_FILES) {
    const p = join(dir, f);
    if (existsSync(p) && (statSync(p).mode & 0o777) !== FILE_MODE) chmodSync(p, FILE_MODE);
  }
}

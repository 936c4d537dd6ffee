/**
 * The store: one LMDB environment per data directory, opened by every thread of the process.
 * `Store` is the one object the other parts hold; the work is done by its pieces, one file each:
 *
 * - `tables.ts`: the environment, its databases and their key layouts;
 * - `disk-guard.ts` (with `store-health.ts`): nothing is written into a full disk, and a failed
 *   commit makes the store unavailable for the whole process until the probe finds room again;
 * - `commit-window.ts`: status writes grouped into one commit per window, readable at once from
 *   any thread through the overlay, held while the store is unavailable;
 * - `account-tables.ts`: accounts, usage and API keys;
 * - `status-tables.ts`: status records and delivery traces, the acknowledgement log's replay,
 *   the pending scan and retention;
 * - `migration.ts`: the move from the old layout.
 *
 * Why it is built this way (grouped commits, the overlay, the acknowledgement log, the disk
 * reserve, and what each costs as measured): docs/store.md.
 */
import { mkdirSync } from 'node:fs';
import type { Database, RootDatabase } from 'lmdb';
import { AccountTables } from './account-tables.js';
import { CommitWindow, COMMIT_WINDOW_MS } from './commit-window.js';
import type { Generations } from './generations.js';
import { DiskGuard, STDERR_LOG, StoreUnavailableError, type StoreLog } from './disk-guard.js';
import { loadKnownSignatures, type KnownLoad } from './known-load.js';
import { migrateOldLayout } from './migration.js';
import type { AccountRecord, Credit, KeyRecord, PendingRecord, Resend, StatusRecord, Trace, UsageRecord } from './records.js';
import type { RecordBytes } from './status-codec.js';
import { StatusTables, type HandoffTarget, type PruneSlice, type TxCursor } from './status-tables.js';
import { StoreHealth } from './store-health.js';
import { DIR_MODE, hasEnvironment, openTables, type Tables } from './tables.js';

export type { AccountRecord, Credit, KeyRecord, PendingRecord, Resend, StatusRecord, Submission, TxStatus, UsageRecord } from './records.js';
export { COMMIT_WINDOW_MS, MAX_GROUP, MAX_RETAINED, RELEASE_GRACE_MS } from './commit-window.js';
export { filesystemSpace, PROBE_MS, RESERVE_MAX_BYTES, reserveFor, StoreUnavailableError, type StoreLog } from './disk-guard.js';
export type { PruneSlice, TxCursor } from './status-tables.js';
export { accountOverlayKey } from './account-tables.js';

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

/** `meta` key the probe writes. */
const PROBE_KEY = 'store_probe';

export class Store {
  // The tables other code reads directly (a key cache renewing its snapshot, tests, tools); the
  // rest are the pieces' own (`tables.ts`).
  readonly root: RootDatabase;
  readonly accounts: Database<AccountRecord, string>;
  readonly apiKeys: Database<KeyRecord, Buffer>;
  /** Status records: signature bytes → `status-codec.ts` value. */
  readonly status: Database<Buffer, Buffer>;
  /** Status records moved from the old layout when this store was opened (0 if none). */
  readonly migrated: number;
  /** Whether the store can commit: one state for every thread of the process. */
  readonly health: StoreHealth;
  readonly log: StoreLog;

  private readonly meta: Database<unknown, string>;
  private readonly guard: DiskGuard;
  private readonly window: CommitWindow;
  private readonly accountTables: AccountTables;
  private readonly statusTables: StatusTables;
  private knownLoad: KnownLoad | undefined;

  private constructor(
    readonly path: string,
    opts: StoreOptions,
  ) {
    const readOnly = opts.readOnly ?? false;
    this.health = opts.health ?? new StoreHealth();
    this.log = opts.log ?? STDERR_LOG;
    this.guard = new DiskGuard(path, this.health, this.log, opts.reserveBytes);
    // A new store's files on a full filesystem: LMDB dies of SIGBUS on its mapped lock file.
    if (!readOnly && !hasEnvironment(path)) {
      try {
        mkdirSync(path, { recursive: true, mode: DIR_MODE });
      } catch (e) {
        throw new StoreUnavailableError(`cannot create the store in ${path}: ${(e as Error).message}`);
      }
      const room = this.guard.room();
      if (!room.ok) throw new StoreUnavailableError(`cannot create the store in ${path}: ${room.reason}`);
    }
    const t: Tables = openTables(path, readOnly);
    ({ root: this.root, accounts: this.accounts, apiKeys: this.apiKeys, status: this.status, meta: this.meta } = t);
    this.window = new CommitWindow(t, this.guard, path, opts.commitWindowMs ?? COMMIT_WINDOW_MS, opts.ackSyncMs);
    this.accountTables = new AccountTables(t, this.guard);
    this.statusTables = new StatusTables(t, this.guard, this.window, this.accountTables, path);
    this.migrated = readOnly ? 0 : migrateOldLayout(this.root, this.status, (what) => this.guard.assertWritable(what));
  }

  /** Open (creating if needed) the store in directory `path`; migrates an old layout first. */
  static open(path: string, opts: StoreOptions = {}): Store {
    return new Store(path, opts);
  }

  /**
   * The main thread's probe, every `intervalMs` (unref'd), and once now so a service started on
   * a full disk knows before it serves (`DiskGuard.startProbe`).
   */
  startProbe(intervalMs?: number): void {
    this.guard.startProbe({ write: () => this.meta.put(PROBE_KEY, Date.now()), available: () => this.window.commitHeld() }, intervalMs);
  }

  // ---- accounts and keys: account-tables.ts ----

  getAccount(id: string): AccountRecord | undefined {
    return this.accountTables.getAccount(id);
  }
  listAccounts(): AccountRecord[] {
    return this.accountTables.listAccounts();
  }
  getUsage(accountId: string): UsageRecord | undefined {
    return this.accountTables.getUsage(accountId);
  }
  keyByHash(hash: Buffer): KeyRecord | undefined {
    return this.accountTables.keyByHash(hash);
  }
  keyHashByName(accountId: string, name: string): Buffer | undefined {
    return this.accountTables.keyHashByName(accountId, name);
  }
  listKeys(accountId: string): KeyRecord[] {
    return this.accountTables.listKeys(accountId);
  }
  createAccountSync(account: AccountRecord, keyHash: Buffer, key: KeyRecord): void {
    this.accountTables.createAccountSync(account, keyHash, key);
  }
  addKeySync(keyHash: Buffer, key: KeyRecord): boolean {
    return this.accountTables.addKeySync(keyHash, key);
  }
  revokeKeySync(accountId: string, name: string, at: number): boolean {
    return this.accountTables.revokeKeySync(accountId, name, at);
  }
  mirrorAccountSync(a: Pick<AccountRecord, 'id' | 'name' | 'plan' | 'memberSince' | 'planUpgradedAt'>, revision: number): boolean {
    return this.accountTables.mirrorAccountSync(a, revision);
  }
  mirrorKeySync(keyHash: Buffer, key: KeyRecord): void {
    this.accountTables.mirrorKeySync(keyHash, key);
  }
  keysGeneration(): number {
    return this.accountTables.keysGeneration();
  }
  accountsGeneration(): number {
    return this.accountTables.accountsGeneration();
  }
  /** The data directory's generation file (`generations.ts`); throws for a read-only store without one. */
  generations(): Generations {
    return this.accountTables.generations();
  }
  committedAccount(id: string): AccountRecord | undefined {
    return this.accountTables.committedAccount(id);
  }
  heldAccount(overlayKey: Buffer): AccountRecord | undefined {
    return this.accountTables.heldAccount(overlayKey);
  }
  updateAccount(id: string, update: (a: AccountRecord) => AccountRecord | undefined): Promise<AccountRecord | undefined> {
    return this.accountTables.updateAccount(id, update);
  }
  updateAccountSync(id: string, update: (a: AccountRecord) => AccountRecord | undefined): AccountRecord | undefined {
    return this.accountTables.updateAccountSync(id, update);
  }

  // ---- status records and traces: status-tables.ts ----

  getStatus(signature: string): StatusRecord | undefined {
    return this.statusTables.getStatus(signature);
  }
  listAccountTransactions(accountId: string, limit: number, before?: TxCursor): { records: StatusRecord[]; next: TxCursor | undefined } {
    return this.statusTables.listAccountTransactions(accountId, limit, before);
  }
  hasStatus(key: Buffer): boolean {
    return this.statusTables.hasStatus(key);
  }
  insertStatus(rec: StatusRecord, resend?: Resend, bytes?: RecordBytes): void {
    this.statusTables.insertStatus(rec, resend, bytes);
  }
  insertAccepted(rec: StatusRecord, key: Buffer, wire: Buffer, blockhashOffset: number, names: Buffer, resendOptions: number, usageIndex: number, day: number, handoff?: HandoffTarget | null, handoffTail?: Uint8Array): number {
    return this.statusTables.insertAccepted(rec, key, wire, blockhashOffset, names, resendOptions, usageIndex, day, handoff, handoffTail);
  }
  updateStatus(rec: StatusRecord, resend?: Resend | null, credit?: Credit): Promise<boolean> {
    return this.statusTables.updateStatus(rec, resend, credit);
  }
  recoverAcknowledged(): StatusRecord[] {
    return this.statusTables.recoverAcknowledged();
  }
  putTrace(signature: string, trace: Trace, key?: Buffer): Promise<boolean> {
    return this.statusTables.putTrace(signature, trace, key);
  }
  getTrace(signature: string): Trace | undefined {
    return this.statusTables.getTrace(signature);
  }
  /** The record of `signature` if it is pending, committed or not (`StatusTables.pendingRecord`). */
  pendingRecord(signature: string): PendingRecord | undefined {
    return this.statusTables.pendingRecord(signature);
  }
  pendingEntries(submittedSince?: number): Generator<PendingRecord> {
    return this.statusTables.pendingEntries(submittedSince);
  }
  pruneStatusSlice(cutoffMs: number, after: Buffer | undefined, scan: number): Promise<PruneSlice> {
    return this.statusTables.pruneStatusSlice(cutoffMs, after, scan);
  }

  /**
   * Resolves once every write issued so far (status windows included) is committed; rejects if
   * the last commit failed. Writes held while the store is unavailable are not waited for.
   */
  async flushed(): Promise<boolean> {
    await this.window.flushed();
    return this.root.committed;
  }

  /**
   * Begin the load of the process's filter of known signatures from this store's status keys
   * (`known-load.ts`): call once the store is migrated and the acknowledgement logs replayed
   * (`recoverAcknowledged`), before anything serves; it runs in the background, and `close`
   * stops it. Until it ends the filter answers "maybe known" for every signature.
   */
  loadKnownSignatures(): KnownLoad {
    this.knownLoad?.stop();
    this.knownLoad = loadKnownSignatures(this.status, (e) =>
      this.log.error({ err: e instanceof Error ? e.message : String(e) }, 'known-signature filter not loaded: every send asks the store'),
    );
    return this.knownLoad;
  }

  async close(): Promise<void> {
    if (this.guard.closed) return;
    this.knownLoad?.stop();
    this.guard.stopProbe();
    try {
      await this.window.drain();
      await this.root.committed;
    } catch {
      // logged by the window that failed; what it held is counted below
    }
    this.guard.closed = true;
    this.window.close();
    await this.root.close();
  }
}

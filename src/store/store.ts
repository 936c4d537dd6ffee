/**
 * The LMDB environment and its databases. This is the only code that knows key layouts.
 *
 * | db               | key                          | value          |
 * |------------------|------------------------------|----------------|
 * | accounts         | account id (string)          | AccountRecord  |
 * | usage            | account id                   | UsageRecord    |
 * | api_keys         | sha256(api key), 32 bytes    | KeyRecord      |
 * | key_names        | [account id, key name]       | sha256 (bytes) |
 * | status           | signature (base58)           | StatusRecord   |
 * | status_by_time   | [submitted ms, signature]    | null           |
 * | pending          | signature                    | PendingRecord  |
 * | meta             | string                       | any            |
 *
 * Durability: account, key, points and plan changes are written in LMDB transactions
 * (`transactionSync` from the CLI, `transaction` from the server), each atomic. Status records,
 * usage counters and pending entries go through lmdb-js's asynchronous puts, batched per event
 * turn and committed off the main thread: the hot path never waits for a disk sync, and a crash
 * loses at most the batch that was not yet committed.
 */
import { open, type Database, type RootDatabase } from 'lmdb';
import { mkdirSync } from 'node:fs';
import type { PlanName } from '../accounts/plans.js';

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

export type TxStatus = 'sent' | 'confirmed' | 'failed';

export interface StatusRecord {
  signature: string;
  accountId: string;
  keyName: string;
  status: TxStatus;
  /** ms since epoch (wall clock at acceptance). */
  submittedAt: number;
  confirmedAt: number | null;
  latencyMs: number | null;
  /** Slot the transaction was processed in (null until landed). */
  slot: number | null;
  /** Cluster slot at submission. */
  submitSlot: number;
  /** Set once the blockhash can no longer land and the transaction never did. */
  expired: boolean;
  /** Lamports tipped, decimal string (u64). */
  tipLamports: string;
  recentBlockhash: string;
  durableNonce: boolean;
}

/** What the tracker needs to resume watching a transaction after a restart. */
export interface PendingRecord {
  accountId: string;
  submittedAt: number;
  recentBlockhash: string;
  durableNonce: boolean;
  lastValidBlockHeight: number | null;
  tipLamports: string;
}

export interface StoreOptions {
  /** Open without write access (inspection tools). */
  readOnly?: boolean;
}

export class Store {
  readonly root: RootDatabase;
  readonly accounts: Database<AccountRecord, string>;
  readonly usage: Database<UsageRecord, string>;
  readonly apiKeys: Database<KeyRecord, Buffer>;
  readonly keyNames: Database<Buffer, [string, string]>;
  readonly status: Database<StatusRecord, string>;
  readonly statusByTime: Database<null, [number, string]>;
  readonly pending: Database<PendingRecord, string>;
  readonly meta: Database<unknown, string>;

  private constructor(readonly path: string, opts: StoreOptions) {
    if (!opts.readOnly) mkdirSync(path, { recursive: true });
    // noSubdir: false — lmdb-js would otherwise treat a directory name containing a dot as a file.
    this.root = open({ path, noSubdir: false, maxDbs: 16, readOnly: opts.readOnly ?? false });
    this.accounts = this.root.openDB({ name: 'accounts' });
    this.usage = this.root.openDB({ name: 'usage' });
    this.apiKeys = this.root.openDB({ name: 'api_keys', keyEncoding: 'binary' });
    this.keyNames = this.root.openDB({ name: 'key_names', encoding: 'binary' });
    this.status = this.root.openDB({ name: 'status' });
    this.statusByTime = this.root.openDB({ name: 'status_by_time' });
    this.pending = this.root.openDB({ name: 'pending' });
    this.meta = this.root.openDB({ name: 'meta' });
  }

  /** Open (creating if needed) the store in directory `path`. */
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
      return true;
    });
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

  // ---- status records (asynchronous, batched) ---------------------------------------

  /**
   * Status records written but not yet committed. lmdb-js makes an asynchronous put visible to
   * reads only once its batch commits, so without this a client that polls status right after
   * its send was accepted could get a 404 for a few milliseconds.
   */
  private readonly uncommitted = new Map<string, StatusRecord>();

  getStatus(signature: string): StatusRecord | undefined {
    return this.uncommitted.get(signature) ?? this.status.get(signature);
  }

  private putStatus(rec: StatusRecord): Promise<boolean> {
    this.uncommitted.set(rec.signature, rec);
    const done = this.status.put(rec.signature, rec);
    const forget = () => {
      // Only if no newer write of the same signature replaced it meanwhile.
      if (this.uncommitted.get(rec.signature) === rec) this.uncommitted.delete(rec.signature);
    };
    done.then(forget, forget);
    return done;
  }

  /** Write a new status record, its time index and pending entry. Fire-and-forget. */
  insertStatus(rec: StatusRecord, pending: PendingRecord): void {
    void this.putStatus(rec);
    void this.statusByTime.put([rec.submittedAt, rec.signature], null);
    void this.pending.put(rec.signature, pending);
  }

  /** Update a status record; a terminal state also removes the pending entry. */
  updateStatus(rec: StatusRecord): Promise<boolean> {
    if (rec.status !== 'sent' || rec.expired) void this.pending.remove(rec.signature);
    return this.putStatus(rec);
  }

  /** Pending (non-terminal) transactions, for the tracker to resume. */
  *pendingEntries(): Generator<[string, PendingRecord]> {
    for (const { key, value } of this.pending.getRange()) yield [key, value];
  }

  /**
   * Delete status records submitted before `cutoffMs`, at most `limit` of them. Returns how
   * many were deleted: callers loop in small slices so the event loop is never held long.
   */
  async pruneStatusBefore(cutoffMs: number, limit: number): Promise<number> {
    const victims: [number, string][] = [];
    for (const key of this.statusByTime.getKeys({ end: [cutoffMs], limit })) victims.push(key);
    if (victims.length === 0) return 0;
    await this.root.transaction(() => {
      for (const k of victims) {
        this.statusByTime.removeSync(k);
        this.status.removeSync(k[1]);
        this.pending.removeSync(k[1]);
      }
    });
    return victims.length;
  }

  /** Resolves once every write issued so far is committed. */
  flushed(): Promise<boolean> {
    return this.root.committed;
  }

  async close(): Promise<void> {
    await this.root.committed;
    await this.root.close();
  }
}

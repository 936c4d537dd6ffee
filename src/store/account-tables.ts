/**
 * Accounts, usage counts and API keys: LMDB transactions, each atomic and committed at once
 * (`transactionSync` from the CLI, `transaction` from the server). An account's credited points
 * show from the overlay until the confirmation that earned them commits (`StatusTables`).
 */
import { overlay } from '../native.js';
import type { DiskGuard } from './disk-guard.js';
import type { AccountRecord, KeyRecord, UsageRecord } from './records.js';
import type { Changes, Generations } from './generations.js';
import { putAccount, type Tables } from './tables.js';

/** The overlay key of an account's credited record (never 64 bytes long, unlike a status key). */
export function accountOverlayKey(id: string): Buffer {
  return Buffer.from(`account:${id}`, 'utf8');
}

export class AccountTables {
  constructor(
    private readonly t: Tables,
    private readonly guard: DiskGuard,
  ) {}

  /**
   * The account, with the credits of confirmations not yet committed: a confirmation's status is
   * readable at once (the overlay), and so are the points it earns (`updateStatus`).
   */
  getAccount(id: string): AccountRecord | undefined {
    return this.heldAccount(accountOverlayKey(id)) ?? this.t.accounts.get(id);
  }

  /** The committed account record, without the overlay (see `getAccount`). */
  committedAccount(id: string): AccountRecord | undefined {
    return this.t.accounts.get(id);
  }

  /** A confirmation's credit to the account not committed yet, from the overlay (`accountOverlayKey`). */
  heldAccount(overlayKey: Buffer): AccountRecord | undefined {
    const held = overlay.get(overlayKey);
    return held ? (JSON.parse(held.toString('utf8')) as AccountRecord) : undefined;
  }

  /**
   * Bumped after every write of an account record commits (CLI, cluster mirror, a committed
   * confirmation credit), so a cached account (`KeyCache`) is trusted only while the generation
   * it was read under is current (`generations.ts`).
   */
  accountsGeneration(): number {
    return this.generations().accounts();
  }

  /** The generation file; a read-only store opened where none was ever created has none. */
  generations(): Generations {
    const g = this.t.generations;
    if (!g) throw new Error('this store has no generation file (opened read-only before any write)');
    return g;
  }

  /** A synchronous write transaction, marked in the generation file (`Generations.writeSync`). */
  private writeSync<T>(changes: Changes, txn: () => T): T {
    return this.generations().writeSync(changes, () => this.t.root.transactionSync(txn));
  }

  listAccounts(): AccountRecord[] {
    return [...this.t.accounts.getRange().map(({ value }) => value)];
  }

  getUsage(accountId: string): UsageRecord | undefined {
    return this.t.usage.get(accountId);
  }

  keyByHash(hash: Buffer): KeyRecord | undefined {
    return this.t.apiKeys.get(hash);
  }

  keyHashByName(accountId: string, name: string): Buffer | undefined {
    return this.t.keyNames.get([accountId, name]);
  }

  listKeys(accountId: string): KeyRecord[] {
    const out: KeyRecord[] = [];
    for (const { value: hash } of this.t.keyNames.getRange({ start: [accountId], end: [accountId, '\uffff'] })) {
      const k = this.t.apiKeys.get(hash);
      if (k) out.push(k);
    }
    return out;
  }

  /** Create an account and its first key in one transaction. */
  createAccountSync(account: AccountRecord, keyHash: Buffer, key: KeyRecord): void {
    this.guard.assertWritable('createAccount');
    const { accounts, apiKeys, keyNames } = this.t;
    this.writeSync({ accounts: true }, () => {
      if (accounts.get(account.id)) throw new Error(`account ${account.id} exists`);
      putAccount(this.t, account);
      apiKeys.putSync(keyHash, key);
      keyNames.putSync([account.id, key.name], keyHash);
    });
  }

  /** Add a key; false if the account already has a key of that name. */
  addKeySync(keyHash: Buffer, key: KeyRecord): boolean {
    this.guard.assertWritable('addKey');
    const { root, apiKeys, keyNames } = this.t;
    return root.transactionSync(() => {
      if (keyNames.get([key.accountId, key.name])) return false;
      apiKeys.putSync(keyHash, key);
      keyNames.putSync([key.accountId, key.name], keyHash);
      return true;
    });
  }

  /** Mark a key revoked; false if there is no such live key. */
  revokeKeySync(accountId: string, name: string, at: number): boolean {
    this.guard.assertWritable('revokeKey');
    const { apiKeys, keyNames } = this.t;
    // Marked: once committed, every thread's and process's key cache drops what it holds.
    return this.writeSync({ keys: true }, () => {
      const hash = keyNames.get([accountId, name]);
      const k = hash && apiKeys.get(hash);
      if (!hash || !k || k.revokedAt !== null) return false;
      apiKeys.putSync(hash, { ...k, revokedAt: at });
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
    this.guard.assertWritable('mirrorAccount');
    const { accounts, meta } = this.t;
    return this.writeSync({ accounts: true }, () => {
      const revKey = `kv-rev:acc.${a.id}`;
      const newPlan = revision > ((meta.get(revKey) as number | undefined) ?? 0);
      if (newPlan) meta.putSync(revKey, revision);
      const cur = accounts.get(a.id);
      const next: AccountRecord = cur
        ? { ...cur, name: a.name, ...(newPlan && { plan: a.plan, planUpgradedAt: a.planUpgradedAt }) }
        : { ...a, points: 0 };
      if (cur && cur.name === next.name && cur.plan === next.plan && cur.planUpgradedAt === next.planUpgradedAt) return false;
      putAccount(this.t, next);
      return true;
    });
  }

  /**
   * Mirror a key of the cluster's accounts bucket: the record under its hash and its name. A key
   * revoked by it bumps the key generation once committed, as `revokeKeySync` does (a new key
   * needs no invalidation: unknown keys are never cached).
   */
  mirrorKeySync(keyHash: Buffer, key: KeyRecord): void {
    this.guard.assertWritable('mirrorKey');
    const { apiKeys, keyNames } = this.t;
    const changes = { keys: false }; // set by the transaction, read when its commit is durable
    this.writeSync(changes, () => {
      const cur = apiKeys.get(keyHash);
      apiKeys.putSync(keyHash, key);
      keyNames.putSync([key.accountId, key.name], keyHash);
      changes.keys = key.revokedAt !== null && cur?.revokedAt == null;
    });
  }

  /**
   * Bumped after every key revocation commits; a key cache (`KeyCache`) trusts an entry only
   * while the generation it was read under is current (`generations.ts`).
   */
  keysGeneration(): number {
    return this.generations().keys();
  }

  /**
   * Read-modify-write an account atomically. `update` runs inside the write transaction (so
   * it sees every committed change, from this process or another) and returns the new record,
   * or undefined to leave it unchanged.
   */
  updateAccount(id: string, update: (a: AccountRecord) => AccountRecord | undefined): Promise<AccountRecord | undefined> {
    return this.guard.guarded('account update', () =>
      this.generations().write({ accounts: true }, () => this.t.root.transaction(() => this.applyAccountUpdate(id, update))),
    );
  }

  /** Synchronous variant of `updateAccount` for the CLI. */
  updateAccountSync(id: string, update: (a: AccountRecord) => AccountRecord | undefined): AccountRecord | undefined {
    this.guard.assertWritable('updateAccount');
    return this.writeSync({ accounts: true }, () => this.applyAccountUpdate(id, update));
  }

  /** The body of both account updates; must run inside a write transaction. */
  private applyAccountUpdate(id: string, update: (a: AccountRecord) => AccountRecord | undefined): AccountRecord | undefined {
    const a = this.t.accounts.get(id);
    if (!a) return undefined;
    const next = update(a);
    if (next) putAccount(this.t, next);
    return next ?? a;
  }
}

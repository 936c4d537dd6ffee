/**
 * API key → caller, cached per thread, for the request path.
 *
 * Fast path: one call into the addon (`KeyTable.lookup`, native/src/keys.rs) that hashes the
 * presented key (SHA-256: the table is keyed by the hash, so no raw key is ever held in memory),
 * looks it up, reads the data directory's generations (two atomic loads of the mapped
 * `generations` file, `store/generations.ts`) and looks in the process-wide overlay for a
 * confirmation's credit not committed yet; it answers a slot of this thread's array of resolved
 * pairs. Slow path, on a miss or after any key change: the full `Accounts.authenticate` (hash
 * lookup, name index, constant-time comparison of the stored hash) on a fresh LMDB snapshot. The
 * account record is read again (an LMDB read and a msgpack decode, ~1.5 µs) only after some
 * account changed.
 *
 * Invalidation: every write that revokes a key bumps the key generation, and every write of an
 * account record (a plan set by the CLI, the cluster's accounts bucket mirrored, a confirmation's
 * credit committed) the account generation, once its LMDB commit is durable, in whichever process
 * made it (the admin CLI included); the write is marked in progress from before its commit until
 * then. A cached key is used only while the key generation it was read under is current, its
 * account only while the account generation is, and nothing is used or cached while a write is
 * in progress: so a revocation or a plan change is seen by the very next request on every thread
 * of every process sharing the data directory. The generations are read before the slow path's
 * LMDB reads, so an entry is never labelled newer than its data. A writer killed mid-write is
 * recovered by the next reader (`native/src/generations.rs`). A credit not committed yet is read
 * from the overlay, as `Store.getAccount` reads it. (A new key needs no invalidation: unknown
 * keys are never cached.)
 */
import type { KeyTable } from '../native.js';
import { accountOverlayKey, type AccountRecord, type KeyRecord, type Store } from '../store/store.js';
import type { Accounts } from './accounts.js';

interface Slot {
  key: KeyRecord;
  /** The committed account record (undefined: there is none), as of the table's entry. */
  account: AccountRecord | undefined;
  /** The account's overlay key, made once. */
  overlayKey: Buffer;
}

/** The caller a key resolves to. */
export interface Resolved {
  key: KeyRecord;
  account: AccountRecord;
}

/**
 * Keys the table may enter: printable ASCII (every key Landfall issues is). Another string is
 * still authenticated, only never cached, so no question of how a lone surrogate is encoded can
 * arise between the addon's hash and `node:crypto`'s.
 */
const CACHEABLE = /^[\x21-\x7e]+$/;

function resolved(key: KeyRecord, account: AccountRecord | undefined): Resolved | undefined {
  return account === undefined ? undefined : { key, account };
}

export class KeyCache {
  private readonly table: KeyTable;
  /** The table's slots: what each entered key resolved to. */
  private readonly slots: Slot[] = [];

  constructor(
    private readonly accounts: Accounts,
    private readonly store: Store,
  ) {
    this.table = store.generations().file.keyTable();
  }

  /** The revocation generation (it changes whenever a key is revoked, or a writer died mid-write). */
  generation(): number {
    return this.store.keysGeneration();
  }

  /** Keys held by this thread's table (for tests). */
  get size(): number {
    return this.table.size;
  }

  /** The live key and its account, or undefined (→ 401). */
  authenticate(apiKey: string): Resolved | undefined {
    if (apiKey.length === 0 || apiKey.length > 256) return undefined;
    const r = this.table.lookup(apiKey);
    if (r < 0) return this.miss(apiKey);
    const s = this.slots[r >> 2]!;
    switch (r & 3) {
      case 0:
        return resolved(s.key, s.account);
      case 1: {
        // A credit not committed yet: the overlay's record, as `Store.getAccount` reads it.
        const held = this.store.heldAccount(s.overlayKey);
        if (held !== undefined) return { key: s.key, account: held };
        // Released since the lookup (its commit is durable): the committed record, uncached.
        this.store.root.resetReadTxn();
        return resolved(s.key, this.store.committedAccount(s.key.accountId));
      }
      default:
        // The key is current, some account changed: read this one again on a fresh snapshot
        // (lmdb-js keeps a thread's snapshot until a setTimeout(0) fires).
        this.store.root.resetReadTxn();
        s.account = this.store.committedAccount(s.key.accountId);
        this.table.accountRead();
        return resolved(s.key, s.account);
    }
  }

  /** Not cached, not current, or a write in progress: the store's answer, entered if live. */
  private miss(apiKey: string): Resolved | undefined {
    // A fresh snapshot, taken after the lookup read the generations.
    this.store.root.resetReadTxn();
    const who = this.accounts.authenticate(apiKey);
    if (!who) {
      this.table.forget();
      return undefined;
    }
    const overlayKey = accountOverlayKey(who.key.accountId);
    const account = this.store.committedAccount(who.key.accountId);
    const slot = CACHEABLE.test(apiKey) ? this.table.insert(overlayKey) : -1;
    if (slot >= 0) this.slots[slot] = { key: who.key, account, overlayKey };
    return resolved(who.key, this.store.heldAccount(overlayKey) ?? account);
  }
}

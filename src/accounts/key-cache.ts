/**
 * API key → caller, cached per thread, for the request path.
 *
 * Fast path: one SHA-256 of the presented key (the cache is keyed by the hash, so no raw key is
 * ever held in memory), one Map lookup, two reads of small generation numbers and one look in the
 * process-wide overlay for a confirmation's credit not committed yet. Slow path, on a miss or
 * after any key change: the full `Accounts.authenticate` (hash lookup, name index, constant-time
 * comparison of the stored hash). The account record is read again (an LMDB read and a msgpack
 * decode, ~1.5 µs) only after some account changed.
 *
 * Invalidation: a key revocation bumps the key generation in the store's `meta` database, and
 * every write of an account record (a plan set by the CLI, the cluster's accounts bucket mirrored,
 * a confirmation's credit committed) bumps the account generation, each in the writing
 * transaction, in whichever process made it (the admin CLI included). A cached key is used only
 * while the key generation it was read under is current, its account only while the account
 * generation is, so a revocation or a plan change is seen by the very next request on every
 * thread of every process sharing the data directory. A credit not committed yet is read from the
 * overlay, as `Store.getAccount` reads it. (A new key needs no invalidation: unknown keys are
 * never cached.)
 */
import { hash } from 'node:crypto';
import { accountOverlayKey, type AccountRecord, type KeyRecord, type Store } from '../store/store.js';
import type { Accounts } from './accounts.js';

interface Entry {
  key: KeyRecord;
  /** The key generation `key` was read under. */
  generation: number;
  /** The committed account record, read under `accountsGeneration` (undefined: there is none). */
  account: AccountRecord | undefined;
  accountsGeneration: number;
  /** The account's overlay key, made once. */
  overlayKey: Buffer;
}

/** The caller a key resolves to. */
export interface Resolved {
  key: KeyRecord;
  account: AccountRecord;
}

export class KeyCache {
  private readonly byHash = new Map<string, Entry>();

  constructor(
    private readonly accounts: Accounts,
    private readonly store: Store,
  ) {}

  /** The revocation generation, read on a fresh snapshot (it changes whenever a key is revoked). */
  generation(): number {
    this.store.root.resetReadTxn();
    return this.store.keysGeneration();
  }

  /** The live key and its account, or undefined (→ 401). */
  authenticate(apiKey: string): Resolved | undefined {
    if (apiKey.length === 0 || apiKey.length > 256) return undefined;
    const id = hash('sha256', apiKey, 'base64');
    // lmdb-js keeps a thread's read snapshot until a setTimeout(0) fires, so a request handled in
    // the same loop iteration as a revocation committed by another thread would still read the
    // old generation. Each request starts on a fresh snapshot instead (one mdb_txn_renew).
    this.store.root.resetReadTxn();
    const generation = this.store.keysGeneration();
    const cached = this.byHash.get(id);
    if (cached !== undefined && cached.generation === generation) return this.withAccount(cached);
    // Slow path: a new key, or keys changed somewhere since this entry was read.
    const who = this.accounts.authenticate(apiKey);
    if (!who) {
      this.byHash.delete(id);
      return undefined;
    }
    if (this.byHash.size >= 100_000) this.byHash.clear(); // bounded: keys are few, this never churns
    const entry: Entry = {
      key: who.key,
      generation,
      account: undefined,
      accountsGeneration: -1,
      overlayKey: accountOverlayKey(who.key.accountId),
    };
    this.byHash.set(id, entry);
    return this.withAccount(entry);
  }

  /** The entry's key with its account as `Store.getAccount` would read it now (same snapshot). */
  private withAccount(e: Entry): Resolved | undefined {
    const held = this.store.heldAccount(e.overlayKey);
    if (held !== undefined) return { key: e.key, account: held };
    const generation = this.store.accountsGeneration();
    if (e.accountsGeneration !== generation) {
      e.account = this.store.committedAccount(e.key.accountId);
      e.accountsGeneration = generation;
    }
    return e.account === undefined ? undefined : { key: e.key, account: e.account };
  }
}

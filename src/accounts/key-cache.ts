/**
 * API key → caller, cached per thread, for the request path.
 *
 * Fast path: one SHA-256 of the presented key (the cache is keyed by the hash, so no raw key is
 * ever held in memory), one Map lookup, one read of the key generation and one read of the
 * account record (always fresh: its plan and points change with every upgrade). Slow path, on a
 * miss or after any key change: the full `Accounts.authenticate` (hash lookup, name index,
 * constant-time comparison of the stored hash).
 *
 * Invalidation: a key revocation bumps a generation number in the store's `meta` database, in
 * the revoking transaction, in whichever process made it (the admin CLI included). A cached
 * entry is used only while the generation it was read under is current, so a revocation is
 * refused by the very next request on every thread of every process sharing the data directory.
 * (A new key needs no invalidation: unknown keys are never cached.)
 */
import { hash } from 'node:crypto';
import type { KeyRecord, Store } from '../store/store.js';
import type { Accounts } from './accounts.js';

interface Entry {
  key: KeyRecord;
  generation: number;
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
  authenticate(apiKey: string): { key: KeyRecord; account: NonNullable<ReturnType<Store['getAccount']>> } | undefined {
    if (apiKey.length === 0 || apiKey.length > 256) return undefined;
    const id = hash('sha256', apiKey, 'base64');
    // lmdb-js keeps a thread's read snapshot until a setTimeout(0) fires, so a request handled in
    // the same loop iteration as a revocation committed by another thread would still read the
    // old generation. Each request starts on a fresh snapshot instead (one mdb_txn_renew).
    this.store.root.resetReadTxn();
    const generation = this.store.keysGeneration();
    const cached = this.byHash.get(id);
    if (cached !== undefined && cached.generation === generation) {
      const account = this.store.getAccount(cached.key.accountId);
      return account ? { key: cached.key, account } : undefined;
    }
    // Slow path: a new key, or keys changed somewhere since this entry was read.
    const who = this.accounts.authenticate(apiKey);
    if (!who) {
      this.byHash.delete(id);
      return undefined;
    }
    if (this.byHash.size >= 100_000) this.byHash.clear(); // bounded: keys are few, this never churns
    this.byHash.set(id, { key: who.key, generation });
    return who;
  }
}

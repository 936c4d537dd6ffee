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
 *
 * The send's one call (`admitSend`, on an ingress thread): each entry also holds what admission
 * needs of its account — the plan's minimum tip and the account's send bucket (`PlanFacts`),
 * computed by the submission core from the committed account whenever the entry's account is
 * (re)read: a miss's insert, an "account changed" re-read. So `inspectAdmitKey` resolves the key
 * and, on a current hit, inspects and admits in the same crossing. Nothing else can change those
 * two facts of a current entry: a plan is changed only by writing the account record, which moves
 * the account generation (the entry answers "account changed" and is read again, with new facts);
 * the plans and the lamports per point are the process's configuration; an account's bucket slot
 * is fixed for the process (`RateLimiter`), and a reconfiguration of it (a plan's rate, a
 * cluster's budget share, `reweigh`) rewrites the native bucket in place, where the take reads it.
 * A credit not committed yet (which may carry an upgrade) is never folded: the overlay's account
 * is JavaScript's to read.
 */
import { inspectAdmitKey, inspectAdmitKeySend, type AdmissionView, type InspectResult, type KeyTable, type TipSet } from '../native.js';
import { accountOverlayKey, type AccountRecord, type KeyRecord, type Store } from '../store/store.js';
import type { Accounts } from './accounts.js';
import type { Slots } from './rate-limiter.js';

/** What admission needs of an account, as the send's one call reads it from the key's entry. */
export interface PlanFacts {
  /** The plan's minimum tip (lamports). */
  minTipLamports: number;
  /** The account's send bucket, configured for its plan (`RateLimiter.sendBucket`). */
  bucket: Readonly<Slots>;
  /**
   * The account's counter of transactions in flight (`AccountCounters`) and its plan's cap
   * (`InFlight.cap`), which the send's one call takes a place under before it sends; undefined
   * when the service counts none.
   */
  inFlight?: { slot: number; cap: number };
}

interface Slot {
  key: KeyRecord;
  /** The committed account record (undefined: there is none), as of the table's entry. */
  account: AccountRecord | undefined;
  /** The account's overlay key, made once. */
  overlayKey: Buffer;
  /** `account`'s plan facts as the table's entry holds them (undefined: none). */
  facts: PlanFacts | undefined;
}

/** A send resolved and admitted in one call: its caller, bucket and inspection (`admitSend`). */
export interface AdmittedSend {
  who: Resolved;
  bucket: Readonly<Slots>;
  r: InspectResult;
  /** The first send, when the call made it (`EarlySendArgs`): `sendFirstRoute`'s promise. */
  sent?: Promise<Float64Array | string> | undefined;
}

/**
 * What the one call needs to make the first send too (`inspectAdmitKeySend`), given by the
 * submission core only when nothing but the call's own checks stands between admission and the
 * send: the route, the process's in-flight counters, the send's budgets, its deadline slot (-1:
 * none) and the request's age in µs.
 */
export interface EarlySendArgs {
  ready: Parameters<typeof inspectAdmitKeySend>[7];
  inFlight: Int32Array;
  round1Ms: number;
  budgetMs: number;
  deadlineSlot: number;
  sinceUs: number;
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

/** An account's plan facts and their numbers for the table (`KeyTable.insert`'s, after the overlay key). */
type FactsRow = [PlanFacts | undefined, number, number, number, number];

/** No plan facts: the table's entry is never answered by the send's one call. */
const NO_FACTS: FactsRow = [undefined, -1, -1, -1, -1];

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

  /** Calls of the table's own `lookup` so far (for tests: the send's one call is not one). */
  get lookups(): number {
    return this.table.lookups;
  }

  /** How an account's plan facts are computed (the submission core's); none: no send is folded. */
  private planFacts: ((a: AccountRecord) => PlanFacts) | undefined;

  /**
   * Fold this cache's lookups into the sends of the core that computes `facts` (its plans and
   * rate limiter). Entries made before keep no facts until their account is read again.
   */
  admitWith(facts: (a: AccountRecord) => PlanFacts): void {
    this.planFacts = facts;
  }

  /**
   * `POST /v1/send`'s one call on an ingress thread: the key resolved, the transaction inspected
   * and admitted on the entry's facts and its send token taken (`inspectAdmitKey`), or null —
   * anything but a current hit with facts — having done none of it: the caller then runs
   * `authenticate` and `inspectAdmit`, the same answers as ever.
   */
  admitSend(apiKey: string, base64: string, tips: TipSet, view: AdmissionView, out: Float64Array, early?: EarlySendArgs): AdmittedSend | null {
    if (apiKey.length === 0 || apiKey.length > 256) return null;
    let r: InspectResult | null;
    let sent: Promise<Float64Array | string> | undefined;
    if (early === undefined) {
      r = inspectAdmitKey(apiKey, base64, tips, view, this.table, out);
    } else {
      const a = inspectAdmitKeySend(apiKey, base64, tips, view, this.table, out, early.inFlight, early.ready, early.round1Ms, early.budgetMs, early.deadlineSlot, early.sinceUs);
      r = a?.r ?? null;
      sent = a?.sent;
    }
    if (r === null) return null;
    const s = this.slots[out[8]!]!;
    // An entry has facts only with an account (`factsOf`).
    return { who: { key: s.key, account: s.account! }, bucket: s.facts!.bucket, r, sent };
  }

  /** `account`'s plan facts and their numbers for the table (-1s: none). */
  private factsOf(account: AccountRecord | undefined): FactsRow {
    if (account === undefined || this.planFacts === undefined) return NO_FACTS;
    let f: PlanFacts;
    try {
      f = this.planFacts(account);
    } catch {
      // No bucket for it (the slots are spent, say): the send's own path throws that as before.
      return NO_FACTS;
    }
    return [f, f.minTipLamports, f.bucket.send, f.inFlight?.slot ?? -1, f.inFlight?.cap ?? -1];
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
        const [facts, ...numbers] = this.factsOf(s.account);
        s.facts = facts;
        this.table.accountRead(...numbers);
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
    const held = this.store.heldAccount(overlayKey);
    if (CACHEABLE.test(apiKey)) {
      // No facts while a credit is held: the entry answers "credit held" until the credit's
      // commit has moved the account generation, and is read again (with facts) after it; the
      // committed account's facts would only configure its bucket for the plan the credit may
      // be leaving.
      const [facts, ...numbers] = held === undefined ? this.factsOf(account) : NO_FACTS;
      const slot = this.table.insert(overlayKey, ...numbers);
      if (slot >= 0) this.slots[slot] = { key: who.key, account, overlayKey, facts };
    }
    return resolved(who.key, held ?? account);
  }
}

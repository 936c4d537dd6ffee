/**
 * The chain view a first send needs, as one plain object computed once per slot by the process's
 * one leader tracker: the slot and when it was seen, the block height, the live blockhashes, and
 * for each routing policy (plain, anti-MEV) the leaders to write to. The main thread reads the
 * tracker's own copy; each ingress worker thread holds a replica that the main thread refreshes
 * by a message per slot (about 2.5 a second, whatever the request rate) — never a message per
 * transaction.
 *
 * Everything here is decided per slot, not per transaction: who leads, who is blocked, which
 * TPU addresses to write to. A request only reads it.
 */
import { AdmissionView } from '../native.js';

/** Where a slot is in its epoch (`getEpochInfo`'s fields). */
export interface EpochPosition {
  epoch: number;
  slotIndex: number;
  slotsInEpoch: number;
}

/** The leader of one slot, and where its TPU listens. */
export interface Leader {
  slot: number;
  identity: string;
  /** TPU QUIC address "ip:port", or null if gossip doesn't advertise one. */
  tpuQuic: string | null;
}

/** Where a policy's first send goes in the current slot. */
export interface Route {
  /** The current leader and the next distinct permitted leader(s) (`fanout`). */
  first: Leader[];
  /** If none of `first` accepted the stream: the leaders after those (one more round). */
  next: Leader[];
  /** The current leader is blocked under this policy: hold, release at the first permitted one. */
  hold: boolean;
}

export interface ChainSnapshot {
  slot: number;
  /** Wall clock (ms since the Unix epoch) when `slot` was observed: comparable across threads. */
  seenAtMs: number;
  blockHeight: number;
  /** The leader of `slot`, if the schedule is known. */
  leader: string | null;
  plain: Route;
  antiMev: Route;
  /** Blockhashes first seen since the previous snapshot, with their last valid block height. */
  blockhashes: Array<[hash: string, lastValidBlockHeight: number]>;
  /** Slot age beyond which the view is stale (health 503). */
  staleMs: number;
  /** Where `slot` is in its epoch; null until the leader tracker has seen the epoch. */
  epoch: EpochPosition | null;
}

/** The chain facts a JSON-RPC caller asks for around a send (`getLatestBlockhash`, `getBlockHeight`, `getSlot`). */
export interface LatestBlockhash {
  slot: number;
  blockHeight: number;
  blockhash: string;
  lastValidBlockHeight: number;
  epoch: EpochPosition | null;
}

/** The chain view's freshness: `GET /health`'s `chain`, and what a send is refused on while stale. */
export interface ChainHealth {
  synced: boolean;
  slot: number;
  slotAgeMs: number;
}

/**
 * What a thread's delivery (`ThreadDelivery`) reads the chain from: the engine's leader tracker
 * (and its view) on the main thread, a `ChainViewReplica` on an ingress thread.
 */
export interface ChainSource {
  health(): ChainHealth;
  isBlockhashExpired(blockhash: string): boolean;
  lastValidBlockHeight(blockhash: string): number | null;
  latestBlockhash(): LatestBlockhash | null;
  onSlot(listener: (slot: number) => void): () => void;
  /**
   * The same facts (slot, freshness, blockhashes) in native memory, where the send's one native
   * call (`inspectAdmit`) admits on them; absent where the facts live only in JavaScript (the
   * main thread's leader tracker, whose freshness also follows its resyncs).
   */
  readonly admission?: AdmissionView;
}

/** Agave's MAX_PROCESSING_AGE: a blockhash is valid for this many blocks after its own. */
export const BLOCKHASH_VALIDITY_BLOCKS = 150;

/**
 * A thread's copy of the chain view: applies snapshots, answers the hot path's questions with a
 * field read or one lookup. Its blockhashes live in native memory only (`admission`), where the
 * send's one native call reads them with the slot's freshness; `lastValidBlockHeight` and
 * `isBlockhashExpired` (the batch, JSON-RPC) ask the same table.
 */
export class ChainViewReplica implements ChainSource {
  private snap: ChainSnapshot | null = null;
  /** The blockhashes (and a copy of the slot's freshness) as `inspectAdmit` reads them. */
  readonly admission = new AdmissionView();
  /** The newest blockhash seen, with its last valid block height. */
  private latest: [hash: string, lastValidBlockHeight: number] | null = null;
  private readonly slotListeners = new Set<(slot: number) => void>();

  apply(s: ChainSnapshot): void {
    const previous = this.snap?.slot;
    // A slot lower than the last one only comes after a resync onto a restarted chain (or
    // another node): the blockhashes known so far belong to the chain that is gone (the native
    // table forgets its own on the same rule, and those dead for BLOCKHASH_VALIDITY_BLOCKS).
    if (this.snap !== null && s.slot < this.snap.slot) this.latest = null;
    this.snap = s;
    this.admission.apply(
      s.slot,
      s.seenAtMs,
      s.staleMs,
      s.leader !== null,
      s.blockHeight,
      s.blockhashes.map((b) => b[0]),
      s.blockhashes.map((b) => b[1]),
    );
    this.latest = s.blockhashes.at(-1) ?? this.latest;
    if (s.slot !== previous) for (const l of this.slotListeners) l(s.slot);
  }

  get snapshot(): ChainSnapshot | null {
    return this.snap;
  }

  currentSlot(): number {
    return this.snap?.slot ?? 0;
  }

  slotAgeMs(): number {
    return this.snap ? Date.now() - this.snap.seenAtMs : Infinity;
  }

  /** Fresh enough to send on (`health` in `native/src/admission.rs` is the same rule, on the same snapshot's numbers). */
  synced(): boolean {
    return this.snap !== null && this.snap.leader !== null && this.slotAgeMs() <= this.snap.staleMs;
  }

  /** The view's slot, whether it is fresh enough to send on, and its age (`ChainSource`). */
  health(): ChainHealth {
    return { synced: this.synced(), slot: this.currentSlot(), slotAgeMs: this.slotAgeMs() };
  }

  route(antiMev: boolean): Route | null {
    return this.snap === null ? null : antiMev ? this.snap.antiMev : this.snap.plain;
  }

  lastValidBlockHeight(blockhash: string): number | null {
    return this.admission.lastValid(blockhash) ?? null;
  }

  /**
   * What `getLatestBlockhash` answers from this view: the newest blockhash the leader tracker
   * fetched (once a slot), its last valid block height, the slot and block height; null before
   * the first snapshot with one.
   */
  latestBlockhash(): LatestBlockhash | null {
    if (this.snap === null || this.latest === null) return null;
    return { slot: this.snap.slot, blockHeight: this.snap.blockHeight, blockhash: this.latest[0], lastValidBlockHeight: this.latest[1], epoch: this.snap.epoch };
  }

  /** Call `listener` with each new slot this view moves to; returns the function that stops it. */
  onSlot(listener: (slot: number) => void): () => void {
    this.slotListeners.add(listener);
    return () => this.slotListeners.delete(listener);
  }

  isBlockhashExpired(blockhash: string): boolean {
    return this.admission.expired(blockhash);
  }
}

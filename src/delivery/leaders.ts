/**
 * The chain view delivery needs: the current slot, who leads every slot of the next few
 * thousand, where their TPU QUIC ports are, and which blockhashes are still alive.
 *
 * - Slot: pushed by `slotsUpdatesSubscribe` where the node offers it (`firstShredReceived` N and
 *   `completed` N − 1 say slot N started, a few ms to tens of ms before `slotSubscribe` says so)
 *   and by `slotSubscribe`; every event goes through `RecentSlots`, the estimator of Agave's TPU
 *   clients (median of recent events, outliers ignored), and the view moves on whichever source
 *   is first. A node that refuses `slotsUpdatesSubscribe`, or whose updates stop, leaves
 *   `slotSubscribe` driving; while the WebSocket is down (or silent for longer than `staleMs`) a
 *   timer polls `getSlot` instead. Every loop here awaits its RPC call before it can run again:
 *   nothing spins.
 * - Leaders: `getSlotLeaders` windows of up to `WINDOW` slots (never past the end of the next
 *   epoch, whose schedule is the last one known), refetched when the current slot gets within
 *   `WINDOW / 4` of the window's end (or of the epoch boundary), so `leaderAt(slot)` is an array
 *   index.
 * - Addresses: `getClusterNodes` (`tpuQuic`) every `nodesRefreshMs` (~30 s).
 * - Blockhashes: `getLatestBlockhash` once per observed slot (one call in flight at most), which
 *   also gives the block height (`lastValidBlockHeight − 150`).
 * - Recovery: the first slot observed after the view went stale — a chain node back from a
 *   restart, or a fail-over to another node, possibly with a lower slot — starts a resync: the
 *   cluster nodes (TPU addresses) and the leader window are fetched again at once, and until
 *   both are in, the view stays unsynced and no slot is announced, so no send goes to the
 *   previous chain's ports. When the chain came back at a lower slot, `onRollback` says so first:
 *   what landed in the lost slots is gone, and the engine sends the pending transactions again.
 */
import { PubSub } from '../chain/pubsub.js';
import { Rpc } from '../chain/rpc.js';
import { BLOCKHASH_VALIDITY_BLOCKS, type EpochPosition, type Leader } from './chain-view.js';
import { RecentSlots, slotStartOf } from './slot-estimator.js';
import { redactUrlSecrets } from '../chain/redact-url.js';

export { BLOCKHASH_VALIDITY_BLOCKS, type Leader };

/** Slots fetched per `getSlotLeaders` call (the RPC's limit is 5000). */
const WINDOW = 4096;


export interface LeaderTrackerOptions {
  rpcUrl: string;
  wsUrl: string;
  /** A slot older than this makes the tracker unsynced (health 503) and triggers polling. */
  staleMs?: number;
  /** Poll period while the push source is down. */
  pollMs?: number;
  nodesRefreshMs?: number;
  /**
   * Follow `slotsUpdatesSubscribe` too (default true); false: `slotSubscribe` and polling only
   * (the slot-view bench compares the two).
   */
  slotsUpdates?: boolean;
  /** Called on every new slot (after the slot and leader window are updated). */
  onSlot?: (slot: number) => void;
  /**
   * Called once the view is synced again on a chain that came back at a LOWER slot than the one
   * last seen (a restarted validator resuming from its snapshot, a fail-over to a node behind):
   * whatever landed in the slots after `to` is gone from that chain. Just before the `onSlot` of
   * slot `to`.
   */
  onRollback?: (from: number, to: number) => void;
  /** Called when a blockhash not seen before arrives (about once per slot, just after it starts). */
  onBlockhash?: () => void;
}

export class LeaderTracker {
  readonly rpc: Rpc;
  private readonly pubsub: PubSub;
  private slot = 0;
  /** performance.now() when `slot` was last observed. */
  private slotSeenAt = -Infinity;
  /** Date.now() at the same moment (other threads compare it with their own wall clock). */
  private slotSeenAtWall = 0;
  /** Blockhashes seen since `takeNewBlockhashes` was last called. */
  private fresh: Array<[string, number]> = [];
  private windowStart = 0;
  private window: string[] = [];
  /** The epoch the last `getEpochInfo` saw: its number, first slot and length. */
  private epochSeen: { epoch: number; firstSlot: number; slotsInEpoch: number } | null = null;
  private windowFetch: Promise<boolean> | null = null;
  private nodes = new Map<string, string | null>();
  private byTpu = new Map<string, string>();
  private readonly blockhashes = new Map<string, number>();
  private blockHeight = 0;
  private blockhashFetch = false;
  private readonly timers: NodeJS.Timeout[] = [];
  private polling = false;
  /** A slot came after the view went stale: addresses and leaders are refetched before it counts. */
  private needResync = false;
  /** The highest slot seen before the chain came back lower (announced once the resync is done). */
  private rolledBackFrom: number | null = null;
  /** Chains that came back at a lower slot (`onRollback` calls). */
  rollbacks = 0;
  private resyncing: Promise<void> | null = null;
  private closed = false;
  readonly staleMs: number;
  /** Errors of the background refreshes, counted (the next refresh retries). */
  readonly errors = { slot: 0, leaders: 0, nodes: 0, blockhash: 0 };
  /** Slot events received per source, and how often each source was the one that moved the view to a new slot. */
  readonly slotEvents = { updates: 0, slot: 0, poll: 0 };
  readonly slotMoves = { updates: 0, slot: 0, poll: 0 };
  /** The node refused `slotsUpdatesSubscribe` (it does not offer it): `slotSubscribe` drives the view. */
  slotsUpdatesRefused = false;
  private readonly recent = new RecentSlots();

  constructor(private readonly opts: LeaderTrackerOptions) {
    this.rpc = new Rpc(opts.rpcUrl);
    this.staleMs = opts.staleMs ?? 2_000;
    this.pubsub = new PubSub(opts.wsUrl);
    if (opts.slotsUpdates ?? true) {
      this.pubsub.subscribe(
        'slotsUpdatesSubscribe',
        [],
        (r) => {
          const slot = slotStartOf(r);
          if (slot !== null) this.onSlotEvent(slot, 'updates');
        },
        () => (this.slotsUpdatesRefused = true),
      );
    }
    this.pubsub.subscribe('slotSubscribe', [], (r) => this.onSlotEvent((r as { slot: number }).slot, 'slot'));
    this.every(opts.pollMs ?? 400, () => this.pollIfStale());
    this.every(opts.nodesRefreshMs ?? 30_000, () => this.refreshNodes());
  }

  /** Resolves once slot, leader window and addresses are known (or rejects after `timeoutMs`). */
  async ready(timeoutMs = 10_000): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    await this.refreshNodes();
    while (!this.closed) {
      if (this.slotSeenAt === -Infinity) await this.pollSlot();
      if (this.window.length > 0 && this.nodes.size > 0 && this.blockhashes.size > 0) return;
      if (performance.now() > deadline) {
        throw new Error(`chain node ${redactUrlSecrets(this.opts.rpcUrl)} not ready after ${timeoutMs} ms (slot ${this.slot}, leaders ${this.window.length}, nodes ${this.nodes.size})`);
      }
      if (this.nodes.size === 0) await this.refreshNodes();
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  currentSlot(): number {
    return this.slot;
  }

  /** Date.now() when the current slot was observed. */
  slotSeenAtMs(): number {
    return this.slotSeenAtWall;
  }

  /** Every live blockhash with its last valid block height. */
  liveBlockhashes(): Array<[string, number]> {
    return [...this.blockhashes];
  }

  /** Blockhashes (with their last valid block height) first seen since the previous call. */
  takeNewBlockhashes(): Array<[string, number]> {
    const out = this.fresh;
    this.fresh = [];
    return out;
  }

  /** ms since the current slot was observed. */
  slotAgeMs(): number {
    return performance.now() - this.slotSeenAt;
  }

  synced(): boolean {
    return this.slotAgeMs() <= this.staleMs && this.leaderAt(this.slot) !== null && !this.needResync;
  }

  /**
   * The epoch of `slot`, its index in it and the epoch's length, from the last epoch seen (the
   * leader window is refetched at least at each epoch boundary); null before the first fetch.
   * Epochs past the one seen are assumed as long as it (true of every epoch after warm-up).
   */
  epochAt(slot: number): EpochPosition | null {
    const e = this.epochSeen;
    if (e === null || slot < e.firstSlot) return null;
    const ahead = Math.floor((slot - e.firstSlot) / e.slotsInEpoch);
    return { epoch: e.epoch + ahead, slotIndex: slot - e.firstSlot - ahead * e.slotsInEpoch, slotsInEpoch: e.slotsInEpoch };
  }

  currentBlockHeight(): number {
    return this.blockHeight;
  }

  /** Identity leading `slot`, or null outside the fetched window. O(1). */
  leaderAt(slot: number): string | null {
    return this.window[slot - this.windowStart] ?? null;
  }

  tpuOf(identity: string): string | null {
    return this.nodes.get(identity) ?? null;
  }

  /** The identity advertising TPU QUIC address `addr`, if any. */
  identityOfTpu(addr: string): string | null {
    return this.byTpu.get(addr) ?? null;
  }

  /**
   * The leader of the current slot and of each slot after it, up to `count` distinct leaders
   * accepted by `permit`, looking at most `horizon` slots ahead. Each leader appears once, at
   * its first slot in range.
   */
  upcoming(count: number, permit: (identity: string) => boolean = () => true, horizon = 64, from = this.slot): Leader[] {
    const out: Leader[] = [];
    for (let s = from; s < from + horizon && out.length < count; s++) {
      const identity = this.leaderAt(s);
      if (identity === null) break;
      if (!permit(identity) || out.some((l) => l.identity === identity)) continue;
      out.push({ slot: s, identity, tpuQuic: this.tpuOf(identity) });
    }
    return out;
  }

  /** Last valid block height of a blockhash this tracker has seen, or null. */
  lastValidBlockHeight(blockhash: string): number | null {
    return this.blockhashes.get(blockhash) ?? null;
  }

  /** True only for a blockhash known to be past its last valid block height. */
  isBlockhashExpired(blockhash: string): boolean {
    const lv = this.blockhashes.get(blockhash);
    return lv !== undefined && this.blockHeight > lv;
  }

  close(): void {
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    this.pubsub.close();
  }

  get pushConnected(): boolean {
    return this.pubsub.connected;
  }

  private every(ms: number, f: () => Promise<unknown>): void {
    let running = false;
    const t = setInterval(() => {
      if (running || this.closed) return;
      running = true;
      void f().finally(() => (running = false));
    }, ms);
    t.unref();
    this.timers.push(t);
  }

  /** A source says `slot` has started: the estimate of all recent events moves the view. */
  private onSlotEvent(slot: number, source: keyof LeaderTracker['slotEvents']): void {
    if (!Number.isSafeInteger(slot) || slot < 0) return;
    this.slotEvents[source]++;
    // Stale: the events remembered may be another chain's (a restart, a fail-over); start over.
    if (this.slotAgeMs() > this.staleMs) this.recent.clear();
    this.recent.record(slot);
    const estimate = this.recent.estimate()!;
    const before = this.slot;
    this.observe(estimate);
    if (this.slot !== before) this.slotMoves[source]++;
  }

  private observe(slot: number): void {
    const stale = this.slotAgeMs() > this.staleMs;
    // A lower slot is an old notification, unless the view is stale: then it is a restarted
    // chain or a fail-over to another node, and waiting for it to pass the old slot would keep
    // the service unsynced for as long.
    if (slot < this.slot) {
      if (!stale) return;
      // Another chain's history: its heights and blockhashes start again.
      this.blockHeight = 0;
      this.blockhashes.clear();
      this.rolledBackFrom = Math.max(this.rolledBackFrom ?? 0, this.slot);
    }
    // Back after a stale spell (not the very first slot: `ready()` fetches everything then).
    if (stale && this.slotSeenAt !== -Infinity) this.needResync = true;
    const advanced = slot !== this.slot;
    this.slot = slot;
    this.slotSeenAt = performance.now();
    this.slotSeenAtWall = Date.now();
    if (this.needResync) {
      this.resync();
      if (advanced) void this.refreshBlockhash();
      return;
    }
    const left = this.windowStart + this.window.length - slot;
    if (left <= Math.min(WINDOW, this.window.length) / 4 || slot < this.windowStart) void this.refreshLeaders(slot);
    if (advanced) {
      void this.refreshBlockhash();
      this.opts.onSlot?.(slot);
    }
  }

  /**
   * Refetch the cluster nodes and the leader window from the current slot, at once (the chain
   * may have come back on other TPU ports, with another schedule); then announce the slot. A
   * failed refetch leaves the view unsynced, and the next observed slot tries again.
   */
  private resync(): void {
    if (this.resyncing !== null) return;
    this.resyncing = (async () => {
      // A window fetch of the previous chain may still be under way: let it end, then fetch anew.
      await this.windowFetch;
      const [nodes, leaders] = await Promise.all([this.refreshNodes(), this.refreshLeaders(this.slot)]);
      if (!nodes || !leaders || this.closed) return;
      this.needResync = false;
      const from = this.rolledBackFrom;
      this.rolledBackFrom = null;
      if (from !== null && from > this.slot) {
        this.rollbacks++;
        this.opts.onRollback?.(from, this.slot);
      }
      this.opts.onSlot?.(this.slot);
    })().finally(() => (this.resyncing = null));
  }

  private async pollIfStale(): Promise<void> {
    if (this.pubsub.connected && performance.now() - this.slotSeenAt <= this.staleMs / 2) return;
    await this.pollSlot();
  }

  private async pollSlot(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      this.onSlotEvent(await this.rpc.getSlot('processed'), 'poll');
    } catch {
      this.errors.slot++;
    } finally {
      this.polling = false;
    }
  }

  /** Fetch the leader window from `from`; resolves with whether it was fetched. */
  private refreshLeaders(from: number): Promise<boolean> {
    this.windowFetch ??= (async () => {
      try {
        // The schedule is known for the current epoch and the next one: never ask past that.
        const e = await this.rpc.getEpochInfo('processed');
        this.epochSeen = { epoch: e.epoch, firstSlot: e.absoluteSlot - e.slotIndex, slotsInEpoch: e.slotsInEpoch };
        const knownEnd = e.absoluteSlot - e.slotIndex + 2 * e.slotsInEpoch;
        const leaders = await this.rpc.getSlotLeaders(from, Math.max(1, Math.min(WINDOW, knownEnd - from)));
        this.windowStart = from;
        this.window = leaders;
        return true;
      } catch {
        this.errors.leaders++;
        return false;
      } finally {
        this.windowFetch = null;
      }
    })();
    return this.windowFetch;
  }

  /** Fetch the cluster nodes' TPU addresses; resolves with whether they were fetched. */
  private async refreshNodes(): Promise<boolean> {
    try {
      const nodes = await this.rpc.getClusterNodes();
      this.nodes = new Map(nodes.map((n) => [n.pubkey, n.tpuQuic ?? null]));
      this.byTpu = new Map(nodes.flatMap((n) => (n.tpuQuic ? [[n.tpuQuic, n.pubkey] as const] : [])));
      return true;
    } catch {
      this.errors.nodes++;
      return false;
    }
  }

  private async refreshBlockhash(): Promise<void> {
    if (this.blockhashFetch) return;
    this.blockhashFetch = true;
    try {
      const { value } = await this.rpc.getLatestBlockhash('confirmed');
      const isNew = !this.blockhashes.has(value.blockhash);
      if (isNew) this.fresh.push([value.blockhash, value.lastValidBlockHeight]);
      this.blockhashes.set(value.blockhash, value.lastValidBlockHeight);
      this.blockHeight = Math.max(this.blockHeight, value.lastValidBlockHeight - BLOCKHASH_VALIDITY_BLOCKS);
      // Forget hashes long dead (Map iterates in insertion order: oldest first).
      for (const [h, lv] of this.blockhashes) {
        if (lv >= this.blockHeight - BLOCKHASH_VALIDITY_BLOCKS) break;
        this.blockhashes.delete(h);
      }
      // While resyncing nothing is announced; the resync's slot announcement carries it.
      if (isNew && !this.needResync) this.opts.onBlockhash?.();
    } catch {
      this.errors.blockhash++;
    } finally {
      this.blockhashFetch = false;
    }
  }
}

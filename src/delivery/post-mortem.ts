/**
 * Why a transaction did not land, told to the bot: for each transaction that expires (its
 * blockhash died, or its `deadline_slot` passed) without landing, a post-mortem in its trace
 * (`GET /v1/status/{signature}/trace`, `post_mortem`) and pushed on `/v1/stream` (its expired
 * status again, with `post_mortem`).
 *
 * What it says, and where each fact comes from:
 * - **known, from our own trace**: the rounds written and the writes; the writes refused, with
 *   each validator's QUIC close code; the writes throttled (not attempted: the connection's queue
 *   full, or the client backing off a leader that refused it recently); the deadline that passed.
 * - **known, from the chain** (`getBlocks`, confirmed): the leader slots it was sent for in
 *   which no block was produced — its leaders skipped their slots. Null when the node does not
 *   answer `getBlocks` (it then says so).
 * - **inferred, from the chain** (`getBlock` of up to `FEE_BLOCKS` blocks it was sent for and
 *   missed): the lowest compute-unit price paid in them, against its own. Lower than all of
 *   theirs is *consistent with* being priced out — the chain does not say why a leader left a
 *   transaction out (it may never have reached its scheduler) — so it is reported as inferred.
 *
 * Off the hot path: computed on the main thread after the expiry is written, a few at a time
 * (`MAX_CONCURRENT`), with the chain's answers cached per slot (a burst of expiries in one
 * window reads each block once); past `MAX_QUEUED` waiting, a post-mortem says only what the
 * trace knows. Kept in memory for the last `MAX_KEPT` misses (about 1 KB each), not in the store:
 * after a restart, or for an older miss, the trace has no `post_mortem`.
 */
import type { Rpc } from '../chain/rpc.js';
import { base58Decode } from '../native.js';
import type { PostMortem, StatusRecord } from '../store/records.js';

export type { PostMortem } from '../store/records.js';
import type { Trace } from './trace.js';

/** Misses whose post-mortem is kept, newest last. */
export const MAX_KEPT = 10_000;
/** Post-mortems computed at once (each a few RPC calls). */
const MAX_CONCURRENT = 2;
/** Waiting beyond this, a post-mortem is made from the trace alone. */
const MAX_QUEUED = 1_000;
/** Blocks read for the fee comparison, per post-mortem. */
export const FEE_BLOCKS = 4;
/** Slots a leader leads in a row. */
const LEADER_WINDOW = 4;
/** Leader slots listed at most. */
const MAX_SLOTS = 64;
/** Slots whose produced/skipped state is remembered. */
const SLOT_CACHE = 4_096;
const COMPUTE_BUDGET = 'ComputeBudget111111111111111111111111111111';
const VOTE_PROGRAM = 'Vote111111111111111111111111111111111111111';

export interface PostMortemChain {
  rpc: Rpc;
  /** The leader of a slot, from the schedule the engine follows. */
  leaderAt: (slot: number) => string | null;
  /** The cluster's current slot. */
  slot: () => number;
}

/** The post-mortems kept, and the queue of those being made. */
export class PostMortems {
  private readonly kept = new Map<string, PostMortem>();
  private readonly queue: Array<() => Promise<void>> = [];
  private running = 0;
  /** Slot → a block was produced in it (confirmed), from `getBlocks`. */
  private readonly produced = new Map<number, boolean>();
  /** Slot → the lowest non-vote compute-unit price in its block (null: no such transaction). */
  private readonly lowest = new Map<number, number | null>();
  /** The node refused `getBlocks` / `getBlock`: not asked again. */
  private noBlocks = false;
  private noBlock = false;
  readonly stats = { made: 0, traceOnly: 0, chainErrors: 0 };

  constructor(private readonly chain: PostMortemChain) {}

  get size(): number {
    return this.kept.size;
  }

  get(signature: string): PostMortem | undefined {
    return this.kept.get(signature);
  }

  /**
   * Make the post-mortem of `rec` (expired) from its trace `t` and the chain, then keep it and
   * hand it to `done`. Never throws; the chain's failures leave its facts null.
   */
  explain(rec: StatusRecord, t: Trace, ownCuPrice: number | null, done: (pm: PostMortem) => void): void {
    const job = async () => {
      const pm = await this.make(rec, t, ownCuPrice, true);
      this.keep(rec.signature, pm);
      done(pm);
    };
    if (this.queue.length >= MAX_QUEUED) {
      void this.make(rec, t, ownCuPrice, false).then((pm) => {
        this.stats.traceOnly++;
        this.keep(rec.signature, pm);
        done(pm);
      });
      return;
    }
    this.queue.push(job);
    this.pump();
  }

  private pump(): void {
    while (this.running < MAX_CONCURRENT && this.queue.length > 0) {
      const job = this.queue.shift()!;
      this.running++;
      void job()
        .catch(() => this.stats.chainErrors++)
        .finally(() => {
          this.running--;
          this.pump();
        });
    }
  }

  private keep(signature: string, pm: PostMortem): void {
    this.kept.delete(signature);
    this.kept.set(signature, pm);
    while (this.kept.size > MAX_KEPT) this.kept.delete(this.kept.keys().next().value!);
    this.stats.made++;
  }

  /** The post-mortem; `readChain` false: from the trace alone. */
  async make(rec: StatusRecord, t: Trace, ownCuPrice: number | null, readChain: boolean): Promise<PostMortem> {
    const cause = rec.deadlinePassed ? 'deadline_passed' : 'expired';
    let rounds = 0;
    let writes = 0;
    let throttled = 0;
    const refused = new Map<string, { leader: string | null; close_code: number | null; count: number }>();
    const sentFor = new Set<number>();
    const leadersWritten = new Set<string>();
    for (const a of t.attempts) {
      rounds = Math.max(rounds, a.round);
      if (a.outcome === 'written' || a.outcome === 'pending') {
        writes++;
        if (a.leader !== null) {
          leadersWritten.add(a.leader);
          // The leader's slots from this write on: its current or next window.
          for (let s = a.slot; s < a.slot + 2 * LEADER_WINDOW && sentFor.size < MAX_SLOTS; s++) if (this.chain.leaderAt(s) === a.leader) sentFor.add(s);
        }
      } else if (a.outcome === 'refused' || (a.outcome === 'backoff' && a.closeCode !== null)) {
        // A back-off with a close code: not attempted because that leader refused it just before.
        const k = `${a.leader}/${a.closeCode}`;
        const r = refused.get(k) ?? { leader: a.leader, close_code: a.closeCode, count: 0 };
        r.count++;
        refused.set(k, r);
      } else if (a.outcome === 'queue_full' || a.outcome === 'backoff') throttled++;
    }
    // Only slots the chain has moved past can have been skipped.
    const now = this.chain.slot();
    let slots = [...sentFor].filter((s) => s < now).sort((a, b) => a - b);
    let skipped: number[] | null = null;
    let fees: PostMortem['fees'] = null;
    if (readChain && slots.length > 0) {
      const produced = await this.producedIn(slots);
      if (produced) {
        // Only the slots the chain has confirmed past: a later one may still get its block.
        slots = slots.filter((s) => produced.has(s));
        skipped = slots.filter((s) => !produced.get(s));
        const missed = slots.filter((s) => produced.get(s)).slice(-FEE_BLOCKS);
        fees = await this.feesOf(missed, ownCuPrice);
      }
    }
    const pm: PostMortem = {
      cause,
      summary: '',
      rounds,
      writes,
      refused: [...refused.values()],
      throttled,
      slots_sent_for: slots,
      skipped_slots: skipped,
      fees,
    };
    pm.summary = summarize(pm, rec, leadersWritten.size, readChain);
    return pm;
  }

  /** Produced or not, for each of `slots` (from the cache, else one `getBlocks` over their range); null if the node cannot tell. */
  private async producedIn(slots: number[]): Promise<Map<number, boolean> | null> {
    const missing = slots.filter((s) => !this.produced.has(s));
    if (missing.length > 0) {
      if (this.noBlocks) return null;
      try {
        const from = missing[0]!;
        const to = missing[missing.length - 1]!;
        const blocks = await this.chain.rpc.call<number[]>('getBlocks', [from, to, { commitment: 'confirmed' }]);
        const got = new Set(blocks);
        // Only up to the newest block it knows: later slots may not be confirmed yet.
        const newest = blocks.length > 0 ? blocks[blocks.length - 1]! : -1;
        for (let s = from; s <= to; s++) if (s <= newest || got.has(s)) this.produced.set(s, got.has(s));
        while (this.produced.size > SLOT_CACHE) this.produced.delete(this.produced.keys().next().value!);
      } catch (e) {
        if (isMethodMissing(e)) this.noBlocks = true;
        else this.stats.chainErrors++;
        return null;
      }
    }
    const out = new Map<number, boolean>();
    for (const s of slots) {
      const p = this.produced.get(s);
      if (p !== undefined) out.set(s, p);
    }
    return out;
  }

  /** The lowest compute-unit price in the blocks of `slots`, against `own`; null if none could be read. */
  private async feesOf(slots: number[], own: number | null): Promise<PostMortem['fees']> {
    if (slots.length === 0 || this.noBlock) return null;
    let lowest: number | null = null;
    let blocks = 0;
    for (const s of slots) {
      let l = this.lowest.get(s);
      if (l === undefined) {
        try {
          l = lowestPrice(await this.chain.rpc.call<RpcBlock | null>('getBlock', [s, { encoding: 'json', transactionDetails: 'full', rewards: false, maxSupportedTransactionVersion: 0, commitment: 'confirmed' }]));
        } catch (e) {
          if (isMethodMissing(e)) this.noBlock = true;
          else this.stats.chainErrors++;
          continue;
        }
        this.lowest.set(s, l);
        while (this.lowest.size > SLOT_CACHE) this.lowest.delete(this.lowest.keys().next().value!);
      }
      blocks++;
      if (l !== null) lowest = lowest === null ? l : Math.min(lowest, l);
    }
    if (blocks === 0) return null;
    return { own_cu_price: own, lowest_cu_price: lowest, blocks, priced_out: own !== null && lowest !== null && own < lowest, inferred: true };
  }
}

interface RpcBlock {
  transactions?: Array<{
    transaction?: { message?: { accountKeys?: string[]; instructions?: Array<{ programIdIndex: number; data: string }> } };
  }>;
}

/** The lowest compute-unit price of a non-vote transaction in a block (`getBlock`, json), null if it has none. */
export function lowestPrice(block: RpcBlock | null): number | null {
  let lowest: number | null = null;
  for (const tx of block?.transactions ?? []) {
    const m = tx.transaction?.message;
    if (!m?.accountKeys || !m.instructions) continue;
    let price = 0;
    let vote = false;
    for (const ix of m.instructions) {
      const program = m.accountKeys[ix.programIdIndex];
      if (program === VOTE_PROGRAM) vote = true;
      if (program !== COMPUTE_BUDGET) continue;
      let data: Uint8Array;
      try {
        data = base58Decode(ix.data);
      } catch {
        continue;
      }
      // SetComputeUnitPrice: tag 3, then the price in micro-lamports, u64 little-endian.
      if (data.length === 9 && data[0] === 3) price = Number(Buffer.from(data).readBigUInt64LE(1));
    }
    if (vote) continue;
    lowest = lowest === null ? price : Math.min(lowest, price);
  }
  return lowest;
}

function isMethodMissing(e: unknown): boolean {
  const m = String((e as Error)?.message ?? e);
  return /-32601|method not found|not supported|unsupported/i.test(m);
}

function summarize(pm: PostMortem, rec: StatusRecord, leaders: number, readChain: boolean): string {
  const parts: string[] = [];
  parts.push(
    pm.cause === 'deadline_passed'
      ? `deadline slot ${rec.deadlineSlot} passed after ${pm.rounds} round${pm.rounds === 1 ? '' : 's'}`
      : `expired after ${pm.rounds} round${pm.rounds === 1 ? '' : 's'}`,
  );
  parts.push(`${pm.writes} write${pm.writes === 1 ? '' : 's'} to ${leaders} leader${leaders === 1 ? '' : 's'}`);
  if (pm.skipped_slots && pm.skipped_slots.length > 0) {
    parts.push(`its leaders skipped ${pm.skipped_slots.length} of the ${pm.slots_sent_for.length} slots it was sent for`);
  } else if (pm.skipped_slots) {
    parts.push(`its leaders produced all ${pm.slots_sent_for.length} slots it was sent for`);
  } else if (readChain && pm.slots_sent_for.length > 0) {
    parts.push('skipped slots unknown (the node does not answer getBlocks)');
  }
  const refused = pm.refused.reduce((n, r) => n + r.count, 0);
  if (refused > 0) {
    const codes = [...new Set(pm.refused.map((r) => r.close_code).filter((c) => c !== null))];
    parts.push(`${refused} write${refused === 1 ? '' : 's'} refused${codes.length > 0 ? ` (QUIC close code ${codes.join(', ')})` : ''}`);
  }
  if (pm.throttled > 0) parts.push(`${pm.throttled} throttled (queue full or backing off)`);
  if (pm.fees?.priced_out) parts.push(`likely priced out: its ${pm.fees.own_cu_price} µlamports/CU below the lowest ${pm.fees.lowest_cu_price} in the ${pm.fees.blocks} blocks it missed (inferred)`);
  return parts.join('; ');
}

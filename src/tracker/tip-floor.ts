/**
 * The tip floor from Landfall's own landings: percentiles of the tips of transactions the tracker
 * saw land (confirmed) in the last minute, ten minutes and hour, served by `GET /v1/tip-floor` —
 * and beside them, the same percentiles of the compute-unit prices those landings paid
 * (`priority_fee`): priority-fee guidance from what actually landed, not from a node's estimate.
 *
 * Bounded, whatever the rate: each landing goes into two small histograms, its second's (a ring of
 * 60) and its minute's (a ring of 61). A tip falls into a log-linear bin: exact below 64 lamports,
 * then 64 bins per power of two (each 1/64 of its power wide, so a bin spans at most 1.6 % of its
 * value); a bin keeps its count and the largest tip seen in it. A percentile is the largest tip
 * seen in the bin holding the nearest-rank sample: never below the true percentile, at most 1.6 %
 * above it, and exact when tips are round numbers (every tip of 1 000 000 reads 1 000 000). A
 * histogram has at most one entry per distinct bin (≤ 3 776), so memory is bounded by the 121
 * histograms, not by the number of landings.
 *
 * Windows: `1m` is the last 60 seconds, to the second; `10m` and `1h` count whole minutes: the
 * current minute so far and the 10 (60) before it, so they always cover at least 10 minutes (an
 * hour) and at most one minute more. That keeps a recomputation to merging 60 + 11 + 61 small
 * histograms and walking at most 3 776 bins (bench/tip-floor.ts), done at most once a second and
 * reused in between; no request sorts anything.
 *
 * Lives on the main thread (the tracker settles there); ingress threads get the computed view
 * once a second (`IngressPool.tipFloor`).
 */

import type { Percentiles, PriorityFeeWindow, TipFloorView, TipFloorWindow, TipWindowName } from '../client/wire.js';
import { TIP_PERCENTILES, TIP_WINDOWS } from '../client/wire.js';
// The shapes are the API's: defined once, with the client package that stands alone.
export { TIP_PERCENTILES, TIP_WINDOWS, type Percentiles, type PriorityFeeWindow, type TipFloorView, type TipFloorWindow, type TipPercentile, type TipWindowName } from '../client/wire.js';

/** Exact bins below 2^SUB_BITS lamports; 2^SUB_BITS bins per power of two above. */
const SUB_BITS = 6;
const SUB = 1 << SUB_BITS;
/** Whole minutes before the current one that `10m` and `1h` count. */
const WINDOW_MINUTES: Record<Exclude<TipWindowName, '1m'>, number> = { '10m': 10, '1h': 60 };

/** The histogram bin of a tip (monotonic in the tip). */
export function tipBin(lamports: number): number {
  if (lamports < SUB) return lamports;
  const exp = Math.floor(Math.log2(lamports));
  // Math.log2 may round up just below a power of two: correct the exponent.
  const e = 2 ** exp > lamports ? exp - 1 : exp;
  const mantissa = Math.floor(lamports / 2 ** (e - SUB_BITS)) - SUB;
  return SUB + (e - SUB_BITS) * SUB + mantissa;
}

interface Bin {
  count: number;
  max: number;
}

/** One second's or one minute's landings. */
interface Bucket {
  /** The Unix second (or minute) it counts; -1 while unused. */
  at: number;
  bins: Map<number, Bin>;
  /** The same landings by account (the priority fee's only; empty for tips). */
  byAccount: Map<string, Map<number, Bin>>;
}

function ring(length: number): Bucket[] {
  return Array.from({ length }, () => ({ at: -1, bins: new Map(), byAccount: new Map() }));
}

/** The ring's bucket for `at`, emptied first if it still holds an older second (minute). */
function bucketFor(buckets: Bucket[], at: number): Bucket {
  const b = buckets[at % buckets.length]!;
  if (b.at !== at) {
    b.at = at;
    b.bins.clear();
    b.byAccount.clear();
  }
  return b;
}

function addTo(bins: Map<number, Bin>, bin: number, count: number, max: number): void {
  const b = bins.get(bin);
  if (b === undefined) bins.set(bin, { count, max });
  else {
    b.count += count;
    if (max > b.max) b.max = max;
  }
}

/** Nearest-rank percentiles of a histogram (bins ascending), as each bin's largest tip. */
function percentiles(bins: Map<number, Bin>, n: number): Percentiles | null {
  if (n === 0) return null;
  const sorted = [...bins.entries()].sort((a, b) => a[0] - b[0]);
  const out = {} as Percentiles;
  let i = 0;
  let seen = 0;
  for (const p of TIP_PERCENTILES) {
    const rank = Math.max(1, Math.ceil((p / 100) * n));
    while (seen + sorted[i]![1].count < rank) seen += sorted[i++]![1].count;
    out[`p${p}`] = sorted[i]![1].max;
  }
  return out;
}

/**
 * One measure of what landed (tips, compute-unit prices), by second and by minute: each value
 * goes into its second's and its minute's histogram; a window merges the buckets it covers.
 * `byAccount`: each landing is also kept under its account, and a window's percentiles are those
 * no single account moved by more than 2× (`resistant`).
 */
class LandedHistogram {
  private readonly seconds = ring(TIP_WINDOWS['1m']);
  private readonly minutes = ring(WINDOW_MINUTES['1h'] + 1);

  constructor(private readonly byAccount = false) {}

  add(value: number, second: number, account = ''): void {
    const bin = tipBin(value);
    for (const b of [bucketFor(this.seconds, second), bucketFor(this.minutes, Math.floor(second / 60))]) {
      addTo(b.bins, bin, 1, value);
      if (this.byAccount) {
        let mine = b.byAccount.get(account);
        if (mine === undefined) b.byAccount.set(account, (mine = new Map()));
        addTo(mine, bin, 1, value);
      }
    }
  }

  /** Each window's count and percentiles at `second`. */
  windows(second: number): Record<TipWindowName, { landed: number; percentiles: Percentiles | null }> {
    const minute = Math.floor(second / 60);
    return {
      '1m': merged(this.seconds, second, TIP_WINDOWS['1m'] - 1, this.byAccount),
      '10m': merged(this.minutes, minute, WINDOW_MINUTES['10m'], this.byAccount),
      '1h': merged(this.minutes, minute, WINDOW_MINUTES['1h'], this.byAccount),
    };
  }
}

/** The buckets from `at - back` to `at`, merged, as percentiles. */
function merged(buckets: Bucket[], at: number, back: number, byAccount: boolean): { landed: number; percentiles: Percentiles | null } {
  const bins = new Map<number, Bin>();
  const accounts = new Map<string, Map<number, Bin>>();
  let landed = 0;
  for (const b of buckets) {
    if (b.at < at - back || b.at > at) continue;
    for (const [bin, x] of b.bins) {
      addTo(bins, bin, x.count, x.max);
      landed += x.count;
    }
    if (!byAccount) continue;
    for (const [account, mine] of b.byAccount) {
      let into = accounts.get(account);
      if (into === undefined) accounts.set(account, (into = new Map()));
      for (const [bin, x] of mine) addTo(into, bin, x.count, x.max);
    }
  }
  return { landed, percentiles: byAccount ? resistant(bins, landed, accounts) : percentiles(bins, landed) };
}

/** Most an account's landings may move a percentile of the priority fee: a factor of 2 … */
export const MAX_ACCOUNT_MOVE = 2;
/** … beyond what the other accounts' landings say this many percentile points lower or higher. */
export const RANK_SLACK = 10;

/**
 * Percentiles that one account's landings cannot move far from what the others' landings say.
 * For each percentile p and account `a`, P₋ₐ(q) is the q-th percentile of the landings of every
 * account but `a` (leave one out), and `a`'s bound is [P₋ₐ(p − 10) / 2, 2 · P₋ₐ(p + 10)]
 * ({@link RANK_SLACK}, {@link MAX_ACCOUNT_MOVE}). The accounts are taken from the one whose bound
 * the raw percentile is farthest outside (in log) to the least, and the answer is narrowed to
 * each bound in turn — skipping a bound that would contradict those before it (one that only says
 * the others include a heavier account). So the account that pulls a percentile hardest is always
 * held, whoever it is and whatever it lands; the others are held too wherever that does not
 * contradict it. Null when the window holds one account's landings only: with nothing to measure
 * them against, they give no guidance.
 *
 * Why leave-one-out: one account landed 6 transfers at 10⁹ µL/CU with a 1,000-CU limit (0.012
 * SOL in all) and every percentile of the minute read 10⁹; a bot that followed p75 with a
 * 200k-CU limit paid 0.211 SOL for one transfer. Weighing landings by the compute units they
 * bought makes such a poisoning dearer, not impossible (buy 200k CU at 10⁹ and it is back);
 * counting per account (one vote each) lets one account own the top percentiles of a small
 * window; trimming the top few percent fails once the attacker lands more than the trim. Holding
 * each percentile to what the other accounts' landings say bounds what one account can do, at
 * any price and any count.
 *
 * Why the 10 points of slack: without them a window split in two — at the onset of congestion,
 * a minute still holding 40 unpriced landings of one account beside 16 of four accounts paying
 * 100,000 — sits with p75 on the boundary, where leaving out *any one* of the four drops the
 * others' p75 to 0; the strict bound then pinned p75 to 0 against four agreeing accounts, and
 * every bot that followed it was priced out for seconds (the landing bench's congestion
 * scenario). With the slack, a value the others' landings reach a few points higher up stands;
 * an attacker still moves a percentile at most to twice what the others pay 10 points higher.
 *
 * Cost: one pass over the window's bins, then per account and percentile two binary searches over
 * the sorted bins (each step a binary search in the account's own bins): about 10 × A × log² B
 * for A accounts, at most once a second.
 */
function resistant(bins: Map<number, Bin>, n: number, accounts: Map<string, Map<number, Bin>>): Percentiles | null {
  const all = percentiles(bins, n);
  if (all === null) return null;
  const sorted = [...bins.entries()].sort((a, b) => a[0] - b[0]);
  const keys = sorted.map(([bin]) => bin);
  const cum: number[] = [];
  let c = 0;
  for (const [, x] of sorted) cum.push((c += x.count));
  /** Per percentile, each account's bound. */
  const bounds = new Map<number, Array<[number, number]>>(TIP_PERCENTILES.map((p) => [p, []]));
  for (const mine of accounts.values()) {
    const own = [...mine.entries()].sort((a, b) => a[0] - b[0]);
    const ownKeys = own.map(([bin]) => bin);
    const ownCum: number[] = [];
    let k = 0;
    for (const [, x] of own) ownCum.push((k += x.count));
    const rest = n - k;
    if (rest === 0) return null;
    /** The account's landings in bins up to `bin`. */
    const ownUpTo = (bin: number): number => {
      let a = 0;
      let b = ownKeys.length;
      while (a < b) {
        const m = (a + b) >> 1;
        if (ownKeys[m]! <= bin) a = m + 1;
        else b = m;
      }
      return a === 0 ? 0 : ownCum[a - 1]!;
    };
    /** The q-th percentile (nearest rank) of the others' landings. */
    const others = (q: number): number => {
      const rank = Math.max(1, Math.ceil((Math.min(Math.max(q, 0), 100) / 100) * rest));
      // The first bin where the others' landings reach the rank (monotone in the bin).
      let a = 0;
      let b = keys.length - 1;
      while (a < b) {
        const m = (a + b) >> 1;
        if (cum[m]! - ownUpTo(keys[m]!) >= rank) b = m;
        else a = m + 1;
      }
      return sorted[a]![1].max;
    };
    for (const p of TIP_PERCENTILES) bounds.get(p)!.push([others(p - RANK_SLACK) / MAX_ACCOUNT_MOVE, others(p + RANK_SLACK) * MAX_ACCOUNT_MOVE]);
  }
  const out = {} as Percentiles;
  const ln = (v: number) => Math.log(Math.max(v, 1));
  for (const p of TIP_PERCENTILES) {
    const key = `p${p}` as const;
    const v = all[key];
    /** How far (in log) the raw percentile is outside a bound. */
    const outside = ([lo, hi]: [number, number]) => Math.max(0, ln(lo) - ln(v), ln(v) - ln(hi));
    const byPull = bounds.get(p)!.sort((x, y) => outside(y) - outside(x));
    let lo = 0;
    let hi = Infinity;
    for (const [l, h] of byPull) {
      const a = Math.max(lo, l);
      const b = Math.min(hi, h);
      if (a <= b) [lo, hi] = [a, b];
    }
    out[key] = Math.round(Math.min(Math.max(v, lo), hi));
  }
  return out;
}

/** A number of lamports (or micro-lamports) as a safe integer, the whole u64 range capped. */
function safe(v: bigint | number): number {
  return typeof v === 'number' ? Math.min(v, Number.MAX_SAFE_INTEGER) : v > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(v);
}

export class TipFloor {
  private readonly tips = new LandedHistogram();
  /** Compute-unit prices (micro-lamports per CU) of the landings whose price is known, by account. */
  private readonly prices = new LandedHistogram(true);
  private cached: { second: number; view: TipFloorView } | null = null;

  constructor(
    private readonly lamportsPerPoint: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * A transaction with this total tip was seen landed (confirmed) now, with its compute-unit
   * price when known (unknown for one accepted before a restart) and the account that sent it.
   */
  landed(tipLamports: bigint, computeUnitPrice?: number, accountId = ''): void {
    const second = Math.floor(this.now() / 1000);
    this.tips.add(safe(tipLamports), second);
    if (computeUnitPrice !== undefined) this.prices.add(safe(computeUnitPrice), second, accountId);
  }

  /** The current view: computed at most once per second, the same object in between. */
  view(): TipFloorView {
    const nowMs = this.now();
    const second = Math.floor(nowMs / 1000);
    if (this.cached?.second === second) return this.cached.view;
    const tips = this.tips.windows(second);
    const prices = this.prices.windows(second);
    const names = Object.keys(TIP_WINDOWS) as TipWindowName[];
    const windows = Object.fromEntries(
      names.map((n) => [n, { landed: tips[n].landed, lamports: tips[n].percentiles, bp: tips[n].percentiles && this.toPoints(tips[n].percentiles) }]),
    ) as Record<TipWindowName, TipFloorWindow>;
    const priority_fee = Object.fromEntries(
      names.map((n) => [n, { landed: prices[n].landed, micro_lamports_per_cu: prices[n].percentiles }]),
    ) as Record<TipWindowName, PriorityFeeWindow>;
    const view: TipFloorView = { as_of: new Date(nowMs).toISOString(), lamports_per_point: this.lamportsPerPoint, windows, priority_fee };
    this.cached = { second, view };
    return view;
  }

  private toPoints(l: Percentiles): Percentiles {
    const out = {} as Percentiles;
    for (const p of TIP_PERCENTILES) out[`p${p}`] = Math.floor(l[`p${p}`] / this.lamportsPerPoint);
    return out;
  }
}

/** A view with nothing landed: what a thread serves before the first one arrives. */
export function emptyTipFloor(lamportsPerPoint: number, now = Date.now()): TipFloorView {
  return new TipFloor(lamportsPerPoint, () => now).view();
}

/**
 * The tip floor from Landfall's own landings: percentiles of the tips of transactions the tracker
 * saw land (confirmed) in the last minute, ten minutes and hour, served by `GET /v1/tip-floor`.
 *
 * Bounded, whatever the rate: one bucket per second for the last hour (a ring of 3600), each a
 * small histogram of tips. A tip falls into a log-linear bin: exact below 64 lamports, then 64
 * bins per power of two (each 1/64 of its power wide, so a bin spans at most 1.6 % of its
 * value); the bin keeps its count and the largest tip seen in it. A percentile is the largest tip
 * seen in the bin holding the nearest-rank sample: never below the true percentile, at most 1.6 %
 * above it, and exact when tips are round numbers (every tip of 1 000 000 reads 1 000 000). A
 * bucket holds at most one entry per distinct bin (≤ 3 776), so memory is bounded by the ring,
 * not by the number of landings, and no request sorts anything: the view is computed at most once
 * a second (merging the ring's buckets, then walking at most 3 776 bins) and reused in between.
 *
 * Lives on the main thread (the tracker settles there); ingress threads get the computed view
 * once a second (`IngressPool.tipFloor`).
 */

/** The percentiles reported. */
export const TIP_PERCENTILES = [25, 50, 75, 95, 99] as const;
export type TipPercentile = (typeof TIP_PERCENTILES)[number];

/** The windows reported, shortest first. */
export const TIP_WINDOWS = { '1m': 60, '10m': 600, '1h': 3600 } as const;
export type TipWindowName = keyof typeof TIP_WINDOWS;

/** p25 … p99. */
export type Percentiles = Record<`p${TipPercentile}`, number>;

export interface TipFloorWindow {
  /** Transactions seen landed (confirmed) in the window. */
  landed: number;
  /** Tip percentiles in lamports; null when nothing landed. */
  lamports: Percentiles | null;
  /** The same in points (BP): floor(lamports / lamports_per_point). */
  bp: Percentiles | null;
}

/** What `GET /v1/tip-floor` answers (without the caller's plan minimum). */
export interface TipFloorView {
  /** When the view was computed (UTC, ISO-8601 with milliseconds). */
  as_of: string;
  lamports_per_point: number;
  windows: Record<TipWindowName, TipFloorWindow>;
}

/** Exact bins below 2^SUB_BITS lamports; 2^SUB_BITS bins per power of two above. */
const SUB_BITS = 6;
const SUB = 1 << SUB_BITS;
const RING_SECONDS = TIP_WINDOWS['1h'];

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

interface Bucket {
  /** Unix second this bucket counts; -1 while unused. */
  second: number;
  bins: Map<number, Bin>;
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

export class TipFloor {
  private readonly ring: Bucket[] = Array.from({ length: RING_SECONDS }, () => ({ second: -1, bins: new Map() }));
  private cached: { second: number; view: TipFloorView } | null = null;

  constructor(
    private readonly lamportsPerPoint: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** A transaction with this total tip was seen landed (confirmed) now. */
  landed(tipLamports: bigint): void {
    const tip = tipLamports > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(tipLamports);
    const second = Math.floor(this.now() / 1000);
    const bucket = this.ring[second % RING_SECONDS]!;
    if (bucket.second !== second) {
      bucket.second = second;
      bucket.bins.clear();
    }
    addTo(bucket.bins, tipBin(tip), 1, tip);
  }

  /** The current view: computed at most once per second, the same object in between. */
  view(): TipFloorView {
    const nowMs = this.now();
    const second = Math.floor(nowMs / 1000);
    if (this.cached?.second === second) return this.cached.view;
    const names = Object.keys(TIP_WINDOWS) as TipWindowName[];
    const merged = names.map(() => ({ bins: new Map<number, Bin>(), n: 0 }));
    for (const bucket of this.ring) {
      const age = second - bucket.second;
      if (bucket.second < 0 || age < 0 || age >= RING_SECONDS) continue;
      names.forEach((name, w) => {
        if (age >= TIP_WINDOWS[name]) return;
        for (const [bin, b] of bucket.bins) {
          addTo(merged[w]!.bins, bin, b.count, b.max);
          merged[w]!.n += b.count;
        }
      });
    }
    const windows = {} as Record<TipWindowName, TipFloorWindow>;
    names.forEach((name, w) => {
      const lamports = percentiles(merged[w]!.bins, merged[w]!.n);
      windows[name] = { landed: merged[w]!.n, lamports, bp: lamports && this.toPoints(lamports) };
    });
    const view: TipFloorView = { as_of: new Date(nowMs).toISOString(), lamports_per_point: this.lamportsPerPoint, windows };
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

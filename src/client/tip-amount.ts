/**
 * How much to tip: what `addTip` (web3.js) and its `@solana/kit` twin share.
 */
import type { LandfallClient } from './client.js';
import { TIP_PERCENTILES, TIP_WINDOWS, type TipPercentile, type TipWindowName } from './wire.js';

/** The tip asked for: the plan minimum (nothing), `lamports`, or a `percentile` of what landed. */
export interface TipChoice {
  client: LandfallClient;
  /** Tip more than the account's minimum. */
  lamports?: number | bigint;
  /**
   * Tip this percentile (25, 50, 75, 95, 99) of the tips that landed through Landfall
   * (`client.tipFloor()`), never less than the plan minimum; instead of `lamports`.
   */
  percentile?: TipPercentile;
  /**
   * Whose landings `percentile` reads: `1m`, `10m` or `1h`. Default: the shortest window in which
   * anything landed (the plan minimum when nothing did in the last hour).
   */
  window?: TipWindowName;
}

/**
 * The tip `addTip` adds: `lamports` if given; for a `percentile`, that percentile of the chosen
 * window's landed tips, raised to the plan minimum; otherwise undefined (the plan minimum).
 */
export async function tipAmount(o: TipChoice): Promise<number | bigint | undefined> {
  if (o.percentile === undefined) {
    if (o.window !== undefined) throw new TypeError('addTip: window needs a percentile');
    return o.lamports;
  }
  if (o.lamports !== undefined) throw new TypeError('addTip: give lamports or percentile, not both');
  if (!TIP_PERCENTILES.includes(o.percentile)) throw new TypeError(`addTip: percentile must be one of ${TIP_PERCENTILES.join(', ')}, got ${o.percentile}`);
  if (o.window !== undefined && !Object.hasOwn(TIP_WINDOWS, o.window)) {
    throw new TypeError(`addTip: window must be one of ${Object.keys(TIP_WINDOWS).join(', ')}, got ${o.window}`);
  }
  const [floor, info] = await Promise.all([o.client.tipFloor(), o.client.tipInfo()]);
  const names = o.window !== undefined ? [o.window] : (Object.keys(TIP_WINDOWS) as TipWindowName[]);
  const seen = names.map((n) => floor.windows[n].lamports).find((l) => l !== null);
  const observed = seen ? BigInt(seen[`p${o.percentile}`]) : 0n;
  // Never below the minimum: the service's (fresh, in the answer) nor the cached one
  // `tipInstruction` checks against (it only falls, so the cached one is the higher).
  const minimum = BigInt(floor.plan_minimum?.min_tip_lamports ?? 0);
  const floorMin = minimum > info.minTipLamports ? minimum : info.minTipLamports;
  return observed > floorMin ? observed : floorMin;
}

/**
 * Counting accepted requests per time window, for the cross-node limit checks (test 1 of the
 * cluster suite and the `cluster` bench): what several nodes granted together, by the time each
 * grant was observed, over every 1-s window.
 */

/**
 * The most events inside any window of `windowMs` (closed at the start, open at the end) among
 * `times` (ms, any order), over windows starting in [from, to − windowMs].
 */
export function maxInWindow(times: readonly number[], windowMs: number, from = -Infinity, to = Infinity): number {
  const t = times.filter((x) => x >= from && x < to).sort((a, b) => a - b);
  let best = 0;
  let lo = 0;
  // A busiest window can always be slid to start at an event: try each event as the start.
  for (let hi = 0; hi < t.length; hi++) {
    while (t[hi]! - t[lo]! >= windowMs) lo++;
    best = Math.max(best, hi - lo + 1);
  }
  return best;
}

/** Events per consecutive window of `windowMs` from `from` to `to` (whole windows only). */
export function perWindow(times: readonly number[], windowMs: number, from: number, to: number): number[] {
  const n = Math.floor((to - from) / windowMs);
  const counts = new Array<number>(n).fill(0);
  for (const x of times) {
    const i = Math.floor((x - from) / windowMs);
    if (i >= 0 && i < n) counts[i]!++;
  }
  return counts;
}

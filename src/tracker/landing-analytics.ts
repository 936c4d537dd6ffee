/**
 * Per-account landing analytics (`GET /v1/analytics`, the dashboard's bot view): of the account's
 * own transactions that reached an outcome, how many landed, and in how many slots — in total,
 * by the leader of the slot each was sent in, and over time — for the last hour or day.
 *
 * Fed from the status changes the tracker already writes (confirmed, failed, expired), on the
 * main thread, once per transaction: nothing on the send path. A landed transaction counts its
 * slots to land (`slot − submit_slot`) into a small histogram; a failed one landed too (with an
 * error), an expired one did not. The leader is the schedule's leader of the submission slot
 * (the leader the first send went to), so "by leader" answers "how do my sends fare when X leads".
 *
 * Bounded: per account, 6 ten-minute buckets (the last hour) and 24 hourly ones (the last day),
 * each with its totals and at most `MAX_LEADERS` leaders (the rest pooled as "other"); at most
 * `MAX_ACCOUNTS` accounts (the least recently active forgotten). A cell is 15 numbers, so an
 * account that fills everything holds ~30 × 33 cells ≈ 0.2 MB; most hold a few KB. In memory
 * only, per node: a restart starts empty, and on a cluster each node counts what it tracked.
 */
import type { LandingAnalytics as LandingAnalyticsWire, LandingRow } from '../client/wire.js';
import type { StatusRecord } from '../store/records.js';

/** Leaders kept per bucket; the others pool as `other`. */
export const MAX_LEADERS = 32;
/** Accounts kept; the least recently active goes first. */
export const MAX_ACCOUNTS = 2_000;
const TEN_MIN_MS = 600_000;
const HOUR_MS = 3_600_000;
/** Upper bounds of the slots-to-land histogram's bins (the last bin: more). */
export const SLOT_BINS = [0, 1, 2, 3, 4, 6, 8, 12, 16, 32, 64, 150] as const;
const OTHER = 'other';

export type AnalyticsWindow = LandingAnalyticsWire['window'];

/** Counts of one (bucket, leader): [transactions, landed, failed, expired, ...histogram]. */
type Cell = Float64Array;
const TX = 0;
const LANDED = 1;
const FAILED = 2;
const EXPIRED = 3;
const HIST = 4;
const CELL = HIST + SLOT_BINS.length + 1;

interface Bucket {
  start: number;
  total: Cell;
  leaders: Map<string, Cell>;
}

interface AccountStats {
  tenMin: Bucket[];
  hours: Bucket[];
}

/**
 * One row of the view and the whole view: the wire's shapes themselves (`GET /v1/analytics`),
 * defined once in `src/client/wire.ts` (the client sits below the tracker, so it may import them).
 */
export type AnalyticsRow = LandingRow;
export type AnalyticsView = LandingAnalyticsWire;

export class LandingAnalytics {
  private readonly accounts = new Map<string, AccountStats>();

  get size(): number {
    return this.accounts.size;
  }

  /** Count an outcome of one of `rec.accountId`'s transactions (confirmed, failed or expired). */
  record(rec: StatusRecord, leader: string | null, now = Date.now()): void {
    const landed = rec.status === 'confirmed' || rec.status === 'failed';
    if (!landed && !rec.expired) return;
    let a = this.accounts.get(rec.accountId);
    if (a) this.accounts.delete(rec.accountId);
    else a = { tenMin: [], hours: [] };
    this.accounts.set(rec.accountId, a); // most recently active last
    while (this.accounts.size > MAX_ACCOUNTS) this.accounts.delete(this.accounts.keys().next().value!);
    const slots = landed && rec.slot !== null ? Math.max(0, rec.slot - rec.submitSlot) : null;
    for (const [ring, size, span] of [
      [a.tenMin, 6, TEN_MIN_MS],
      [a.hours, 24, HOUR_MS],
    ] as const) {
      const b = bucketAt(ring, size, span, now);
      count(b.total, rec, landed, slots);
      let key = leader ?? OTHER;
      if (key !== OTHER && !b.leaders.has(key) && b.leaders.size >= MAX_LEADERS) key = OTHER;
      let cell = b.leaders.get(key);
      if (!cell) b.leaders.set(key, (cell = new Float64Array(CELL)));
      count(cell, rec, landed, slots);
    }
  }

  /** The account's analytics over the last `window` (empty rows for an account never seen). */
  view(accountId: string, window: AnalyticsWindow, now = Date.now()): AnalyticsView {
    const a = this.accounts.get(accountId);
    const [ring, span, n] = window === '1h' ? [a?.tenMin ?? [], TEN_MIN_MS, 6] : [a?.hours ?? [], HOUR_MS, 24];
    const first = Math.floor(now / span) * span - (n - 1) * span;
    const live = ring.filter((b) => b.start >= first);
    const total = new Float64Array(CELL);
    const leaders = new Map<string, Cell>();
    for (const b of live) {
      add(total, b.total);
      for (const [l, c] of b.leaders) {
        let t = leaders.get(l);
        if (!t) leaders.set(l, (t = new Float64Array(CELL)));
        add(t, c);
      }
    }
    const series: AnalyticsView['series'] = [];
    for (let i = 0; i < n; i++) {
      const start = first + i * span;
      const b = live.find((x) => x.start === start);
      series.push({ from: new Date(start).toISOString(), ...row(b?.total ?? new Float64Array(CELL)) });
    }
    return {
      window,
      from: new Date(first).toISOString(),
      to: new Date(now).toISOString(),
      ...row(total),
      by_leader: [...leaders].map(([leader, c]) => ({ leader, ...row(c) })).sort((x, y) => y.transactions - x.transactions),
      series_minutes: span / 60_000,
      series,
    };
  }
}

/** The ring's bucket for `now` (made, replacing the oldest, when new). */
function bucketAt(ring: Bucket[], size: number, span: number, now: number): Bucket {
  const start = Math.floor(now / span) * span;
  const last = ring[ring.length - 1];
  if (last && last.start === start) return last;
  const b: Bucket = { start, total: new Float64Array(CELL), leaders: new Map() };
  ring.push(b);
  while (ring.length > size || (ring.length > 0 && ring[0]!.start <= start - size * span)) ring.shift();
  return b;
}

function count(c: Cell, rec: StatusRecord, landed: boolean, slots: number | null): void {
  c[TX]!++;
  if (landed) c[LANDED]!++;
  if (rec.status === 'failed') c[FAILED]!++;
  if (!landed) c[EXPIRED]!++;
  if (slots !== null) {
    let i = SLOT_BINS.findIndex((bound) => slots <= bound);
    if (i < 0) i = SLOT_BINS.length;
    c[HIST + i]!++;
  }
}

function add(into: Cell, c: Cell): void {
  for (let i = 0; i < CELL; i++) into[i]! += c[i]!;
}

function row(c: Cell): AnalyticsRow {
  const tx = c[TX]!;
  const landed = c[LANDED]!;
  return {
    transactions: tx,
    landed,
    failed: c[FAILED]!,
    expired: c[EXPIRED]!,
    landing_rate: tx === 0 ? null : Math.round((landed / tx) * 10_000) / 10_000,
    slots_to_land: landed === 0 ? null : { p50: quantile(c, 0.5), p90: quantile(c, 0.9), p99: quantile(c, 0.99) },
  };
}

/** The bin upper bound holding the nearest-rank `q` quantile of the landed (the last bin: `SLOT_BINS`' last + 1, "more"). */
function quantile(c: Cell, q: number): number {
  let n = 0;
  for (let i = 0; i <= SLOT_BINS.length; i++) n += c[HIST + i]!;
  const rank = Math.max(1, Math.ceil(q * n));
  let seen = 0;
  for (let i = 0; i <= SLOT_BINS.length; i++) {
    seen += c[HIST + i]!;
    if (seen >= rank) return i < SLOT_BINS.length ? SLOT_BINS[i]! : SLOT_BINS[SLOT_BINS.length - 1]! + 1;
  }
  return SLOT_BINS[SLOT_BINS.length - 1]! + 1;
}

/**
 * Per-account landing analytics (`LandingAnalytics`): counts by outcome, landing rate, slots to
 * land as histogram-bin bounds, by leader (bounded, the rest pooled) and over time, for the last
 * hour and day; nothing of another account; old buckets dropped.
 */
import { describe, expect, it } from 'vitest';
import { LandingAnalytics, MAX_ACCOUNTS, MAX_LEADERS } from '../../src/tracker/landing-analytics.js';
import type { StatusRecord } from '../../src/store/records.js';
import { statusRecord } from '../../harness/records.js';

const T0 = Date.UTC(2026, 10, 28, 9, 0, 0);
const MIN = 60_000;

function landed(accountId: string, slots: number, over: Partial<StatusRecord> = {}): StatusRecord {
  return statusRecord({ accountId, status: 'confirmed', submitSlot: 1_000, slot: 1_000 + slots, confirmedAt: 1, latencyMs: 1, ...over });
}
const expired = (accountId: string): StatusRecord => statusRecord({ accountId, expired: true });

describe('landing analytics', () => {
  it('counts, rate and slots to land, by leader and over time, for the account alone', () => {
    const a = new LandingAnalytics();
    for (let i = 0; i < 8; i++) a.record(landed('acc_a', 1), 'L1', T0 + 5 * MIN);
    a.record(landed('acc_a', 3, { status: 'failed', err: 'X' }), 'L2', T0 + 5 * MIN);
    a.record(expired('acc_a'), 'L2', T0 + 15 * MIN);
    a.record(statusRecord({ accountId: 'acc_a' }), 'L1', T0 + 15 * MIN); // still sent: not an outcome
    a.record(landed('acc_b', 0), 'L1', T0 + 5 * MIN);
    const v = a.view('acc_a', '1h', T0 + 20 * MIN);
    expect(v).toMatchObject({ window: '1h', transactions: 10, landed: 9, failed: 1, expired: 1, landing_rate: 0.9, slots_to_land: { p50: 1, p90: 3, p99: 3 } });
    expect(v.by_leader).toEqual([
      { leader: 'L1', transactions: 8, landed: 8, failed: 0, expired: 0, landing_rate: 1, slots_to_land: { p50: 1, p90: 1, p99: 1 } },
      { leader: 'L2', transactions: 2, landed: 1, failed: 1, expired: 1, landing_rate: 0.5, slots_to_land: { p50: 3, p90: 3, p99: 3 } },
    ]);
    expect(v.series_minutes).toBe(10);
    expect(v.series.map((r) => [r.from, r.transactions])).toEqual([
      ['2026-11-28T08:30:00.000Z', 0],
      ['2026-11-28T08:40:00.000Z', 0],
      ['2026-11-28T08:50:00.000Z', 0],
      ['2026-11-28T09:00:00.000Z', 9],
      ['2026-11-28T09:10:00.000Z', 1],
      ['2026-11-28T09:20:00.000Z', 0],
    ]);
    expect(a.view('acc_b', '24h', T0 + 20 * MIN)).toMatchObject({ transactions: 1, landed: 1, landing_rate: 1 });
    expect(a.view('acc_never', '24h', T0)).toMatchObject({ transactions: 0, landing_rate: null, slots_to_land: null, by_leader: [] });
  });

  it('the hour forgets what is older; the day keeps it, hourly; a day later it is gone', () => {
    const a = new LandingAnalytics();
    a.record(landed('acc_a', 2), 'L1', T0);
    a.record(landed('acc_a', 40), 'L1', T0 + 61 * MIN);
    expect(a.view('acc_a', '1h', T0 + 90 * MIN)).toMatchObject({ transactions: 1, slots_to_land: { p50: 64 } });
    const day = a.view('acc_a', '24h', T0 + 90 * MIN);
    expect(day).toMatchObject({ transactions: 2, series_minutes: 60 });
    expect(day.series).toHaveLength(24);
    expect(day.series.slice(-2).map((r) => r.transactions)).toEqual([1, 1]);
    expect(a.view('acc_a', '24h', T0 + 24 * 60 * MIN)).toMatchObject({ transactions: 1 });
    expect(a.view('acc_a', '24h', T0 + 25 * 60 * MIN)).toMatchObject({ transactions: 0 });
  });

  it('is bounded: leaders past the cap pool as "other"; the least recently active account goes first', () => {
    const a = new LandingAnalytics();
    for (let i = 0; i < MAX_LEADERS + 10; i++) a.record(landed('acc_a', 1), `L${i}`, T0);
    const v = a.view('acc_a', '1h', T0);
    expect(v.by_leader).toHaveLength(MAX_LEADERS + 1);
    expect(v.by_leader.find((r) => r.leader === 'other')).toMatchObject({ transactions: 10 });
    for (let i = 0; i < MAX_ACCOUNTS; i++) a.record(landed(`acc_${i}`, 1), 'L', T0);
    expect(a.size).toBe(MAX_ACCOUNTS);
    expect(a.view('acc_a', '1h', T0).transactions).toBe(0);
    expect(a.view(`acc_${MAX_ACCOUNTS - 1}`, '1h', T0).transactions).toBe(1);
  });
});

/**
 * The current-slot estimator (RecentSlots, after Agave's TPU clients' recent-leader-slots) and
 * the mapping of `slotsUpdatesNotification`s to slot starts.
 */
import { describe, expect, it } from 'vitest';
import { MAX_SLOT_SKIP_DISTANCE, RECENT_SLOTS, RecentSlots, slotStartOf } from '../../src/delivery/slot-estimator.js';

function recorded(...slots: number[]): RecentSlots {
  const r = new RecentSlots();
  for (const s of slots) r.record(s);
  return r;
}

describe('RecentSlots', () => {
  it('knows nothing before the first event, then follows events in order', () => {
    const r = new RecentSlots();
    expect(r.estimate()).toBeNull();
    for (let s = 100; s < 120; s++) {
      r.record(s);
      expect(r.estimate()).toBe(s);
    }
    expect(r.size).toBe(RECENT_SLOTS);
  });

  it('ignores one event far ahead of the others (an outlier) and takes it once others agree', () => {
    const r = recorded(100, 101, 102, 103, 104);
    r.record(104 + 10_000);
    expect(r.estimate()).toBe(104);
    // Just within the bound: median 102 (index 2 of 6), 3 events after it, plus the skip distance.
    const near = recorded(100, 101, 102, 103, 104);
    near.record(102 + 3 + MAX_SLOT_SKIP_DISTANCE);
    expect(near.estimate()).toBe(102 + 3 + MAX_SLOT_SKIP_DISTANCE);
    const beyond = recorded(100, 101, 102, 103, 104);
    beyond.record(102 + 3 + MAX_SLOT_SKIP_DISTANCE + 1);
    expect(beyond.estimate()).toBe(104);
    // The chain really jumped: once most recent events are up there, the estimate follows.
    for (let s = 20_000; s < 20_007; s++) r.record(s);
    expect(r.estimate()).toBe(20_006);
  });

  it('a late event for an old slot does not move it back; a slot reported twice counts once', () => {
    const r = recorded(200, 201, 202);
    r.record(150);
    expect(r.estimate()).toBe(202);
    const twice = recorded(10, 11, 12, 12, 12, 12);
    expect(twice.size).toBe(3);
    // [10, 11, 12, x]: median 11, 2 events after it, so x may be at most 11 + 2 + 48 = 61. Were
    // the duplicates counted ([10, 11, 12, 12, 12, 12, x]), the median would be 12 and 63 the bound.
    twice.record(11 + 2 + MAX_SLOT_SKIP_DISTANCE + 1);
    expect(twice.estimate()).toBe(12);
  });

  it('falls back to the other sources when the updates stop: their events keep it moving', () => {
    // firstShredReceived/completed up to 300, then only slotSubscribe (or polled getSlot) events.
    const r = recorded(...Array.from({ length: 12 }, (_, i) => 289 + i));
    for (let s = 301; s <= 305; s++) {
      r.record(s);
      expect(r.estimate()).toBe(s);
    }
    r.clear();
    expect(r.estimate()).toBeNull();
    r.record(7); // a restarted chain, after the tracker saw the view go stale and cleared it
    expect(r.estimate()).toBe(7);
  });
});

describe('slotStartOf', () => {
  it('firstShredReceived N starts N, completed N starts N + 1, other types and bad values none', () => {
    expect(slotStartOf({ type: 'firstShredReceived', slot: 9, timestamp: 1 })).toBe(9);
    expect(slotStartOf({ type: 'completed', slot: 9, timestamp: 1 })).toBe(10);
    for (const type of ['createdBank', 'frozen', 'dead', 'optimisticConfirmation', 'root']) {
      expect(slotStartOf({ type, slot: 9, timestamp: 1 })).toBeNull();
    }
    for (const bad of [null, 'x', {}, { type: 'completed' }, { type: 'completed', slot: -1 }, { type: 'completed', slot: 1.5 }, { type: 'completed', slot: '9' }]) {
      expect(slotStartOf(bad)).toBeNull();
    }
  });
});

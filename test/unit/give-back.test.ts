/**
 * When the service gives memory back (`src/memory/give-back.ts`): once per quiet period after a
 * load, never during one, never without one. The rule is driven here by its own clock (`check`
 * with a time) over counters the test moves, and gives back through the real addon's
 * `trimFreeMemory`; the e2e test (`test/e2e/give-back.test.ts`) runs it inside the service.
 */
import { describe, expect, it } from 'vitest';
import { GiveBack, type GiveBackSignals } from '../../src/memory/give-back.js';
import { trimFreeMemory } from '../../src/native.js';

const OPTS = { quietMs: 5_000, quietRequestsPerSec: 20, quietWatched: 50, checkMs: 1_000 };

function rig(startRequests = 0) {
  let now = 0;
  const signals = { requests: startRequests, watched: 0 };
  const given: boolean[] = [];
  const s: GiveBackSignals = { requests: () => signals.requests, watched: () => signals.watched };
  const g = new GiveBack(
    s,
    () => {
      const released = trimFreeMemory();
      given.push(released);
      return released;
    },
    () => {},
    // checkMs far away: the timer never fires during the test; the test calls `check`, on its clock.
    { ...OPTS, checkMs: 3_600_000 },
    () => now,
  );
  /** `seconds` checks, one a second, with `rps` requests answered in each and `watched` in flight. */
  const run = (seconds: number, rps: number, watched = 0) => {
    for (let i = 0; i < seconds; i++) {
      signals.requests = (signals.requests + rps) >>> 0;
      signals.watched = watched;
      now += 1_000;
      g.check();
    }
  };
  return { g, given, run, signals };
}

describe('memory given back once quiet after a load', () => {
  it('never during a load, once after it has been quiet for quietMs, and not again until another load', () => {
    const { g, given, run } = rig();
    try {
      // Idle from the start: no load, nothing to give back however long it lasts.
      run(60, 0);
      expect(given).toHaveLength(0);
      // A load of requests: never during it.
      run(30, 500);
      expect(given).toHaveLength(0);
      expect(g.pending).toBe(true);
      // Quiet (a trickle at the threshold is quiet): not before quietMs ...
      run(4, 20);
      expect(given).toHaveLength(0);
      // ... then once,
      run(1, 20);
      expect(given).toHaveLength(1);
      expect(g.count).toBe(1);
      expect(g.last?.anonBeforeBytes).toBeGreaterThan(0);
      expect(g.last?.anonAfterBytes).toBeGreaterThan(0);
      // and not again while the quiet lasts.
      run(120, 5);
      expect(given).toHaveLength(1);
      expect(g.pending).toBe(false);
    } finally {
      g.close();
    }
  });

  it('transactions still watched or with rounds left are a load, as requests are; a second load gives back again', () => {
    const { g, given, run } = rig();
    try {
      // No requests, but hundreds of transactions still tracked: busy.
      run(20, 0, 400);
      expect(given).toHaveLength(0);
      // A few left (≤ quietWatched): quiet; after quietMs, given back.
      run(5, 0, 50);
      expect(given).toHaveLength(1);
      // A burst of one second that breaks the quiet: armed again, given back after the next quiet.
      run(1, 1_000);
      run(4, 0);
      expect(given).toHaveLength(1);
      run(1, 0);
      expect(given).toHaveLength(2);
    } finally {
      g.close();
    }
  });

  it('a quiet interrupted by a busy second starts over: the give-back waits for quietMs of quiet after the last one', () => {
    const { given, g, run } = rig();
    try {
      run(10, 300);
      run(3, 0);
      run(1, 300);
      run(4, 0);
      expect(given).toHaveLength(0);
      run(1, 0);
      expect(given).toHaveLength(1);
    } finally {
      g.close();
    }
  });

  it('the request counter wraps at 2^32 without a false load', () => {
    const { given, g, run, signals } = rig(0xffff_fff0);
    try {
      run(10, 5); // crosses 2^32 at 5 a second: quiet
      expect(signals.requests).toBe(0x22);
      expect(g.pending).toBe(false);
      expect(given).toHaveLength(0);
    } finally {
      g.close();
    }
  });
});

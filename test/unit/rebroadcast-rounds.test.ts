/**
 * When the rebroadcast scheduler writes a transaction again, with real parts: the native QUIC
 * client writing to a real QUIC server on loopback (Agave's default limits for an unstaked peer
 * where it matters), the real `TraceBook`. Three rules:
 * - a round is counted when it is handed to the client, and a transaction whose last round is
 *   still queued gets no new one: slots that come faster than writes resolve add no rounds, so a
 *   transaction is written at most `max_retries` + 1 times, each round labelled with its own number;
 * - the rounds are spread over the blockhash's life (`roundOffset`), not the next slots;
 * - once the push says it landed, nothing more is written while the tracker settles it, and
 *   the rounds left resume if it is not settled within `LANDED_PAUSE_SLOTS`.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { QuicClient, QuicServer } from '../../native/index.js';
import type { Leader, Route } from '../../src/delivery/chain-view.js';
import { DEFAULT_SEND_OPTIONS, type Accepted, type SendOptions } from '../../src/delivery/delivery.js';
import { drawOf, LANDED_PAUSE_SLOTS, Rebroadcaster, roundOffset, UNTIL_EXPIRY_GAP } from '../../src/delivery/rebroadcast.js';
import { LiveTrace, TraceBook } from '../../src/delivery/trace-book.js';
import { packAttempt } from '../../src/delivery/trace.js';
import { base58Encode } from '../../src/native.js';
import { waitFor } from '../../harness/localnet.js';
import { statusRecord } from '../../harness/records.js';

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

/** A live leader (default limits unless told), a client, a book, a scheduler. */
function setup(serverLimits: { maxStreamsPer100ms?: number } = { maxStreamsPer100ms: 0 }) {
  const received: Buffer[] = [];
  const s = new QuicServer({ bind: '127.0.0.1:0', identity: randomBytes(32), ...serverLimits }, (t) => received.push(t.bytes));
  closers.push(() => s.close());
  const client = new QuicClient({ identity: randomBytes(32) });
  closers.push(() => client.close());
  const identity = base58Encode(randomBytes(32));
  const book = new TraceBook(() => null);
  const rebroadcaster = new Rebroadcaster(client, book);
  // The one leader leads every slot.
  const slotAt = (slot: number, height = 100 + slot - 10) => {
    const route: Route = { first: [{ slot, identity, tpuQuic: s.localAddr }], next: [], hold: false };
    rebroadcaster.onSlot(slot, height, { plain: route, antiMev: route });
  };
  return { received, book, rebroadcaster, slotAt };
}

/** An accepted transaction first sent in slot 10 at block height 100, its blockhash valid to `lastValid`. */
function accepted(options: Partial<SendOptions>, lastValid: number | null = 250): Accepted {
  const record = statusRecord({ submittedAt: Date.now(), submitSlot: 10, lastValidBlockHeight: lastValid });
  return {
    record,
    wire: randomBytes(200),
    options: { ...DEFAULT_SEND_OPTIONS, antiMev: false, ...options },
    receivedAt: process.hrtime.bigint(),
    sentSlot: 10,
    held: false,
  };
}

/** Every slot from `from` to `to`, waiting after each for any round it wrote to resolve; the slots that wrote one. */
async function slots(t: LiveTrace, slotAt: (slot: number) => void, from: number, to: number): Promise<number[]> {
  const wrote: number[] = [];
  for (let slot = from; slot <= to; slot++) {
    const before = t.attempts.length;
    slotAt(slot);
    if (t.outstanding > 0) {
      await waitFor(`the round of slot ${slot}`, () => (t.outstanding === 0 ? true : undefined), 10_000);
    }
    if (t.attempts.length > before) wrote.push(slot);
  }
  return wrote;
}

describe('rebroadcast rounds', () => {
  it('the schedule: round 1 in the next slot, the last near the end of the blockhash, each later than the one before', () => {
    expect([1, 2, 3].map((k) => roundOffset(k, 3, 148))).toEqual([1, 12, 148]);
    expect(Array.from({ length: 10 }, (_, i) => roundOffset(i + 1, 10, 148))).toEqual([1, 2, 3, 5, 9, 16, 28, 49, 85, 148]);
    expect(roundOffset(1, 1, 148)).toBe(1);
    // The last round, drawn in the last quarter of the span (37 slots), still after the one before.
    expect([0, 1, 36, 37].map((d) => roundOffset(3, 3, 148, d))).toEqual([148, 147, 112, 148]);
    expect(roundOffset(3, 3, 5, 3)).toBe(4);
    expect(roundOffset(3, 3, 3, 7)).toBe(3);
    // A blockhash with almost no life left: still one slot apart.
    expect([1, 2, 3].map((k) => roundOffset(k, 3, 1))).toEqual([1, 2, 3]);
  });

  it('max_retries 3 over a blockhash with 150 blocks left: rounds in slots 11, 22 and one in 121–158 (drawn from the signature), none in between nor after', async () => {
    const { book, rebroadcaster, slotAt } = setup();
    // Height 100 at the first send (slot 10), last valid height 250: 150 blocks left, 148 with the margin.
    const a = accepted({ maxRetries: 3 }, 250);
    const t = book.open(a, null);
    rebroadcaster.add(a, t);
    const last = 10 + roundOffset(3, 3, 148, drawOf(a.record.signature));
    expect(last).toBeGreaterThanOrEqual(10 + 148 - 36);
    expect(last).toBeLessThanOrEqual(158);
    const wrote = await slots(t, slotAt, 11, 200);
    expect(wrote).toEqual([11, 22, last]);
    expect(t.attempts.map((x) => [x.slot, x.round])).toEqual([
      [11, 1],
      [22, 2],
      [last, 3],
    ]);
    expect(rebroadcaster.size).toBe(0);
  });

  it('the last rounds of transactions signed on one blockhash are spread over the last quarter of their schedule, not all in one slot before it dies', async () => {
    const { book, rebroadcaster, slotAt } = setup();
    const traces = Array.from({ length: 40 }, () => {
      const a = accepted({ maxRetries: 3 }, 250);
      const t = book.open(a, null);
      rebroadcaster.add(a, t);
      return t;
    });
    for (let slot = 11; slot <= 160 && rebroadcaster.size > 0; slot++) {
      slotAt(slot);
      if (traces.some((t) => t.outstanding > 0)) await waitFor(`slot ${slot}`, () => (traces.every((t) => t.outstanding === 0) ? true : undefined), 20_000);
    }
    expect(rebroadcaster.size).toBe(0);
    const lastSlots = traces.map((t) => t.attempts.find((x) => x.round === 3)!.slot);
    // 40 draws over 37 slots: far more than one slot (a collision of all 40 is 37^-39 likely).
    expect(new Set(lastSlots).size).toBeGreaterThan(10);
    for (const s of lastSlots) expect(s).toBeGreaterThanOrEqual(10 + 148 - 36);
    for (const s of lastSlots) expect(s).toBeLessThanOrEqual(158);
  });

  /** Three leaders of 4 slots each (A leads 10–13, B 14–17, C 18–21, then A again), their servers' limits, one client, a scheduler. */
  function threeLeaders(maxStreamsPer100ms: number) {
    const servers = ['A', 'B', 'C'].map(() => {
      const received: Buffer[] = [];
      const srv = new QuicServer({ bind: '127.0.0.1:0', identity: randomBytes(32), maxStreamsPer100ms }, (t) => received.push(t.bytes));
      closers.push(() => srv.close());
      return { received, tpu: srv.localAddr, identity: base58Encode(randomBytes(32)) };
    });
    const at = (w: number, slot: number): Leader => ({ slot, identity: servers[w % 3]!.identity, tpuQuic: servers[w % 3]!.tpu });
    const client = new QuicClient({ identity: randomBytes(32) });
    closers.push(() => client.close());
    const book = new TraceBook(() => null);
    const rebroadcaster = new Rebroadcaster(client, book);
    const slotAt = (slot: number) => {
      const w = Math.floor((slot - 10) / 4);
      const route: Route = { first: [at(w, slot), at(w + 1, 10 + 4 * (w + 1))], next: [], hold: false };
      rebroadcaster.onSlot(slot, 100 + slot - 10, { plain: route, antiMev: route });
    };
    // The first send in slot 10 reached A (the current leader) and B (the next).
    const a = accepted({ maxRetries: 3 }, 250);
    a.firstAttempts = [];
    packAttempt(a.firstAttempts, servers[0]!.tpu, 'written', null, 50);
    packAttempt(a.firstAttempts, servers[1]!.tpu, 'pending', null, 50);
    const t = book.open(a, null);
    rebroadcaster.add(a, t, servers[0]!.tpu);
    return { servers, client, t, slotAt };
  }

  it('against leaders that throttle us, a round writes no second copy to the leader that has the transaction in its window: round 1 goes to the next leader only', async () => {
    // Agave's limit for an unstaked peer: 20 streams per 100 ms.
    const { servers, client, t, slotAt } = threeLeaders(20);
    // Other transactions back up every connection: the writer waits for each leader's stream credit.
    // 600 each, 3 s at 20 streams per 100 ms: still waiting when round 1 looks, however late this
    // thread gets to it (with 300, 1.5 s, a loaded machine once saw the backlog drain first).
    void client.sendMany(servers.map((x) => x.tpu), Array.from({ length: 600 }, () => randomBytes(100)));
    // Throttling, each with at least half its backlog still queued (1.5 s of it) at the moment
    // the rounds start: one leader's slow handshake cannot leave another's queue nearly drained.
    const throttled = (x: { tpu: string }) => client.peerStats().some((p) => p.target === x.tpu && p.creditWaitMs != null && p.queued >= 300);
    await waitFor('every leader throttling us, its backlog still queued', () => (servers.every(throttled) ? true : undefined), 10_000);
    const wrote = await slots(t, slotAt, 11, 24);
    // Round 1, in slot 11: A has it in its window (the first send reached it while it led), B
    // only got a copy before its window began, which does not count: B alone. Round 2 (due in
    // slot 22) finds A leading a window after the one the first send reached, and B next: both.
    expect(t.attempts.filter((x) => x.round > 0).map((x) => [x.slot, x.round, x.tpu])).toEqual([
      [11, 1, servers[1]!.tpu],
      [22, 2, servers[0]!.tpu],
      [22, 2, servers[1]!.tpu],
    ]);
    expect(wrote).toEqual([11, 22]);
  });

  it('leaders that read our streams as fast as we write them get a second copy in the next slot (an independent chance under loss)', async () => {
    const { servers, t, slotAt } = threeLeaders(0);
    const wrote = await slots(t, slotAt, 11, 13);
    expect(t.attempts.filter((x) => x.round > 0).map((x) => [x.slot, x.round, x.tpu])).toEqual([
      [11, 1, servers[0]!.tpu],
      [11, 1, servers[1]!.tpu],
    ]);
    expect(wrote).toEqual([11]);
  });

  it('slots faster than the writes resolve add no rounds: a transaction whose round is queued gets no new one, each round counted as written', async () => {
    // Agave's default for an unstaked peer (20 streams per 100 ms): 100 flights' rounds queue.
    const { received, book, rebroadcaster, slotAt } = setup({ maxStreamsPer100ms: 20 });
    const flights = Array.from({ length: 100 }, () => accepted({ maxRetries: 3 }, 10_000));
    const traces = flights.map((a) => {
      const t = book.open(a, null);
      rebroadcaster.add(a, t);
      return t;
    });
    // 40 slots back to back, before any write resolves (a backed-up queue, as under throttling).
    for (let slot = 11; slot <= 50; slot++) slotAt(slot, 100);
    await waitFor('every round written', () => (traces.every((t) => t.outstanding === 0) ? true : undefined), 20_000);
    // One round each: the slots after the first found it queued.
    await waitFor('every write received', () => (received.length === 100 ? true : undefined), 20_000);
    for (const t of traces) expect(t.attempts.map((x) => [x.slot, x.round, x.outcome])).toEqual([[11, 1, 'written']]);
    // The rest of the blockhash's life: at most max_retries rounds each, numbered 1, 2, 3.
    for (let slot = 51; slot <= 10_000; slot++) {
      slotAt(slot, 100 + slot - 10);
      if (traces.some((t) => t.outstanding > 0)) await waitFor(`slot ${slot}`, () => (traces.every((t) => t.outstanding === 0) ? true : undefined), 20_000);
      if (rebroadcaster.size === 0) break;
    }
    expect(rebroadcaster.size).toBe(0);
    for (const t of traces) expect(t.attempts.map((x) => x.round)).toEqual([1, 2, 3]);
    await waitFor('every write received', () => (received.length === 300 ? true : undefined), 20_000);
  });

  it('once the push says it landed, no round is written while the tracker settles it; not settled within the pause, the rounds left resume', async () => {
    const { book, rebroadcaster, slotAt } = setup();
    const a = accepted({ maxRetries: 10 }, 250);
    const t = book.open(a, null);
    rebroadcaster.add(a, t);
    // Round 1 in slot 11; the push says it landed during slot 11.
    expect(await slots(t, slotAt, 11, 11)).toEqual([11]);
    expect(rebroadcaster.landed(a.record.signature, 11)).toBe(true);
    expect(rebroadcaster.landed('not-in-flight', 11)).toBe(false);
    // Rounds 2 and 3 were due in slots 12 and 13: none while paused.
    expect(await slots(t, slotAt, 12, 11 + LANDED_PAUSE_SLOTS)).toEqual([]);
    // Not settled: doubted, the next due round goes out in the first slot after the pause.
    expect(await slots(t, slotAt, 12 + LANDED_PAUSE_SLOTS, 12 + LANDED_PAUSE_SLOTS)).toEqual([12 + LANDED_PAUSE_SLOTS]);
    // Settled by the tracker: gone.
    rebroadcaster.settle(a.record.signature);
    expect(rebroadcaster.size).toBe(0);
  });

  it('rebroadcast_until_expiry: every slot for a leader window, then one per window until the blockhash dies, whatever max_retries says', async () => {
    const { book, rebroadcaster, slotAt } = setup();
    const a = accepted({ maxRetries: 0, rebroadcastUntilExpiry: true }, 140);
    const t = book.open(a, null);
    expect(rebroadcaster.add(a, t)).toBe(true);
    const wrote = await slots(t, slotAt, 11, 60);
    // 40 blocks left at the first send, 38 with the margin: 11–14, then every 4 slots to 10 + 38.
    const expected = [11, 12, 13, 14];
    for (let s = 10 + 2 * UNTIL_EXPIRY_GAP; s <= 48; s += UNTIL_EXPIRY_GAP) expected.push(s);
    expect(wrote).toEqual(expected);
    expect(rebroadcaster.size).toBe(0);
  });
});

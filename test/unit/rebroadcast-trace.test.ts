/**
 * The rebroadcast scheduler's part of the delivery trace, with real parts: the native QUIC
 * client writing to two real QUIC servers on loopback (one refusing every connection with close
 * code 2, as an Agave validator does for a disallowed peer), the real `TraceBook`, and the real
 * LMDB store the finished trace is written to. What `sendMany`'s outcome words carry must come
 * out as attempts: written, refused with the close code, then the client's back-off.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { QuicClient, QuicServer } from '../../native/index.js';
import type { Leader, Route } from '../../src/delivery/chain-view.js';
import { DEFAULT_SEND_OPTIONS, type Accepted } from '../../src/delivery/delivery.js';
import { Rebroadcaster } from '../../src/delivery/rebroadcast.js';
import { packAttempt, type Attempt, type PackedAttempts } from '../../src/delivery/trace.js';
import { TraceBook } from '../../src/delivery/trace-book.js';
import { base58Decode, base58Encode } from '../../src/native.js';
import { Store } from '../../src/store/store.js';
import { waitFor } from '../../harness/localnet.js';
import { statusRecord } from '../../harness/records.js';
import { tempDir } from '../../harness/tmp.js';

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

function server(onTransaction: (bytes: Buffer) => void = () => {}): QuicServer {
  const s = new QuicServer({ bind: '127.0.0.1:0', identity: randomBytes(32), maxStreamsPer100ms: 0 }, (t) => onTransaction(t.bytes));
  closers.push(() => s.close());
  return s;
}

/** One live leader (`onTransaction` hears what it receives), a scheduler with a book, one flight of `maxRetries` 1. */
function oneFlight(onTransaction?: (bytes: Buffer) => void) {
  const live = server(onTransaction);
  const client = new QuicClient({ identity: randomBytes(32) });
  closers.push(() => client.close());
  const leader: Leader = { slot: 11, identity: base58Encode(randomBytes(32)), tpuQuic: live.localAddr };
  const book = new TraceBook(() => null);
  const rebroadcaster = new Rebroadcaster(client, book);
  const a = accepted({ maxRetries: 1 });
  rebroadcaster.add(a, book.open(a, null));
  return { leader, book, rebroadcaster, a };
}

function accepted(opts: { held?: boolean; maxRetries?: number; firstAttempts?: PackedAttempts } = {}): Accepted {
  const record = statusRecord({ submittedAt: Date.now(), submitSlot: 10, lastValidBlockHeight: 1_000 });
  return {
    record,
    wire: randomBytes(200),
    options: { ...DEFAULT_SEND_OPTIONS, antiMev: false, maxRetries: opts.maxRetries ?? 2 },
    receivedAt: process.hrtime.bigint(),
    sentSlot: opts.held ? -1 : 10,
    held: opts.held ?? false,
    firstAttempts: opts.firstAttempts,
  };
}

describe('rebroadcast rounds in the delivery trace', () => {
  it('records each round per leader from sendMany\'s outcome words, and writes the trace to the store when the rounds are over', async () => {
    const live = server();
    const refusing = server();
    refusing.setFaults({ refuseCode: 2 });
    const client = new QuicClient({ identity: randomBytes(32) });
    closers.push(() => client.close());
    const tmp = tempDir();
    const store = Store.open(tmp.dir);
    closers.push(() => tmp.cleanup());
    closers.push(() => store.close());
    const leaders: Leader[] = [
      { slot: 11, identity: base58Encode(randomBytes(32)), tpuQuic: live.localAddr },
      { slot: 12, identity: base58Encode(randomBytes(32)), tpuQuic: refusing.localAddr },
    ];
    const book = new TraceBook((tpu) => leaders.find((l) => l.tpuQuic === tpu)?.identity ?? null);
    book.store = store;
    const rebroadcaster = new Rebroadcaster(client, book);
    // Each round's leaders lead a window of their own after the first send's (a round skips a
    // leader that has the transaction in its window already): slot 10·s for the round of slot s.
    const routeAt = (slot: number): Route => ({ first: leaders.map((l, i) => ({ ...l, slot: 10 * slot + i })), next: [], hold: false });

    // As the ingress thread packs a first send: written to the live leader.
    const first: PackedAttempts = [];
    packAttempt(first, live.localAddr, 'written', null, 150);
    const a = accepted({ firstAttempts: first, maxRetries: 10 });
    const sig = a.record.signature;
    expect(rebroadcaster.add(a, book.open(a, null))).toBe(true);

    const attemptsOf = (round: number): Attempt[] => (book.current(sig)?.attempts ?? []).filter((x) => x.round === round);
    // Each round in the slot its schedule says (spread over the blockhash's life: 11, 12, 15, …).
    const slots: number[] = [];
    const roundAt = async (round: number): Promise<Attempt[]> => {
      const slot = rebroadcaster.nextRoundSlot(sig)!;
      slots.push(slot);
      rebroadcaster.onSlot(slot, 100 + slot - 10, { plain: routeAt(slot), antiMev: routeAt(slot) });
      return waitFor(`round ${round} outcomes`, () => (attemptsOf(round).length === 2 ? attemptsOf(round) : undefined), 10_000);
    };
    // The refusing server completes each handshake, then closes the connection with code 2: a
    // write may still make it onto the connection before the close arrives (written, as the
    // native client defines it), so rounds go on until one meets the refusal — as the send's
    // own failure (refused) or, once the client has seen the close, its back-off (not attempted).
    let round = 0;
    let refused: Attempt | undefined;
    while (refused === undefined && round < 6) {
      round++;
      const attempts = await roundAt(round);
      expect(attempts[0]).toMatchObject({ slot: slots[round - 1], leader: leaders[0]!.identity, tpu: live.localAddr, outcome: 'written', closeCode: null, reason: null });
      expect(attempts[1]).toMatchObject({ slot: slots[round - 1], leader: leaders[1]!.identity, tpu: refusing.localAddr });
      if (attempts[1]!.outcome !== 'written') refused = attempts[1];
    }
    expect(refused).toMatchObject({ closeCode: 2 });
    expect(['refused', 'backoff']).toContain(refused!.outcome);
    if (refused!.outcome === 'refused') expect(['connect_failed', 'connection_lost', 'stream_stopped']).toContain(refused!.reason);

    // Not attempted next round: the client backs off the peer that refused it, and says whose refusal.
    const after = await roundAt(round + 1);
    expect(after[0]!.outcome).toBe('written');
    expect(after[1]).toMatchObject({ outcome: 'backoff', closeCode: 2, reason: 'backoff' });

    // Settled by the tracker: the flight ends and the trace goes to the store.
    rebroadcaster.settle(sig);
    expect(rebroadcaster.size).toBe(0);
    await store.flushed();
    const stored = await waitFor('the stored trace', () => store.getTrace(sig), 5_000);
    expect(stored.attempts).toHaveLength(1 + 2 * (round + 1));
    expect(stored.attempts[0]).toMatchObject({ slot: 10, round: 0, leader: leaders[0]!.identity, atUs: 150, outcome: 'written' });
    expect(stored.attempts.slice(-3).map((x) => [x.outcome, x.closeCode])).toEqual([
      [refused!.outcome, 2],
      ['written', null],
      ['backoff', 2],
    ]);
    expect(book.size).toBe(0);
  });

  it('a trace is written under the signature bytes the hand-off located in the wire, and read back by its base58', async () => {
    const tmp = tempDir();
    const store = Store.open(tmp.dir);
    closers.push(() => tmp.cleanup());
    closers.push(() => store.close());
    // Hear the key each write is given (the real store still writes it).
    const keys: Array<Buffer | undefined> = [];
    const putTrace = store.putTrace.bind(store);
    store.putTrace = (signature, trace, key) => (keys.push(key), putTrace(signature, trace, key));
    const book = new TraceBook(() => null);
    book.store = store;
    const a = accepted();
    // As a real wire lays it out: the signature count, then the first signature's 64 bytes.
    a.wire = Buffer.concat([Buffer.from([1]), base58Decode(a.record.signature), randomBytes(100)]);
    a.signatureOffset = 1;
    book.end(book.open(a, null));
    await store.flushed();
    expect(keys).toHaveLength(1);
    expect(keys[0]!.buffer).toBe(a.wire.buffer); // read in place, not decoded from the base58 again
    expect(keys[0]!.equals(base58Decode(a.record.signature))).toBe(true);
    expect(store.getTrace(a.record.signature)).toEqual({ attempts: [], omitted: 0 });
  });

  it('a transaction with its rounds used up leaves the book when the next slot drops it', async () => {
    const { leader, book, rebroadcaster, a } = oneFlight();
    const route: Route = { first: [leader], next: [], hold: false };
    rebroadcaster.onSlot(11, 100, { plain: route, antiMev: route });
    await waitFor('round 1', () => (book.current(a.record.signature)?.attempts.length === 1 ? true : undefined), 10_000);
    rebroadcaster.onSlot(12, 101, { plain: route, antiMev: route });
    expect(rebroadcaster.size).toBe(0);
    expect(book.size).toBe(0);
  });

  it('after a chain rollback: sent every slot up to the replay bound without spending rounds, then its rounds afresh', async () => {
    const received: Buffer[] = [];
    const { leader, book, rebroadcaster, a } = oneFlight((bytes) => received.push(bytes));
    const sig = a.record.signature;
    // The leader of every slot, each slot a leader window of its own (a round skips a leader
    // that has the transaction in its window already): slot 10·s.
    const routeAt = (slot: number): Route => ({ first: [{ ...leader, slot: 10 * slot }], next: [], hold: false });
    const round = async (slot: number, attempts: number) => {
      rebroadcaster.onSlot(slot, 100, { plain: routeAt(slot), antiMev: routeAt(slot) });
      await waitFor(`the round of slot ${slot}`, () => (book.current(sig)?.attempts.length === attempts ? true : undefined), 10_000);
    };
    await round(11, 1); // its one retry, spent (the leader has it)
    // The chain comes back at slot 5: re-sent every slot up to 12 (the engine passes a blockhash's lifetime past it).
    rebroadcaster.rewind(12);
    expect(rebroadcaster.refill(sig, 1)).toBe(true);
    expect(rebroadcaster.refill('not-in-flight', 1)).toBe(false);
    for (let slot = 5; slot <= 12; slot++) await round(slot, 2 + slot - 5);
    // Then one retry afresh (refilled), and no more.
    await round(13, 10);
    rebroadcaster.onSlot(14, 100, { plain: routeAt(14), antiMev: routeAt(14) });
    expect(rebroadcaster.size).toBe(0);
    const t = book.current(sig);
    expect(t === null || t.attempts.every((x) => x.outcome === 'written')).toBe(true);
    await waitFor('every write received', () => (received.length === 10 ? true : undefined), 10_000);
    expect(received.every((b) => b.equals(a.wire))).toBe(true);
  });

  it('a held transaction: held at the blocked leader, released at the first permitted one, then written', async () => {
    const live = server();
    const client = new QuicClient({ identity: randomBytes(32) });
    closers.push(() => client.close());
    const blocked = base58Encode(randomBytes(32));
    const permitted: Leader = { slot: 12, identity: base58Encode(randomBytes(32)), tpuQuic: live.localAddr };
    const book = new TraceBook(() => null);
    const rebroadcaster = new Rebroadcaster(client, book);
    const a = accepted({ held: true, maxRetries: 0 });
    expect(rebroadcaster.add(a, book.open(a, blocked))).toBe(true);
    expect(book.current(a.record.signature)!.attempts).toEqual([expect.objectContaining({ slot: 10, round: 0, leader: blocked, tpu: null, outcome: 'held' })]);

    // Still blocked in slot 11: nothing happens.
    const hold: Route = { first: [permitted], next: [], hold: true };
    rebroadcaster.onSlot(11, 100, { plain: hold, antiMev: hold });
    expect(book.current(a.record.signature)!.attempts).toHaveLength(1);

    const open: Route = { first: [permitted], next: [], hold: false };
    rebroadcaster.onSlot(12, 101, { plain: open, antiMev: open });
    const t = await waitFor('the release round', () => {
      const c = book.current(a.record.signature);
      return c && c.attempts.length === 3 ? c : undefined;
    }, 10_000);
    expect(t.attempts.slice(1)).toEqual([
      expect.objectContaining({ slot: 12, round: 1, leader: permitted.identity, tpu: null, outcome: 'released' }),
      expect.objectContaining({ slot: 12, round: 1, leader: permitted.identity, tpu: live.localAddr, outcome: 'written' }),
    ]);
    // Settled by the tracker: the flight ends (no store here: the trace is simply let go).
    rebroadcaster.settle(a.record.signature);
    expect(book.size).toBe(0);
  });
});

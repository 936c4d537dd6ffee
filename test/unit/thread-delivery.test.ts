/**
 * A thread's delivery (`ThreadDelivery`) on its own, as an ingress thread builds it: a real
 * `ChainViewReplica` fed real snapshots, a real first sender over the native QUIC client, and the
 * hand-off sink an ingress thread gives it (the quorum wait of `ReplicationWaits` included). Until
 * issue 35 this class lived in the ingress thread's entry script and could only be reached through
 * a running service; what the core asks of it — the chain facts of one transaction, the first
 * send, the hand-over — is checked here directly. End to end: test/e2e/ingress-threads.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Rpc } from '../../src/chain/rpc.js';
import { ChainViewReplica, type ChainSnapshot } from '../../src/delivery/chain-view.js';
import { DEFAULT_SEND_OPTIONS, type Accepted } from '../../src/delivery/delivery.js';
import { FirstSender, StaleViewError } from '../../src/delivery/first-send.js';
import { ThreadDelivery } from '../../src/delivery/thread-delivery.js';
import { QuicClient } from '../../src/native.js';
import { ReplicationWaits } from '../../src/submission/replicated.js';
import { randomBlockhash, statusRecord } from '../../harness/records.js';

const NO_ROUTE = { first: [], next: [], hold: false };

/** A snapshot of `slot` at `blockHeight`, seen now, with these newly seen blockhashes. */
function snapshot(slot: number, blockHeight: number, blockhashes: Array<[string, number]> = []): ChainSnapshot {
  return { slot, seenAtMs: Date.now(), blockHeight, leader: 'Leader1111111111111111111111111111111111111', plain: NO_ROUTE, antiMev: NO_ROUTE, blockhashes, staleMs: 60_000, epoch: null };
}

function accepted(): Accepted {
  const record = statusRecord();
  return { record, wire: randomBytes(200), options: DEFAULT_SEND_OPTIONS, receivedAt: process.hrtime.bigint(), sentSlot: record.submitSlot, held: false };
}

let client: QuicClient;
let view: ChainViewReplica;
let handed: Accepted[];
let waits: ReplicationWaits | null;
let delivery: ThreadDelivery;

beforeEach(() => {
  client = new QuicClient({ identity: randomBytes(32) });
  view = new ChainViewReplica();
  handed = [];
  waits = null;
  // The sink as an ingress thread gives it: the hand-off, and the quorum wait when there is one.
  delivery = new ThreadDelivery(view, new FirstSender(client, view), new Rpc('http://127.0.0.1:9'), (a) => {
    handed.push(a);
    return waits?.wait(a.record.signature);
  });
});
afterEach(() => client.close());

describe('ThreadDelivery', () => {
  it("reads one transaction's chain facts from the thread's view: freshness, its blockhash's lifetime", () => {
    const hash = randomBlockhash();
    // No snapshot yet: stale, and nothing is known of any blockhash.
    expect(delivery.chainFacts(hash)).toEqual({ health: { synced: false, slot: 0, slotAgeMs: Infinity }, blockhashExpired: false, lastValidBlockHeight: null });
    view.apply(snapshot(1000, 100, [[hash, 250]]));
    const facts = delivery.chainFacts(hash);
    expect(facts).toMatchObject({ health: { synced: true, slot: 1000 }, blockhashExpired: false, lastValidBlockHeight: 250 });
    // A blockhash the view has not seen is not known to be expired.
    expect(delivery.chainFacts(randomBlockhash())).toMatchObject({ blockhashExpired: false, lastValidBlockHeight: null });
    // Past its last valid block height: expired. A durable nonce (null) has no blockhash lifetime.
    view.apply(snapshot(1160, 251));
    expect(delivery.chainFacts(hash)).toMatchObject({ health: { slot: 1160 }, blockhashExpired: true, lastValidBlockHeight: 250 });
    expect(delivery.chainFacts(null)).toMatchObject({ health: { slot: 1160 }, blockhashExpired: false, lastValidBlockHeight: null });
    // What /health and the front ends read is the same view. (Each read takes the wall clock
    // for the slot's age, so a millisecond can tick between them on a busy machine.)
    const before = delivery.chainFacts(null).health;
    const health = delivery.health();
    expect({ ...health, slotAgeMs: 0 }).toEqual({ ...before, slotAgeMs: 0 });
    expect(health.slotAgeMs).toBeGreaterThanOrEqual(before.slotAgeMs);
  });

  it('hands an accepted transaction to its sink; nothing to await without a quorum wait', () => {
    const a = accepted();
    expect(delivery.accepted(a)).toBeNull();
    expect(handed).toEqual([a]);
  });

  it("under ackReplication: quorum, returns the sink's wait: settled by the main thread's answer", async () => {
    waits = new ReplicationWaits();
    const a = accepted();
    const stored = delivery.accepted(a);
    expect(stored).toBeInstanceOf(Promise);
    waits.settle(a.record.signature, null);
    await expect(stored).resolves.toBeUndefined();
    const b = accepted();
    const refused = delivery.accepted(b);
    waits.settle(b.record.signature, 'NATS unreachable');
    await expect(refused).rejects.toThrow('NATS unreachable');
    expect(handed).toEqual([a, b]);
  });

  it('writes the first send from this thread through its sender: refused while the view is stale, before anything is sent', async () => {
    await expect(delivery.firstSend(statusRecord().signature, randomBytes(200), DEFAULT_SEND_OPTIONS, process.hrtime.bigint())).rejects.toBeInstanceOf(StaleViewError);
    expect(handed).toEqual([]);
  });

  it('tells its slot listeners of each new slot the view moves to, until stopped', () => {
    const slots: number[] = [];
    const stop = delivery.watchSlots((s) => slots.push(s));
    view.apply(snapshot(10, 5));
    view.apply(snapshot(10, 5));
    view.apply(snapshot(11, 6));
    stop();
    view.apply(snapshot(12, 7));
    expect(slots).toEqual([10, 11]);
  });
});

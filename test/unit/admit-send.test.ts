/**
 * The first send folded into `POST /v1/send`'s one native call (`inspectAdmitKeySend`,
 * native/src/node_admit_key.rs): on an ingress thread, a cached key's new, admitted transaction is
 * written to its leaders from inside the call that resolved the key, inspected and admitted it, so
 * the core makes no `sendFirstRoute` call of its own. What it must not change is checked here on
 * real parts — the store, accounts, key cache and native rate buckets, the process's in-flight
 * counters, a `ChainViewReplica` whose route names a real `QuicServer` on loopback, the real
 * `FirstSender` over the native QUIC client, and web3.js-signed transactions:
 * - what goes out and what is recorded is what the separate calls send and record;
 * - a transaction the call may not send (a resubmission, a deadline behind the chain, the
 *   account's in-flight cap reached, a preflight asked, a held route, a store that cannot record)
 *   goes the ordinary way and gets the ordinary answer, with nothing written by the call;
 * - the place in flight the call takes is the one the core would take (the same counters), and
 *   is given back when the send is not accepted after all.
 */
import { randomBytes } from 'node:crypto';
import { Keypair } from '@solana/web3.js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Accounts } from '../../src/accounts/accounts.js';
import { InFlight } from '../../src/accounts/in-flight.js';
import { KeyCache } from '../../src/accounts/key-cache.js';
import { DEFAULT_PLANS, type PlanTable } from '../../src/accounts/plans.js';
import { RateLimiter } from '../../src/accounts/rate-limiter.js';
import { Rpc } from '../../src/chain/rpc.js';
import { ChainViewReplica, type ChainSnapshot, type Route } from '../../src/delivery/chain-view.js';
import { DEFAULT_SEND_OPTIONS, type Accepted, type SendOptions } from '../../src/delivery/delivery.js';
import { FirstSender } from '../../src/delivery/first-send.js';
import { ThreadDelivery } from '../../src/delivery/thread-delivery.js';
import { QuicClient, QuicServer, TipSet } from '../../src/native.js';
import { Store } from '../../src/store/store.js';
import { SubmissionCore, type Caller, type KeyedCaller } from '../../src/submission/core.js';
import { Refusal } from '../../src/submission/refusals.js';
import type { ReceivedTransaction } from '../../native/index.js';
import { randomBlockhash } from '../../harness/records.js';
import { tempDir } from '../../harness/tmp.js';
import { legacyTx, makeTipAddresses, transfer } from '../../harness/transactions.js';

const LPP = 1000;
/** A send budget no case here spends (10/s), and an in-flight cap of 2 (0.2 s of it). */
const PLANS: PlanTable = { ...DEFAULT_PLANS, starter: { ...DEFAULT_PLANS.starter, maxTps: 10 } };
const IN_FLIGHT_PER_TPS = 0.2;
const MIN_TIP = DEFAULT_PLANS.starter.minTipBp * LPP;
const LIVE = randomBlockhash();
const SLOT = 500;

const tips = makeTipAddresses(1);
const tipSet = new TipSet(tips.map((t) => t.toBase58()));
const payer = Keypair.generate();
let n = 0;

/** A signed transaction (base64) tipping the minimum. */
function tx(): string {
  return legacyTx([transfer(payer.publicKey, payer.publicKey, ++n), transfer(payer.publicKey, tips[0]!, MIN_TIP)], { feePayer: payer, blockhash: LIVE }).base64;
}

let tmp: ReturnType<typeof tempDir>;
let store: Store;
let accounts: Accounts;
let apiKey: string;
let who: Caller;
let keys: KeyCache;
let inFlight: InFlight;
let server: QuicServer;
let received: ReceivedTransaction[];
let client: QuicClient;
let view: ChainViewReplica;
let handed: Accepted[];
let core: SubmissionCore;
/** `sendFirstRoute` calls the core made itself (the folded send makes none). */
let ownSends: number;

/** Slot `slot` seen now, with both routes to `leader` (held for anti-MEV when `hold`). */
function snapshot(slot: number, leader: string, hold = false): ChainSnapshot {
  const route: Route = { first: [{ slot, identity: 'Leader1111111111111111111111111111111111111', tpuQuic: leader }], next: [], hold };
  return { slot, seenAtMs: Date.now(), blockHeight: 1000, leader: 'Leader1111111111111111111111111111111111111', plain: route, antiMev: route, blockhashes: [[LIVE, 1100]], staleMs: 60_000, epoch: null };
}

beforeEach(async () => {
  tmp = tempDir();
  store = Store.open(tmp.dir);
  // The process's filter of known signatures, loaded as the service loads it at start: until it
  // answers, every signature "may be known" and nothing is sent from the call.
  expect(await store.loadKnownSignatures().done).toBe(0);
  accounts = new Accounts(store, { plans: PLANS, lamportsPerPoint: LPP });
  apiKey = accounts.createAccount('early').api_key;
  const auth = accounts.authenticate(apiKey)!;
  who = { key: auth.key, account: auth.account };
  received = [];
  server = new QuicServer({ bind: '127.0.0.1:0', identity: randomBytes(32) }, (t) => void received.push(t));
  client = new QuicClient({ identity: randomBytes(32) });
  ownSends = 0;
  const own = client.sendFirstRoute.bind(client);
  client.sendFirstRoute = (...a) => (ownSends++, own(...a));
  view = new ChainViewReplica();
  view.apply(snapshot(SLOT, server.localAddr));
  handed = [];
  const delivery = new ThreadDelivery(view, new FirstSender(client, view), new Rpc('http://127.0.0.1:9'), (a) => void handed.push(a));
  inFlight = new InFlight(PLANS, IN_FLIGHT_PER_TPS);
  core = new SubmissionCore({ plans: PLANS, lamportsPerPoint: LPP, accounts, store, limiter: new RateLimiter(PLANS), delivery, inFlight });
  keys = new KeyCache(accounts, store);
  keys.admitWith((a) => core.planFacts(a));
});
afterEach(async () => {
  client.close();
  await server.close();
  await store.close();
  tmp.cleanup();
});

function keyed(): KeyedCaller {
  return {
    keys,
    apiKey,
    authenticate: () => {
      const w = keys.authenticate(apiKey);
      if (!w) throw new Refusal('AUTH_UNAUTHORIZED', 'invalid or revoked API key');
      return w;
    },
    resolved: () => {},
  };
}

/** `POST /v1/send` of `base64` as an ingress thread answers it: the send, or the refusal's code and reason. */
async function send(base64: string, options: Partial<SendOptions> = {}): Promise<{ signature: string; slot: number } | { code: string; reason: string }> {
  try {
    return await core.sendBase64Keyed(keyed(), base64, tipSet, { ...DEFAULT_SEND_OPTIONS, ...options }, process.hrtime.bigint());
  } catch (e) {
    if (!(e instanceof Refusal)) throw e;
    return { code: e.code, reason: e.reason };
  }
}

/** Wait until the leader has `count` transactions; they are the wire of these signatures' sends. */
async function arrived(count: number): Promise<string[]> {
  await vi.waitFor(() => expect(received.length).toBe(count), { timeout: 5_000, interval: 5 });
  return received.map((r) => Buffer.from(r.bytes).subarray(1, 65).toString('hex'));
}

function sigHex(base64: string): string {
  return Buffer.from(base64, 'base64').subarray(1, 65).toString('hex');
}

describe("the first send in the send's one native call", () => {
  it('writes a new admitted transaction from inside the call, and records and hands it over as the separate calls do', async () => {
    // The first send of the key resolves it the ordinary way (a miss): the separate calls.
    const a = tx();
    expect(await send(a)).toMatchObject({ slot: SLOT });
    expect(ownSends).toBe(1);
    // From then on the key is a hit: the one call sends, the core makes no send call of its own.
    const b = tx();
    const sent = (await send(b)) as { signature: string; slot: number };
    expect(sent.slot).toBe(SLOT);
    expect(ownSends).toBe(1);
    expect(await arrived(2)).toEqual([sigHex(a), sigHex(b)]);
    expect(Buffer.from(received[1]!.bytes)).toEqual(Buffer.from(b, 'base64'));
    // Recorded and handed over as the first was: the same record, the first send's attempt.
    expect(store.getStatus(sent.signature)).toMatchObject({ status: 'sent', accountId: who.account.id, keyName: who.key.name, submitSlot: SLOT, lastValidBlockHeight: 1100 });
    expect(handed.map((h) => h.record.signature)).toEqual([handed[0]!.record.signature, sent.signature]);
    expect(handed[1]).toMatchObject({ sentSlot: SLOT, held: false });
    // One attempt, written (outcome 0) to the leader, at a whole µs after the request.
    expect(handed[1]!.firstAttempts).toEqual([server.localAddr, 0, -1, expect.any(Number), '']);
    expect(handed[0]!.firstAttempts).toEqual([server.localAddr, 0, -1, expect.any(Number), '']);
    // Both sends hold a place in flight, in the counters the core and the tracker use.
    expect(inFlight.count(who.account.id)).toBe(2);
  });

  it("sends nothing for what it may not send: the ordinary path answers, as it would without the call's send", async () => {
    const miss = tx();
    await send(miss); // the key's miss: the separate calls
    inFlight.release(who.account.id);
    const before = ownSends;
    // A resubmission in the same slot: known, answered from its record, not sent again.
    const a = tx();
    const first = (await send(a)) as { signature: string; slot: number };
    expect(await send(a)).toMatchObject({ signature: first.signature, slot: first.slot });
    // A deadline behind the chain: refused, nothing sent, no place taken.
    expect(await send(tx(), { deadlineSlot: SLOT - 1 })).toMatchObject({ code: 'TX_OPTIONS', reason: `options.deadline_slot ${SLOT - 1} has passed: the cluster is at slot ${SLOT}` });
    // A deadline at the slot itself is still deliverable: sent from the call.
    const b = tx();
    const atDeadline = (await send(b, { deadlineSlot: SLOT })) as { signature: string };
    expect(store.getStatus(atDeadline.signature)).toMatchObject({ status: 'sent', deadlineSlot: SLOT });
    expect(ownSends).toBe(before);
    expect(await arrived(3)).toEqual([sigHex(miss), sigHex(a), sigHex(b)]);
    expect(inFlight.count(who.account.id)).toBe(2);
    // The cap (2) is reached: the call writes nothing, and the core's own check answers its 429.
    const capped = await send(tx());
    expect(capped).toMatchObject({ code: 'SEND_RATE_LIMITED' });
    expect((capped as Refusal).reason).toMatch(/^2 transactions of this account are in flight \(cap 2\)/);
    expect(inFlight.count(who.account.id)).toBe(2);
    // A place given back (a settlement): the next new one goes out from the call again.
    inFlight.release(who.account.id);
    await send(tx());
    await arrived(4);
    expect(ownSends).toBe(before);
    expect(received.length).toBe(4);
  });

  it('leaves to the ordinary path a preflight, a held route, and a store that cannot record', async () => {
    await send(tx());
    inFlight.release(who.account.id);
    const before = ownSends;
    // A preflight asked: simulated first (this chain node is unreachable: the send fails there, unsent).
    await expect(send(tx(), { skipPreflight: false })).rejects.toThrow();
    expect(inFlight.count(who.account.id)).toBe(0);
    // Held for anti-MEV: accepted, not sent, by the first sender's own rule.
    view.apply(snapshot(SLOT + 1, server.localAddr, true));
    const held = (await send(tx(), { antiMev: true })) as { signature: string };
    expect(handed.at(-1)).toMatchObject({ held: true, sentSlot: -1 });
    expect(store.getStatus(held.signature)).toMatchObject({ status: 'sent' });
    // A store that cannot record: refused before anything is sent. (Marked here as the disk
    // guard marks it when a commit fails: test/faults/disk-full.test.ts makes that fault for real.)
    view.apply(snapshot(SLOT + 2, server.localAddr));
    store.health.markUnavailable('no space left on device');
    const down = await send(tx());
    expect(down).toMatchObject({ code: 'DELIVERY_FAILED' });
    expect((down as Refusal).reason).toMatch(/^store unavailable since .*: no space left on device; nothing was sent$/);
    expect(ownSends).toBe(before);
    await new Promise((r) => setTimeout(r, 200));
    expect(received.length).toBe(1);
  });

  it('gives the place in flight back, records nothing and answers 500 when no leader takes the send', async () => {
    await send(tx());
    await arrived(1);
    inFlight.release(who.account.id);
    // A leader that never answers: a UDP port nobody reads (its handshake waits out the budget).
    view.apply(snapshot(SLOT + 1, '127.0.0.1:9'));
    const before = ownSends;
    const failed = await send(tx());
    expect(failed).toMatchObject({ code: 'DELIVERY_FAILED' });
    expect((failed as Refusal).reason).toMatch(/^no leader accepted the transaction within 500 ms \(tried 127\.0\.0\.1:9/);
    expect(ownSends).toBe(before);
    expect(inFlight.count(who.account.id)).toBe(0);
    expect(handed.length).toBe(1);
  });
});

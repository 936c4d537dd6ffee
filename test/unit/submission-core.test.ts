/**
 * The submission core's pipeline on its own (issue 24 item 7): every refusal code it answers, the
 * order of its steps, and what is charged when — with the real native inspection of real signed
 * transactions, the real store, accounts, native rate buckets and in-flight counter. Only
 * delivery (`SendPath`) is a stand-in (the core's one seam to the chain and the leaders): it
 * records what it is asked and answers as each case needs, which no real chain can be made to do
 * on cue (a preflight failure, a first send no leader accepted, a stale view) in a unit test. The
 * same paths are exercised end to end against the local cluster in test/e2e/.
 */
import { Keypair, PublicKey } from '@solana/web3.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Accounts } from '../../src/accounts/accounts.js';
import { InFlight } from '../../src/accounts/in-flight.js';
import { DEFAULT_PLANS, type PlanTable } from '../../src/accounts/plans.js';
import { RateLimiter } from '../../src/accounts/rate-limiter.js';
import { DEFAULT_SEND_OPTIONS, DeliveryError, type Accepted, type ChainFacts, type FirstSend, type SendPath } from '../../src/delivery/delivery.js';
import { inspectTransaction, TipSet } from '../../src/native.js';
import { Store } from '../../src/store/store.js';
import { SubmissionCore, type Caller } from '../../src/submission/core.js';
import { Refusal } from '../../src/submission/refusals.js';
import { randomBlockhash } from '../../harness/records.js';
import { tempDir } from '../../harness/tmp.js';
import { legacyTx, makeTipAddresses, transfer } from '../../harness/transactions.js';

const LPP = 1000;
/** Small budgets, so a test can spend them: 3 sends a second, an in-flight cap of 2 × 3. */
const PLANS: PlanTable = { ...DEFAULT_PLANS, starter: { ...DEFAULT_PLANS.starter, maxTps: 3 } };
const MIN_TIP = DEFAULT_PLANS.starter.minTipBp * LPP;

/** What the core asked of the chain, in order, and how to answer. */
class RecordingDelivery implements SendPath {
  calls: string[] = [];
  accepted_: Accepted[] = [];
  expired = new Set<string>();
  synced = true;
  simulation: { err: unknown; logs: string[] | null } | null = null;
  sendFails = false;
  slot = 100;
  chainFacts(blockhash: string | null): ChainFacts {
    return {
      health: { synced: this.synced, slot: this.slot, slotAgeMs: this.synced ? 10 : 60_000 },
      blockhashExpired: blockhash !== null && this.expired.has(blockhash),
      lastValidBlockHeight: blockhash === null ? null : 250,
    };
  }
  async simulate(): Promise<never> {
    this.calls.push('simulate');
    return this.simulation as never;
  }
  async firstSend(signature: string): Promise<FirstSend> {
    this.calls.push(`firstSend ${signature.slice(0, 8)}`);
    if (this.sendFails) throw new DeliveryError('no leader accepted the transaction');
    return { slot: 100, reached: 2, held: false };
  }
  accepted(a: Accepted): null {
    this.calls.push(`accepted ${a.record.signature.slice(0, 8)}`);
    this.accepted_.push(a);
    return null;
  }
}

let tmp: ReturnType<typeof tempDir>;
let store: Store;
let accounts: Accounts;
let delivery: RecordingDelivery;
let core: SubmissionCore;
let inFlight: InFlight;
let limiter: RateLimiter;
let who: Caller;
/** When the account's send bucket was full (the test's start). */
let t0: number;
const tips = makeTipAddresses(2);
const tipSet = new TipSet(tips.map((t) => t.toBase58()));
const payer = Keypair.generate();
let n = 0;

/** A signed transaction tipping `tip` lamports, as the native inspection sees it. */
function tx(tip = MIN_TIP, opts: { blockhash?: string; to?: PublicKey } = {}) {
  const built = legacyTx([transfer(payer.publicKey, payer.publicKey, ++n), transfer(payer.publicKey, opts.to ?? tips[0]!, tip)], {
    feePayer: payer,
    blockhash: opts.blockhash ?? randomBlockhash(),
  });
  return inspectTransaction(built.base64, tipSet);
}

/** The refusal code `p` rejects with. */
async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (e instanceof Refusal) return e.code;
    throw e;
  }
  throw new Error('not refused');
}

beforeEach(() => {
  tmp = tempDir();
  store = Store.open(tmp.dir);
  accounts = new Accounts(store, { plans: PLANS, lamportsPerPoint: LPP });
  delivery = new RecordingDelivery();
  inFlight = new InFlight(PLANS, 2);
  const created = accounts.createAccount('core');
  const auth = accounts.authenticate(created.api_key)!;
  who = { key: auth.key, account: auth.account };
  limiter = new RateLimiter(PLANS);
  core = new SubmissionCore({ plans: PLANS, lamportsPerPoint: LPP, accounts, store, limiter, delivery, inFlight });
  t0 = performance.now();
});
afterEach(async () => {
  await store.close();
  tmp.cleanup();
});

const send = (r = tx(), options = DEFAULT_SEND_OPTIONS) => core.send(who, r, options, process.hrtime.bigint());
/**
 * That `charged` send tokens were taken since the test began: one more is taken and what remains
 * must be the rest, give or take what the bucket refilled meanwhile (maxTps a second).
 */
function expectCharged(charged: number): void {
  const refill = Math.ceil(((performance.now() - t0) / 1000) * PLANS.starter.maxTps);
  const { remaining } = limiter.takeSend(who.account, 1);
  expect(remaining).toBeGreaterThanOrEqual(PLANS.starter.maxTps - charged - 1);
  expect(remaining).toBeLessThanOrEqual(Math.min(PLANS.starter.maxTps - 1, PLANS.starter.maxTps - charged - 1 + refill));
}

describe('SubmissionCore', () => {
  it('accepts in order: first send, then the record, the usage count and the hand-over; answers the send slot', async () => {
    const r = tx();
    const sig = r.ok ? r.tx.signature : '';
    const sent = await send(r);
    expect(sent).toMatchObject({ signature: sig, slot: 100 });
    expect(delivery.calls).toEqual([`firstSend ${sig.slice(0, 8)}`, `accepted ${sig.slice(0, 8)}`]);
    expect(store.getStatus(sig)).toMatchObject({ status: 'sent', accountId: who.account.id, tipLamports: BigInt(MIN_TIP), submitSlot: 100, lastValidBlockHeight: 250 });
    expect(accounts.usage(who.account.id).total).toBe(1);
    expect(inFlight.count(who.account.id)).toBe(1);
    expect(delivery.accepted_[0]!.wire.length).toBeGreaterThan(0);
  });

  it('a resubmission is delivered again but never recorded, counted or handed over twice', async () => {
    const r = tx();
    await send(r);
    await send(r);
    expect(delivery.calls.filter((c) => c.startsWith('firstSend'))).toHaveLength(2);
    expect(delivery.calls.filter((c) => c.startsWith('accepted'))).toHaveLength(1);
    expect(accounts.usage(who.account.id).total).toBe(1);
    expect(inFlight.count(who.account.id)).toBe(1);
  });

  it('a resend of a known transaction answers as a resend even once its deadline_slot has passed, and after it settled', async () => {
    core = new SubmissionCore({ plans: PLANS, lamportsPerPoint: LPP, accounts, store, limiter: new RateLimiter({ ...PLANS, starter: { ...PLANS.starter, maxTps: 1000 } }), delivery, inFlight });
    const r = tx();
    const sig = r.ok ? r.tx.signature : '';
    const withDeadline = { ...DEFAULT_SEND_OPTIONS, deadlineSlot: 120 };
    expect(await send(r, withDeadline)).toMatchObject({ signature: sig, slot: 100 });
    // The client timed out and resends the same bytes; meanwhile the chain moved past the deadline.
    delivery.slot = 130;
    expect(await send(r, withDeadline)).toMatchObject({ signature: sig, slot: 100 });
    // A new transaction with that deadline is still refused.
    expect(await refusal(send(tx(), withDeadline))).toBe('TX_OPTIONS');
    // Confirmed: a resend (even asking for preflight) is answered from the record, nothing is sent or simulated.
    const c = tx();
    const csig = c.ok ? c.tx.signature : '';
    await send(c);
    await store.updateStatus({ ...store.getStatus(csig)!, status: 'confirmed', confirmedAt: Date.now(), latencyMs: 5, slot: 101 });
    delivery.calls = [];
    expect(await send(c, { ...DEFAULT_SEND_OPTIONS, skipPreflight: false })).toMatchObject({ signature: csig, slot: 100 });
    expect(delivery.calls).toEqual([]);
    expect(accounts.usage(who.account.id).total).toBe(2);
  });

  it("another account resending a known transaction gets the resend's answer but no new delivery", async () => {
    const r = tx();
    const sig = r.ok ? r.tx.signature : '';
    await send(r);
    const other = accounts.authenticate(accounts.createAccount('other').api_key)!;
    delivery.calls = [];
    expect(await core.send({ key: other.key, account: other.account }, r, DEFAULT_SEND_OPTIONS, process.hrtime.bigint())).toMatchObject({ signature: sig, slot: 100 });
    expect(delivery.calls).toEqual([]);
    expect(store.getStatus(sig)!.accountId).toBe(who.account.id);
    expect(accounts.usage(other.account.id).total).toBe(0);
    expect(inFlight.count(other.account.id)).toBe(0);
  });

  it('refuses what it must before a send token is taken: invalid, expired blockhash, no tip, tip too low, stale view', async () => {
    const unsigned = legacyTx([transfer(payer.publicKey, tips[0]!, MIN_TIP)], { feePayer: payer, blockhash: randomBlockhash() });
    const bad = Buffer.from(unsigned.bytes);
    bad[bad.length - 1]! ^= 0xff; // the signature no longer verifies
    expect(await refusal(send(inspectTransaction(bad.toString('base64'), tipSet)))).toBe('TX_SIGNATURE');
    const dead = randomBlockhash();
    delivery.expired.add(dead);
    expect(await refusal(send(tx(MIN_TIP, { blockhash: dead })))).toBe('TX_BLOCKHASH_EXPIRED');
    expect(await refusal(send(tx(MIN_TIP, { to: Keypair.generate().publicKey })))).toBe('TIP_REQUIRED');
    expect(await refusal(send(tx(MIN_TIP - 1)))).toBe('TIP_INSUFFICIENT');
    delivery.synced = false;
    expect(await refusal(send())).toBe('DELIVERY_FAILED');
    delivery.synced = true;
    // Nothing was sent, recorded or charged: the whole budget is left.
    expect(delivery.calls).toEqual([]);
    expect(accounts.usage(who.account.id).total).toBe(0);
    expectCharged(0);
  });

  it('charges a token for a preflight that fails and a first send no leader accepted, but records nothing and holds no place in flight', async () => {
    delivery.simulation = { err: { InstructionError: [0, 'Custom'] }, logs: ['Program log: insufficient funds'] };
    expect(await refusal(send(tx(), { ...DEFAULT_SEND_OPTIONS, skipPreflight: false }))).toBe('TX_PREFLIGHT');
    expect(delivery.calls).toEqual(['simulate']);
    delivery.simulation = null;
    delivery.sendFails = true;
    expect(await refusal(send())).toBe('DELIVERY_FAILED');
    delivery.sendFails = false;
    expect(delivery.calls.filter((c) => c.startsWith('accepted'))).toEqual([]);
    expect(inFlight.count(who.account.id)).toBe(0);
    expect(accounts.usage(who.account.id).total).toBe(0);
    expectCharged(2);
  });

  it('answers 429 once the send budget is spent, and once the account has its cap of transactions in flight', async () => {
    limiter.takeSend(who.account, PLANS.starter.maxTps); // the whole budget, spent elsewhere
    const limited = await send().catch((e: unknown) => e);
    // The core says when to come back and which budget refused, as numbers; HTTP renders them (rate-headers.test.ts).
    expect(limited).toMatchObject({ code: 'SEND_RATE_LIMITED', retryAfterS: 1, rate: { limit: 3, remaining: 0 }, headers: {} });
    expect(delivery.calls).toEqual([]);
    // The cap on transactions in flight is 2 × 3 = 6; a budget that cannot run out, so only the cap refuses.
    core = new SubmissionCore({ plans: PLANS, lamportsPerPoint: LPP, accounts, store, limiter: new RateLimiter({ ...PLANS, starter: { ...PLANS.starter, maxTps: 1000 } }), delivery, inFlight });
    for (let i = 0; i < 6; i++) await send();
    const err = await send().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Refusal);
    expect((err as Refusal).code).toBe('SEND_RATE_LIMITED');
    expect((err as Refusal).reason).toMatch(/6 transactions of this account are in flight \(cap 6\)/);
    expect(err).toMatchObject({ retryAfterS: 1, rate: { limit: 6, remaining: 0, resetMs: 1000 }, headers: {} });
    expect(inFlight.count(who.account.id)).toBe(6);
  });

  it("takes a batch's tokens all at once before verifying; a bad item fails alone, the others are sent", async () => {
    const items = [tx(), tx(MIN_TIP - 1), null];
    const { results } = await core.sendBatch(who, items.length, async () => items, DEFAULT_SEND_OPTIONS, process.hrtime.bigint());
    expect(results.map((x) => x.status)).toEqual(['sent', 'failed', 'failed']);
    expect(results[1]).toMatchObject({ signature: null, error: expect.stringMatching(/below the starter minimum/) });
    expect(results[2]).toMatchObject({ signature: null, error: expect.stringMatching(/base64 string/) });
    expect(accounts.usage(who.account.id).total).toBe(1);
    // Four tokens when the three were just taken: refused whole, before anything is verified or sent.
    let verified = false;
    const before = delivery.calls.length;
    expect(await refusal(core.sendBatch(who, 4, async () => ((verified = true), []), DEFAULT_SEND_OPTIONS, process.hrtime.bigint()))).toBe('SEND_RATE_LIMITED');
    expect(verified).toBe(false);
    expect(delivery.calls.length).toBe(before);
  });
});

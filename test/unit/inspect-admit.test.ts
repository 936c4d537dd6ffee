/**
 * `POST /v1/send`'s one native call for inspection, admission and the send token
 * (`SubmissionCore.sendBase64` over `inspectAdmit`, issue 35 item 1), against the JavaScript steps
 * it replaces on an ingress thread (`send`: `inspect`, the chain facts' reads, the budget's take),
 * which the main thread keeps. Both run here on the same real parts — a real `ChainViewReplica`
 * fed snapshots, the real `ThreadDelivery`, native inspection of real web3.js-signed
 * transactions, the real store, accounts and native rate buckets — and must answer the same
 * refusals, in the same order, with the same messages. Only the first send is a stand-in (no
 * leader is needed to decide admission; the delivery itself is thread-delivery.test.ts's and the
 * e2e tests').
 */
import { Keypair, PublicKey } from '@solana/web3.js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Accounts } from '../../src/accounts/accounts.js';
import { KeyCache } from '../../src/accounts/key-cache.js';
import { DEFAULT_PLANS, type PlanTable } from '../../src/accounts/plans.js';
import { RateLimiter } from '../../src/accounts/rate-limiter.js';
import { Rpc } from '../../src/chain/rpc.js';
import { ChainViewReplica, type ChainSnapshot } from '../../src/delivery/chain-view.js';
import { DEFAULT_SEND_OPTIONS, type SendPath } from '../../src/delivery/delivery.js';
import { ThreadDelivery } from '../../src/delivery/thread-delivery.js';
import { ADMIT_OUT_LEN, TipSet } from '../../src/native.js';
import { accountOverlayKey, Store } from '../../src/store/store.js';
import { SubmissionCore, type Caller, type KeyedCaller } from '../../src/submission/core.js';
import { Refusal } from '../../src/submission/refusals.js';
import { randomBlockhash, statusRecord } from '../../harness/records.js';
import { tempDir } from '../../harness/tmp.js';
import { legacyTx, makeLookupTable, makeTipAddresses, nonceAdvance, transfer, v0Tx } from '../../harness/transactions.js';

const LPP = 1000;
/** A small send budget, so a test can spend it. */
const PLANS: PlanTable = { ...DEFAULT_PLANS, starter: { ...DEFAULT_PLANS.starter, maxTps: 3 } };
const MIN_TIP = DEFAULT_PLANS.starter.minTipBp * LPP;
const NO_ROUTE = { first: [], next: [], hold: false };
const LIVE = randomBlockhash();
const DEAD = randomBlockhash();

/** Slot `slot` at block height 1000, seen `ageMs` ago: LIVE valid to 1100, DEAD to 990. */
function snapshot(slot: number, ageMs = 0, blockhashes: Array<[string, number]> = [[LIVE, 1100], [DEAD, 990]]): ChainSnapshot {
  return { slot, seenAtMs: Date.now() - ageMs, blockHeight: 1000, leader: 'Leader1111111111111111111111111111111111111', plain: NO_ROUTE, antiMev: NO_ROUTE, blockhashes, staleMs: 5_000, epoch: null };
}

let tmp: ReturnType<typeof tempDir>;
let store: Store;
let accounts: Accounts;
let view: ChainViewReplica;
let limiter: RateLimiter;
/** The ingress thread's core: its delivery keeps the chain facts natively. */
let native: SubmissionCore;
/** The same parts without the native facts: the JavaScript steps (the main thread's). */
let js: SubmissionCore;
let firstSends: number;
let who: Caller;
let apiKey: string;
/** This thread's key cache, its entries holding the plan facts `native` admits on. */
let keys: KeyCache;
const tips = makeTipAddresses(2);
const tipSet = new TipSet(tips.map((t) => t.toBase58()));
const payer = Keypair.generate();
let n = 0;

/** A signed transaction (base64) tipping `tip` lamports. */
function tx(tip = MIN_TIP, opts: { blockhash?: string; to?: PublicKey } = {}): string {
  return legacyTx([transfer(payer.publicKey, payer.publicKey, ++n), transfer(payer.publicKey, opts.to ?? tips[0]!, tip)], {
    feePayer: payer,
    blockhash: opts.blockhash ?? LIVE,
  }).base64;
}

/** What `core` answers `base64` with: the refusal's code and reason, or the send. */
async function answer(core: SubmissionCore, base64: string, caller = who): Promise<unknown> {
  try {
    return await core.sendBase64(caller, base64, tipSet, DEFAULT_SEND_OPTIONS, process.hrtime.bigint());
  } catch (e) {
    if (!(e instanceof Refusal)) throw e;
    return { code: e.code, reason: e.reason, retryAfterS: e.retryAfterS, rate: e.rate };
  }
}

beforeEach(() => {
  tmp = tempDir();
  store = Store.open(tmp.dir);
  accounts = new Accounts(store, { plans: PLANS, lamportsPerPoint: LPP });
  apiKey = accounts.createAccount('admit').api_key;
  const auth = accounts.authenticate(apiKey)!;
  who = { key: auth.key, account: auth.account };
  view = new ChainViewReplica();
  view.apply(snapshot(500));
  firstSends = 0;
  const delivery = new ThreadDelivery(view, { send: async () => ({ slot: 500 + firstSends++, reached: 1, held: false }) }, new Rpc('http://127.0.0.1:9'), () => undefined);
  const jsPath: SendPath = {
    chainFacts: (h) => delivery.chainFacts(h),
    simulate: (w) => delivery.simulate(w),
    firstSend: (...a) => delivery.firstSend(...a),
    accepted: (a) => delivery.accepted(a),
  };
  limiter = new RateLimiter(PLANS);
  native = new SubmissionCore({ plans: PLANS, lamportsPerPoint: LPP, accounts, store, limiter, delivery });
  js = new SubmissionCore({ plans: PLANS, lamportsPerPoint: LPP, accounts, store, limiter, delivery: jsPath });
  keys = new KeyCache(accounts, store);
  keys.admitWith((a) => native.planFacts(a));
});
afterEach(async () => {
  await store.close();
  tmp.cleanup();
});

/** The send tokens left (one is taken to read it): the whole budget when nothing was charged. */
function tokensLeft(): number {
  return limiter.takeSend(who.account, 1).remaining + 1;
}

describe('inspectAdmit: inspection, admission and the send token in one native call', () => {
  it('refuses as the JavaScript steps do, in their order and words, and takes no token for it', async () => {
    const bad = Buffer.from(tx(), 'base64');
    bad[bad.length - 1]! ^= 0xff; // the signature no longer verifies
    const lookupTip = v0Tx([transfer(payer.publicKey, tips[1]!, MIN_TIP)], { feePayer: payer, blockhash: LIVE, lookupTables: [makeLookupTable([tips[1]!])] }).base64;
    const cases: Array<[string, string]> = [
      ['TX_SIGNATURE', bad.toString('base64')],
      ['TX_INVALID', 'not base64!'],
      // Every later refusal applies too: the first in the order wins.
      ['TX_BLOCKHASH_EXPIRED', tx(0, { blockhash: DEAD })],
      ['TIP_REQUIRED', tx(MIN_TIP, { to: Keypair.generate().publicKey })],
      ['TIP_REQUIRED', lookupTip],
      ['TIP_INSUFFICIENT', tx(MIN_TIP - 1)],
    ];
    for (const [code, base64] of cases) {
      const got = await answer(native, base64);
      expect(got).toMatchObject({ code });
      expect(got).toEqual(await answer(js, base64));
    }
    expect(((await answer(native, lookupTip)) as Refusal).reason).toMatch(/address lookup table/);
    // Stale (seen 6 s ago, stale after 5): refused before the budget, with the view's slot and age.
    view.apply(snapshot(501, 6_000));
    const stale = (await answer(native, tx())) as Refusal;
    expect(stale).toMatchObject({ code: 'DELIVERY_FAILED', retryAfterS: 1 });
    expect(stale.reason).toMatch(/^chain view stale: last slot 501 was seen 60\d\d ms ago/);
    expect(((await answer(js, tx())) as Refusal).reason).toMatch(/^chain view stale: last slot 501 was seen 60\d\d ms ago/);
    // No snapshot with a leader: stale too.
    view.apply({ ...snapshot(502), leader: null });
    expect(await answer(native, tx())).toMatchObject({ code: 'DELIVERY_FAILED' });
    expect(firstSends).toBe(0);
    expect(tokensLeft()).toBe(PLANS.starter.maxTps);
  });

  it('admits on the facts the view holds: the last valid block height recorded, the rate decision answered; then 429 as the JavaScript take', async () => {
    const base64 = tx();
    const sent = (await answer(native, base64)) as { signature: string; slot: number; rate: unknown };
    expect(sent).toMatchObject({ slot: 500, rate: { granted: true, limit: 3, remaining: 2, retryAfterMs: 0 } });
    expect(store.getStatus(sent.signature)).toMatchObject({ status: 'sent', lastValidBlockHeight: 1100, submitSlot: 500 });
    // A durable-nonce transaction has no blockhash lifetime: none recorded.
    const nonce = legacyTx([nonceAdvance(Keypair.generate().publicKey, payer.publicKey), transfer(payer.publicKey, tips[0]!, MIN_TIP)], { feePayer: payer, blockhash: DEAD }).base64;
    const durable = (await answer(native, nonce)) as { signature: string };
    expect(store.getStatus(durable.signature)).toMatchObject({ status: 'sent', lastValidBlockHeight: null, durableNonce: true });
    // The budget (3) is spent by the third: both paths answer the same 429.
    await answer(native, tx());
    const limited = (await answer(native, tx())) as Refusal;
    expect(limited).toMatchObject({ code: 'SEND_RATE_LIMITED', retryAfterS: 1, rate: { granted: false, limit: 3, remaining: 0 } });
    expect(limited.reason).toMatch(/^send budget of 3\/s exhausted; retry in \d+ ms$/);
    expect(await answer(js, tx())).toMatchObject({ code: 'SEND_RATE_LIMITED', rate: { limit: 3, remaining: 0 } });
  });

  it("follows a plan change at the next request (the JavaScript still chooses and configures the account's bucket)", async () => {
    expect(await answer(native, tx())).toMatchObject({ rate: { limit: 3, remaining: 2 } });
    const growth: Caller = { key: who.key, account: { ...who.account, plan: 'growth' } };
    expect(await answer(native, tx(DEFAULT_PLANS.growth.minTipBp * LPP), growth)).toMatchObject({ rate: { limit: PLANS.growth.maxTps } });
    // growth's minimum is lower than starter's: a tip between the two passes only on growth.
    expect(await answer(native, tx(DEFAULT_PLANS.growth.minTipBp * LPP))).toMatchObject({ code: 'TIP_INSUFFICIENT' });
  });

  it('a resync to a lower slot forgets the blockhashes: one the old chain expired is no longer refused as expired', async () => {
    expect(await answer(native, tx(MIN_TIP, { blockhash: DEAD }))).toMatchObject({ code: 'TX_BLOCKHASH_EXPIRED' });
    expect(view.lastValidBlockHeight(DEAD)).toBe(990);
    view.apply(snapshot(400, 0, []));
    expect(view.lastValidBlockHeight(DEAD)).toBeNull();
    expect(view.isBlockhashExpired(DEAD)).toBe(false);
    expect(view.admission.size).toBe(0);
    const sent = (await answer(native, tx(MIN_TIP, { blockhash: DEAD }))) as { signature: string };
    expect(store.getStatus(sent.signature)).toMatchObject({ status: 'sent', lastValidBlockHeight: null });
    // A later snapshot at the same or a higher slot keeps what it knows.
    view.apply(snapshot(400, 0, [[LIVE, 1100]]));
    view.apply(snapshot(401, 0, []));
    expect(view.lastValidBlockHeight(LIVE)).toBe(1100);
  });

  it('refuses a too-short out buffer with a clear error, and every bad argument without crashing', async () => {
    const { inspectAdmit } = await import('../../src/native.js');
    expect(() => inspectAdmit(tx(), tipSet, view.admission, MIN_TIP, 0, new Float64Array(2))).toThrow(/out must hold 8 numbers/);
    const out = new Float64Array(ADMIT_OUT_LEN);
    // A bucket slot that does not exist: never granted (as `bucketTakeDetailed` answers it).
    expect(inspectAdmit(tx(), tipSet, view.admission, MIN_TIP, -1, out).ok).toBe(true);
    expect(out[0]).toBe(5);
    expect(out[5]).toBe(Infinity);
    view.admission.apply(NaN, NaN, NaN, true, -5, ['not base58 at all', LIVE], [1, NaN]);
    expect(view.admission.lastValid(LIVE)).toBe(0);
    expect(view.admission.lastValid('not base58 at all')).toBeNull();
  });
});

/** `key` as `POST /v1/send` presents it: resolved in the one call, or the ordinary way (`resolveKey`'s 401). */
function keyed(key: string, told: Caller[] = []): KeyedCaller {
  return {
    keys,
    apiKey: key,
    authenticate: () => {
      const w = keys.authenticate(key);
      if (!w) throw new Refusal('AUTH_UNAUTHORIZED', 'invalid or revoked API key');
      return w;
    },
    resolved: (w) => void told.push(w),
  };
}

/** What `native` answers a send presenting `key` with (as `answer`). */
async function keyedAnswer(base64: string, key = apiKey, told: Caller[] = [], core = native): Promise<unknown> {
  try {
    return await core.sendBase64Keyed(keyed(key, told), base64, tipSet, DEFAULT_SEND_OPTIONS, process.hrtime.bigint());
  } catch (e) {
    if (!(e instanceof Refusal)) throw e;
    return { code: e.code, reason: e.reason, retryAfterS: e.retryAfterS, rate: e.rate };
  }
}

describe('inspectAdmitKey: the key lookup folded into the same call', () => {
  it("on a current hit resolves the key in the send's one call: no lookup of its own, the same answers as the two calls", async () => {
    const told: Caller[] = [];
    // The first send misses (the key was never looked up on this thread): the ordinary way.
    expect(await keyedAnswer(tx(), apiKey, told)).toMatchObject({ rate: { granted: true, limit: 3, remaining: 2 } });
    expect(keys.lookups).toBe(1);
    expect(told).toEqual([]);
    // From then on: one call, and the core is told the caller (the log line's account).
    const sent = (await keyedAnswer(tx(), apiKey, told)) as { signature: string; rate: unknown };
    expect(sent.rate).toMatchObject({ granted: true, limit: 3, remaining: 1 });
    expect(store.getStatus(sent.signature)).toMatchObject({ status: 'sent', accountId: who.account.id, keyName: who.key.name });
    expect(told.map((w) => [w.account.id, w.key.name])).toEqual([[who.account.id, who.key.name]]);
    // Every refusal as the two calls answer it, in their order and words, and no token for it.
    const bad = Buffer.from(tx(), 'base64');
    bad[bad.length - 1]! ^= 0xff;
    for (const base64 of [bad.toString('base64'), 'not base64!', tx(0, { blockhash: DEAD }), tx(MIN_TIP, { to: Keypair.generate().publicKey }), tx(MIN_TIP - 1)]) {
      const got = await keyedAnswer(base64);
      expect(got).toHaveProperty('code');
      expect(got).toEqual(await answer(native, base64));
    }
    // The third send spends the budget (3); the fourth is the same 429 as the two calls' take.
    await keyedAnswer(tx());
    const limited = await keyedAnswer(tx());
    expect(limited).toMatchObject({ code: 'SEND_RATE_LIMITED', retryAfterS: 1, rate: { granted: false, limit: 3, remaining: 0 } });
    expect(await answer(native, tx())).toMatchObject({ code: 'SEND_RATE_LIMITED', rate: { limit: 3, remaining: 0 } });
    expect(keys.lookups).toBe(1);
    // Off an ingress thread (no native chain facts) the key is resolved the ordinary way.
    expect(await keyedAnswer(tx(), apiKey, told, js)).toMatchObject({ code: 'SEND_RATE_LIMITED' });
    expect(keys.lookups).toBe(2);
  });

  it('asks JavaScript for an unknown, a revoked or an over-long key, and refuses it 401 whatever the transaction', async () => {
    const second = accounts.createKey(who.account.id, 'second').api_key;
    await keyedAnswer(tx(), second);
    const bad = Buffer.from(tx(), 'base64');
    bad[bad.length - 1]! ^= 0xff;
    for (const base64 of [tx(), 'not base64!', bad.toString('base64'), tx(0)]) {
      expect(await keyedAnswer(base64, 'lf_unknown')).toMatchObject({ code: 'AUTH_UNAUTHORIZED' });
      expect(await keyedAnswer(base64, 'lf_' + 'a'.repeat(300))).toMatchObject({ code: 'AUTH_UNAUTHORIZED' });
    }
    accounts.revokeKey(who.account.id, 'second');
    const before = keys.lookups;
    expect(await keyedAnswer(tx(), second)).toMatchObject({ code: 'AUTH_UNAUTHORIZED' });
    expect(keys.lookups).toBe(before + 1);
    // Only the first send took a token.
    expect(tokensLeft()).toBe(PLANS.starter.maxTps - 1);
  });

  it('admits the send after a plan set by an admin on the new plan: its minimum tip and its budget', async () => {
    const growthMin = DEFAULT_PLANS.growth.minTipBp * LPP; // below starter's
    await keyedAnswer(tx());
    expect(await keyedAnswer(tx(growthMin))).toMatchObject({ code: 'TIP_INSUFFICIENT' });
    const folded = keys.lookups;
    accounts.setPlan(who.account.id, 'growth');
    // The entry's account changed: read again (one lookup), with the new plan's facts.
    expect(await keyedAnswer(tx(growthMin))).toMatchObject({ rate: { granted: true, limit: PLANS.growth.maxTps } });
    expect(keys.lookups).toBe(folded + 1);
    expect(await keyedAnswer(tx(growthMin))).toMatchObject({ rate: { granted: true, limit: PLANS.growth.maxTps } });
    expect(keys.lookups).toBe(folded + 1);
    // And back down: starter's minimum and budget again at once.
    accounts.setPlan(who.account.id, 'starter');
    expect(await keyedAnswer(tx(growthMin))).toMatchObject({ code: 'TIP_INSUFFICIENT' });
    expect(await keyedAnswer(tx())).toMatchObject({ rate: { limit: 3 } });
  });

  it('admits the send after an upgrade by points on the new plan, while the credit is held and once it is committed', async () => {
    const growthMin = DEFAULT_PLANS.growth.minTipBp * LPP;
    await keyedAnswer(tx());
    await keyedAnswer(tx());
    const folded = keys.lookups;
    // A confirmation worth growth's threshold: its credit is in the overlay until it commits.
    const tip = BigInt(DEFAULT_PLANS.growth.thresholdBp * LPP);
    const rec = statusRecord({ accountId: who.account.id, tipLamports: tip, status: 'confirmed', confirmedAt: Date.now(), latencyMs: 5, slot: 9 });
    const second = accounts.createKey(who.account.id, 'second').api_key;
    const committed = store.updateStatus(rec, null, accounts.confirmationCredit(tip, Date.now()));
    expect(await keyedAnswer(tx(growthMin))).toMatchObject({ rate: { granted: true, limit: PLANS.growth.maxTps } });
    expect(keys.lookups).toBe(folded + 1);
    // A key first seen while the credit is held: entered, on the held account, never folded.
    expect(await keyedAnswer(tx(growthMin), second)).toMatchObject({ rate: { granted: true, limit: PLANS.growth.maxTps } });
    expect(await keyedAnswer(tx(growthMin), second)).toMatchObject({ rate: { granted: true, limit: PLANS.growth.maxTps } });
    expect(keys.lookups).toBe(folded + 3);
    await committed;
    await store.flushed();
    expect(await keyedAnswer(tx(growthMin))).toMatchObject({ rate: { granted: true, limit: PLANS.growth.maxTps } });
    // The overlay lets the credit go a grace after its commit is durable.
    await vi.waitFor(() => expect(store.heldAccount(accountOverlayKey(who.account.id))).toBeUndefined(), { timeout: 10_000, interval: 20 });
    expect(await keyedAnswer(tx(growthMin))).toMatchObject({ rate: { granted: true, limit: PLANS.growth.maxTps } });
    expect(await keyedAnswer(tx(growthMin), second)).toMatchObject({ rate: { granted: true, limit: PLANS.growth.maxTps } });
    // Folded again once the entries' account is read: on growth's facts.
    const read = keys.lookups;
    expect(await keyedAnswer(tx(growthMin))).toMatchObject({ rate: { granted: true, limit: PLANS.growth.maxTps } });
    expect(await keyedAnswer(tx(growthMin), second)).toMatchObject({ rate: { granted: true, limit: PLANS.growth.maxTps } });
    expect(keys.lookups).toBe(read);
  });

  it('refuses a too-short out buffer with a clear error', async () => {
    const { inspectAdmitKey } = await import('../../src/native.js');
    expect(() => inspectAdmitKey(apiKey, tx(), tipSet, view.admission, (keys as unknown as { table: import('../../src/native.js').KeyTable }).table, new Float64Array(ADMIT_OUT_LEN))).toThrow(/out must hold 9 numbers/);
  });
});

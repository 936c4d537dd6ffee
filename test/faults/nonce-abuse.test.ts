/**
 * Defect 2 of "Honest under faults, closed to abuse": fake durable-nonce transactions used to be
 * accepted and tracked forever, and nothing capped how many transactions an account could keep
 * in flight. Against the real service (two ingress threads, real LMDB, real QUIC) on the local
 * cluster, with real web3.js transactions:
 * - fake nonce transactions (random nonce account, unfunded payer, random "blockhash") are
 *   accepted, then expired by the tracker's nonce check within its bound, and
 *   `landfall_tracker_pending` returns to its baseline; with the nonce account in a lookup table
 *   they are no durable-nonce transactions at all (SIMD-0242) and expire with their blockhash;
 * - a real durable-nonce transaction lands and is never expired by the check, also one that
 *   stays pending across checks (its payer funded only later);
 * - a nonce transaction whose nonce another transaction advanced first is expired;
 * - an account's transactions in flight are capped process-wide across both threads (429 with
 *   the in-flight reason, also per batch item), the cap counts what a restart resumes, and sends
 *   are accepted again once some settle or expire.
 */
import {
  Keypair,
  LAMPORTS_PER_SOL,
  MessageV0,
  NONCE_ACCOUNT_LENGTH,
  NonceAccount,
  SystemProgram,
  type PublicKey,
} from '@solana/web3.js';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLANS } from '../../src/accounts/plans.js';
import type { StatusChange } from '../../src/tracker/tracker.js';
import { confirmed, waitFor } from '../../harness/localnet.js';
import { fetchMetric } from '../../harness/metrics.js';
import { account, blockhash, payer, send, sendBatch, settled, startStack, status, tipped, type Stack } from '../../harness/stack.js';
import { legacyTx, makeLookupTable, nonceAdvance, randomBlockhash, transfer, v0Tx, web3Base58 } from '../../harness/transactions.js';

/** `inFlightPerTps` for this file: caps of 4 (starter), 15 (growth), 75 (whale). */
const PER_TPS = 0.5;
/**
 * What the service promises for a durable-nonce transaction its nonce account cannot verify:
 * checked 1–2 s after acceptance (first check at 1 s, sweeps every second), expired after one
 * last status look. docs/failure-behaviour.md states this bound; it is the tests' wait timeout.
 */
const NONCE_EXPIRY_BOUND_MS = 5_000;
const WHALE_TIP = DEFAULT_PLANS.whale.minTipBp * 1000;
const GROWTH_TIP = DEFAULT_PLANS.growth.minTipBp * 1000;

let s: Stack;
const changes: StatusChange[] = [];

beforeAll(async () => {
  s = await startStack({ localnet: { seed: 'nonce-abuse' }, config: { ingressThreads: 2, inFlightPerTps: PER_TPS } });
  s.svc.onStatus((c) => changes.push(c));
});

afterAll(async () => {
  await s?.close();
});

/** One sample of the service's `/metrics` (summed over label sets matching `labels`). */
function metric(name: string, labels: Record<string, string> = {}): Promise<number> {
  return fetchMetric(s.svc.url, name, labels);
}

/** The reason the tracker gave for expiring `signature`, if it did. */
function reasonOf(signature: string): string | undefined {
  return changes.find((c) => c.source === 'expiry' && c.record.signature === signature)?.reason;
}

/** A fake durable-nonce transaction: random nonce account, unfunded payer, random "blockhash". */
async function fakeNonceTx(tip = WHALE_TIP) {
  const unfunded = Keypair.generate();
  return tipped(s, unfunded, tip, { extra: [nonceAdvance(Keypair.generate().publicKey, unfunded.publicKey)], blockhash: randomBlockhash() });
}

/** A nonce account on the cluster with `authority`, created and paid by `funder`; its stored nonce. */
async function nonceAccount(funder: Keypair, authority: PublicKey): Promise<{ nonce: PublicKey; value: () => Promise<string> }> {
  const nonce = Keypair.generate();
  const rent = await s.connection.getMinimumBalanceForRentExemption(NONCE_ACCOUNT_LENGTH);
  const create = legacyTx(
    SystemProgram.createNonceAccount({ fromPubkey: funder.publicKey, noncePubkey: nonce.publicKey, authorizedPubkey: authority, lamports: rent }).instructions,
    { feePayer: funder, signers: [nonce], blockhash: await blockhash(s) },
  );
  await confirmed(s.connection, await s.connection.sendRawTransaction(create.bytes));
  const value = async () => NonceAccount.fromAccountData((await s.connection.getAccountInfo(nonce.publicKey, 'processed'))!.data).nonce;
  return { nonce: nonce.publicKey, value };
}

describe('fake durable-nonce transactions', () => {
  it('are accepted, expired by the nonce check within its bound, and the pending gauge returns to its baseline', async () => {
    const bot = account(s, 'whale');
    const baseline = await metric('landfall_tracker_pending');
    const expiredBefore = await metric('landfall_tracker_nonce_expired_total');
    const fakes = await Promise.all(Array.from({ length: 40 }, () => fakeNonceTx()));
    const all = fakes;
    const replies = await Promise.all(all.map((tx) => send(s, bot.key, tx.base64)));
    expect(replies.map((r) => r.status), JSON.stringify(replies.find((r) => r.status !== 200)?.body)).toEqual(all.map(() => 200));
    const acceptedAt = Date.now();
    // Watched (and counted in flight) at first: the main thread hears of them after the replies.
    await waitFor('all watched', () => (all.every((tx) => s.svc.tracker.isWatching(tx.signature) || reasonOf(tx.signature)) ? true : undefined));

    await waitFor('every fake expired', () => (all.every((tx) => !s.svc.tracker.isWatching(tx.signature)) ? true : undefined), NONCE_EXPIRY_BOUND_MS);
    console.log(`[nonce-abuse] ${all.length} fake nonce transactions expired ${Date.now() - acceptedAt} ms after the last was accepted`);
    expect(await metric('landfall_tracker_pending')).toBe(baseline);
    expect(await metric('landfall_tracker_nonce_expired_total')).toBe(expiredBefore + all.length);
    expect(s.svc.inFlightCount(bot.id)).toBe(0);
    for (const tx of all) {
      const r = await settled(s, bot.key, tx.signature, (b) => b.expired === true);
      expect(r).toMatchObject({ status: 'sent', expired: true, confirmed_at: null, slot: null });
    }
    for (const tx of fakes) expect(reasonOf(tx.signature)).toMatch(/^nonce account \w+ does not exist$/);
  });

  it('at 20/s for 15 s (the defect: pending grew without bound) keep the tracker bounded by rate × the expiry bound', async () => {
    const RATE = 20;
    // Three times the expiry bound: a tracker that keeps them any longer than the bound is over
    // RATE × the bound well before the end (one that never lets go holds 3 × that).
    const SECONDS = 15;
    // Two accounts, so each stays far below its in-flight cap (75 here).
    const bots = [account(s, 'whale'), account(s, 'whale')];
    const baseline = s.svc.tracker.size;
    const rssBefore = process.memoryUsage().rss;
    const samples: number[] = [];
    let sweepMaxMs = 0;
    const sampler = setInterval(() => {
      samples.push(s.svc.tracker.size - baseline);
      sweepMaxMs = Math.max(sweepMaxMs, s.svc.tracker.stats.lastSweepMs);
    }, 250);
    const replies: Promise<{ status: number; body: unknown }>[] = [];
    const t0 = Date.now();
    for (let i = 0; i < RATE * SECONDS; i++) {
      const due = t0 + (i * 1000) / RATE;
      await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now())));
      const tx = await fakeNonceTx();
      replies.push(send(s, bots[i % 2]!.key, tx.base64));
    }
    const answers = await Promise.all(replies);
    const statuses = answers.map((r) => r.status);
    await waitFor('pending back to its baseline', () => (s.svc.tracker.size === baseline ? true : undefined), NONCE_EXPIRY_BOUND_MS);
    clearInterval(sampler);
    expect(statuses.filter((c) => c !== 200), JSON.stringify(answers.find((r) => r.status !== 200)?.body)).toEqual([]);
    const maxPending = Math.max(...samples);
    console.log(
      `[nonce-abuse] ${RATE * SECONDS} fake nonce transactions at ${RATE}/s: tracker pending above baseline max ${maxPending}, ` +
        `mean ${(samples.reduce((a, b) => a + b, 0) / samples.length).toFixed(1)}; longest sweep ${sweepMaxMs.toFixed(1)} ms; ` +
        `RSS ${(rssBefore / 2 ** 20).toFixed(0)} → ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB (test process, service in it)`,
    );
    // Each is gone within the expiry bound, so no more than that bound's worth is ever pending.
    expect(maxPending).toBeLessThanOrEqual((RATE * NONCE_EXPIRY_BOUND_MS) / 1000);
    for (const b of bots) expect(s.svc.inFlightCount(b.id)).toBe(0);
  }, 60_000);

  it('through a lookup table are no durable-nonce transactions (SIMD-0242) and expire with their blockhash', async () => {
    const bot = account(s, 'whale');
    // The nonce account comes from a lookup table (one that does not even exist): the validator
    // checks the blockhash as usual, so the random one makes it dead from the start.
    const viaTable = Array.from({ length: 4 }, () => {
      const unfunded = Keypair.generate();
      const table = makeLookupTable([Keypair.generate().publicKey, Keypair.generate().publicKey]);
      const tx = v0Tx([nonceAdvance(table.state.addresses[1]!, unfunded.publicKey), transfer(unfunded.publicKey, s.tips[0]!, WHALE_TIP)], {
        feePayer: unfunded,
        blockhash: randomBlockhash(),
        lookupTables: [table],
      });
      expect((tx.compiled as MessageV0).addressTableLookups).toHaveLength(1);
      return { ...tx, signature: web3Base58(tx.signatures[0]!) };
    });
    const replies = await Promise.all(viaTable.map((tx) => send(s, bot.key, tx.base64)));
    expect(replies.map((r) => r.status)).toEqual(viaTable.map(() => 200));
    for (const tx of viaTable) expect(s.svc.store.getStatus(tx.signature)?.durableNonce).toBe(false);
    // An unknown blockhash lives 150 + 32 blocks (18.2 s of 100 ms slots), then is checked with isBlockhashValid.
    // Waits for what it asserts, the records expired (not "not watched": also true before the
    // accepted batch reached the tracker on the main thread, which failed a fresh-clone run in 28 ms).
    await waitFor('expired by blockhash', () => (viaTable.every((tx) => s.svc.store.getStatus(tx.signature)?.expired === true) ? true : undefined), 40_000);
    for (const tx of viaTable) expect((await status(s, bot.key, tx.signature)).body).toMatchObject({ status: 'sent', expired: true });
    expect(s.svc.inFlightCount(bot.id)).toBe(0);
  }, 60_000);
});

describe('real durable-nonce transactions', () => {
  it('land and are not expired by the check', async () => {
    const bot = account(s, 'whale');
    const user = await payer(s, 10);
    const { nonce, value } = await nonceAccount(user, user.publicKey);
    const stored = await value();
    const tx = await tipped(s, user, WHALE_TIP, { extra: [nonceAdvance(nonce, user.publicKey)], blockhash: stored });
    expect((await send(s, bot.key, tx.base64)).status).toBe(200);
    const r = await settled(s, bot.key, tx.signature);
    expect(r).toMatchObject({ status: 'confirmed' });
    expect(r.expired).toBeUndefined();
    expect(await value()).not.toBe(stored); // it advanced the nonce itself
    expect(s.svc.inFlightCount(bot.id)).toBe(0);
  });

  it('stay pending across nonce checks while they cannot pay yet, then land once the payer is funded', async () => {
    const bot = account(s, 'whale');
    const funder = await payer(s, 10);
    const user = Keypair.generate(); // the fee payer and nonce authority, unfunded for now
    const { nonce, value } = await nonceAccount(funder, user.publicKey);
    const stored = await value();
    const tx = await tipped(s, user, WHALE_TIP, { extra: [nonceAdvance(nonce, user.publicKey)], blockhash: stored });
    const checksBefore = s.svc.tracker.stats.nonceChecks;
    expect((await send(s, bot.key, tx.base64, { max_retries: 0 })).status).toBe(200);
    // Two checks passed (the first ~1 s after acceptance, the next 5 s later): still pending.
    await waitFor('two nonce checks', () => (s.svc.tracker.stats.nonceChecks >= checksBefore + 2 ? true : undefined), 15_000);
    expect(s.svc.tracker.isWatching(tx.signature)).toBe(true);
    const pending = (await status(s, bot.key, tx.signature)).body;
    expect(pending.status).toBe('sent');
    expect(pending.expired).toBeUndefined();
    expect(s.svc.inFlightCount(bot.id)).toBe(1);

    await s.net.airdrop(user.publicKey, LAMPORTS_PER_SOL);
    // Delivered again (a known signature is resent, never recorded twice): now it can pay.
    expect((await send(s, bot.key, tx.base64)).status).toBe(200);
    const r = await settled(s, bot.key, tx.signature);
    expect(r).toMatchObject({ status: 'confirmed' });
    expect(r.expired).toBeUndefined();
    expect(await value()).not.toBe(stored);
    await waitFor('in flight back to 0', () => (s.svc.inFlightCount(bot.id) === 0 ? true : undefined));
  });

  it('are expired when another transaction advanced the nonce first', async () => {
    const bot = account(s, 'whale');
    const user = await payer(s, 10);
    const { nonce, value } = await nonceAccount(user, user.publicKey);
    const stored = await value();
    const mine = await tipped(s, user, WHALE_TIP, { extra: [nonceAdvance(nonce, user.publicKey)], blockhash: stored });
    // Another transaction with the same nonce lands first (straight through the cluster's RPC).
    const other = legacyTx([nonceAdvance(nonce, user.publicKey), transfer(user.publicKey, user.publicKey, 1)], { feePayer: user, blockhash: stored });
    await confirmed(s.connection, await s.connection.sendRawTransaction(other.bytes));
    const advanced = await value();
    expect(advanced).not.toBe(stored);

    expect((await send(s, bot.key, mine.base64)).status).toBe(200);
    await waitFor('expired', () => (s.svc.store.getStatus(mine.signature)?.expired === true ? true : undefined), NONCE_EXPIRY_BOUND_MS);
    expect(await settled(s, bot.key, mine.signature, (b) => b.expired === true)).toMatchObject({ status: 'sent', expired: true });
    const change = changes.find((c) => c.record.signature === mine.signature);
    expect(change?.reason).toBe(`nonce account ${nonce.toBase58()} holds nonce ${advanced}, not the transaction's ${stored}`);
    expect((await s.connection.getSignatureStatuses([mine.signature], { searchTransactionHistory: true })).value).toEqual([null]);
    expect(s.svc.inFlightCount(bot.id)).toBe(0);
  });
});

describe('transactions in flight per account', () => {
  const CONNECTIONS = 16;
  let agents: Agent[];

  beforeAll(() => {
    agents = Array.from({ length: CONNECTIONS }, () => new Agent({ connections: 1, pipelining: 1 }));
  });
  afterAll(async () => {
    await Promise.all(agents.map((a) => a.close()));
  });

  /** POST over one kept-alive connection; which ingress thread answered (from the request id). */
  async function post(agent: Agent, path: string, key: string, body: unknown) {
    const r = await request(`${s.svc.url}${path}`, {
      method: 'POST',
      dispatcher: agent,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const json = (await r.body.json()) as any;
    const m = /^[0-9a-f]{8}-(\d+)-[0-9a-z]+$/.exec(String(r.headers['x-request-id']));
    return { status: r.statusCode, body: json, headers: r.headers, thread: m ? Number(m[1]) : -1 };
  }

  it('are capped across both ingress threads with a clear 429, counted again after a restart, and accepted again once some settle', async () => {
    const bot = account(s, 'growth');
    const cap = Math.floor(PER_TPS * DEFAULT_PLANS.growth.maxTps); // 15
    const limitedBefore = await metric('landfall_rate_limited_total', { budget: 'in_flight' });
    // Valid, with a live blockhash, but never landing (the payer holds nothing): in flight until the blockhash dies.
    const hash = await blockhash(s);
    const stuck = await Promise.all(Array.from({ length: 2 * cap }, () => tipped(s, Keypair.generate(), GROWTH_TIP, { blockhash: hash })));
    const replies = await Promise.all(stuck.map((tx, i) => post(agents[i % CONNECTIONS]!, '/v1/send', bot.key, { transaction: tx.base64 })));
    expect(new Set(replies.map((r) => r.thread)).size).toBe(2);
    const accepted = replies.filter((r) => r.status === 200);
    const refused = replies.filter((r) => r.status === 429);
    expect(accepted.length).toBe(cap);
    expect(refused.length).toBe(cap);
    for (const r of refused) {
      expect(r.body.error).toEqual({ code: 429, message: 'Rate limit exceeded', reason: `${cap} transactions of this account are in flight (cap ${cap}); wait for some to settle` });
      expect(r.headers['retry-after']).toBe('1');
      expect(r.headers['ratelimit-limit']).toBe(String(cap));
    }
    expect(s.svc.inFlightCount(bot.id)).toBe(cap);
    expect(await metric('landfall_rate_limited_total', { budget: 'in_flight' })).toBe(limitedBefore + cap);
    // Batch items past the cap fail alone, with the same reason (after the send bucket, which the
    // 30 sends above emptied, has refilled the batch's 2 tokens: 30/s).
    await new Promise((r) => setTimeout(r, 200));
    const extra = await Promise.all([0, 1].map(() => tipped(s, Keypair.generate(), GROWTH_TIP, { blockhash: hash })));
    const batch = await sendBatch(s, bot.key, extra.map((t) => t.base64));
    expect(batch.status).toBe(200);
    for (const item of batch.body.results) {
      expect(item).toMatchObject({ status: 'failed', signature: null, error: `Rate limit exceeded: ${cap} transactions of this account are in flight (cap ${cap}); wait for some to settle` });
    }

    // A restart resumes the pending ones and counts them: still at the cap.
    await s.stop();
    await s.start();
    expect(s.svc.inFlightCount(bot.id)).toBe(cap);
    const after = await send(s, bot.key, (await tipped(s, Keypair.generate(), GROWTH_TIP)).base64);
    expect(after.status).toBe(429);
    expect(after.body.error.reason).toBe(`${cap} transactions of this account are in flight (cap ${cap}); wait for some to settle`);

    // Their blockhash dies (150 slots of 100 ms): they expire, and the account may send again.
    await waitFor('the stuck transactions to expire', () => (s.svc.inFlightCount(bot.id) === 0 ? true : undefined), 30_000);
    const accSigs = accepted.map((r) => r.body.signature as string);
    for (const sig of accSigs) expect((await status(s, bot.key, sig)).body).toMatchObject({ status: 'sent', expired: true });
    const from = await payer(s);
    const good = await tipped(s, from, GROWTH_TIP);
    expect((await send(s, bot.key, good.base64)).status).toBe(200);
    expect(s.svc.inFlightCount(bot.id)).toBe(1);
    expect(await settled(s, bot.key, good.signature)).toMatchObject({ status: 'confirmed' });
    // Settled: its place is given back.
    await waitFor('in flight back to 0', () => (s.svc.inFlightCount(bot.id) === 0 ? true : undefined));
  }, 90_000);
});

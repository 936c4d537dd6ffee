/**
 * `GET /v1/status/{signature}/trace` end to end: the full service (with its ingress thread, so
 * the first send's attempts travel in the accepted hand-off and a trace in flight is asked of the
 * main thread) on the local cluster, with real web3.js transactions. Landed, failed on chain and
 * expired transactions; a validator refusing connections with a close code; the 404s and the
 * query budget of the status endpoint.
 */
import { Keypair, LAMPORTS_PER_SOL } from '@solana/web3.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLANS } from '../../src/accounts/plans.js';
import { LandfallApiError, LandfallClient } from '../../src/client/index.js';
import { transfer } from '../../harness/transactions.js';
import { waitFor } from '../../harness/localnet.js';
import { account, nextSlot, payer, send, settled, startStack, tipped, type Stack } from '../../harness/stack.js';

async function trace(s: Stack, key: string, signature: string) {
  const r = await fetch(`${s.svc.url}/v1/status/${signature}/trace`, { headers: { authorization: `Bearer ${key}` } });
  return { status: r.status, headers: r.headers, body: (await r.json()) as any };
}

/** The trace once the service has written it (its flight is over and the write committed). */
async function finishedTrace(s: Stack, key: string, signature: string, done: (t: any) => boolean) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const t = await trace(s, key, signature);
    expect(t.status).toBe(200);
    if (done(t.body)) return t.body;
    if (Date.now() > deadline) throw new Error(`trace of ${signature} never finished: ${JSON.stringify(t.body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Rounds never go backwards, and every attempt has the fields the document promises. */
function expectWellFormed(t: any): void {
  const rounds = t.attempts.map((a: any) => a.round);
  expect(rounds).toEqual([...rounds].sort((a, b) => a - b));
  for (const a of t.attempts) {
    expect(a.at_us).toBeGreaterThanOrEqual(0);
    expect(a.slot).toBeGreaterThan(0);
    expect(['written', 'pending', 'refused', 'backoff', 'queue_full', 'failed', 'held', 'released']).toContain(a.outcome);
  }
}

describe('delivery trace on the local cluster', () => {
  let s: Stack;
  let bot: { id: string; key: string };
  let from: Keypair;

  beforeAll(async () => {
    // The starter plan's query budget is cut to 1 a second (burst 1), so the budget test below
    // can see one request spend it, whatever the machine's speed.
    s = await startStack({
      localnet: { slotMs: 100, seed: 'trace-e2e' },
      config: { plans: { ...DEFAULT_PLANS, starter: { ...DEFAULT_PLANS.starter, queryTps: 1 } } },
    });
    bot = account(s);
    from = await payer(s);
  });
  afterAll(async () => {
    await s?.close();
  });

  /** The landed transaction's finished trace, for the restart test. */
  let landed: { signature: string; trace: any } | undefined;

  it('a landed transaction: written to the leader it landed with, final state "landed in slot N"', async () => {
    const tx = await tipped(s, from, 300_000);
    const r = await send(s, bot.key, tx.base64);
    expect(r.status).toBe(200);
    const rec = await settled(s, bot.key, tx.signature);
    expect(rec.status).toBe('confirmed');
    const t = await finishedTrace(s, bot.key, tx.signature, (b) => b.final_state === 'landed');
    expect(t).toMatchObject({ signature: tx.signature, status: 'confirmed', final_state: 'landed', cause: `landed in slot ${rec.slot}`, attempts_omitted: 0 });
    expectWellFormed(t);
    // The first send (round 0) was made in the submission slot and written to a leader.
    const first = t.attempts.filter((a: any) => a.round === 0);
    expect(first.length).toBeGreaterThan(0);
    for (const a of first) expect(a.slot).toBe(r.body.slot);
    expect(first.some((a: any) => a.outcome === 'written')).toBe(true);
    // The validator that included it leads the slot it landed in: the trace names it, by
    // identity and TPU address, with the transaction written to it — or queued to it in the
    // first send without its outcome awaited ('pending': the first send answers once one leader
    // has it, so the lander may well be the other leader of that send, as a CI run saw).
    const lander = s.net.validators.find((v) => v.name === s.net.leaderAt(rec.slot).name)!;
    const toLander = t.attempts.filter((a: any) => a.leader === lander.identity && a.tpu === lander.tpuQuic);
    expect(toLander.length, JSON.stringify(t.attempts)).toBeGreaterThan(0);
    expect(toLander.some((a: any) => a.outcome === 'written' || (a.outcome === 'pending' && a.round === 0)), JSON.stringify(toLander)).toBe(true);
    expect(t.leaders_reached).toBeGreaterThanOrEqual(1);
    expect(t.leaders_reached).toBeLessThanOrEqual(t.leaders_tried);

    landed = { signature: tx.signature, trace: t };
    // The typed client reads the same trace, and a foreign signature is its 404 error.
    const client = new LandfallClient({ url: s.svc.url, apiKey: bot.key, stream: false });
    const other = new LandfallClient({ url: s.svc.url, apiKey: account(s).key, stream: false });
    try {
      expect(await client.trace(tx.signature)).toEqual(t);
      const err = await other.trace(tx.signature).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LandfallApiError);
      expect((err as LandfallApiError).status).toBe(404);
    } finally {
      client.close();
      other.close();
    }
  });

  it('a transaction that fails on chain: final state "failed on chain"', async () => {
    const poor = await payer(s, 0.05);
    const tx = await tipped(s, poor, 300_000, { extra: [transfer(poor.publicKey, Keypair.generate().publicKey, LAMPORTS_PER_SOL)] });
    expect((await send(s, bot.key, tx.base64)).status).toBe(200);
    const rec = await settled(s, bot.key, tx.signature);
    expect(rec.status).toBe('failed');
    const t = await finishedTrace(s, bot.key, tx.signature, (b) => b.final_state === 'failed');
    expect(t).toMatchObject({ status: 'failed', cause: `failed on chain in slot ${rec.slot}: ${rec.err_reason}`, err: rec.err, latency_ms: rec.latency_ms });
    expect(rec.err_reason).toMatch(/custom program error/);
    expect(t.attempts.some((a: any) => a.outcome === 'written')).toBe(true);
    expectWellFormed(t);
  });

  it('deadline_slot: no round after it, then "deadline passed" while the blockhash is still valid, not "expired"', async () => {
    const broke = Keypair.generate(); // never funded: no leader includes it
    const tx = await tipped(s, broke, 300_000);
    const deadline = s.svc.engine.leaders.currentSlot() + 3;
    const r = await send(s, bot.key, tx.base64, { max_retries: 10, deadline_slot: deadline });
    expect(r.status).toBe(200);
    const rec = await settled(s, bot.key, tx.signature, (x) => x.expired === true);
    expect(rec).toMatchObject({ status: 'sent', expired: true, deadline_passed: true });
    // Decided by the deadline, long before the blockhash's last valid block height.
    expect((await s.connection.isBlockhashValid(tx.recentBlockhash, { commitment: 'confirmed' })).value).toBe(true);
    const t = await finishedTrace(s, bot.key, tx.signature, (b) => b.final_state === 'deadline_passed');
    expectWellFormed(t);
    expect(t.cause).toMatch(new RegExp(`^deadline passed: slot ${deadline} passed before it landed, reached \\d+ of \\d+ leaders?$`));
    expect(t.attempts.length).toBeGreaterThan(0);
    for (const a of t.attempts) expect(a.slot).toBeLessThanOrEqual(deadline);
    expect(s.svc.engine.rebroadcaster.counters.deadlinePassed).toBeGreaterThanOrEqual(1);
  });

  it('deadline_slot: one already passed is refused before anything is sent; one ahead lands as usual', async () => {
    const client = new LandfallClient({ url: s.svc.url, apiKey: bot.key });
    try {
      const late = await tipped(s, from, 300_000);
      const past = s.svc.engine.leaders.currentSlot() - 1;
      const refused = await client.send(late.base64, { deadlineSlot: past }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(LandfallApiError);
      expect((refused as LandfallApiError).reason).toMatch(new RegExp(`^options.deadline_slot ${past} has passed: the cluster is at slot \\d+$`));
      expect(s.net.receivedBy(late.signature)).toEqual([]);

      const onTime = await tipped(s, from, 300_000);
      await client.send(onTime.base64, { deadlineSlot: s.svc.engine.leaders.currentSlot() + 150 });
      const landed = await client.waitForConfirmation(onTime.signature);
      expect(landed.status).toBe('confirmed');
      expect(landed.deadline_passed).toBeUndefined();
    } finally {
      client.close();
    }
  });

  it('an expired transaction: its rounds, then "expired: blockhash past last valid block height N, reached K of M leaders"', async () => {
    const broke = Keypair.generate(); // never funded: no leader includes it
    const tx = await tipped(s, broke, 300_000);
    expect((await send(s, bot.key, tx.base64, { max_retries: 2 })).status).toBe(200);
    // While in flight the trace is served from the engine (through the main thread).
    const early = await trace(s, bot.key, tx.signature);
    expect(early.status).toBe(200);
    expect(early.body.final_state).toBe('pending');
    await settled(s, bot.key, tx.signature, (x) => x.expired === true, 40_000);
    const t = await finishedTrace(s, bot.key, tx.signature, (b) => b.final_state === 'expired');
    expectWellFormed(t);
    const m = /^expired: blockhash past last valid block height (\d+), reached (\d+) of (\d+) leaders?$/.exec(t.cause);
    expect(m, t.cause).not.toBeNull();
    expect(Number(m![2])).toBe(t.leaders_reached);
    expect(Number(m![3])).toBe(t.leaders_tried);
    expect(t.leaders_reached).toBeGreaterThan(0);
    // The first send and at most max_retries rounds, each to the slot's leaders.
    const rounds = new Set<number>(t.attempts.map((a: any) => a.round));
    expect(rounds.has(0)).toBe(true);
    expect(Math.max(...rounds)).toBeLessThanOrEqual(2);
    // The cluster received every write the trace reports, and nothing it does not account for
    // (a pending attempt's outcome was not awaited: it may or may not have arrived).
    const count = (o: string) => t.attempts.filter((a: any) => a.outcome === o).length;
    const received = s.net.receivedBy(tx.signature).length;
    expect(count('written')).toBeGreaterThan(0);
    expect(received).toBeGreaterThanOrEqual(count('written'));
    expect(received).toBeLessThanOrEqual(count('written') + count('pending'));
  }, 60_000);

  it('404 for a signature never sent and for another account\'s; 400 for a malformed one', async () => {
    const tx = await tipped(s, from, 300_000);
    expect((await send(s, bot.key, tx.base64)).status).toBe(200);
    const other = account(s);
    const foreign = await trace(s, other.key, tx.signature);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.message).toBe('Not found');
    const unknown = await tipped(s, from, 300_000); // signed, never sent
    expect((await trace(s, bot.key, unknown.signature)).status).toBe(404);
    expect((await trace(s, bot.key, 'not-a-signature')).status).toBe(400);
    const noKey = await fetch(`${s.svc.url}/v1/status/${tx.signature}/trace`);
    expect(noKey.status).toBe(401);
  });

  it('draws from the status query budget: one query of either kind spends it for the other', async () => {
    const tx = await tipped(s, from, 1_000_000); // the starter minimum, 1000 BP
    const starter = account(s, 'starter');
    expect((await send(s, starter.key, tx.base64)).status).toBe(200);
    const statusOf = (sig: string) => fetch(`${s.svc.url}/v1/status/${sig}`, { headers: { authorization: `Bearer ${starter.key}` } });
    // The budget is 1 query a second: a trace spends it, and the status right after is refused.
    // (Sending draws from the send budget, so the new account's query bucket is still full.)
    const first = await trace(s, starter.key, tx.signature);
    expect(first.status).toBe(200);
    const refused = await statusOf(tx.signature);
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as any).error.message).toBe('Query rate limit exceeded');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // And the other way round, once it has refilled.
    await new Promise((r) => setTimeout(r, 1_100));
    expect((await statusOf(tx.signature)).status).toBe(200);
    const limited = await trace(s, starter.key, tx.signature);
    expect(limited.status).toBe(429);
    expect(limited.body.error.message).toBe('Query rate limit exceeded');
  });

  // Last in this group: it restarts the service.
  it('a trace is kept in the store: the same after a restart', async () => {
    expect(landed).toBeDefined();
    await s.stop();
    await s.start();
    const t = await trace(s, bot.key, landed!.signature);
    expect(t.status).toBe(200);
    expect(t.body).toEqual(landed!.trace);
  });
});

describe('delivery trace served by the main thread (ingressThreads: 0)', () => {
  let s: Stack | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('in flight from the engine, then from the store, the same attempts', async () => {
    s = await startStack({ localnet: { slotMs: 100, seed: 'trace-main' }, config: { ingressThreads: 0 } });
    const st = s;
    const bot = account(st);
    const from = await payer(st);
    const tx = await tipped(st, from, 300_000);
    const r = await send(st, bot.key, tx.base64, { max_retries: 3 });
    expect(r.status).toBe(200);
    // Accepted on this thread: the engine has its first send's attempts at once.
    const early = await trace(st, bot.key, tx.signature);
    expect(early.status).toBe(200);
    expect(early.body.attempts.filter((a: any) => a.round === 0 && a.outcome === 'written')).toHaveLength(1);
    expect((await settled(st, bot.key, tx.signature)).status).toBe('confirmed');
    const t = await finishedTrace(st, bot.key, tx.signature, (b) => b.final_state === 'landed');
    expectWellFormed(t);
    expect(t.attempts.slice(0, early.body.attempts.length)).toEqual(early.body.attempts);
  });
});

describe('delivery trace under anti-MEV routing', () => {
  let s: Stack | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('a transaction sent while a blocklisted validator leads is held, then released at a permitted leader; none goes to the blocked one', async () => {
    s = await startStack({ localnet: { slotMs: 100, seed: 'trace-anti-mev', faults: { v3: { sandwicher: true } } }, block: ['v3'] });
    const st = s;
    const bot = account(st);
    const from = await payer(st);
    const v3 = st.net.validators.find((v) => v.name === 'v3')!;
    // Signed first, sent at the first slot of v3's four: the current leader is blocked, so it is held.
    const tx = await tipped(st, from, 300_000);
    await waitFor('the start of v3\'s window', () => {
      const slot = st.net.slot();
      return slot % 4 === 0 && st.net.leaderAt(slot).name === 'v3' ? true : undefined;
    }, 20_000);
    expect((await send(st, bot.key, tx.base64)).status).toBe(200);
    expect((await settled(st, bot.key, tx.signature)).status).toBe('confirmed');
    const t = await finishedTrace(st, bot.key, tx.signature, (b) => b.final_state === 'landed');
    expectWellFormed(t);
    const outcomes = t.attempts.map((a: any) => a.outcome);
    expect(outcomes[0]).toBe('held');
    expect(t.attempts[0].leader).toBe(v3.identity);
    const released = outcomes.indexOf('released');
    expect(released).toBeGreaterThan(0);
    expect(t.attempts[released].leader).not.toBe(v3.identity);
    expect(outcomes.slice(released + 1)).toContain('written');
    // Never sent to the blocked validator: it appears only as the leader the hold was for.
    expect(t.attempts.filter((a: any) => a.tpu === v3.tpuQuic)).toEqual([]);
  });
});

describe('delivery trace with a validator refusing connections', () => {
  let s: Stack | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('attempts to the refusing validator carry its close code; the transactions land elsewhere', async () => {
    s = await startStack({ localnet: { slotMs: 100, seed: 'trace-refuse', faults: { v2: { refuseCode: 2 } } } });
    const st = s;
    const bot = account(st);
    const from = await payer(st);
    const v2 = st.net.validators.find((v) => v.name === 'v2')!;
    const sigs: string[] = [];
    const toV2: any[] = [];
    // v2 completes each handshake and then closes the connection with code 2, so a write can
    // still make it onto a connection before its close arrives ("written", as the native client
    // defines it: the cluster then never receives it). Every attempt that failed says why: the
    // refusal itself, or the back-off the client applies after it, both with v2's close code.
    const failed = () => toV2.filter((a) => a.outcome !== 'written' && a.outcome !== 'pending');
    // One per slot over three leader windows of four slots (v2 leads some, is next in others),
    // again until an attempt to v2 has failed: a round skips a leader that already has the
    // transaction in its window, so how many attempts v2 gets depends on when its closes arrive.
    for (let batch = 0; batch < 4 && failed().length === 0; batch++) {
      const these: string[] = [];
      for (let i = 0; i < 12; i++) {
        await nextSlot(st);
        const tx = await tipped(st, from, 300_000);
        expect((await send(st, bot.key, tx.base64, { max_retries: 6 })).status).toBe(200);
        these.push(tx.signature);
      }
      for (const sig of these) {
        expect((await settled(st, bot.key, sig)).status).toBe('confirmed');
        const t = await finishedTrace(st, bot.key, sig, (b) => b.final_state === 'landed');
        expectWellFormed(t);
        toV2.push(...t.attempts.filter((a: any) => a.leader === v2.identity));
      }
      sigs.push(...these);
    }
    expect(toV2.length).toBeGreaterThan(0);
    expect(failed().length).toBeGreaterThan(0);
    for (const a of failed()) {
      expect(['refused', 'backoff']).toContain(a.outcome);
      expect(a.close_code).toBe(2);
    }
    for (const sig of sigs) expect(st.net.receivedBy(sig).map((r) => r.validator)).not.toContain('v2');
  }, 90_000);
});

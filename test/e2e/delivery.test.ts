/**
 * The delivery engine and confirmation tracker end to end: the full service (`startService`)
 * against the local cluster — real QUIC to each validator's TPU, real LiteSVM execution, real
 * JSON-RPC and PubSub — with real web3.js transactions. Assertions are on what a bot sees (HTTP
 * responses, status records, the account) and on the cluster's receive log (which validator got
 * which signature, and whether it was leader then).
 */
import { LAMPORTS_PER_SOL, Keypair } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { transfer } from '../../harness/transactions.js';
import { waitFor } from '../../harness/localnet.js';
import { account, accountView, nextSlot, payer, send, sendBatch, settled, startStack, status, tipped, type Stack } from '../../harness/stack.js';

describe('delivery on the local cluster', () => {
  let s: Stack;
  let bot: { id: string; key: string };
  let from: Keypair;

  beforeAll(async () => {
    s = await startStack({ localnet: { slotMs: 100, seed: 'delivery-e2e' } });
    bot = account(s);
    from = await payer(s);
  });
  afterAll(async () => {
    await s?.close();
  });

  it('a sent transaction lands, and its status record fills in with the service\'s own telemetry', async () => {
    const tx = await tipped(s, from, 1_234_567);
    const before = Date.now();
    const r = await send(s, bot.key, tx.base64);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ success: true, signature: tx.signature, slot: expect.any(Number) });
    const rec = await settled(s, bot.key, tx.signature);
    expect(rec.status).toBe('confirmed');
    expect(rec.slot).toBeGreaterThanOrEqual(r.body.slot);
    expect(rec.latency_ms).toBeGreaterThanOrEqual(0);
    expect(Date.parse(rec.confirmed_at)).toBeGreaterThanOrEqual(Date.parse(rec.submitted_at));
    expect(Date.parse(rec.submitted_at)).toBeGreaterThanOrEqual(before - 1);
    expect(rec.api_key_name).toBe('default');
    // It reached the leader of the slot it landed in, over QUIC, from the service's identity.
    // (The validator that included it leads that slot; it may have arrived a few ms after the
    // leader's window closed, which the cluster's 20 ms grace puts in that leader's last block,
    // so `wasLeader` — the leader at the arrival instant — is not the claim.)
    const included = s.net.receivedBy(tx.signature).filter((x) => x.outcome === 'included');
    expect(included).toHaveLength(1);
    expect(included[0]!.landedSlot).toBe(rec.slot);
    expect(included[0]!.validator).toBe(s.net.leaderAt(rec.slot).name);
    expect(included[0]!.peer).toBe(s.svc.engine.identity);
    // Points: exactly floor(tip / lamports_per_point). The credit is an LMDB account transaction
    // that may commit a few ms after the confirmed record is readable: wait for it, then exact.
    const points = await waitFor('the points credit', async () => {
      const p = (await accountView(s, bot.key)).usage.service_points as number;
      return p > 0 ? p : undefined;
    }, 5_000);
    expect(points).toBe(1234);
  });

  it('transactions land whatever the slot position, each through the leader of its slot', async () => {
    const sigs: string[] = [];
    // One transaction per slot for 3 leader windows: every position within a window, several leaders.
    for (let i = 0; i < 12; i++) {
      await nextSlot(s);
      const tx = await tipped(s, from, 300_000);
      const r = await send(s, bot.key, tx.base64);
      expect(r.status).toBe(200);
      sigs.push(tx.signature);
    }
    const leaders = new Set<string>();
    for (const sig of sigs) {
      const rec = await settled(s, bot.key, sig);
      expect(rec.status).toBe('confirmed');
      const inc = s.net.receivedBy(sig).find((x) => x.outcome === 'included')!;
      // Included by the leader of the slot it landed in (as in the test above, arriving within
      // the 20 ms grace after that leader's window counts: `wasLeader` is not the claim).
      expect(s.net.leaderAt(inc.landedSlot!).name).toBe(inc.validator);
      leaders.add(inc.validator);
    }
    expect(leaders.size).toBeGreaterThanOrEqual(3);
  });

  it('a batch is delivered item by item; a bad item fails alone', async () => {
    const good = await Promise.all(Array.from({ length: 5 }, () => tipped(s, from, 300_000)));
    const noTip = await tipped(s, from, 300_000, { extra: [] });
    const bad = Buffer.from(noTip.bytes);
    bad[bad.length - 1]! ^= 0xff; // the signature no longer verifies
    const before = (await accountView(s, bot.key)).usage.transactions_total;
    const r = await sendBatch(s, bot.key, [...good.map((t) => t.base64), bad.toString('base64')]);
    expect(r.status).toBe(200);
    expect(r.body.results.slice(0, 5).map((x: any) => x.status)).toEqual(Array(5).fill('sent'));
    expect(r.body.results[5]).toMatchObject({ index: 5, signature: null, status: 'failed' });
    for (const t of good) expect((await settled(s, bot.key, t.signature)).status).toBe('confirmed');
    expect((await accountView(s, bot.key)).usage.transactions_total).toBe(before + 5);
  });

  it('re-submitting a known signature is idempotent: delivered again, one record, one count', async () => {
    const tx = await tipped(s, from, 300_000);
    const before = (await accountView(s, bot.key)).usage.transactions_total;
    const a = await send(s, bot.key, tx.base64);
    const b = await send(s, bot.key, tx.base64);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(b.body.signature).toBe(a.body.signature);
    await settled(s, bot.key, tx.signature);
    expect((await accountView(s, bot.key)).usage.transactions_total).toBe(before + 1);
    // Landed once: any later copy the cluster got was a duplicate.
    expect(s.net.receivedBy(tx.signature).filter((x) => x.outcome === 'included')).toHaveLength(1);
  });

  it('a transaction that lands with an execution error ends failed and earns no points', async () => {
    const poor = await payer(s, 0.05);
    const pointsBefore = (await accountView(s, bot.key)).usage.service_points;
    // Transfers 1 SOL it does not have: the fee is charged, the transfer (and the tip) revert.
    const tx = await tipped(s, poor, 300_000, { extra: [transfer(poor.publicKey, Keypair.generate().publicKey, LAMPORTS_PER_SOL)] });
    expect((await send(s, bot.key, tx.base64)).status).toBe(200);
    const rec = await settled(s, bot.key, tx.signature);
    expect(rec.status).toBe('failed');
    expect(rec.confirmed_at).not.toBeNull();
    // Why and when: the chain's own error object, in Agave's words, and the latency to the outcome.
    const onChain = (await s.connection.getSignatureStatus(tx.signature, { searchTransactionHistory: true })).value;
    expect(onChain?.err).toBeTruthy();
    expect(rec.err).toEqual(onChain!.err);
    expect(rec.err_reason).toMatch(/^Error processing Instruction \d: custom program error: 0x1$/);
    expect(rec.latency_ms).toBeGreaterThanOrEqual(0);
    expect(rec.slot).toBeGreaterThan(0);
    expect((await accountView(s, bot.key)).usage.service_points).toBe(pointsBefore);
  });

  it('a 1,000-lamport transfer to a new account fails for rent, and the status says so', async () => {
    const from = await payer(s, 1);
    const tx = await tipped(s, from, 300_000, { extra: [transfer(from.publicKey, Keypair.generate().publicKey, 1_000)] });
    expect((await send(s, bot.key, tx.base64)).status).toBe(200);
    const rec = await settled(s, bot.key, tx.signature);
    expect(rec.status).toBe('failed');
    expect(Object.keys(rec.err)).toEqual(['InsufficientFundsForRent']);
    expect(rec.err_reason).toMatch(/^Transaction results in an account \(\d+\) with insufficient funds for rent$/);
  });

  it('preflight: skip_preflight false simulates first; a failing transaction is 400 with the simulation error', async () => {
    const poor = await payer(s, 0.05);
    const failing = await tipped(s, poor, 300_000, { extra: [transfer(poor.publicKey, Keypair.generate().publicKey, LAMPORTS_PER_SOL)] });
    const r = await send(s, bot.key, failing.base64, { skip_preflight: false });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toBe('Invalid transaction');
    expect(r.body.error.reason).toMatch(/preflight simulation failed: .*InstructionError/);
    expect((await status(s, bot.key, failing.signature)).status).toBe(404);
    expect(s.net.receivedBy(failing.signature)).toHaveLength(0);

    const ok = await tipped(s, from, 300_000);
    expect((await send(s, bot.key, ok.base64, { skip_preflight: false })).status).toBe(200);
    expect((await settled(s, bot.key, ok.signature)).status).toBe('confirmed');
  });

  it('a transaction that can never land stays sent and is marked expired once its blockhash dies', async () => {
    const broke = Keypair.generate(); // never funded: cannot pay its fee, so no leader includes it
    const tx = await tipped(s, broke, 300_000);
    const r = await send(s, bot.key, tx.base64, { max_retries: 2 });
    expect(r.status).toBe(200);
    // 150 blocks of 100 ms, plus the tracker's sweep.
    const rec = await settled(s, bot.key, tx.signature, (x) => x.expired === true, 40_000);
    expect(rec).toMatchObject({ status: 'sent', expired: true, confirmed_at: null, latency_ms: null, slot: null });
    // Rebroadcast rounds: the first send plus up to max_retries, never more.
    const rounds = new Set(s.net.receivedBy(tx.signature).map((x) => x.slot));
    expect(rounds.size).toBeGreaterThanOrEqual(1);
    expect(rounds.size).toBeLessThanOrEqual(3);
  }, 60_000);

  it('an account crossing two thresholds on confirmation is upgraded at once, and the next request gets the new minimum', async () => {
    const starter = account(s, 'starter');
    const rich = await payer(s, 30);
    const view0 = await accountView(s, starter.key);
    expect(view0.plan).toBe('starter');
    // 10.5 SOL tip = 10 500 000 BP: past growth (1M) and pro (10M) in one step.
    const tx = await tipped(s, rich, 10_500_000_000);
    expect((await send(s, starter.key, tx.base64)).status).toBe(200);
    expect((await settled(s, starter.key, tx.signature)).status).toBe('confirmed');
    const view1 = await waitFor('upgrade', async () => {
      const v = await accountView(s, starter.key);
      return v.plan === 'pro' ? v : undefined;
    });
    expect(view1.usage.service_points).toBe(10_500_000);
    expect(view1.limits).toEqual({ max_tps: 80, min_tip_bp: 500 });
    // The API shows whole seconds (spec format); the record keeps the instant of the upgrade.
    const rec = s.svc.accounts.get(starter.id)!;
    expect(rec.planUpgradedAt).toBeGreaterThan(rec.memberSince);
    expect(view1.plan_upgraded_at >= view0.plan_upgraded_at).toBe(true);
    // 600 BP: below starter's 1000, above pro's 500.
    const small = await tipped(s, rich, 600_000);
    expect((await send(s, starter.key, small.base64)).status).toBe(200);
  });

  it('keeps warm connections to the upcoming leaders, so a send never waits for a handshake', async () => {
    await nextSlot(s);
    const connected = new Set(s.svc.engine.client.peerStats().filter((p) => p.connected).map((p) => p.target));
    // Four validators, pre-warm eight leaders ahead: all of them.
    for (const v of s.net.validators) expect(connected).toContain(v.tpuQuic);
    const before = new Map(s.svc.engine.client.peerStats().map((p) => [p.target, p.connects]));
    const tx = await tipped(s, from, 300_000);
    expect((await send(s, bot.key, tx.base64)).status).toBe(200);
    await settled(s, bot.key, tx.signature);
    for (const p of s.svc.engine.client.peerStats()) expect(p.connects).toBe(before.get(p.target));
  });

  it('reports itself in sync on /health', async () => {
    const r = await fetch(`${s.svc.url}/health`);
    expect(r.status).toBe(200);
    const body = (await r.json()) as any;
    expect(body.chain.synced).toBe(true);
    expect(Math.abs(body.chain.slot - s.net.slot())).toBeLessThanOrEqual(2);
  });
});

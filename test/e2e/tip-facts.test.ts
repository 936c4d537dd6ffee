/**
 * The tip facts a bot needs, on a service whose operator chose a conversion other than the
 * default (2 500 lamports per point instead of 1 000), so nothing here can pass by assuming the
 * default, with an ingress thread serving HTTP (the tracker that sees landings is on the main
 * thread):
 * - `GET /v1/tip-floor`: percentiles of the tips of what landed, per window, in lamports and BP,
 *   with the caller's plan minimum when a key is given; `client.tipFloor()`, and `addTip` with a
 *   `percentile` (never below the plan minimum), whose transaction lands;
 * - `/v1/account` reports `lamports_per_point`, and the typed client's `addTip` tips the plan
 *   minimum in lamports computed from it; the transaction is accepted (not 402) and lands.
 */
import { Keypair, LAMPORTS_PER_SOL, SystemInstruction, SystemProgram, Transaction } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLANS } from '../../src/accounts/plans.js';
import { addTip, LandfallApiError, LandfallClient } from '../../src/client/index.js';
import { waitFor } from '../../harness/localnet.js';
import { account, accountView, blockhash, payer, send, settled, startStack, tipped, type Stack } from '../../harness/stack.js';
import { transfer } from '../../harness/transactions.js';

const LAMPORTS_PER_POINT = 2_500;

let s: Stack;
let from: Keypair;
const clients: LandfallClient[] = [];
const client = (key: string) => {
  const c = new LandfallClient({ url: s.svc.url, apiKey: key });
  clients.push(c);
  return c;
};
let unique = 0;
/** An unsigned legacy transaction with one self-transfer that makes its signature unique. */
const legacy = async () =>
  new Transaction({ feePayer: from.publicKey, recentBlockhash: await blockhash(s) }).add(
    SystemProgram.transfer({ fromPubkey: from.publicKey, toPubkey: from.publicKey, lamports: ++unique }),
  );

beforeAll(async () => {
  s = await startStack({ localnet: { slotMs: 100, seed: 'tip-facts' }, config: { lamportsPerPoint: LAMPORTS_PER_POINT, ingressThreads: 1 } });
  from = await payer(s);
});
afterAll(async () => {
  for (const c of clients) c.close();
  await s?.close();
});

async function tipFloor(query = '', headers: Record<string, string> = {}) {
  const r = await fetch(`${s.svc.url}/v1/tip-floor${query}`, { headers });
  return { status: r.status, body: (await r.json()) as any };
}

/** The floor once the ingress thread serves a view computed after `t` (ms), bounded. */
async function floorAfter(t: number, query = '') {
  return waitFor('a tip floor computed after the last settlement', async () => {
    const r = await tipFloor(query);
    return Date.parse(r.body.as_of) > t ? r.body : undefined;
  });
}

describe('tip floor', () => {
  const none = { landed: 0, lamports: null, bp: null };

  it('before anything landed: every window empty, no key needed, no plan minimum without one', async () => {
    const r = await tipFloor();
    expect(r.status).toBe(200);
    const noFee = { landed: 0, micro_lamports_per_cu: null };
    expect(r.body).toEqual({
      as_of: expect.any(String),
      lamports_per_point: LAMPORTS_PER_POINT,
      windows: { '1m': none, '10m': none, '1h': none },
      priority_fee: { '1m': noFee, '10m': noFee, '1h': noFee },
    });
  });

  it('landed tips (and only landed ones) give the percentiles, in lamports and BP; a key adds the plan minimum', async () => {
    const whale = account(s, 'whale');
    // The whale's minimum is 250 BP = 625 000 lamports at this conversion; tips by the tracker's total.
    const tips = [625_000, 625_000, 2_500_000, 5_000_000, 7_500_000, 10_000_000];
    const txs = await Promise.all(tips.map((t) => tipped(s, from, t)));
    for (const tx of txs) expect((await send(s, whale.key, tx.base64)).status).toBe(200);
    for (const tx of txs) expect((await settled(s, whale.key, tx.signature)).status).toBe('confirmed');
    // A transaction that lands but fails paid no tip (the transfer reverted): not counted.
    const poor = await payer(s, 0.05);
    const failing = await tipped(s, poor, 50_000_000, { extra: [transfer(poor.publicKey, Keypair.generate().publicKey, LAMPORTS_PER_SOL)] });
    expect((await send(s, whale.key, failing.base64)).status).toBe(200);
    expect((await settled(s, whale.key, failing.signature)).status).toBe('failed');

    const floor = await floorAfter(Date.now());
    // Nearest rank of 6: p25 is the 2nd, p50 the 3rd, p75 the 5th, p95 and p99 the 6th.
    const lamports = { p25: 625_000, p50: 2_500_000, p75: 7_500_000, p95: 10_000_000, p99: 10_000_000 };
    const bp = { p25: 250, p50: 1000, p75: 3000, p95: 4000, p99: 4000 };
    for (const w of ['1m', '10m', '1h']) expect(floor.windows[w]).toEqual({ landed: 6, lamports, bp });
    // None of them set a compute-unit price, but they are one account's: counted, and no
    // priority-fee guidance from one account alone (it could name any price).
    for (const w of ['1m', '10m', '1h']) expect(floor.priority_fee[w]).toEqual({ landed: 6, micro_lamports_per_cu: null });

    const starter = account(s, 'starter');
    const withKey = await tipFloor(`?api-key=${starter.key}`);
    expect(withKey.body.plan_minimum).toEqual({ plan: 'starter', min_tip_bp: 1000, min_tip_lamports: 2_500_000 });
    expect((await tipFloor('', { authorization: `Bearer ${whale.key}` })).body.plan_minimum).toEqual({ plan: 'whale', min_tip_bp: 250, min_tip_lamports: 625_000 });
    const wrong = await tipFloor('?api-key=lf_wrong');
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.message).toBe('Unauthorized');
  });

  it('client.tipFloor(), and addTip with a percentile: that percentile of the landings, never below the plan minimum; it lands', async () => {
    const c = client(account(s, 'starter').key);
    const floor = await c.tipFloor();
    expect(floor.windows['1m'].lamports?.p75).toBe(7_500_000);
    expect(floor.plan_minimum).toMatchObject({ plan: 'starter', min_tip_lamports: 2_500_000 });
    const tipOf = (tx: Transaction) => SystemInstruction.decodeTransfer(tx.instructions.at(-1)!).lamports;
    // p75 of the landings is above the starter minimum: tipped as is.
    const p75 = await addTip(await legacy(), { client: c, percentile: 75 });
    expect(tipOf(p75)).toBe(7_500_000n);
    // p25 (the whale's 625 000) is below the starter minimum: raised to it.
    expect(tipOf(await addTip(await legacy(), { client: c, percentile: 25 }))).toBe(2_500_000n);
    expect(tipOf(await addTip(await legacy(), { client: c, percentile: 99, window: '1h' }))).toBe(10_000_000n);
    await expect(addTip(await legacy(), { client: c, percentile: 30 as never })).rejects.toThrow(/percentile must be one of 25, 50, 75, 95, 99/);
    await expect(addTip(await legacy(), { client: c, percentile: 75, lamports: 1n })).rejects.toThrow(/not both/);
    p75.sign(from);
    const { signature } = await c.send(p75);
    expect((await c.waitForConfirmation(signature, { timeoutMs: 20_000 })).status).toBe('confirmed');
  });
});

describe('lamports_per_point', () => {
  it('/v1/account reports the configured conversion', async () => {
    const bot = account(s, 'starter');
    const view = await accountView(s, bot.key);
    expect(view.lamports_per_point).toBe(LAMPORTS_PER_POINT);
    expect(view.limits.min_tip_bp).toBe(DEFAULT_PLANS.starter.minTipBp);
  });

  it('the typed client tips min_tip_bp × lamports_per_point, and the transaction is accepted and lands', async () => {
    const bot = account(s, 'starter');
    const c = client(bot.key);
    const info = await c.tipInfo();
    expect(info.lamportsPerPoint).toBe(LAMPORTS_PER_POINT);
    const expected = BigInt(DEFAULT_PLANS.starter.minTipBp * LAMPORTS_PER_POINT);
    expect(info.minTipLamports).toBe(expected);
    const tx = await addTip(await legacy(), { client: c });
    expect(SystemInstruction.decodeTransfer(tx.instructions.at(-1)!).lamports).toBe(expected);
    tx.sign(from);
    const { signature } = await c.send(tx);
    expect((await c.waitForConfirmation(signature, { timeoutMs: 20_000 })).status).toBe('confirmed');
    // One lamport less than the minimum at this conversion: refused before signing, as the
    // service would refuse it (402), where the old assumption of 1000 would have let it through.
    await expect(addTip(await legacy(), { client: c, lamports: expected - 1n })).rejects.toThrow(LandfallApiError);
  });
});

describe('tip floor without ingress threads', () => {
  it('the main thread serves the floor its own tracker feeds', async () => {
    const solo = await startStack({ localnet: { slotMs: 100, seed: 'tip-facts-solo' }, config: { ingressThreads: 0 } });
    try {
      const bot = account(solo, 'whale');
      const kp = await payer(solo);
      const tx = await tipped(solo, kp, 3_000_000);
      expect((await send(solo, bot.key, tx.base64)).status).toBe(200);
      expect((await settled(solo, bot.key, tx.signature)).status).toBe('confirmed');
      const floor = await waitFor('the landing in the floor', async () => {
        const body = (await (await fetch(`${solo.svc.url}/v1/tip-floor`)).json()) as any;
        return body.windows['1m'].landed === 1 ? body : undefined;
      });
      expect(floor.windows['1m'].lamports).toEqual({ p25: 3_000_000, p50: 3_000_000, p75: 3_000_000, p95: 3_000_000, p99: 3_000_000 });
      expect(floor.lamports_per_point).toBe(1000);
    } finally {
      await solo.close();
    }
  });
});

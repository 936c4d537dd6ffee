/**
 * Why a transaction did not land, told to the bot: the full service on the local cluster (100 ms
 * slots, one validator refusing every connection with QUIC close code 2, as Agave does for a
 * disallowed peer), real web3.js transactions that can never land (their payer was never
 * funded). The post-mortem comes in the trace and on the stream (the expired status pushed a
 * second time, with `post_mortem`): the rounds and writes, the refusals with their close code,
 * the slots it was sent for, and the deadline that passed. Then the account's landing analytics
 * (`GET /v1/analytics`) count those misses beside its landings.
 */
import { Keypair } from '@solana/web3.js';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../harness/localnet.js';
import { account, payer, send, settled, startStack, tipped, type Stack } from '../../harness/stack.js';

async function trace(s: Stack, key: string, signature: string): Promise<any> {
  const r = await fetch(`${s.svc.url}/v1/status/${signature}/trace`, { headers: { authorization: `Bearer ${key}` } });
  expect(r.status).toBe(200);
  return r.json();
}

describe('post-mortem of a transaction that did not land', () => {
  let s: Stack;
  let bot: { id: string; key: string };
  let ws: WebSocket;
  const pushed: any[] = [];

  beforeAll(async () => {
    s = await startStack({ localnet: { slotMs: 100, seed: 'post-mortem', faults: { v2: { refuseCode: 2 } } } });
    bot = account(s);
    ws = new WebSocket(`${s.svc.url.replace(/^http/, 'ws')}/v1/stream?api-key=${bot.key}`);
    ws.on('message', (d) => pushed.push(JSON.parse(String(d))));
    await waitFor('the stream ready', () => (pushed.some((m) => m.type === 'ready') ? true : undefined));
  });
  afterAll(async () => {
    ws?.close();
    await s?.close();
  });

  it('expired: rounds and writes as the trace has them, the refusals with their close code, the slots it was sent for; in the trace and on the stream', async () => {
    const broke = Keypair.generate(); // never funded: no leader includes it
    const tx = await tipped(s, broke, 300_000);
    // A round per leader window until the blockhash dies: it meets the refusing validator.
    expect((await send(s, bot.key, tx.base64, { rebroadcast_until_expiry: true })).status).toBe(200);
    await settled(s, bot.key, tx.signature, (x) => x.expired === true, 40_000);
    const told = await waitFor('the post-mortem on the stream', () => pushed.find((m) => m.signature === tx.signature && m.post_mortem), 20_000);
    // The first push of the expiry came without it, at once.
    const first = pushed.findIndex((m) => m.signature === tx.signature && m.expired === true);
    expect(pushed[first].post_mortem).toBeUndefined();
    expect(told).toMatchObject({ type: 'status', status: 'sent', expired: true });
    const pm = told.post_mortem;

    const t = await trace(s, bot.key, tx.signature);
    expect(t.final_state).toBe('expired');
    expect(t.post_mortem).toEqual(pm);
    const attempts: any[] = t.attempts;
    expect(pm.cause).toBe('expired');
    expect(pm.rounds).toBe(Math.max(...attempts.map((a) => a.round)));
    expect(pm.rounds).toBeGreaterThan(3);
    expect(pm.writes).toBe(attempts.filter((a) => a.outcome === 'written' || a.outcome === 'pending').length);
    const v2 = s.net.validators.find((v) => v.name === 'v2')!;
    const refusedByV2 = attempts.filter((a) => a.leader === v2.identity && a.close_code === 2).length;
    expect(refusedByV2).toBeGreaterThan(0);
    expect(pm.refused).toContainEqual({ leader: v2.identity, close_code: 2, count: refusedByV2 });
    expect(pm.summary).toMatch(new RegExp(`^expired after ${pm.rounds} rounds; ${pm.writes} writes to \\d+ leaders?; `));
    expect(pm.summary).toContain('refused (QUIC close code 2)');
    // The slots it was sent for are slots of leaders it was written to.
    expect(pm.slots_sent_for.length).toBeGreaterThan(0);
    const written = new Set(attempts.filter((a) => a.outcome === 'written' || a.outcome === 'pending').map((a) => a.leader));
    for (const slot of pm.slots_sent_for) expect(written.has(s.net.leaderAt(slot).identity)).toBe(true);
    // Skipped slots come from the chain's getBlocks; a node without it leaves them unknown, and says so.
    if (pm.skipped_slots === null) expect(pm.summary).toContain('skipped slots unknown');
    else for (const slot of pm.skipped_slots) expect(pm.slots_sent_for).toContain(slot);
  }, 60_000);

  it('deadline passed: the post-mortem says which slot, and after how many rounds', async () => {
    const broke = Keypair.generate();
    const tx = await tipped(s, broke, 300_000);
    const deadline = s.net.slot() + 3;
    expect((await send(s, bot.key, tx.base64, { deadline_slot: deadline })).status).toBe(200);
    await settled(s, bot.key, tx.signature, (x) => x.expired === true, 20_000);
    const t = await waitFor('the post-mortem in the trace', async () => {
      const b = await trace(s, bot.key, tx.signature);
      return b.post_mortem ? b : undefined;
    });
    expect(t.final_state).toBe('deadline_passed');
    expect(t.post_mortem.cause).toBe('deadline_passed');
    expect(t.post_mortem.summary).toMatch(new RegExp(`^deadline slot ${deadline} passed after ${t.post_mortem.rounds} rounds?; `));
    expect(pushed.find((m) => m.signature === tx.signature && m.post_mortem)?.post_mortem).toEqual(t.post_mortem);
  });

  it('GET /v1/analytics: the account\'s landings and misses, by leader and over time; keyed and budgeted like the status', { timeout: 240_000 }, async () => {
    const from = await payer(s);
    const sigs: string[] = [];
    const sentIn: number[] = [];
    for (let i = 0; i < 4; i++) {
      const tx = await tipped(s, from, 300_000);
      const r = await send(s, bot.key, tx.base64);
      expect(r.status).toBe(200);
      sigs.push(tx.signature);
      sentIn.push(r.body.slot);
    }
    const landedRecs = [];
    // Bounded generously: a transaction whose first send and first round both miss (a loaded
    // machine) waits for its next round, 12 slots on.
    for (const sig of sigs) landedRecs.push(await settled(s, bot.key, sig, undefined, 40_000));
    const get = (query: string, key: string | null = bot.key) => fetch(`${s.svc.url}/v1/analytics${query}`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
    const r = await get('?window=1h');
    expect(r.status).toBe(200);
    expect(r.headers.get('ratelimit-limit')).not.toBeNull(); // the query budget, as the status draws it
    const v = (await r.json()) as any;
    // The two misses of the tests above (one expired, one past its deadline) and these four landings.
    expect(v).toMatchObject({ window: '1h', transactions: 6, landed: 4, failed: 0, expired: 2, landing_rate: 0.6667, series_minutes: 10 });
    const maxSlots = Math.max(...landedRecs.map((x: any, i) => x.slot - sentIn[i]!));
    expect(v.slots_to_land.p99).toBeGreaterThanOrEqual(maxSlots);
    const identities = new Set(s.net.validators.map((x) => x.identity));
    expect(v.by_leader.reduce((n: number, l: any) => n + l.transactions, 0)).toBe(6);
    for (const l of v.by_leader) expect(identities.has(l.leader)).toBe(true);
    expect(v.series.reduce((n: number, x: any) => n + x.transactions, 0)).toBe(6);
    expect(((await (await get('')).json()) as any)).toMatchObject({ window: '24h', transactions: 6, series_minutes: 60 });
    // Another account sees none of it; a bad window and a missing key are refused.
    expect(((await (await get('?window=1h', account(s).key)).json()) as any).transactions).toBe(0);
    const bad = await get('?window=7d');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.reason).toBe('window must be 1h or 24h, got "7d"');
    expect((await get('?window=1h', null)).status).toBe(401);
  });
});

describe('post-mortem with a leader that skips its slots', () => {
  let s: Stack;
  afterAll(async () => {
    await s?.close();
  });

  it('getBlocks lists no slot of the skipping leader; the post-mortem names the skipped slots it was sent for', async () => {
    s = await startStack({ localnet: { slotMs: 100, seed: 'post-mortem-skip', faults: { v2: { skipSlots: true } } } });
    const bot = account(s);
    const v2 = s.net.validators.find((v) => v.name === 'v2')!;
    // The local cluster answers getBlocks as Agave does: the slots with a block. Looked at once
    // the chain is 50 slots in, well past the fault taking hold (from v2's next window on).
    await waitFor('slot 50', async () => ((await s.connection.getSlot('confirmed')) >= 50 ? true : undefined), 30_000);
    const now = await s.connection.getSlot('confirmed');
    const blocks = await s.connection.getBlocks(Math.max(1, now - 40), now, 'confirmed');
    for (let slot = Math.max(1, now - 40); slot <= now; slot++) {
      expect(blocks.includes(slot), `slot ${slot} led by ${s.net.leaderAt(slot).name}`).toBe(s.net.leaderAt(slot).name !== 'v2');
    }
    const tx = await tipped(s, Keypair.generate(), 300_000); // never funded: it cannot land
    expect((await send(s, bot.key, tx.base64, { rebroadcast_until_expiry: true })).status).toBe(200);
    await settled(s, bot.key, tx.signature, (x) => x.expired === true, 60_000);
    const t = await waitFor('the post-mortem', async () => {
      const b = await trace(s, bot.key, tx.signature);
      return b.post_mortem ? b : undefined;
    });
    const pm = t.post_mortem;
    const v2Slots = pm.slots_sent_for.filter((slot: number) => s.net.leaderAt(slot).identity === v2.identity);
    expect(v2Slots.length).toBeGreaterThan(0);
    expect(pm.skipped_slots).toEqual(v2Slots);
    expect(pm.summary).toContain(`its leaders skipped ${v2Slots.length} of the ${pm.slots_sent_for.length} slots it was sent for`);
  }, 90_000);
});

/**
 * Delivery under adversity, on the local cluster with its real fault injection: a validator
 * down, one losing 30 % of its packets, validators refusing connections, a sandwicher on the
 * anti-MEV blocklist, and the service restarted with transactions in flight.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/store.js';
import { waitFor } from '../../harness/localnet.js';
import { account, nextSlot, payer, send, settled, startStack, tipped, type Stack } from '../../harness/stack.js';

let s: Stack | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

/** The first slot of v2's next leader window (its four slots are the dead ones where v2 is down). */
function v2WindowStart(st: Stack): Promise<number> {
  return waitFor('the start of a v2 window', () => {
    const slot = st.net.slot();
    return slot % 4 === 0 && st.net.leaderAt(slot).name === 'v2' ? slot : undefined;
  }, 20_000);
}

/** `GET /v1/status/{signature}/trace`: the attempts, each with its slot and round. */
async function traceOf(st: Stack, key: string, signature: string): Promise<{ attempts: { slot: number; round: number; outcome: string }[] }> {
  const r = await fetch(`${st.svc.url}/v1/status/${signature}/trace`, { headers: { authorization: `Bearer ${key}` } });
  return (await r.json()) as { attempts: { slot: number; round: number; outcome: string }[] };
}

/** One transaction per slot for `n` slots (spanning several leader windows); their signatures. */
async function sendOnePerSlot(st: Stack, key: string, n: number, options?: Record<string, unknown>): Promise<string[]> {
  const from = await payer(st);
  const sigs: string[] = [];
  for (let i = 0; i < n; i++) {
    await nextSlot(st);
    const tx = await tipped(st, from, 300_000);
    const r = await send(st, key, tx.base64, options);
    expect(r.status).toBe(200);
    sigs.push(tx.signature);
  }
  return sigs;
}

describe('anti-MEV routing', () => {
  it('never delivers to a blocklisted sandwicher with anti_mev: true, and the transactions still land', async () => {
    s = await startStack({ localnet: { slotMs: 100, seed: 'anti-mev', faults: { v3: { sandwicher: true } } }, block: ['v3'] });
    const st = s;
    expect(st.svc.engine.blocklist.size).toBe(1);
    const bot = account(st);
    const sigs = await sendOnePerSlot(st, bot.key, 16);
    for (const sig of sigs) {
      expect((await settled(st, bot.key, sig)).status).toBe('confirmed');
      expect(st.net.receivedBy(sig).map((r) => r.validator)).not.toContain('v3');
    }
    expect(st.net.receivedAt('v3').filter((r) => sigs.includes(r.signature!))).toHaveLength(0);
    expect(st.svc.engine.rebroadcaster.counters.held).toBeGreaterThan(0); // v3 led some of those slots
  });

  it('with anti_mev: false the same sandwicher may receive them', async () => {
    s = await startStack({ localnet: { slotMs: 100, seed: 'anti-mev', faults: { v3: { sandwicher: true } } }, block: ['v3'] });
    const st = s;
    const bot = account(st);
    const sigs = await sendOnePerSlot(st, bot.key, 16, { anti_mev: false });
    for (const sig of sigs) expect((await settled(st, bot.key, sig)).status).toBe('confirmed');
    const atV3 = st.net.receivedAt('v3').filter((r) => sigs.includes(r.signature!));
    expect(atV3.length).toBeGreaterThan(0);
  });
});

describe('faults', () => {
  it('one validator down and another at 30% packet loss: transactions still land, and the failures are counted', async () => {
    s = await startStack({ localnet: { slotMs: 100, seed: 'faults', faults: { v2: { down: true }, v4: { packetLossPct: 30 } } } });
    const st = s;
    const bot = account(st);
    // At least 20 slots, then on until the lossy v4 has included one of them, for at most four
    // turns of the 16-slot schedule. One of v4's 4-slot windows can pass with nothing landed
    // there (a lost handshake packet waits out QUIC's probe timeout, and a loaded machine adds to
    // it); a later window of the same run still shows that QUIC gets through the loss.
    const from = await payer(st);
    const sigs: string[] = [];
    const landedAtV4 = () => st.net.receivedAt('v4').some((r) => r.outcome === 'included' && sigs.includes(r.signature!));
    for (let i = 0; i < 64 && (i < 20 || !landedAtV4()); i++) {
      await nextSlot(st);
      const tx = await tipped(st, from, 300_000);
      expect((await send(st, bot.key, tx.base64, { max_retries: 10 })).status).toBe(200);
      sigs.push(tx.signature);
    }
    for (const sig of sigs) expect((await settled(st, bot.key, sig)).status).toBe('confirmed');
    expect(st.net.receivedAt('v2')).toHaveLength(0);
    const drops = [...st.svc.engine.counters.drops.values()].reduce((a, b) => a + b, 0);
    expect(drops).toBeGreaterThan(0);
    // The loss was real: v4's link discarded datagrams, and QUIC got the transactions through.
    const link = st.net.linkStats('v4')!;
    expect(link.up.dropped + link.down.dropped).toBeGreaterThan(0);
    expect(landedAtV4()).toBe(true);
  });

  it('a transaction accepted at the start of a dead leader\'s window still lands with the default max_retries', async () => {
    s = await startStack({ localnet: { slotMs: 100, seed: 'dead-window', faults: { v2: { down: true } } } });
    const st = s;
    const bot = account(st);
    const from = await payer(st);
    // Wait for the first slot of v2's window: its four slots are all dead ones.
    const windowStart = await v2WindowStart(st);
    const tx = await tipped(st, from, 300_000);
    expect((await send(st, bot.key, tx.base64)).status).toBe(200); // reached the next leader's TPU
    const rec = await settled(st, bot.key, tx.signature).catch(async (e: Error) => {
      const trace = await traceOf(st, bot.key, tx.signature);
      throw new Error(`${e.message}; the window began at slot ${windowStart}; arrivals: ${JSON.stringify(st.net.receivedBy(tx.signature))}; the trace: ${JSON.stringify(trace)}`);
    });
    expect(rec.status).toBe('confirmed');
    expect(st.net.leaderAt(rec.slot).name).not.toBe('v2');
  });

  it('once a dead leader is known unreachable, no rebroadcast round is written into its window: the round waits for the next leader', async () => {
    s = await startStack({ localnet: { slotMs: 100, seed: 'dead-window', faults: { v2: { down: true } } } });
    const st = s;
    const bot = account(st);
    const from = await payer(st);
    const v2 = st.net.validators.find((v) => v.name === 'v2')!.tpuQuic;
    // Known unreachable: the prewarm's dials to v2 have failed and none has connected since.
    await waitFor('v2 known unreachable', () => {
      const p = st.svc.engine.client.peerStats().find((x) => x.target === v2);
      return p !== undefined && !p.connected && p.consecutiveFailures > 0 ? true : undefined;
    }, 20_000);
    const windowStart = await v2WindowStart(st);
    const tx = await tipped(st, from, 300_000);
    expect((await send(st, bot.key, tx.base64)).status).toBe(200);
    const rec = await settled(st, bot.key, tx.signature);
    const rounds = (await traceOf(st, bot.key, tx.signature)).attempts.filter((x) => x.round > 0);
    const detail = `window from slot ${windowStart}, landed in ${rec.slot}; rounds ${JSON.stringify(rounds)}`;
    expect(rec.status, detail).toBe('confirmed');
    // Before the rule counted a leader whose new dial was under way as reachable, round 1 went
    // into v2's window (its only live copy reaching the next leader before its window, dropped)
    // in each of 4 runs with the window at slot 36 or 52, and the transaction landed 8 or 16
    // slots later than it does now (in the next leader's first slot).
    expect(rounds.filter((x) => st.net.leaderAt(x.slot).name === 'v2'), detail).toEqual([]);
    expect(st.net.leaderAt(rec.slot).name, detail).not.toBe('v2');
  });

  it('500 Delivery failed when the first send reaches no leader at all; nothing is recorded', async () => {
    s = await startStack({ localnet: { slotMs: 100, seed: 'refuse' } });
    const st = s;
    const bot = account(st);
    // Every validator offline: no listener, so no handshake can complete.
    for (const v of st.net.validators) await st.net.setFault(v.name, { down: true });
    const from = await payer(st);
    const tx = await tipped(st, from, 300_000);
    const r = await send(st, bot.key, tx.base64);
    expect(r.status).toBe(500);
    expect(r.body.error.message).toBe('Delivery failed');
    expect(r.body.error.reason).toMatch(/no leader accepted/);
    const q = await fetch(`${st.svc.url}/v1/status/${tx.signature}`, { headers: { authorization: `Bearer ${bot.key}` } });
    expect(q.status).toBe(404);
  });
});

describe('restart', () => {
  it('transactions in flight when the service stops are tracked to a terminal state after it restarts', async () => {
    s = await startStack({ localnet: { slotMs: 1000, seed: 'restart' } });
    const st = s;
    const bot = account(st);
    const from = await payer(st);
    const txs = await Promise.all(Array.from({ length: 5 }, () => tipped(st, from, 1_000_000)));
    await nextSlot(st); // a whole second before the slot ends and they are confirmed
    for (const tx of txs) expect((await send(st, bot.key, tx.base64)).status).toBe(200);
    const identity = st.svc.engine.identity;
    await st.stop();
    const store = Store.open(st.dir);
    const inFlight = [...store.pendingEntries()].length;
    await store.close();
    expect(inFlight).toBe(5);
    // They land while the service is down; the restarted tracker must find them.
    await waitFor('landed while down', async () => {
      const { value } = await st.connection.getSignatureStatuses(txs.map((t) => t.signature));
      return value.every((v) => v?.confirmationStatus === 'confirmed' || v?.confirmationStatus === 'finalized') ? true : undefined;
    });
    await st.start();
    expect(st.svc.engine.identity).toBe(identity); // the QUIC identity persisted in the data directory
    for (const tx of txs) {
      const rec = await settled(st, bot.key, tx.signature);
      expect(rec.status).toBe('confirmed');
      expect(rec.latency_ms).toBeGreaterThanOrEqual(0);
    }
    // The credits are LMDB account transactions that may commit a few ms after the confirmed
    // records are readable: wait until all five are in, then the total must be exact.
    const points = await waitFor('the points credits', async () => {
      const r = await fetch(`${st.svc.url}/v1/account?api-key=${bot.key}`);
      const p = ((await r.json()) as any).usage.service_points as number;
      return p >= 5 * 1000 ? p : undefined;
    }, 5_000);
    expect(points).toBe(5 * 1000);
  });
});

describe('chain view', () => {
  it('/health turns 503 when the chain node stops answering', async () => {
    s = await startStack({ localnet: { slotMs: 100, seed: 'health' }, config: {} });
    const st = s;
    expect((await fetch(`${st.svc.url}/health`)).status).toBe(200);
    await st.net.close();
    const body = await waitFor('unsynced', async () => {
      const r = await fetch(`${st.svc.url}/health`);
      return r.status === 503 ? ((await r.json()) as any) : undefined;
    });
    expect(body).toMatchObject({ status: 'unsynced', chain: { synced: false } });
    expect(body.chain.slot_age_ms).toBeGreaterThan(0);
  });
});

describe('send path', () => {
  it('with ingressThreads: 0 the main thread serves and writes the sends itself, with the same outcomes and counters', async () => {
    s = await startStack({ localnet: { slotMs: 100, seed: 'inline' }, config: { ingressThreads: 0 } });
    const st = s;
    const bot = account(st);
    const sigs = await sendOnePerSlot(st, bot.key, 6);
    for (const sig of sigs) expect((await settled(st, bot.key, sig)).status).toBe('confirmed');
    const ok = [...st.svc.engine.counters.sends.values()].reduce((a, c) => a + c.ok, 0);
    expect(ok).toBeGreaterThanOrEqual(sigs.length);
    const latency = await st.svc.engine.serviceLatency.get();
    expect(latency.values.find((v) => v.metricName?.endsWith('_count'))?.value).toBe(sigs.length);
  });
});

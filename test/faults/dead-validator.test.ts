/**
 * Defect 4's connection rule, one validator at a time, against the real service on the local
 * cluster: a leader whose QUIC endpoint vanished without closing its connections. The fault is
 * real: the validator's socket drops every datagram both ways (`packetLossPct: 100`), so the
 * connection the service holds to it stays open — no CONNECTION_CLOSE, no ICMP — and its send
 * buffer keeps taking streams, exactly as with a killed or cut-off validator. (`down: true` would
 * close the server politely, which the client already handled: the connection closes, back-off.)
 *
 * With `fanout: 1` a send goes to the current leader alone, and to the next one only if that
 * fails, and `max_retries: 0` means no rebroadcast: a transaction acknowledged through the dead
 * connection alone would never reach any validator. The promise: once the validator has been
 * silent for the alive window (1.5 s), nothing is written to it any more, and every `200` was
 * written to a live leader (which received it).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { waitFor } from '../../harness/localnet.js';
import { account, payer, send, startStack, tipped, type Stack } from '../../harness/stack.js';

/** The QUIC client's alive window (native/src/quic/config.rs, `ClientConfig::alive_window`). */
const ALIVE_WINDOW_MS = 1_500;

let s: Stack;
beforeAll(async () => {
  s = await startStack({ localnet: { slotMs: 100, seed: 'dead-validator' }, config: { fanout: 1 } });
});
afterAll(() => s.close());

/** Wait for the first slot of `name`'s next leader window (4 slots). */
function windowOf(name: string): Promise<number> {
  return waitFor(`${name}'s leader window`, () => {
    const slot = s.net.slot();
    return slot % 4 === 0 && s.net.leaderAt(slot).name === name ? slot : undefined;
  });
}

function peer(tpu: string) {
  return s.svc.engine.client.peerStats().find((p) => p.target === tpu);
}

it('acknowledges nothing through the connection of a validator that went silent, and still delivers through a live leader', async () => {
  const bot = account(s);
  const from = await payer(s);
  const v2 = s.net.validators.find((v) => v.name === 'v2')!;
  await waitFor('a prewarmed connection to v2', () => (peer(v2.tpuQuic)?.connected ? true : undefined));

  // Before the fault: in v2's window the send goes to v2, which receives it.
  await windowOf('v2');
  const before = await tipped(s, from, 300_000);
  expect((await send(s, bot.key, before.base64, { max_retries: 0 })).status).toBe(200);
  await waitFor('v2 to receive it', () => (s.net.receivedBy(before.signature).some((r) => r.validator === 'v2') ? true : undefined));

  // v2 goes silent; its connection stays open on the service's side.
  await s.net.setFault('v2', { packetLossPct: 100 });
  expect(peer(v2.tpuQuic)!.connected).toBe(true);
  // Past the alive window (plus what was already in flight towards the service), the client
  // finds the connection stale — on a send, or on the prewarm every slot — and drops it.
  await new Promise((r) => setTimeout(r, ALIVE_WINDOW_MS + 100));
  await waitFor('the stale connection to be dropped', () => {
    const p = peer(v2.tpuQuic)!;
    return !p.connected && /nothing heard from the peer/.test(p.lastCloseReason ?? '') ? true : undefined;
  });
  const okToV2 = s.svc.engine.counters.sends.get(v2.identity)?.ok ?? 0;
  const failedToV2 = s.svc.engine.counters.sends.get(v2.identity)?.failed ?? 0;

  // Two of v2's leader windows, well inside the 10 s idle timeout (the dead connection would
  // still be open and taking streams without the rule): send while v2 leads.
  const sent: Array<{ signature: string; status: number }> = [];
  for (let w = 0; w < 2; w++) {
    const start = await windowOf('v2');
    while (s.net.slot() < start + 4) {
      const tx = await tipped(s, from, 300_000);
      const r = await send(s, bot.key, tx.base64, { max_retries: 0 });
      sent.push({ signature: tx.signature, status: r.status });
    }
  }
  expect(sent.length).toBeGreaterThan(1);

  // Every one acknowledged, and each reached a live validator: none was acknowledged through
  // v2's dead connection alone.
  for (const x of sent) {
    expect(x.status).toBe(200);
    const receipts = await waitFor(`${x.signature} to reach a live validator`, () => {
      const r = s.net.receivedBy(x.signature);
      return r.length > 0 ? r : undefined;
    }, 5_000);
    expect(receipts.map((r) => r.validator)).not.toContain('v2');
  }
  // Nothing counted as written to v2 since it went silent past the window; the attempts failed.
  const after = s.svc.engine.counters.sends.get(v2.identity)!;
  expect(after.ok).toBe(okToV2);
  expect(after.failed).toBeGreaterThan(failedToV2);
  console.log(`silent validator: ${sent.length} sends in its windows, all 200 through the next leader; failures to it by reason: ${JSON.stringify([...s.svc.engine.counters.drops])}`);
});

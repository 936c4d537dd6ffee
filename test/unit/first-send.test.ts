/**
 * The first send (`FirstSender`, src/delivery/first-send.ts) on its own, as both the ingress
 * threads and the main thread's engine use it: a real `ChainViewReplica` fed snapshots whose
 * routes name real `QuicServer`s on loopback, a leader that is down (a UDP socket that never
 * answers: its handshake is still pending when another is written), one that cannot be dialled
 * ("127.0.0.1:0": fails at once) and one that refuses every connection with a close code.
 *
 * Both rounds are one native call (`QuicClient.sendFirstRoute`): what is checked here is what the
 * rest of the service sees of them — the attempts packed for the delivery trace (the hand-off
 * carries them as they are), the `DeliveryError`'s text, the latency histograms — and that round
 * 2 is sent only when round 1 wrote to nobody.
 */
import { randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChainViewReplica, type ChainSnapshot, type Leader, type Route } from '../../src/delivery/chain-view.js';
import { DEFAULT_SEND_OPTIONS, DeliveryError } from '../../src/delivery/delivery.js';
import { FIRST_SEND_BUDGET_MS, FirstSender, StaleViewError } from '../../src/delivery/first-send.js';
import { ATTEMPT_OUTCOMES, PACKED_STRIDE, type PackedAttempts } from '../../src/delivery/trace.js';
import { firstAttemptOutcomes, QuicClient, QuicServer } from '../../src/native.js';
import type { ReceivedTransaction } from '../../native/index.js';
import { statusRecord } from '../../harness/records.js';

const UNDIALABLE = '127.0.0.1:0';

const servers: QuicServer[] = [];
const sockets: Socket[] = [];
let client: QuicClient;
let view: ChainViewReplica;
let sender: FirstSender;

// Handshakes outlive any test here: a leader that is down stays "not heard back from" (`pending`).
beforeEach(() => {
  client = new QuicClient({ identity: randomBytes(32), handshakeTimeoutMs: 10_000 });
  view = new ChainViewReplica();
  sender = new FirstSender(client, view);
});
afterEach(async () => {
  client.close();
  sockets.splice(0).forEach((s) => s.close());
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function startServer(): { addr: string; received: ReceivedTransaction[]; server: QuicServer } {
  const received: ReceivedTransaction[] = [];
  const server = new QuicServer({ bind: '127.0.0.1:0', identity: randomBytes(32), maxStreamsPer100ms: 0 }, (tx) => received.push(tx));
  servers.push(server);
  return { addr: server.localAddr, received, server };
}

/**
 * A leader that refuses us: its server closes every connection with code 2, and the client's
 * first sends' lane is driven until it has seen that (a send may be written before the close arrives), so it is in
 * back-off — long enough (the test's client sets it) that every send to it in the test fails at
 * once with `backoff` and the close code, whatever the machine's speed.
 */
async function refusing(): Promise<string> {
  const { addr, server } = startServer();
  server.setFaults({ refuseCode: 2 });
  // Through the first sends' lane (a deadline), whose back-off is the one the first send meets.
  for (let i = 0; i < 50; i++) {
    const r = await client.sendFirst([addr], randomBytes(100), 2000);
    if (r.target === null) return addr;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('a refusing server must make sends fail');
}

/** The client with a back-off long enough that a refusing leader stays refused for the test. */
function patientClient(): void {
  client.close();
  client = new QuicClient({ identity: randomBytes(32), handshakeTimeoutMs: 10_000, backoffBaseMs: 30_000, backoffMaxMs: 30_000 });
  sender = new FirstSender(client, view);
}

/** A bound UDP socket that never answers: a leader that is down. */
async function silent(): Promise<string> {
  const s = createSocket('udp4');
  sockets.push(s);
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', r));
  return `127.0.0.1:${s.address().port}`;
}

let ids = 0;
function leader(tpuQuic: string | null, slot = 0): Leader {
  return { slot, identity: `Leader${++ids}`, tpuQuic };
}

function routeTo(route: Route, slot = 1000): void {
  const s: ChainSnapshot = {
    slot,
    seenAtMs: Date.now(),
    blockHeight: 100,
    leader: 'Leader1111111111111111111111111111111111111',
    plain: route,
    antiMev: route,
    blockhashes: [],
    staleMs: 60_000,
    epoch: null,
  };
  view.apply(s);
}

interface Unpacked {
  tpu: string;
  outcome: string;
  closeCode: number | null;
  atUs: number;
  reason: string;
}

function unpack(p: PackedAttempts | undefined): Unpacked[] {
  const out: Unpacked[] = [];
  for (let i = 0; p && i + PACKED_STRIDE <= p.length; i += PACKED_STRIDE) {
    const code = p[i + 2] as number;
    out.push({ tpu: p[i] as string, outcome: ATTEMPT_OUTCOMES[p[i + 1] as number]!, closeCode: code < 0 ? null : code, atUs: p[i + 3] as number, reason: p[i + 4] as string });
  }
  return out;
}

async function observed(h: FirstSender['serviceLatency']): Promise<{ count: number; sum: number }> {
  const m = await h.get();
  const count = m.values.find((v) => v.metricName?.endsWith('_count'))?.value ?? 0;
  const sum = m.values.find((v) => v.metricName?.endsWith('_sum'))?.value ?? 0;
  return { count, sum };
}

const send = (receivedAt = process.hrtime.bigint()) => sender.send(statusRecord().signature, randomBytes(200), DEFAULT_SEND_OPTIONS, receivedAt);

describe('FirstSender', () => {
  it("packs the addon's outcome indexes as the trace reads them", () => {
    expect(firstAttemptOutcomes()).toEqual(ATTEMPT_OUTCOMES.slice(0, firstAttemptOutcomes().length));
  });

  it('round 1 written: the written target and the one not heard back from yet (pending); round 2 is not sent', async () => {
    const live = startServer();
    const down = await silent();
    const after = startServer();
    routeTo({ first: [leader(live.addr), leader(down)], next: [leader(after.addr)], hold: false });
    const receivedAt = process.hrtime.bigint() - 1_000_000n; // the request came in 1 ms ago
    const sent = await send(receivedAt);
    expect(sent).toMatchObject({ slot: 1000, reached: 1, held: false });
    const attempts = unpack(sent.attempts);
    expect(attempts.map(({ atUs: _, ...a }) => a)).toEqual([
      { tpu: live.addr, outcome: 'written', closeCode: null, reason: '' },
      { tpu: down, outcome: 'pending', closeCode: null, reason: '' },
    ]);
    // Counted from the request: at least the millisecond it had waited before the call.
    for (const a of attempts) expect(a.atUs).toBeGreaterThanOrEqual(1000);
    expect(attempts[0]!.atUs).toBeGreaterThanOrEqual(attempts[1]!.atUs);
    const service = await observed(sender.serviceLatency);
    const native = await observed(sender.nativeLatency);
    expect(service.count).toBe(1);
    expect(native.count).toBe(1);
    // The service latency is the written attempt's time; the native part is within it.
    expect(Math.abs(service.sum * 1e6 - attempts[0]!.atUs)).toBeLessThanOrEqual(0.5 + 1e-6);
    expect(native.sum).toBeLessThan(service.sum);
    expect(after.server.stats().connectionsAccepted).toBe(0);
    // A resubmission in the same slot is not sent again.
    const sig = statusRecord().signature;
    await sender.send(sig, randomBytes(200), DEFAULT_SEND_OPTIONS, process.hrtime.bigint());
    expect(await sender.send(sig, randomBytes(200), DEFAULT_SEND_OPTIONS, process.hrtime.bigint())).toEqual({ slot: 1000, reached: 0, held: false });
    expect((await observed(sender.serviceLatency)).count).toBe(2);
  });

  it("round 1's leaders refuse or are unreachable: round 2's leader is written, after round 1's failures", async () => {
    patientClient();
    const refused = await refusing();
    const live = startServer();
    routeTo({ first: [leader(refused), leader(UNDIALABLE)], next: [leader(live.addr)], hold: false });
    const sent = await send();
    expect(sent).toMatchObject({ reached: 1, held: false });
    const attempts = unpack(sent.attempts);
    expect(attempts).toHaveLength(3);
    // Round 1's two failures, in the order they became known, then round 2's write.
    const failures = attempts.slice(0, 2);
    expect(failures.find((a) => a.tpu === UNDIALABLE)).toMatchObject({ outcome: 'failed', closeCode: null, reason: 'connect_failed' });
    expect(failures.find((a) => a.tpu === refused)).toMatchObject({ outcome: 'backoff', closeCode: 2, reason: 'backoff' });
    expect(attempts[2]).toMatchObject({ tpu: live.addr, outcome: 'written', closeCode: null, reason: '' });
    expect(attempts[2]!.atUs).toBeGreaterThanOrEqual(Math.max(failures[0]!.atUs, failures[1]!.atUs));
    // Written means finished on a live connection; the server reads it a moment later.
    for (let i = 0; i < 500 && live.received.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(live.received).toHaveLength(1);
    expect((await observed(sender.serviceLatency)).count).toBe(1);
  });

  it('every leader of both rounds failed: a DeliveryError naming each with its reason, nothing observed', async () => {
    patientClient();
    const refused = await refusing();
    routeTo({ first: [leader(UNDIALABLE)], next: [leader(refused)], hold: false });
    const err = await send().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DeliveryError);
    expect(err).not.toBeInstanceOf(StaleViewError);
    expect((err as Error).message).toBe(`no leader accepted the transaction within ${FIRST_SEND_BUDGET_MS} ms (tried ${UNDIALABLE} (connect_failed), ${refused} (backoff))`);
    expect((await observed(sender.serviceLatency)).count).toBe(0);
    expect((await observed(sender.nativeLatency)).count).toBe(0);
  });

  it('no leader with a TPU QUIC address: the DeliveryError names the leaders, nothing is sent', async () => {
    const a = leader(null);
    const b = leader(null);
    routeTo({ first: [a], next: [b], hold: false });
    await expect(send()).rejects.toThrow(`no leader accepted the transaction within ${FIRST_SEND_BUDGET_MS} ms (tried ${a.identity}, ${b.identity})`);
    routeTo({ first: [], next: [], hold: false }, 1001);
    await expect(send()).rejects.toThrow(`(tried no leader with a TPU QUIC address)`);
  });

  it('a held route sends nothing; a stale view is refused before anything is sent', async () => {
    const live = startServer();
    await expect(send()).rejects.toBeInstanceOf(StaleViewError);
    routeTo({ first: [leader(live.addr)], next: [], hold: true });
    expect(await send()).toEqual({ slot: 1000, reached: 0, held: true });
    expect(live.server.stats().connectionsAccepted).toBe(0);
  });

  it('bad input to the native call throws its code and sends nothing', async () => {
    const live = startServer();
    routeTo({ first: [leader(live.addr)], next: [], hold: false });
    await expect(sender.send(statusRecord().signature, Buffer.alloc(0), DEFAULT_SEND_OPTIONS, process.hrtime.bigint())).rejects.toMatchObject({ code: 'QUIC_TX_EMPTY' });
    expect(live.received).toHaveLength(0);
  });
});

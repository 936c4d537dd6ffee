/**
 * Links with a distance (`src/localnet/link.ts`): the relay in front of each validator's QUIC
 * server is on the path — the QUIC client's own measured round-trip time is the setting's —
 * loss is applied and counted each way, and a link changes while the cluster runs (in-process,
 * timed, and over JSON-RPC `setLink`). Real QUIC on loopback, real transactions.
 */
import { randomBytes } from 'node:crypto';
import { Connection, Keypair } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describe as describeCluster } from '../../src/cli/localnet.js';
import { parseLink, startLocalnet, type Localnet } from '../../src/localnet/index.js';
import { fundedKeypair, QuicClient, rpc, transferTx, waitFor } from '../../harness/localnet.js';

let net: Localnet;
let payer: Keypair;
let blockhash: string;

const tpuOf = (name: string): string => net.validators.find((v) => v.name === name)!.tpuQuic;
const linkOf = (name: string): string => net.validators.find((v) => v.name === name)!.link;
const anyTx = () => transferTx(payer, Keypair.generate().publicKey, 1_000_000, blockhash);

beforeAll(async () => {
  // v1: 80 ms round trip; v2: a lossy link each way; v3, v4: the cluster's link (clean).
  net = await startLocalnet({
    validators: 4,
    slotMs: 100,
    seed: 'link-test',
    faults: { v1: { link: 'rtt=80ms' }, v2: { link: { lossPct: 15 } } },
  });
  const connection = new Connection(net.rpcUrl, 'confirmed');
  payer = await fundedKeypair(connection, 5);
  ({ blockhash } = await connection.getLatestBlockhash('confirmed'));
});

afterAll(async () => {
  await net?.close();
});

/** Send with a fresh identity until written (a lossy handshake can time out and back off). */
async function sendWritten(target: string, bytes: Uint8Array, client = new QuicClient({ identity: randomBytes(32) })): Promise<QuicClient> {
  for (let attempt = 1; ; attempt++) {
    const [outcome] = await client.send([target], Buffer.from(bytes));
    if (outcome!.ok) return client;
    if (attempt >= 8) throw new Error(`not written: ${JSON.stringify(outcome)}`);
    await waitFor('back-off over', () => (client.peerStats().find((p) => p.target === target)?.backoffRemainingMs ?? 0) === 0 || undefined);
  }
}

describe('links', () => {
  it('the QUIC handshake pays the link: the client measures a round trip within 10 % of rtt=80ms', async () => {
    expect(linkOf('v1')).toBe('rtt=80ms');
    expect(linkOf('v3')).toBe('clean');
    // Fresh connections until one measures the path within 10 %: the relay's timers run on an
    // event loop that a busy machine makes late (it only ever adds), so a sample can be longer;
    // none can be shorter than the setting allows.
    const rtts: number[] = [];
    while (rtts.length < 12 && !rtts.some((r) => r <= 80 * 1.1)) {
      const client = await sendWritten(tpuOf('v1'), anyTx().bytes);
      try {
        const peer = client.peerStats().find((p) => p.target === tpuOf('v1'))!;
        expect(peer.connects).toBe(1);
        rtts.push(peer.rttUs! / 1000);
      } finally {
        await client.close();
      }
    }
    expect(Math.min(...rtts)).toBeGreaterThanOrEqual(80 * 0.9);
    expect(Math.min(...rtts)).toBeLessThanOrEqual(80 * 1.1);
    // And the clean link beside it is not slowed: the same measure, far below.
    const clean = await sendWritten(tpuOf('v3'), anyTx().bytes);
    try {
      expect(clean.peerStats().find((p) => p.target === tpuOf('v3'))!.rttUs! / 1000).toBeLessThan(40);
    } finally {
      await clean.close();
    }
  });

  it('loss each way is applied and counted, and QUIC still delivers through it', async () => {
    // v2 starts lossy (the faults file's link); the connection is made over a clean link first.
    // A handshake under loss can end with the client connected and the server not: the server
    // abandons a handshake it has not completed within 2 s (Agave's timeout), and whatever the
    // client wrote on it meanwhile is lost (measured here: 1 run in 40 of this case, all 10
    // sends lost, the client told "closed during the handshake"). That is the handshake's story,
    // not the link's; here the loss meets an established connection, where QUIC retransmits.
    expect(linkOf('v2')).toBe('loss=15%');
    await net.setLink('v2', '');
    expect(linkOf('v2')).toBe('clean');
    const client = new QuicClient({ identity: randomBytes(32) });
    const sent: string[] = [];
    try {
      const hello = anyTx();
      await sendWritten(tpuOf('v2'), hello.bytes, client);
      await waitFor('the first send at v2 (the server has the connection)', () => net.receivedBy(hello.signature).find((r) => r.validator === 'v2'));
      await net.setLink('v2', { lossPct: 15 });
      expect(linkOf('v2')).toBe('loss=15%');
      const before = net.linkStats('v2')!;
      let after = before;
      const started = Date.now();
      // Batches of 10 until both directions have lost a datagram (at 15 % each way, the first
      // batch almost always does; at most 20 batches).
      for (let batch = 0; batch < 20 && (after.up.dropped === before.up.dropped || after.down.dropped === before.down.dropped); batch++) {
        for (let i = 0; i < 10; i++) {
          const tx = anyTx();
          await sendWritten(tpuOf('v2'), tx.bytes, client);
          sent.push(tx.signature);
        }
        after = net.linkStats('v2')!;
      }
      const sending = Date.now() - started;
      // QUIC gets them through: retransmitted until received. ("Written" is not "received": a
      // connection the lossy path made look dead would be dropped with what it still carried,
      // so the claim is most of them, not each.)
      const arrived = () => sent.filter((sig) => net.receivedBy(sig).some((r) => r.validator === 'v2')).length;
      await waitFor('most of them at v2', () => (arrived() >= sent.length * 0.8 ? true : undefined)).catch((e: Error) => {
        throw new Error(`${e.message}: ${arrived()} of ${sent.length} arrived (the sends took ${sending} ms); the client: ${JSON.stringify(client.peerStats())}; the link: ${JSON.stringify(net.linkStats('v2'))}; the server: ${JSON.stringify(net.serverStats('v2'))}`);
      });
      const now = net.linkStats('v2')!;
      // Datagrams towards the validator and back were both dropped: the acknowledgements and
      // credit the validator sends pay the loss too.
      expect(now.up.dropped).toBeGreaterThan(before.up.dropped);
      expect(now.down.dropped).toBeGreaterThan(before.down.dropped);
      expect(now.up.delivered).toBeGreaterThan(before.up.delivered);
      expect(now.down.delivered).toBeGreaterThan(before.down.delivered);
    } finally {
      await client.close();
    }
  });

  it('a timed change while running: a loss burst on every link, then back to what it was', async () => {
    await net.setLink(null, 'loss=100%', 1500);
    expect(linkOf('v3')).toBe('loss=100%');
    expect(linkOf('v1')).toBe('rtt=80ms,loss=100%'); // v1's own link refines the cluster's
    const dropped = net.linkStats('v4')!.up.dropped;
    const client = new QuicClient({ identity: randomBytes(32), handshakeTimeoutMs: 500 });
    try {
      const tx = anyTx();
      const [outcome] = await client.send([tpuOf('v4')], Buffer.from(tx.bytes));
      expect(outcome!.ok).toBe(false);
      expect(net.linkStats('v4')!.up.dropped).toBeGreaterThan(dropped);
      expect(net.receivedBy(tx.signature)).toEqual([]);
      // The burst ends by itself; the previous links are back.
      await waitFor('the burst to end', () => (linkOf('v3') === 'clean' ? true : undefined), 10_000);
      expect(linkOf('v1')).toBe('rtt=80ms');
      const after = anyTx();
      await sendWritten(tpuOf('v4'), after.bytes);
      await waitFor('arrival after the burst', () => net.receivedBy(after.signature)[0]);
    } finally {
      await client.close();
    }
  });

  it('over JSON-RPC setLink (what `landfall localnet-link` calls), one validator or all; bad settings refused', async () => {
    const r = await rpc(net.rpcUrl, 'setLink', ['v3', 'rtt=40ms,jitter=5ms,loss-up=1%']);
    expect((r.result as { validators: unknown[] }).validators).toContainEqual({ name: 'v3', link: 'rtt=40ms,jitter=5ms,loss-up=1%,loss-down=0%' });
    await waitFor('applied', () => (linkOf('v3') === 'rtt=40ms,jitter=5ms,loss-up=1%,loss-down=0%' ? true : undefined));
    expect(describeCluster(net)).toMatch(/v3 .*\[link rtt=40ms/);
    await rpc(net.rpcUrl, 'setLink', ['v3', '']);
    await waitFor('cleared', () => (linkOf('v3') === 'clean' ? true : undefined));
    for (const [params, message] of [
      [['v3', 'rtt=80'], /rtt needs a time/],
      [['v3', 'speed=9ms'], /cannot read 'speed=9ms'/],
      [['v9', 'rtt=10ms'], /no validator named 'v9'/],
      [['v3', { lossPct: 101 }], /lossPct must be a number from 0 to 100/],
      [[3, 'rtt=1ms'], /validator name/],
    ] as const) {
      const bad = await rpc(net.rpcUrl, 'setLink', params as unknown as unknown[]);
      expect(bad.error!.code).toBe(-32602);
      expect(bad.error!.message).toMatch(message);
    }
    expect(linkOf('v3')).toBe('clean');
  });

  it('the string form: every key, units, and clear errors', () => {
    expect(parseLink('rtt=80ms,jitter=10ms,loss=2%')).toEqual({ rttMs: 80, jitterMs: 10, lossPct: 2 });
    expect(parseLink('up=0.02s,down=30ms,loss-up=1%,loss-down=3%,burst-enter=1%,burst-exit=20%,burst-loss=50%,bw=10mbit')).toEqual({
      upDelayMs: 20,
      downDelayMs: 30,
      upLossPct: 1,
      downLossPct: 3,
      burstEnterPct: 1,
      burstExitPct: 20,
      burstLossPct: 50,
      bandwidthKbps: 10_000,
    });
    expect(parseLink('')).toEqual({});
    expect(() => parseLink('loss=2')).toThrow(/loss needs a percentage/);
    expect(() => parseLink('loss=120%')).toThrow(/lossPct must be a number from 0 to 100/);
    expect(() => parseLink('bw=10')).toThrow(/bw needs kbit, mbit or gbit/);
  });

  it('old fault names are the link: delayMs is the one-way delay towards the validator, packetLossPct the loss each way', async () => {
    await net.setFault('v4', { delayMs: 30, packetLossPct: 5 });
    expect(linkOf('v4')).toBe('up=30ms,down=0ms,loss=5%');
    await net.setFault('v4', {});
    expect(linkOf('v4')).toBe('clean');
  });

  it('a sink cluster has no links: a link setting is refused', async () => {
    await expect(startLocalnet({ sink: true, link: 'rtt=10ms' })).rejects.toThrow(/a sink cluster has no links/);
    const sink = await startLocalnet({ sink: true, validators: 1 });
    try {
      expect(sink.validators[0]!.link).toBe('direct');
      await expect(sink.setLink(null, 'loss=1%')).rejects.toThrow(/a sink cluster has no links/);
    } finally {
      await sink.close();
    }
  });
});

/**
 * Sink mode: the cluster a throughput benchmark sends to. Validators run slots, the leader
 * schedule, blockhashes, JSON-RPC and PubSub as usual, their QUIC servers accept and count every
 * transaction (per validator, and whether it came to the leader), and nothing that arrives is
 * decoded or executed: a real, landable transfer sent to the leader over QUIC never lands.
 */
import { randomBytes } from 'node:crypto';
import { Connection, Keypair } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalnet, type Localnet } from '../../src/localnet/index.js';
import { fundedKeypair, leaderOf, QuicClient, rpc, transferTx, waitFor, waitForSlot, windowStart } from '../../harness/localnet.js';

describe('sink mode', () => {
  let net: Localnet;
  let connection: Connection;
  let client: QuicClient;

  beforeAll(async () => {
    net = await startLocalnet({ sink: true, slotMs: 100, seed: 'sink' });
    connection = new Connection(net.rpcUrl, 'confirmed');
    client = new QuicClient({ identity: randomBytes(32) });
  });

  afterAll(async () => {
    await client.close();
    await net.close();
  });

  it('keeps the chain running: slots advance, leaders and TPU addresses, blockhashes, airdrops', async () => {
    expect(net.sink).toBe(true);
    const slot = await connection.getSlot('processed');
    await waitForSlot(connection, slot + 2);
    const leader = await leaderOf(connection, slot + 4);
    expect(net.validators.map((v) => v.tpuQuic)).toContain(leader.tpuQuic);
    const a = await connection.getLatestBlockhash('confirmed');
    await waitForSlot(connection, slot + 4);
    const b = await connection.getLatestBlockhash('confirmed');
    expect(b.blockhash).not.toBe(a.blockhash);
    // Airdrops are not sent over QUIC: they still execute, so a sender can fund its fee payer.
    const payer = await fundedKeypair(connection, 1);
    expect(await connection.getBalance(payer.publicKey)).toBe(1_000_000_000);
  });

  it('a transaction sent over QUIC to the leader is counted at that validator and never executed', async () => {
    const payer = await fundedKeypair(connection, 1);
    const to = Keypair.generate().publicKey;
    const { blockhash } = await connection.getLatestBlockhash('confirmed');
    const tx = transferTx(payer, to, 1_000_000, blockhash);
    const before = net.arrivals();
    const slot = await windowStart(connection);
    const leader = await leaderOf(connection, slot);
    const name = net.validators.find((v) => v.identity === leader.identity)!.name;
    const atLeaderBefore = net.arrivals(name);

    const [outcome] = await client.send([leader.tpuQuic], Buffer.from(tx.bytes));
    expect(outcome).toMatchObject({ ok: true });

    const counted = await waitFor('the arrival', () => (net.arrivals(name).received > atLeaderBefore.received ? net.arrivals(name) : undefined));
    expect(counted).toEqual({
      received: atLeaderBefore.received + 1,
      atLeader: atLeaderBefore.atLeader + 1,
      bytes: atLeaderBefore.bytes + tx.bytes.length,
    });
    expect(net.arrivals()).toEqual({ received: before.received + 1, atLeader: before.atLeader + 1, bytes: before.bytes + tx.bytes.length });
    // The same counts from another process's point of view: JSON-RPC.
    const reply = (await rpc(net.rpcUrl, 'getArrivalCounts')).result as {
      sink: boolean;
      total: { received: number };
      validators: { name: string; identity: string; received: number; atLeader: number; bytes: number }[];
    };
    expect(reply.sink).toBe(true);
    expect(reply.total.received).toBe(before.received + 1);
    expect(reply.validators.find((v) => v.name === name)).toEqual({ name, identity: leader.identity, ...counted });

    // Nothing was decoded, logged or executed: no receipt, no status, no transfer, even later.
    await waitForSlot(connection, slot + 8);
    expect(net.receivedBy(tx.signature)).toEqual([]);
    expect(net.counters()).toMatchObject({ received: 0, included: 0 });
    expect((await connection.getSignatureStatuses([tx.signature], { searchTransactionHistory: true })).value).toEqual([null]);
    expect(await connection.getBalance(to)).toBe(0);
  });

  it('counts a transaction sent to a validator that is not the leader, not at the leader', async () => {
    const payer = await fundedKeypair(connection, 1);
    const { blockhash } = await connection.getLatestBlockhash('confirmed');
    const tx = transferTx(payer, Keypair.generate().publicKey, 1_000, blockhash);
    const slot = await windowStart(connection);
    // Two windows ahead: not this window's leader, not the next one's.
    const other = await leaderOf(connection, slot + 8);
    const name = net.validators.find((v) => v.identity === other.identity)!.name;
    const before = net.arrivals(name);
    const [outcome] = await client.send([other.tpuQuic], Buffer.from(tx.bytes));
    expect(outcome).toMatchObject({ ok: true });
    const counted = await waitFor('the arrival', () => (net.arrivals(name).received > before.received ? net.arrivals(name) : undefined));
    expect(counted).toEqual({ received: before.received + 1, atLeader: before.atLeader, bytes: before.bytes + tx.bytes.length });
  });

  it('bytes that are not a transaction are counted too (nothing parses them)', async () => {
    const v = net.validators[0]!;
    const before = net.arrivals(v.name);
    const [outcome] = await client.send([v.tpuQuic], Buffer.from('not a transaction'));
    expect(outcome).toMatchObject({ ok: true });
    const counted = await waitFor('the arrival', () => (net.arrivals(v.name).received > before.received ? net.arrivals(v.name) : undefined));
    expect(counted.bytes).toBe(before.bytes + 'not a transaction'.length);
    expect(net.counters().rejected).toBe(0);
  });
});

describe('an executing cluster counts arrivals too', () => {
  it('received and atLeader match its receipts; getArrivalCounts says sink: false', async () => {
    const net = await startLocalnet({ slotMs: 100, seed: 'arrivals' });
    const client = new QuicClient({ identity: randomBytes(32) });
    try {
      const connection = new Connection(net.rpcUrl, 'confirmed');
      expect(net.sink).toBe(false);
      const payer = await fundedKeypair(connection, 1);
      const { blockhash } = await connection.getLatestBlockhash('confirmed');
      const tx = transferTx(payer, Keypair.generate().publicKey, 1_000, blockhash);
      const slot = await windowStart(connection);
      const leader = await leaderOf(connection, slot);
      await client.send([leader.tpuQuic], Buffer.from(tx.bytes));
      const [receipt] = await waitFor('the receipt', () => (net.receivedBy(tx.signature).length > 0 ? net.receivedBy(tx.signature) : undefined));
      expect(net.arrivals(receipt!.validator)).toMatchObject({ received: 1, atLeader: 1, bytes: tx.bytes.length });
      expect(net.arrivals().received).toBe(net.counters().received);
      const reply = (await rpc(net.rpcUrl, 'getArrivalCounts')).result as { sink: boolean; total: { received: number } };
      expect(reply).toMatchObject({ sink: false, total: { received: 1 } });
    } finally {
      await client.close();
      await net.close();
    }
  });

  it('sink must be a boolean', async () => {
    await expect(startLocalnet({ sink: 'yes' as unknown as boolean })).rejects.toThrow(/sink must be true or false/);
  });
});

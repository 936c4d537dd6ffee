/**
 * Leaders that misbehave (`skipSlots`, `lateStartMs` faults): a validator that skips its slots
 * produces no block in them — from then on the block height trails the slot, as on mainnet, and
 * every reader says so (getBlockHeight, getEpochInfo, getLatestBlockhash's lastValidBlockHeight,
 * slotSubscribe's parents); what reaches it in those slots is lost. A validator that starts its
 * blocks late includes what reached it only once its block opens, still in its own slot.
 */
import { randomBytes } from 'node:crypto';
import { Connection, Keypair } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalnet, type Localnet } from '../../src/localnet/index.js';
import { fundedKeypair, post, QuicClient, transferTx, waitFor } from '../../harness/localnet.js';
import WebSocket from 'ws';
import { Client } from '../../harness/ws-client.js';

const SLOT_MS = 100;
let net: Localnet;
let connection: Connection;
let payer: Keypair;

beforeAll(async () => {
  net = await startLocalnet({ validators: 4, slotMs: SLOT_MS, seed: 'leaders-test' });
  connection = new Connection(net.rpcUrl, 'confirmed');
  payer = await fundedKeypair(connection, 5);
});

afterAll(async () => {
  await net?.close();
});

const leaderName = (slot: number): string => net.leaderAt(slot).name;

/** The first slot of the next window of validator `name` (a slot it leads whose predecessor it does not). */
async function windowOf(name: string): Promise<number> {
  return waitFor(`a window of ${name}`, () => {
    const s = net.slot();
    return leaderName(s) === name && leaderName(s - 1) !== name ? s : undefined;
  }, 20_000);
}

/** Several JSON-RPC calls answered from one state (one batch, one turn of the cluster's loop). */
async function batch(calls: [string, unknown[]][]): Promise<any[]> {
  const body = JSON.stringify(calls.map(([method, params], id) => ({ jsonrpc: '2.0', id, method, params })));
  return (JSON.parse((await post(net.rpcUrl, body)).text) as { result: unknown }[]).map((r) => r.result);
}

describe('a leader that skips its slots', () => {
  it('produces no block: block height falls behind the slot by the slots skipped, in every reader; slot notifications skip them', async () => {
    const ws = await Client.open(net.wsUrl);
    const seen = (): { slot: number; parent: number }[] =>
      ws.frames.filter((f) => f.method === 'slotNotification').map((f) => f.params!.result as { slot: number; parent: number });
    try {
      await ws.call('slotSubscribe', []);
      // Set while v1 leads, so every v2 slot from its next window on is skipped, none before.
      const from = await windowOf('v1');
      await net.setFault('v2', { skipSlots: true });
      expect(net.validators.find((v) => v.name === 'v2')!.skipSlots).toBe(true);
      // v2's whole next window, and a slot of v3's after it.
      const v2Start = await windowOf('v2');
      const client = new QuicClient({ identity: randomBytes(32) });
      const lost = transferTx(payer, Keypair.generate().publicKey, 1_000_000, (await connection.getLatestBlockhash()).blockhash);
      try {
        await client.send([net.validators.find((v) => v.name === 'v2')!.tpuQuic], Buffer.from(lost.bytes));
      } finally {
        await client.close();
      }
      await windowOf('v3');
      await waitFor('a slot into v3', () => (net.slot() >= v2Start + 5 ? true : undefined));

      const [slot, height, info, latest] = await batch([
        ['getSlot', [{ commitment: 'confirmed' }]],
        ['getBlockHeight', [{ commitment: 'confirmed' }]],
        ['getEpochInfo', [{ commitment: 'confirmed' }]],
        ['getLatestBlockhash', [{ commitment: 'confirmed' }]],
      ]);
      // The confirmed bank is a slot with a block: never one of v2's now.
      expect(leaderName(slot)).not.toBe('v2');
      let skipped = 0;
      for (let s = from + 1; s <= slot; s++) if (leaderName(s) === 'v2') skipped++;
      expect(skipped).toBeGreaterThanOrEqual(4);
      expect(height).toBe(slot - skipped);
      expect(info).toMatchObject({ absoluteSlot: slot, blockHeight: slot - skipped });
      expect(latest.value.lastValidBlockHeight).toBe(slot - skipped + 150);
      expect(net.blockHeight(slot)).toBe(slot - skipped);

      // What reached v2 in its skipped window was lost with it.
      const receipt = await waitFor('the receipt at v2', () => net.receivedBy(lost.signature).find((r) => r.outcome !== 'held'));
      expect(receipt).toMatchObject({ validator: 'v2', outcome: 'skipped' });
      expect((await connection.getSignatureStatuses([lost.signature])).value[0]).toBeNull();

      // slotSubscribe never names a skipped slot; the first slot after the window has the last
      // slot before it as parent.
      await waitFor('the notification of v3\'s first slot', () => seen().find((n) => n.slot === v2Start + 4));
      for (const n of seen()) if (n.slot > from) expect(leaderName(n.slot)).not.toBe('v2');
      expect(seen().find((n) => n.slot === v2Start + 4)!.parent).toBe(v2Start - 1);
    } finally {
      ws.close();
      await net.setFault('v2', {});
    }
  });

  it('cleared, it produces again: a transaction sent to it in its window lands there, and height climbs with the slot again', async () => {
    const start = await windowOf('v2');
    const gap = start - net.blockHeight(start - 1) - 1;
    const client = new QuicClient({ identity: randomBytes(32) });
    const tx = transferTx(payer, Keypair.generate().publicKey, 1_000_000, (await connection.getLatestBlockhash()).blockhash);
    try {
      await client.send([net.validators.find((v) => v.name === 'v2')!.tpuQuic], Buffer.from(tx.bytes));
    } finally {
      await client.close();
    }
    const receipt = await waitFor('the receipt at v2', () => net.receivedBy(tx.signature).find((r) => r.outcome !== 'held'));
    if (receipt.outcome === 'included') expect(leaderName(receipt.landedSlot!)).toBe('v2');
    else expect(receipt.outcome).toBe('dropped-not-leader'); // a starved machine sent it after the window
    await waitFor('two more slots', () => (net.slot() >= start + 2 ? true : undefined));
    expect(net.blockHeight(start + 1) - net.blockHeight(start)).toBe(1);
    expect(start + 1 - net.blockHeight(start + 1)).toBe(gap);
  });
});

describe('a leader that starts its blocks late', () => {
  it('holds what reaches it until its block opens, then includes it in its own slot', async () => {
    const late = 60;
    await net.setFault('v3', { lateStartMs: late });
    // A raw socket, to stamp the notification as it arrives.
    const ws = new WebSocket(net.wsUrl);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    let processedAt = 0;
    ws.on('message', (data) => {
      if ((JSON.parse(data.toString()) as { method?: string }).method === 'signatureNotification' && processedAt === 0) processedAt = Date.now();
    });
    try {
      expect(net.validators.find((v) => v.name === 'v3')!.lateStartMs).toBe(late);
      const start = await windowOf('v3');
      const tx = transferTx(payer, Keypair.generate().publicKey, 1_000_000, (await connection.getLatestBlockhash()).blockhash);
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'signatureSubscribe', params: [tx.signature, { commitment: 'processed' }] }));
      const client = new QuicClient({ identity: randomBytes(32) });
      try {
        await client.send([net.validators.find((v) => v.name === 'v3')!.tpuQuic], Buffer.from(tx.bytes));
      } finally {
        await client.close();
      }
      const receipt = await waitFor('its receipt settled', () => net.receivedBy(tx.signature).find((r) => r.outcome !== 'held'));
      expect(receipt.outcome).toBe('included');
      expect(leaderName(receipt.landedSlot!)).toBe('v3');
      // It landed no earlier than its slot's block opened (the late start), whenever it arrived.
      await waitFor('the processed notification', () => (processedAt > 0 ? true : undefined));
      expect(processedAt).toBeGreaterThanOrEqual(Math.floor(net.slotStartMs(receipt.landedSlot!) + late));
      expect(receipt.landedSlot).toBeGreaterThanOrEqual(start);
    } finally {
      ws.close();
      await net.setFault('v3', {});
    }
  });

  it('bad values are refused with the field named', async () => {
    await expect(net.setFault('v1', { skipSlots: 'yes' } as never)).rejects.toThrow(/skipSlots must be true or false/);
    await expect(net.setFault('v1', { lateStartMs: -5 })).rejects.toThrow(/lateStartMs must be an integer/);
  });
});

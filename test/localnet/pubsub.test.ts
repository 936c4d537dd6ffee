/**
 * The PubSub WebSocket with a raw client (the `ws` package), so the exact frames are checked:
 * subscription ids, notification shapes, commitment timing, unsubscribe, and errors.
 */
import { Connection, Keypair } from '@solana/web3.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startLocalnet, type Localnet } from '../../src/localnet/index.js';
import { fundedKeypair, transferTx, waitFor } from '../../harness/localnet.js';
import { Client } from '../../harness/ws-client.js';

let net: Localnet;
let connection: Connection;
const clients: Client[] = [];

async function client(): Promise<Client> {
  const c = await Client.open(net.wsUrl);
  clients.push(c);
  return c;
}

beforeAll(async () => {
  net = await startLocalnet({ validators: 2, slotMs: 50, seed: 'pubsub-test' });
  connection = new Connection(net.rpcUrl, 'confirmed');
});

afterEach(() => {
  for (const c of clients.splice(0)) c.close();
});

afterAll(async () => {
  await net.close();
});

describe('PubSub WebSocket', () => {
  it('listens on the RPC port + 1, as Agave does', () => {
    expect(Number(new URL(net.wsUrl).port)).toBe(Number(new URL(net.rpcUrl).port) + 1);
  });

  it('slotSubscribe → one slotNotification per slot {parent, root, slot}; slotUnsubscribe stops them', async () => {
    const c = await client();
    const sub = await c.call('slotSubscribe');
    expect(typeof sub.result).toBe('number');
    const id = sub.result as number;
    await waitFor('three slot notifications', () => (c.notifications(id).length >= 3 ? true : undefined));
    const slots = c.notifications(id).map((f) => {
      expect(f.method).toBe('slotNotification');
      return f.params!.result as { parent: number; root: number; slot: number };
    });
    for (const [i, s] of slots.entries()) {
      expect(s.parent).toBe(s.slot - 1);
      expect(s.root).toBe(Math.max(0, s.slot - 33));
      if (i > 0) expect(s.slot).toBe(slots[i - 1]!.slot + 1);
    }
    expect((await c.call('slotUnsubscribe', [id])).result).toBe(true);
    const count = c.notifications(id).length;
    await waitFor('two more slots', async () => ((await connection.getSlot('processed')) > slots.at(-1)!.slot + 3 ? true : undefined));
    expect(c.notifications(id).length).toBe(count);
    // Unsubscribing twice: the id is gone.
    expect((await c.call('slotUnsubscribe', [id])).error).toEqual({ code: -32602, message: 'Invalid subscription id.' });
  });

  it('signatureSubscribe notifies at its commitment: processed on landing, finalized 32 slots after confirmed', async () => {
    const c = await client();
    const payer = await fundedKeypair(connection, 1);
    const { blockhash } = await connection.getLatestBlockhash('confirmed');
    const tx = transferTx(payer, Keypair.generate().publicKey, 1_000_000, blockhash);
    const [receivedSub, processedSub, finalizedSub] = await Promise.all([
      c.call('signatureSubscribe', [tx.signature, { commitment: 'confirmed', enableReceivedNotification: true }]),
      c.call('signatureSubscribe', [tx.signature, { commitment: 'processed' }]),
      c.call('signatureSubscribe', [tx.signature, { commitment: 'finalized' }]),
    ]);
    await connection.sendRawTransaction(tx.bytes);
    const received = await c.next((f) => f.params?.subscription === receivedSub.result);
    expect((received.params!.result as { value: unknown }).value).toBe('receivedSignature');
    const processed = await c.next((f) => f.params?.subscription === processedSub.result);
    expect(processed.method).toBe('signatureNotification');
    const landedSlot = (processed.params!.result as { context: { slot: number } }).context.slot;
    expect(processed.params!.result).toEqual({ context: { slot: landedSlot }, value: { err: null } });
    const confirmed = await c.next((f) => f.params?.subscription === receivedSub.result && f !== received);
    expect(confirmed.params!.result).toEqual({ context: { slot: landedSlot }, value: { err: null } });
    // Confirmed once its slot ended; finalized 32 slots after that.
    expect(await connection.getSlot('processed')).toBeGreaterThan(landedSlot);
    const finalized = await c.next((f) => f.params?.subscription === finalizedSub.result);
    expect(finalized.params!.result).toEqual({ context: { slot: landedSlot }, value: { err: null } });
    const [status] = (await connection.getSignatureStatuses([tx.signature])).value;
    expect(status!.confirmationStatus).toBe('finalized');
    expect(status!.confirmations).toBeNull();
    expect(await connection.getSlot('processed')).toBeGreaterThanOrEqual(landedSlot + 33);
    // One notification each, then the subscription is over (Agave's signature subscriptions are one-shot).
    expect(c.notifications(processedSub.result as number)).toHaveLength(1);
    expect((await c.call('signatureUnsubscribe', [processedSub.result])).error?.code).toBe(-32602);
  });

  it('subscribing to a signature that already reached the commitment notifies at once', async () => {
    const c = await client();
    const signature = await connection.requestAirdrop(Keypair.generate().publicKey, 1_000_000);
    const sub = await c.call('signatureSubscribe', [signature, { commitment: 'processed' }]);
    const n = await c.next((f) => f.params?.subscription === sub.result);
    expect((n.params!.result as { value: unknown }).value).toEqual({ err: null });
    // The subscription reply came first.
    expect(c.frames.indexOf(sub)).toBeLessThan(c.frames.indexOf(n));
  });

  it('logsSubscribe {mentions: [address]} gets the logs of transactions touching it, at the subscribed commitment', async () => {
    const c = await client();
    const watched = Keypair.generate().publicKey;
    const [processedSub, confirmedSub, allSub] = await Promise.all([
      c.call('logsSubscribe', [{ mentions: [watched.toBase58()] }, { commitment: 'processed' }]),
      c.call('logsSubscribe', [{ mentions: [watched.toBase58()] }, { commitment: 'confirmed' }]),
      c.call('logsSubscribe', ['all', { commitment: 'processed' }]),
    ]);
    const unrelated = await connection.requestAirdrop(Keypair.generate().publicKey, 1_000_000);
    const signature = await connection.requestAirdrop(watched, 1_000_000);
    const atProcessed = await c.next((f) => f.params?.subscription === processedSub.result);
    expect(atProcessed.method).toBe('logsNotification');
    const result = atProcessed.params!.result as { context: { slot: number }; value: { signature: string; err: unknown; logs: string[] } };
    expect(result.value).toEqual({
      signature,
      err: null,
      logs: [
        'Program ComputeBudget111111111111111111111111111111 invoke [1]',
        'Program ComputeBudget111111111111111111111111111111 success',
        'Program 11111111111111111111111111111111 invoke [1]',
        'Program 11111111111111111111111111111111 success',
      ],
    });
    const atConfirmed = await c.next((f) => f.params?.subscription === confirmedSub.result);
    expect(atConfirmed.params!.result).toEqual(result);
    // Only the transaction that mentions the address; "all" saw both.
    expect(c.notifications(processedSub.result as number)).toHaveLength(1);
    await waitFor('both in "all"', () => {
      const seen = c.notifications(allSub.result as number).map((f) => (f.params!.result as { value: { signature: string } }).value.signature);
      return seen.includes(unrelated) && seen.includes(signature) ? true : undefined;
    });
    expect((await c.call('logsUnsubscribe', [processedSub.result])).result).toBe(true);
  });

  it('slotsUpdatesSubscribe: each slot start in Agave order around its slotNotification; refused where not offered', async () => {
    const c = await client();
    const updates = (await c.call('slotsUpdatesSubscribe')).result as number;
    const slots = (await c.call('slotSubscribe')).result as number;
    // A slot that starts after both subscriptions are in place (the slot subscription's reply is
    // in): one that started between the two calls has no slotNotification to order.
    const subscribed = c.frames.length;
    const first = await c.next((f) => c.frames.indexOf(f) >= subscribed && f.params?.subscription === updates && (f.params.result as { type: string }).type === 'firstShredReceived');
    const n = (first.params!.result as { slot: number }).slot;
    // Everything about slot n's start, from its first shred to its bank's creation (bounded).
    await c.next((f) => f.params?.subscription === updates && (f.params.result as { type: string; slot: number }).type === 'createdBank' && (f.params.result as { slot: number }).slot === n);
    const from = c.frames.indexOf(first);
    const seq = c.frames.slice(from).flatMap((f) => {
      if (f.params?.subscription === slots) return (f.params.result as { slot: number }).slot === n ? ['slotNotification'] : [];
      const u = f.params?.subscription === updates ? (f.params.result as { type: string; slot: number; parent?: number }) : null;
      return u && (u.slot === n || u.slot === n - 1) ? [`${u.type} ${u.slot === n ? 'n' : 'n-1'}`] : [];
    });
    expect(seq.slice(0, 6)).toEqual(['firstShredReceived n', 'frozen n-1', 'completed n-1', 'slotNotification', 'createdBank n', 'optimisticConfirmation n-1']);
    expect(await c.call('slotsUpdatesUnsubscribe', [updates])).toMatchObject({ result: true });

    const plain = await startLocalnet({ validators: 1, slotMs: 50, slotsUpdates: false });
    try {
      const p = await Client.open(plain.wsUrl);
      clients.push(p);
      expect((await p.call('slotsUpdatesSubscribe')).error).toEqual({ code: -32601, message: 'Method not found' });
    } finally {
      await plain.close();
    }
    await expect(startLocalnet({ slotsUpdates: 'yes' as unknown as boolean })).rejects.toThrow(/slotsUpdates must be true or false/);
  });

  it('errors: unknown method, bad params, more than one mention, parse error', async () => {
    const c = await client();
    expect((await c.call('accountSubscribeToEverything')).error).toEqual({ code: -32601, message: 'Method not found' });
    expect((await c.call('signatureSubscribe', ['nope'])).error?.code).toBe(-32602);
    const two = [Keypair.generate().publicKey.toBase58(), Keypair.generate().publicKey.toBase58()];
    expect((await c.call('logsSubscribe', [{ mentions: two }])).error).toEqual({ code: -32602, message: 'Invalid Request: Only 1 address supported' });
    expect((await c.call('logsSubscribe', [{ nothing: true }])).error?.code).toBe(-32602);
    expect((await c.call('signatureSubscribe', ['0'.repeat(88)])).error).toEqual({ code: -32602, message: 'Invalid Request: Invalid signature provided' });
    // An unknown commitment is the default, as in Agave (a flattened optional config that fails to parse is absent).
    expect(typeof (await c.call('signatureSubscribe', ['1'.repeat(64), { commitment: 'later' }])).result).toBe('number');
    c.sendRaw('{not json');
    const parse = await c.next((f) => f.error?.code === -32700);
    expect(parse).toEqual({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' }, id: null });
    // Still working after the errors.
    expect(typeof (await c.call('slotSubscribe')).result).toBe('number');
  });

  it('web3.js onSlotChange and onLogs work against it unchanged', async () => {
    const slot = await new Promise<number>((resolve) => {
      const id = connection.onSlotChange((info) => {
        void connection.removeSlotChangeListener(id);
        resolve(info.slot);
      });
    });
    expect(slot).toBeGreaterThan(0);
    const watched = Keypair.generate().publicKey;
    const logs = new Promise<string>((resolve) => connection.onLogs(watched, (l) => resolve(l.signature), 'confirmed'));
    const signature = await connection.requestAirdrop(watched, 1_000_000);
    expect(await logs).toBe(signature);
  });
});

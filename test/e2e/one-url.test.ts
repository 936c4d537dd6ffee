/**
 * web3.js and @solana/kit pointed at Landfall alone (issue 22, item 6): the blockhash, the
 * statuses and the confirmation of the caller's own transactions come from the service itself —
 * `getLatestBlockhash`, `getBlockHeight`, `getSignatureStatuses` over HTTP and `signatureSubscribe`
 * on the WebSocket at the same address — so `connection.sendTransaction(tx, [payer])` +
 * `confirmTransaction` land and confirm with one URL. Real clients, the real service with one
 * ingress thread (the routes are a worker's, as in production), the local cluster.
 */
import { randomBytes } from 'node:crypto';
import {
  appendTransactionMessageInstructions,
  createKeyPairSignerFromBytes,
  createSolanaRpc,
  createSolanaRpcSubscriptions,
  createTransactionMessage,
  getSignatureFromTransaction,
  pipe,
  sendAndConfirmTransactionFactory,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
  type Base64EncodedWireTransaction,
  type Signature,
} from '@solana/kit';
import { LandfallClient } from '../../src/client/index.js';
import { addTip, tipInstruction } from '../../src/client/kit.js';
import { Connection, Keypair, LAMPORTS_PER_SOL, SystemProgram, Transaction } from '@solana/web3.js';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { methodNotOffered } from '../../src/http/json-rpc.js';
import { account, payer, startStack, type Stack } from '../../harness/stack.js';
import { transfer, web3Base58 } from '../../harness/transactions.js';

let s: Stack;
let bot: { id: string; key: string };
let from: Keypair;
let connection: Connection;
const httpUrl = () => `${s.svc.url}/?api-key=${bot.key}`;
const wsUrl = () => `ws://127.0.0.1:${s.svc.port}/?api-key=${bot.key}`;

beforeAll(async () => {
  s = await startStack({ localnet: { slotMs: 100, seed: 'one-url' }, config: { ingressThreads: 1 } });
  bot = account(s);
  from = await payer(s);
  connection = new Connection(httpUrl(), { commitment: 'confirmed', wsEndpoint: wsUrl() });
});
afterAll(async () => {
  await s?.close();
});

let unique = 0;
/** A tipped transfer from `from`: to itself (lands), or 2 SOL from a poor payer (fails on chain). */
function tippedTx(payerKey: Keypair, extra = SystemProgram.transfer({ fromPubkey: payerKey.publicKey, toPubkey: payerKey.publicKey, lamports: ++unique })): Transaction {
  return new Transaction().add(extra, SystemProgram.transfer({ fromPubkey: payerKey.publicKey, toPubkey: s.tips[0]!, lamports: 300_000 }));
}

describe('web3.js Connection with Landfall as its only URL', () => {
  it('getLatestBlockhash and getBlockHeight answer from the chain view, agreeing with the chain', async () => {
    const ours = await connection.getLatestBlockhash();
    const chain = await s.connection.getLatestBlockhash('confirmed');
    // The service fetches once a slot; the chain's newest is never more than a few slots ahead.
    expect(ours.lastValidBlockHeight).toBeGreaterThan(chain.lastValidBlockHeight - 20);
    expect(ours.lastValidBlockHeight).toBeLessThanOrEqual(chain.lastValidBlockHeight);
    expect((await s.connection.isBlockhashValid(ours.blockhash, { commitment: 'processed' })).value).toBe(true);
    const height = await connection.getBlockHeight();
    expect(Math.abs(height - (await s.connection.getBlockHeight('confirmed')))).toBeLessThan(20);
    expect(await connection.getSlot()).toBeGreaterThan(0);
  });

  it('sendTransaction(tx, [payer]) + confirmTransaction: lands and confirms, over the WebSocket at the same address', async () => {
    const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash();
    const tx = tippedTx(from);
    tx.recentBlockhash = blockhash;
    const signature = await connection.sendTransaction(tx, [from]);
    const confirmed = await connection.confirmTransaction({ signature, blockhash, lastValidBlockHeight }, 'confirmed');
    expect(confirmed.value.err).toBeNull();
    expect((await s.connection.getSignatureStatus(signature, { searchTransactionHistory: true })).value?.err).toBeNull();
    const { value } = await connection.getSignatureStatuses([signature]);
    expect(value[0]).toMatchObject({ err: null, confirmationStatus: 'confirmed', slot: expect.any(Number) });
  });

  it('a transaction that fails on chain: confirmTransaction and getSignatureStatuses give the chain\'s own err', async () => {
    const poor = await payer(s, 0.05);
    const tx = tippedTx(poor, transfer(poor.publicKey, Keypair.generate().publicKey, 2 * LAMPORTS_PER_SOL));
    const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash();
    tx.recentBlockhash = blockhash;
    const signature = await connection.sendTransaction(tx, [poor], { skipPreflight: true });
    const result = await connection.confirmTransaction({ signature, blockhash, lastValidBlockHeight }, 'confirmed');
    const onChain = (await s.connection.getSignatureStatus(signature, { searchTransactionHistory: true })).value;
    expect(onChain?.err).toBeTruthy();
    expect(result.value.err).toEqual(onChain!.err);
    expect((await connection.getSignatureStatuses([signature])).value[0]?.err).toEqual(onChain!.err);
  });

  it("another account's transaction and an unknown signature are null, as a node answers unknown ones", async () => {
    const other = account(s);
    const otherConnection = new Connection(`${s.svc.url}/?api-key=${other.key}`, 'confirmed');
    const tx = tippedTx(from);
    tx.recentBlockhash = (await connection.getLatestBlockhash()).blockhash;
    const signature = await connection.sendTransaction(tx, [from]);
    const unknown = web3Base58(randomBytes(64));
    const { value } = await otherConnection.getSignatureStatuses([signature, unknown, 'not-a-signature']);
    expect(value).toEqual([null, null, null]);
  });

  it('a read method it does not serve is a clear error naming what it offers', async () => {
    await expect(connection.getBalance(from.publicKey)).rejects.toThrow(methodNotOffered('getBalance'));
  });

  it("the WebSocket refuses a missing key (401), and never tells one account of another's transaction", async () => {
    const refused = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`ws://127.0.0.1:${s.svc.port}/`);
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => resolve(101));
    });
    expect(refused).toBe(401);

    // Two settled transactions, one of each account: subscribed to both, the socket is told of its own only.
    const other = account(s);
    const mine = tippedTx(from);
    const theirs = tippedTx(from);
    const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash();
    mine.recentBlockhash = theirs.recentBlockhash = blockhash;
    const mySig = await connection.sendTransaction(mine, [from]);
    const theirSig = await new Connection(`${s.svc.url}/?api-key=${other.key}`, 'confirmed').sendTransaction(theirs, [from]);
    await connection.confirmTransaction({ signature: mySig, blockhash, lastValidBlockHeight });
    await s.connection.confirmTransaction({ signature: theirSig, blockhash, lastValidBlockHeight }, 'confirmed');

    const ws = new WebSocket(wsUrl());
    await new Promise((r) => ws.once('open', r));
    const messages: any[] = [];
    const notified = new Promise<void>((resolve) =>
      ws.on('message', (m) => {
        const msg = JSON.parse(String(m));
        messages.push(msg);
        if (msg.method === 'signatureNotification' && messages.filter((x) => x.id !== undefined).length === 2) resolve();
      }),
    );
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'signatureSubscribe', params: [theirSig, { commitment: 'confirmed' }] }));
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'signatureSubscribe', params: [mySig, { commitment: 'confirmed' }] }));
    await notified;
    ws.close();
    const [theirSub, mySub] = [messages.find((x) => x.id === 1).result, messages.find((x) => x.id === 2).result];
    expect(typeof theirSub).toBe('number');
    const notifications = messages.filter((x) => x.method === 'signatureNotification');
    expect(notifications).toEqual([{ jsonrpc: '2.0', method: 'signatureNotification', params: { result: { context: { slot: expect.any(Number) }, value: { err: null } }, subscription: mySub } }]);
  });
});

describe('@solana/kit RPC and subscriptions with Landfall as the only address', () => {
  it('getLatestBlockhash, sendTransaction, signatureNotifications and getSignatureStatuses: a transaction lands and is notified', async () => {
    const rpc = createSolanaRpc(httpUrl());
    const subscriptions = createSolanaRpcSubscriptions(wsUrl());
    const { value: latest } = await rpc.getLatestBlockhash({ commitment: 'confirmed' }).send();
    const tx = tippedTx(from);
    tx.recentBlockhash = latest.blockhash;
    tx.sign(from);
    const signature = web3Base58(tx.signatures[0]!.signature!) as Signature;
    const abort = new AbortController();
    const notifications = await subscriptions.signatureNotifications(signature, { commitment: 'confirmed' }).subscribe({ abortSignal: abort.signal });
    const wire = tx.serialize().toString('base64') as Base64EncodedWireTransaction;
    expect(await rpc.sendTransaction(wire, { encoding: 'base64' }).send()).toBe(signature);
    for await (const n of notifications) {
      expect(n.value).toEqual({ err: null });
      break;
    }
    abort.abort();
    const { value } = await rpc.getSignatureStatuses([signature]).send();
    expect(value[0]).toMatchObject({ err: null, confirmationStatus: 'confirmed' });
  });

  it("sendAndConfirmTransactionFactory: kit's own send-and-confirm (getEpochInfo, slotSubscribe, signatureSubscribe) lands a transaction", async () => {
    const rpc = createSolanaRpc(httpUrl());
    const rpcSubscriptions = createSolanaRpcSubscriptions(wsUrl());
    const client = new LandfallClient({ url: s.svc.url, apiKey: bot.key });
    try {
      const signer = await createKeyPairSignerFromBytes(from.secretKey);
      const { value: latest } = await rpc.getLatestBlockhash().send();
      const epoch = await rpc.getEpochInfo().send();
      expect(Number(epoch.slotIndex)).toBeLessThan(Number(epoch.slotsInEpoch));
      const message = await addTip(
        pipe(
          createTransactionMessage({ version: 0 }),
          (m) => setTransactionMessageFeePayerSigner(signer, m),
          (m) => setTransactionMessageLifetimeUsingBlockhash(latest, m),
        ),
        { client },
      );
      // A second instruction of its own (another tip-sized transfer) makes the signature unique.
      const tx = await signTransactionMessageWithSigners(appendTransactionMessageInstructions([await tipInstruction(client, signer)], message));
      await sendAndConfirmTransactionFactory({ rpc, rpcSubscriptions })(tx as never, { commitment: 'confirmed' });
      const signature = getSignatureFromTransaction(tx);
      expect((await s.connection.getSignatureStatus(signature, { searchTransactionHistory: true })).value?.err).toBeNull();
    } finally {
      client.close();
    }
  });
});

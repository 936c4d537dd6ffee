/**
 * The local cluster's JSON-RPC over HTTP, driven by @solana/web3.js's `Connection` (which
 * validates every response against its own schemas) and by raw requests for the shapes and
 * errors a client library would hide: contexts, commitments, JSON-RPC framing, batches, limits.
 */
import {
  AddressLookupTableProgram,
  Connection,
  Keypair,
  LAMPORTS_PER_SOL,
  NONCE_ACCOUNT_LENGTH,
  SendTransactionError,
  SystemProgram,
  Transaction,
  TransactionMessage,
  VersionedTransaction,
} from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalnet, type Localnet } from '../../src/localnet/index.js';
import { confirmed, fundedKeypair, post, rpc, transferTx, waitFor, waitForSlot } from '../../harness/localnet.js';
import { web3Base58 } from '../../harness/transactions.js';

let net: Localnet;
let connection: Connection;

beforeAll(async () => {
  net = await startLocalnet({ validators: 3, slotMs: 50, slotsPerEpoch: 48, seed: 'rpc-test' });
  connection = new Connection(net.rpcUrl, 'confirmed');
});

afterAll(async () => {
  await net.close();
});

describe('cluster facts', () => {
  it('getVersion, getHealth and GET /health answer as an Agave node does', async () => {
    const version = await connection.getVersion();
    expect(version['solana-core']).toMatch(/^\d+\.\d+\.\d+$/);
    expect(typeof version['feature-set']).toBe('number');
    expect((await rpc(net.rpcUrl, 'getHealth')).result).toBe('ok');
    const res = await fetch(`${net.rpcUrl}/health`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('ok');
  });

  it('slots advance, and commitment levels trail each other by 1 and 32 slots', async () => {
    await waitForSlot(connection, 40);
    const reply = await rpc(net.rpcUrl, 'getSlot', [{ commitment: 'processed' }]);
    const processed = reply.result as number;
    const confirmed = await connection.getSlot('confirmed');
    const finalized = await connection.getSlot('finalized');
    expect(confirmed).toBeGreaterThanOrEqual(processed - 1);
    expect(confirmed).toBeLessThan(processed + 5);
    // Block height equals slot (no skipped slots), at every commitment.
    const height = await connection.getBlockHeight('finalized');
    expect(height).toBeGreaterThanOrEqual(finalized);
    expect(height - finalized).toBeLessThan(5);
    // finalized = the slot 33 behind processed, the moment the request is answered.
    const both = (
      await post(
        net.rpcUrl,
        JSON.stringify([
          { jsonrpc: '2.0', id: 1, method: 'getSlot', params: [{ commitment: 'processed' }] },
          { jsonrpc: '2.0', id: 2, method: 'getSlot', params: [{ commitment: 'finalized' }] },
          { jsonrpc: '2.0', id: 3, method: 'getSlot', params: [{ commitment: 'confirmed' }] },
        ]),
      )
    ).text;
    const [p, f, c] = (JSON.parse(both) as { result: number }[]).map((r) => r.result);
    expect(p! - f!).toBe(33);
    expect(p! - c!).toBe(1);
  });

  it('getEpochInfo and getEpochSchedule describe the same short, warm-up-free epochs', async () => {
    const schedule = await connection.getEpochSchedule();
    expect(schedule).toMatchObject({ slotsPerEpoch: 48, leaderScheduleSlotOffset: 48, warmup: false, firstNormalEpoch: 0, firstNormalSlot: 0 });
    const info = await connection.getEpochInfo('processed');
    expect(info.epoch).toBe(Math.floor(info.absoluteSlot / 48));
    expect(info.slotIndex).toBe(info.absoluteSlot % 48);
    expect(info.slotsInEpoch).toBe(48);
    expect(info.blockHeight).toBe(info.absoluteSlot);
  });

  it('leaders rotate every 4 slots; getSlotLeaders, getLeaderSchedule and getClusterNodes agree', async () => {
    const ids = net.validators.map((v) => v.identity);
    const leaders = (await connection.getSlotLeaders(0, 48)).map((k) => k.toBase58());
    leaders.forEach((l, slot) => expect(l).toBe(ids[Math.floor(slot / 4) % 3]));
    const schedule = await connection.getLeaderSchedule();
    expect(Object.keys(schedule).sort()).toEqual([...ids].sort());
    expect(schedule[ids[0]!]!.slice(0, 8)).toEqual([0, 1, 2, 3, 12, 13, 14, 15]);
    const identityOnly = await rpc(net.rpcUrl, 'getLeaderSchedule', [null, { identity: ids[1] }]);
    expect(Object.keys(identityOnly.result as object)).toEqual([ids[1]]);
    const far = await rpc(net.rpcUrl, 'getLeaderSchedule', [48 * 1000]);
    expect(far.result).toBeNull();
    expect(net.leaderAt(5).identity).toBe(ids[1]);

    const nodes = (await rpc(net.rpcUrl, 'getClusterNodes')).result as Record<string, unknown>[];
    for (const v of net.validators) {
      const node = nodes.find((n) => n.pubkey === v.identity)!;
      expect(node).toMatchObject({ tpuQuic: v.tpuQuic, rpc: null, version: expect.any(String), featureSet: expect.any(Number) });
      expect(node).toHaveProperty('shredVersion');
      expect(node).toHaveProperty('gossip');
      expect(node).toHaveProperty('tpu');
    }
    const rpcNode = nodes.find((n) => n.pubkey === net.rpcIdentity)!;
    expect(rpcNode.rpc).toBe(net.rpcUrl.replace('http://', ''));
    expect(rpcNode.pubsub).toBe(net.wsUrl.replace('ws://', ''));
  });

  it('getLatestBlockhash carries context and lastValidBlockHeight = height + 150; isBlockhashValid follows it', async () => {
    const reply = await rpc(net.rpcUrl, 'getLatestBlockhash', [{ commitment: 'processed' }]);
    const { context, value } = reply.result as { context: { slot: number; apiVersion: string }; value: { blockhash: string; lastValidBlockHeight: number } };
    expect(context.apiVersion).toMatch(/^\d+\.\d+\.\d+$/);
    expect(value.lastValidBlockHeight).toBe(context.slot + 150);
    expect((await connection.isBlockhashValid(value.blockhash, { commitment: 'processed' })).value).toBe(true);
    expect((await connection.isBlockhashValid(Keypair.generate().publicKey.toBase58(), { commitment: 'processed' })).value).toBe(false);
    // A blockhash newer than the finalized bank is unknown to it, as on a real node.
    const atFinalized = await rpc(net.rpcUrl, 'isBlockhashValid', [value.blockhash, { commitment: 'finalized' }]);
    expect((atFinalized.result as { value: boolean }).value).toBe(false);
  });

  it('getMinimumBalanceForRentExemption gives the runtime rent (0 bytes: 890880 lamports)', async () => {
    expect(await connection.getMinimumBalanceForRentExemption(0)).toBe(890_880);
    expect(await connection.getMinimumBalanceForRentExemption(NONCE_ACCOUNT_LENGTH)).toBe(1_447_680);
  });
});

describe('accounts, airdrops and transactions', () => {
  it('requestAirdrop lands like any transaction: a signature, a status, a transaction with fee and balances', async () => {
    const to = Keypair.generate().publicKey;
    const signature = await connection.requestAirdrop(to, 3 * LAMPORTS_PER_SOL);
    const status = await confirmed(connection, signature);
    expect(status.err).toBeNull();
    expect(await connection.getBalance(to)).toBe(3 * LAMPORTS_PER_SOL);
    const tx = await connection.getTransaction(signature, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });
    expect(tx).not.toBeNull();
    expect(tx!.slot).toBe(status.slot);
    expect(tx!.meta!.err).toBeNull();
    expect(tx!.meta!.fee).toBe(5000);
    const keys = tx!.transaction.message.staticAccountKeys.map((k) => k.toBase58());
    expect(keys[0]).toBe(net.faucet);
    const i = keys.indexOf(to.toBase58());
    expect(tx!.meta!.preBalances[i]).toBe(0);
    expect(tx!.meta!.postBalances[i]).toBe(3 * LAMPORTS_PER_SOL);
    expect(tx!.meta!.preBalances[0]! - tx!.meta!.postBalances[0]!).toBe(3 * LAMPORTS_PER_SOL + 5000);
    expect(tx!.version).toBe('legacy');
    expect(tx!.blockTime).toBeGreaterThan(1_600_000_000);
  });

  it('getAccountInfo: null for an unknown address, base64/base58/default encodings for a known one', async () => {
    expect(await connection.getAccountInfo(Keypair.generate().publicKey)).toBeNull();
    const owner = await fundedKeypair(connection, 1);
    const info = await connection.getAccountInfo(owner.publicKey);
    expect(info).toMatchObject({ lamports: LAMPORTS_PER_SOL, executable: false, owner: SystemProgram.programId });
    expect(info!.data.length).toBe(0);
    const b58 = await rpc(net.rpcUrl, 'getAccountInfo', [owner.publicKey.toBase58(), { encoding: 'base58', commitment: 'confirmed' }]);
    const value = (b58.result as { value: Record<string, unknown> }).value;
    expect(value.data).toEqual(['', 'base58']);
    expect(value.space).toBe(0);
    const raw = await post(
      net.rpcUrl,
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getAccountInfo', params: [owner.publicKey.toBase58(), { commitment: 'confirmed' }] }),
    );
    // rentEpoch is u64::MAX exactly as Agave writes it (not rounded through a float).
    expect(raw.text).toContain('"rentEpoch":18446744073709551615');
    expect(raw.text).toContain('"data":""');
  });

  it('getMultipleAccounts: in request order, null for a missing one, base64 by default, at most 100', async () => {
    const owner = await fundedKeypair(connection, 1);
    const nonce = Keypair.generate();
    const rent = await connection.getMinimumBalanceForRentExemption(NONCE_ACCOUNT_LENGTH);
    const { blockhash } = await connection.getLatestBlockhash('confirmed');
    const create = new Transaction({ feePayer: owner.publicKey, recentBlockhash: blockhash }).add(
      SystemProgram.createNonceAccount({ fromPubkey: owner.publicKey, noncePubkey: nonce.publicKey, authorizedPubkey: owner.publicKey, lamports: rent }),
    );
    create.sign(owner, nonce);
    await confirmed(connection, await connection.sendRawTransaction(create.serialize()));
    const missing = Keypair.generate().publicKey;

    // web3.js checks the response against its own schema.
    const infos = await connection.getMultipleAccountsInfo([nonce.publicKey, missing, owner.publicKey], 'confirmed');
    expect(infos[1]).toBeNull();
    expect(infos[0]).toMatchObject({ owner: SystemProgram.programId, lamports: rent });
    expect(infos[0]!.data.length).toBe(NONCE_ACCOUNT_LENGTH);
    expect(infos[0]!.data).toEqual((await connection.getAccountInfo(nonce.publicKey, 'confirmed'))!.data);
    expect(infos[2]).toMatchObject({ owner: SystemProgram.programId, lamports: LAMPORTS_PER_SOL - rent - 5000 * 2 });

    // The default encoding is base64 (getAccountInfo's is base58), and the context is the bank's slot.
    const raw = await rpc(net.rpcUrl, 'getMultipleAccounts', [[nonce.publicKey.toBase58(), missing.toBase58()], { commitment: 'confirmed' }]);
    const { context, value } = raw.result as { context: { slot: number }; value: Array<Record<string, unknown> | null> };
    expect(context.slot).toBeGreaterThan(0);
    expect(value[0]!.data).toEqual([infos[0]!.data.toString('base64'), 'base64']);
    expect(value[0]!.space).toBe(NONCE_ACCOUNT_LENGTH);
    expect(value[1]).toBeNull();
    const sliced = await rpc(net.rpcUrl, 'getMultipleAccounts', [[nonce.publicKey.toBase58()], { commitment: 'confirmed', dataSlice: { offset: 40, length: 32 } }]);
    expect((sliced.result as { value: Array<{ data: [string, string] }> }).value[0]!.data).toEqual([infos[0]!.data.subarray(40, 72).toString('base64'), 'base64']);

    // Agave's limit and messages.
    const tooMany = await rpc(net.rpcUrl, 'getMultipleAccounts', [Array.from({ length: 101 }, () => missing.toBase58())]);
    expect(tooMany.error).toEqual({ code: -32602, message: 'Too many inputs provided; max 100' });
    const bad = await rpc(net.rpcUrl, 'getMultipleAccounts', [['not-a-key']]);
    expect(bad.error?.code).toBe(-32602);
    const big = await rpc(net.rpcUrl, 'getMultipleAccounts', [[nonce.publicKey.toBase58()], { encoding: 'base58', commitment: 'confirmed' }]);
    expect((big.result as { value: Array<{ data: [string, string] }> }).value[0]!.data[1]).toBe('base58'); // 80 bytes ≤ 128: allowed
  });

  it('reads at finalized see the state of 33 slots ago', async () => {
    const owner = await fundedKeypair(connection, 2);
    const [status] = (await connection.getSignatureStatuses([await connection.requestAirdrop(owner.publicKey, 1)])).value;
    expect(status).not.toBeNull();
    const landedSlot = status!.slot;
    expect(await connection.getBalance(owner.publicKey, 'processed')).toBe(2 * LAMPORTS_PER_SOL + 1);
    // Each answer is the state of the bank named by its context slot: before the airdrop of 1
    // lamport landed, without it; from that slot on, with it.
    const seen = new Set<string>();
    await waitFor('the finalized bank to reach the airdrop', async () => {
      const reply = await rpc(net.rpcUrl, 'getBalance', [owner.publicKey.toBase58(), { commitment: 'finalized' }]);
      const { context, value } = reply.result as { context: { slot: number }; value: number };
      expect(value % 2).toBe(context.slot >= landedSlot ? 1 : 0);
      seen.add(context.slot >= landedSlot ? 'after' : 'before');
      return context.slot >= landedSlot ? true : undefined;
    });
    expect(seen.has('after')).toBe(true);
  });

  it('sendTransaction forwards over QUIC to the leader; getTransaction returns json and base64 forms', async () => {
    const payer = await fundedKeypair(connection, 2);
    const to = Keypair.generate().publicKey;
    const { blockhash } = await connection.getLatestBlockhash('confirmed');
    const tx = transferTx(payer, to, 1_000_000, blockhash);
    const signature = await connection.sendRawTransaction(tx.bytes);
    expect(signature).toBe(tx.signature);
    const landed = await confirmed(connection, signature);
    // It reached a validator over QUIC from the RPC node's identity.
    const receipts = net.receivedBy(signature);
    expect(receipts.some((r) => r.outcome === 'included' && r.peer === net.rpcIdentity && r.landedSlot === landed.slot)).toBe(true);

    const json = await rpc(net.rpcUrl, 'getTransaction', [signature, { commitment: 'confirmed' }]);
    const result = json.result as { transaction: { message: Record<string, unknown>; signatures: string[] }; meta: Record<string, unknown>; slot: number };
    expect(result.transaction.signatures).toEqual([signature]);
    expect(result.transaction.message.recentBlockhash).toBe(blockhash);
    expect(result.meta.status).toEqual({ Ok: null });
    expect(result.meta.logMessages).toEqual(['Program 11111111111111111111111111111111 invoke [1]', 'Program 11111111111111111111111111111111 success']);
    expect(result.meta.loadedAddresses).toEqual({ writable: [], readonly: [] });
    expect(result).not.toHaveProperty('version');
    const b64 = await rpc(net.rpcUrl, 'getTransaction', [signature, { commitment: 'confirmed', encoding: 'base64' }]);
    expect((b64.result as { transaction: unknown }).transaction).toEqual([Buffer.from(tx.bytes).toString('base64'), 'base64']);
    expect(await connection.getBalance(to)).toBe(1_000_000);
    // Not yet finalized → null at finalized; processed is refused for getTransaction, as on Agave.
    expect((await rpc(net.rpcUrl, 'getTransaction', [signature, { commitment: 'finalized' }])).result).toBeNull();
    expect((await rpc(net.rpcUrl, 'getTransaction', [signature, { commitment: 'processed' }])).error?.code).toBe(-32602);
  });

  it('a v0 transaction needs maxSupportedTransactionVersion in getTransaction', async () => {
    const payer = await fundedKeypair(connection, 1);
    const { blockhash } = await connection.getLatestBlockhash('confirmed');
    const message = new TransactionMessage({
      payerKey: payer.publicKey,
      recentBlockhash: blockhash,
      instructions: [SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: Keypair.generate().publicKey, lamports: 1_000_000 })],
    }).compileToV0Message();
    const vtx = new VersionedTransaction(message);
    vtx.sign([payer]);
    const signature = await connection.sendTransaction(vtx);
    await confirmed(connection, signature);
    const refused = await rpc(net.rpcUrl, 'getTransaction', [signature, { commitment: 'confirmed' }]);
    expect(refused.error?.code).toBe(-32015);
    const tx = await connection.getTransaction(signature, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });
    expect(tx!.version).toBe(0);
    expect(tx!.meta!.err).toBeNull();
  });

  it('a v0 transaction through an address lookup table: the table is created and extended on chain, the loaded keys show in meta', async () => {
    const payer = await fundedKeypair(connection, 2);
    const to = Keypair.generate().publicKey;
    const recentSlot = await connection.getSlot('confirmed');
    const [create, table] = AddressLookupTableProgram.createLookupTable({ authority: payer.publicKey, payer: payer.publicKey, recentSlot });
    const extend = AddressLookupTableProgram.extendLookupTable({ lookupTable: table, authority: payer.publicKey, payer: payer.publicKey, addresses: [to] });
    const setup = await connection.sendTransaction(new Transaction().add(create, extend), [payer]);
    const created = await confirmed(connection, setup);
    expect(created.err).toBeNull();
    // Addresses added in a slot are usable from the next one on.
    await waitForSlot(connection, created.slot + 2);
    const lookup = (await connection.getAddressLookupTable(table)).value!;
    expect(lookup.state.addresses.map((a) => a.toBase58())).toEqual([to.toBase58()]);

    const { blockhash } = await connection.getLatestBlockhash('confirmed');
    const message = new TransactionMessage({
      payerKey: payer.publicKey,
      recentBlockhash: blockhash,
      instructions: [SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 3_000_000 })],
    }).compileToV0Message([lookup]);
    expect(message.addressTableLookups).toHaveLength(1);
    const vtx = new VersionedTransaction(message);
    vtx.sign([payer]);
    const signature = await connection.sendTransaction(vtx);
    await confirmed(connection, signature);
    const tx = await connection.getTransaction(signature, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });
    expect(tx!.meta!.err).toBeNull();
    expect(tx!.meta!.loadedAddresses).toEqual({ writable: [to], readonly: [] });
    const keys = tx!.transaction.message.getAccountKeys({ addressLookupTableAccounts: [lookup] });
    const i = keys.staticAccountKeys.length; // the loaded writable key comes right after the static ones
    expect(keys.get(i)!.equals(to)).toBe(true);
    expect(tx!.meta!.preBalances[i]).toBe(0);
    expect(tx!.meta!.postBalances[i]).toBe(3_000_000);
    const raw = await rpc(net.rpcUrl, 'getTransaction', [signature, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 }]);
    const lookups = (raw.result as { transaction: { message: { addressTableLookups: unknown } } }).transaction.message.addressTableLookups;
    expect(lookups).toEqual([{ accountKey: table.toBase58(), writableIndexes: [0], readonlyIndexes: [] }]);
    expect(await connection.getBalance(to)).toBe(3_000_000);
  });

  it('preflight refuses what would fail and bad signatures (-32002 with the simulation, as Agave 4.2)', async () => {
    const payer = await fundedKeypair(connection, 1);
    const { blockhash } = await connection.getLatestBlockhash('confirmed');
    const tooMuch = transferTx(payer, Keypair.generate().publicKey, 5 * LAMPORTS_PER_SOL, blockhash);
    // Preflight runs at preflightCommitment (default finalized, which would not know this newer blockhash).
    const failed = await rpc(net.rpcUrl, 'sendTransaction', [
      Buffer.from(tooMuch.bytes).toString('base64'),
      { encoding: 'base64', preflightCommitment: 'confirmed' },
    ]);
    expect(failed.error?.code).toBe(-32002);
    expect(failed.error?.message).toBe('Transaction simulation failed: Error processing Instruction 0: custom program error: 0x1');
    const data = failed.error?.data as { err: unknown; logs: string[] };
    expect(data.err).toEqual({ InstructionError: [0, { Custom: 1 }] });
    expect(data.logs.some((l) => l.includes('insufficient lamports'))).toBe(true);
    await expect(connection.sendRawTransaction(tooMuch.bytes)).rejects.toBeInstanceOf(SendTransactionError);

    const forged = Uint8Array.from(transferTx(payer, Keypair.generate().publicKey, 1, blockhash).bytes);
    forged[10] = forged[10]! ^ 0xff;
    const bad = await rpc(net.rpcUrl, 'sendTransaction', [web3Base58(forged), { preflightCommitment: 'confirmed' }]);
    expect(bad.error).toMatchObject({ code: -32002, message: 'Transaction simulation failed: Transaction did not pass signature verification', data: { err: 'SignatureFailure' } });

    const stale = transferTx(payer, Keypair.generate().publicKey, 1, Keypair.generate().publicKey.toBase58());
    const unknown = await rpc(net.rpcUrl, 'sendTransaction', [web3Base58(stale.bytes)]);
    expect(unknown.error?.message).toBe('Transaction simulation failed: Blockhash not found');
    expect((unknown.error?.data as { err: unknown }).err).toBe('BlockhashNotFound');
    // With skipPreflight the RPC node forwards it anyway; the leader refuses it as expired.
    const skipped = await rpc(net.rpcUrl, 'sendTransaction', [web3Base58(stale.bytes), { skipPreflight: true, maxRetries: 0 }]);
    expect(skipped.result).toBe(stale.signature);
    const receipt = await waitFor('stale transaction received', () => net.receivedBy(stale.signature).find((r) => r.outcome === 'expired'));
    expect(receipt.reason).toBe('Blockhash not found');
  });

  it('simulateTransaction: base64 and base58, sigVerify, replaceRecentBlockhash', async () => {
    const payer = await fundedKeypair(connection, 1);
    const to = Keypair.generate().publicKey;
    const { blockhash } = await connection.getLatestBlockhash('confirmed');
    const ok = transferTx(payer, to, 1_000_000, blockhash);
    const viaWeb3 = await connection.simulateTransaction(VersionedTransaction.deserialize(ok.bytes), { sigVerify: true, commitment: 'confirmed' });
    expect(viaWeb3.value.err).toBeNull();
    expect(viaWeb3.value.logs).toEqual(['Program 11111111111111111111111111111111 invoke [1]', 'Program 11111111111111111111111111111111 success']);
    expect(viaWeb3.value.unitsConsumed).toBe(150);
    const b58 = await rpc(net.rpcUrl, 'simulateTransaction', [web3Base58(ok.bytes), { commitment: 'confirmed' }]);
    expect((b58.result as { value: { err: unknown } }).value.err).toBeNull();
    // Nothing was committed.
    expect(await connection.getBalance(to, 'processed')).toBe(0);

    const failing = transferTx(payer, to, 50 * LAMPORTS_PER_SOL, blockhash);
    const sim = await rpc(net.rpcUrl, 'simulateTransaction', [Buffer.from(failing.bytes).toString('base64'), { encoding: 'base64', commitment: 'confirmed' }]);
    const value = (sim.result as { value: { err: unknown; logs: string[] } }).value;
    expect(value.err).toEqual({ InstructionError: [0, { Custom: 1 }] });
    expect(value.logs[1]).toMatch(/^Transfer: insufficient lamports/);

    // An unsigned transaction with an unknown blockhash: simulates fine once the blockhash is replaced.
    const unsigned = new Transaction({ feePayer: payer.publicKey, recentBlockhash: Keypair.generate().publicKey.toBase58() }).add(
      SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 1_000_000 }),
    );
    const bytes = unsigned.serialize({ requireAllSignatures: false, verifySignatures: false });
    const stale = await rpc(net.rpcUrl, 'simulateTransaction', [bytes.toString('base64'), { encoding: 'base64' }]);
    expect((stale.result as { value: { err: unknown } }).value.err).toBe('BlockhashNotFound');
    const replaced = await rpc(net.rpcUrl, 'simulateTransaction', [bytes.toString('base64'), { encoding: 'base64', replaceRecentBlockhash: true, commitment: 'processed' }]);
    const r = (replaced.result as { context: { slot: number }; value: { err: unknown; replacementBlockhash: { blockhash: string; lastValidBlockHeight: number } } });
    expect(r.value.err).toBeNull();
    expect(r.value.replacementBlockhash.lastValidBlockHeight).toBe(r.context.slot + 150);
    const both = await rpc(net.rpcUrl, 'simulateTransaction', [bytes.toString('base64'), { encoding: 'base64', replaceRecentBlockhash: true, sigVerify: true }]);
    expect(both.error?.code).toBe(-32602);
    const unsignedVerified = await rpc(net.rpcUrl, 'simulateTransaction', [bytes.toString('base64'), { encoding: 'base64', sigVerify: true }]);
    expect((unsignedVerified.result as { value: { err: unknown } }).value.err).toBe('SignatureFailure');
  });

  it('getSignatureStatuses: null for unknown, at most 256, status cache vs searchTransactionHistory', async () => {
    const unknown = web3Base58(new Uint8Array(64).fill(7));
    const reply = await rpc(net.rpcUrl, 'getSignatureStatuses', [[unknown], { searchTransactionHistory: true }]);
    expect(reply.result).toMatchObject({ context: { slot: expect.any(Number) }, value: [null] });
    const tooMany = await rpc(net.rpcUrl, 'getSignatureStatuses', [Array(257).fill(unknown)]);
    expect(tooMany.error).toEqual({ code: -32602, message: 'Too many inputs provided; max 256' });
  });
});

describe('JSON-RPC framing and errors', () => {
  it('unknown method → -32601 with the request id', async () => {
    const res = await post(net.rpcUrl, JSON.stringify({ jsonrpc: '2.0', id: 41, method: 'getNothing' }));
    expect(JSON.parse(res.text)).toEqual({ jsonrpc: '2.0', error: { code: -32601, message: 'Method not found' }, id: 41 });
  });

  it('parse error → -32700 with id null; invalid request → -32600', async () => {
    const parse = await post(net.rpcUrl, '{"jsonrpc":"2.0","id":1,"method":');
    expect(JSON.parse(parse.text)).toEqual({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' }, id: null });
    const noMethod = await post(net.rpcUrl, JSON.stringify({ jsonrpc: '2.0', id: 5 }));
    expect(JSON.parse(noMethod.text)).toEqual({ jsonrpc: '2.0', error: { code: -32600, message: 'Invalid request' }, id: 5 });
    // An empty batch gets an empty answer; a call without a version gets Agave's refusal, without a version too.
    const empty = await post(net.rpcUrl, '[]');
    expect({ status: empty.status, text: empty.text }).toEqual({ status: 200, text: '' });
    const v1 = await post(net.rpcUrl, JSON.stringify({ id: 6, method: 'getSlot' }));
    expect(JSON.parse(v1.text)).toEqual({ error: { code: -32600, message: 'Unsupported JSON-RPC protocol version' }, id: 6 });
  });

  it('bad parameters → -32602, naming what is wrong', async () => {
    const cases: [string, unknown[]][] = [
      ['getBalance', ['not-a-key']],
      ['getBalance', []],
      ['getSlotLeaders', [0, 5001]],
      ['getSlotLeaders', [-1, 4]],
      ['getSignatureStatuses', ['not-an-array']],
      ['getTransaction', ['xyz']],
      ['sendTransaction', ['%%%not base58']],
      ['sendTransaction', ['AQID', { encoding: 'base64' }]],
      ['getAccountInfo', [Keypair.generate().publicKey.toBase58(), { encoding: 'base99' }]],
      ['getSlot', [{ commitment: 'processed' }, 'extra']],
    ];
    for (const [method, params] of cases) {
      const reply = await rpc(net.rpcUrl, method, params);
      expect(reply.error?.code, `${method} ${JSON.stringify(params)}`).toBe(-32602);
      expect(reply.error?.message.length).toBeGreaterThan(5);
    }
    // An unknown commitment is no error in Agave (a flattened optional config that fails to parse is absent): the default.
    // (Read between two reads of the finalized slot: a slot may end between any two calls.)
    const finalizedBefore = (await rpc(net.rpcUrl, 'getSlot', [{ commitment: 'finalized' }])).result as number;
    const unknownLevel = (await rpc(net.rpcUrl, 'getSlot', [{ commitment: 'sometime' }])).result as number;
    const finalizedAfter = (await rpc(net.rpcUrl, 'getSlot', [{ commitment: 'finalized' }])).result as number;
    expect(unknownLevel).toBeGreaterThanOrEqual(finalizedBefore);
    expect(unknownLevel).toBeLessThanOrEqual(finalizedAfter);
    const future = await rpc(net.rpcUrl, 'getSlot', [{ minContextSlot: 10_000_000 }]);
    expect(future.error?.code).toBe(-32016);
    expect(future.error?.data).toEqual({ contextSlot: expect.any(Number) });
  });

  it('a batch answers each call in order, errors included; notifications get no reply', async () => {
    const res = await post(
      net.rpcUrl,
      JSON.stringify([
        { jsonrpc: '2.0', id: 'a', method: 'getHealth' },
        { jsonrpc: '2.0', id: 'b', method: 'nope' },
        { jsonrpc: '2.0', method: 'getHealth' },
        { jsonrpc: '2.0', id: 'c', method: 'getBalance', params: ['bad'] },
        17,
      ]),
    );
    const replies = JSON.parse(res.text) as { id: unknown; result?: unknown; error?: { code: number } }[];
    expect(replies.map((r) => r.id)).toEqual(['a', 'b', 'c', null]);
    expect(replies[0]!.result).toBe('ok');
    expect(replies[1]!.error!.code).toBe(-32601);
    expect(replies[2]!.error!.code).toBe(-32602);
    expect(replies[3]!.error!.code).toBe(-32600);
  });

  it('HTTP level: 413 past 50 KiB, 415 without a JSON content type, 405 for other methods', async () => {
    const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getHealth', params: ['x'.repeat(60 * 1024)] });
    expect((await post(net.rpcUrl, big)).status).toBe(413);
    expect((await post(net.rpcUrl, '{}', { 'Content-Type': 'text/plain' })).status).toBe(415);
    expect((await fetch(net.rpcUrl, { method: 'PUT', body: '{}' })).status).toBe(405);
    // Still serving after all that.
    expect((await rpc(net.rpcUrl, 'getHealth')).result).toBe('ok');
  });

  it('bad options fail startLocalnet with a clear error', async () => {
    await expect(startLocalnet({ validators: 0 })).rejects.toThrow(/validators must be an integer from 1/);
    await expect(startLocalnet({ slotsPerEpoch: 50 })).rejects.toThrow(/multiple of 4/);
    await expect(startLocalnet({ faults: { v9: { down: true } } })).rejects.toThrow(/no validator named 'v9'/);
    await expect(startLocalnet({ faults: { v1: { delayMs: -1 } } })).rejects.toThrow(/v1\.delayMs/);
    await expect(net.airdrop('nope', 1)).rejects.toThrow(/not a base58 public key/);
  });
});

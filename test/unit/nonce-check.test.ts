/**
 * `nonceRefusal`, the tracker's verdict on a durable-nonce transaction's nonce account, on real
 * accounts read from the local cluster through the service's own RPC client
 * (`Rpc.getMultipleAccounts`): a nonce account web3.js created, a plain System account, an
 * address lookup table, a missing one; and the states the cluster cannot easily produce (a
 * legacy or uninitialized nonce, trailing bytes) as the real nonce account's bytes with one
 * field changed, the layout web3.js's `NonceAccount` decodes.
 */
import { AddressLookupTableProgram, Connection, Keypair, NONCE_ACCOUNT_LENGTH, NonceAccount, SystemProgram, Transaction } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rpc, type AccountInfo } from '../../src/chain/rpc.js';
import { startLocalnet, type Localnet } from '../../src/localnet/index.js';
import { nonceRefusal } from '../../src/tracker/nonce-check.js';
import { confirmed, fundedKeypair } from '../../harness/localnet.js';
import { randomBlockhash } from '../../harness/transactions.js';

let net: Localnet;
let connection: Connection;
let rpc: Rpc;
let owner: Keypair;
let nonce: string;
let table: string;

beforeAll(async () => {
  net = await startLocalnet({ validators: 1, slotMs: 50, seed: 'nonce-check' });
  connection = new Connection(net.rpcUrl, 'confirmed');
  rpc = new Rpc(net.rpcUrl);
  owner = await fundedKeypair(connection, 2);
  const nonceKeypair = Keypair.generate();
  const rent = await connection.getMinimumBalanceForRentExemption(NONCE_ACCOUNT_LENGTH);
  const [createTable, tableKey] = AddressLookupTableProgram.createLookupTable({
    authority: owner.publicKey,
    payer: owner.publicKey,
    recentSlot: await connection.getSlot('confirmed'),
  });
  const { blockhash } = await connection.getLatestBlockhash('confirmed');
  const tx = new Transaction({ feePayer: owner.publicKey, recentBlockhash: blockhash })
    .add(SystemProgram.createNonceAccount({ fromPubkey: owner.publicKey, noncePubkey: nonceKeypair.publicKey, authorizedPubkey: owner.publicKey, lamports: rent }))
    .add(createTable);
  tx.sign(owner, nonceKeypair);
  expect((await confirmed(connection, await connection.sendRawTransaction(tx.serialize()))).err).toBeNull();
  nonce = nonceKeypair.publicKey.toBase58();
  table = tableKey.toBase58();
});

afterAll(async () => {
  await net?.close();
});

/** `info` with its data replaced by `data`. */
function withData(info: AccountInfo, data: Buffer): AccountInfo {
  return { ...info, data: [data.toString('base64'), 'base64'] };
}

describe('nonceRefusal', () => {
  it('accepts exactly the nonce the account stores', async () => {
    const missing = Keypair.generate().publicKey.toBase58();
    const { value } = await rpc.getMultipleAccounts([nonce, missing]);
    const info = value[0]!;
    expect(value[1]).toBeNull();
    const data = Buffer.from(info.data[0], 'base64');
    const stored = NonceAccount.fromAccountData(data).nonce;
    expect(nonceRefusal(nonce, info, stored)).toBeNull();
    // bincode reads the state from the front: trailing bytes change nothing.
    expect(nonceRefusal(nonce, withData(info, Buffer.concat([data, Buffer.alloc(20)])), stored)).toBeNull();
    const other = randomBlockhash();
    expect(nonceRefusal(nonce, info, other)).toBe(`nonce account ${nonce} holds nonce ${stored}, not the transaction's ${other}`);
    expect(nonceRefusal(missing, value[1]!, stored)).toBe(`nonce account ${missing} does not exist`);
  });

  it('refuses what is no initialized, current nonce account of the System program', async () => {
    const { value } = await rpc.getMultipleAccounts([nonce, owner.publicKey.toBase58(), table]);
    const [info, plain, lookup] = value as [AccountInfo, AccountInfo, AccountInfo];
    const data = Buffer.from(info.data[0], 'base64');
    const stored = NonceAccount.fromAccountData(data).nonce;
    const who = owner.publicKey.toBase58();
    expect(nonceRefusal(who, plain, stored)).toBe(`account ${who} holds 0 bytes, not a nonce account (80)`);
    expect(nonceRefusal(table, lookup, stored)).toBe(`nonce account ${table} is owned by ${lookup.owner}, not the System program`);
    expect(lookup.owner).toBe(AddressLookupTableProgram.programId.toBase58());

    const legacy = Buffer.from(data);
    legacy.writeUInt32LE(0, 0);
    expect(nonceRefusal(nonce, withData(info, legacy), stored)).toBe(`nonce account ${nonce} is a legacy nonce, which cannot verify a transaction until advanced`);
    const unknownVersion = Buffer.from(data);
    unknownVersion.writeUInt32LE(7, 0);
    expect(nonceRefusal(nonce, withData(info, unknownVersion), stored)).toBe(`account ${nonce} is not a nonce account (version 7)`);
    const uninitialized = Buffer.from(data);
    uninitialized.writeUInt32LE(0, 4);
    expect(nonceRefusal(nonce, withData(info, uninitialized), stored)).toBe(`nonce account ${nonce} is not initialized (state 0)`);
    expect(nonceRefusal(nonce, withData(info, data.subarray(0, 79)), stored)).toBe(`account ${nonce} holds 79 bytes, not a nonce account (80)`);
  });
});

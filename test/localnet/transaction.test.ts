/**
 * The cluster's wire parser against @solana/web3.js: the same signatures, header, keys,
 * blockhash, instructions and lookups for every transaction web3.js builds, and a clear refusal
 * for every prefix of one, a trailing byte, a non-minimal length, another version.
 */
import { describe, expect, it } from 'vitest';
import { decodeTransaction, DecodeError, withBlockhash } from '../../src/localnet/transaction.js';
import {
  computeBudget,
  customInstruction,
  Keypair,
  legacyTx,
  makeLookupTable,
  transfer,
  v0Tx,
  web3Base58,
  type BuiltTx,
} from '../../harness/transactions.js';

function expectSameAsWeb3(tx: BuiltTx): void {
  const d = decodeTransaction(tx.bytes);
  const m = tx.compiled;
  expect(d.version).toBe(tx.version === 'v0' ? 0 : 'legacy');
  expect(d.signatures).toEqual(tx.signatures.map(web3Base58));
  expect(d.signature).toBe(web3Base58(tx.signatures[0]!));
  expect(d.header).toEqual(m.header);
  expect(d.staticKeys.map((k) => k.address)).toEqual(m.staticAccountKeys.map((k) => k.toBase58()));
  expect(d.recentBlockhash).toBe(m.recentBlockhash);
  expect(d.instructions.map((ix) => ({ programIdIndex: ix.programIdIndex, accounts: ix.accounts, data: Buffer.from(ix.data) }))).toEqual(
    m.compiledInstructions.map((ix) => ({ programIdIndex: ix.programIdIndex, accounts: ix.accountKeyIndexes, data: Buffer.from(ix.data) })),
  );
  expect(d.lookups.map((l) => ({ accountKey: l.accountKey.address, writableIndexes: l.writableIndexes, readonlyIndexes: l.readonlyIndexes }))).toEqual(
    m.addressTableLookups.map((l) => ({ accountKey: l.accountKey.toBase58(), writableIndexes: l.writableIndexes, readonlyIndexes: l.readonlyIndexes })),
  );
}

const payer = Keypair.generate();
const other = Keypair.generate();
const program = Keypair.generate().publicKey;
const loaded = [Keypair.generate().publicKey, Keypair.generate().publicKey, Keypair.generate().publicKey];
const table = makeLookupTable(loaded);

const samples: [string, BuiltTx][] = [
  ['legacy transfer', legacyTx([transfer(payer.publicKey, other.publicKey, 5)], { feePayer: payer })],
  [
    'legacy, two signers, compute budget, custom data',
    legacyTx(
      [
        ...computeBudget(300_000, 7n),
        customInstruction(program, [{ pubkey: other.publicKey, isSigner: true, isWritable: true }], new Uint8Array(300).fill(9)),
      ],
      { feePayer: payer, signers: [other] },
    ),
  ],
  ['v0 without lookups', v0Tx([transfer(payer.publicKey, other.publicKey, 5)], { feePayer: payer })],
  [
    'v0 with writable and read-only lookups',
    v0Tx(
      [
        transfer(payer.publicKey, loaded[0]!, 5),
        customInstruction(program, [
          { pubkey: loaded[1]! },
          { pubkey: loaded[2]!, isWritable: true },
        ]),
      ],
      { feePayer: payer, lookupTables: [table] },
    ),
  ],
];

describe('decodeTransaction', () => {
  it.each(samples)('reads %s exactly as web3.js does', (_name, tx) => expectSameAsWeb3(tx));

  it('refuses every proper prefix of a transaction, and a trailing byte', () => {
    for (const [, tx] of samples) {
      for (let n = 0; n < tx.bytes.length; n++) expect(() => decodeTransaction(tx.bytes.subarray(0, n)), `prefix ${n}`).toThrow(DecodeError);
      expect(() => decodeTransaction(Buffer.concat([tx.bytes, Buffer.from([0])]))).toThrow(/1 trailing bytes/);
    }
  });

  it('refuses a non-minimal length, another version, no signatures, more than 1232 bytes', () => {
    const [, tx] = samples[0]!;
    // Signature count 1 written in two bytes (0x81 0x00) instead of one.
    expect(() => decodeTransaction(Buffer.concat([Buffer.from([0x81, 0x00]), tx.bytes.subarray(1)]))).toThrow(/not minimally encoded/);
    const v1 = Buffer.from(samples[2]![1].bytes);
    v1[1 + 64] = 0x81;
    expect(() => decodeTransaction(v1)).toThrow(/unsupported transaction version 1/);
    expect(() => decodeTransaction(Buffer.concat([Buffer.from([0]), tx.bytes.subarray(65)]))).toThrow(/no signatures/);
    expect(() => decodeTransaction(new Uint8Array(1233))).toThrow(/too large: 1233 bytes/);
  });

  it('withBlockhash swaps the blockhash and nothing else', () => {
    const [, tx] = samples[3]!;
    const hash = Keypair.generate().publicKey;
    const swapped = withBlockhash(decodeTransaction(tx.bytes), hash.toBytes());
    expect(swapped.recentBlockhash).toBe(hash.toBase58());
    expect({ ...swapped, recentBlockhash: '', wire: null, staticKeys: swapped.staticKeys.map((k) => k.address) }).toEqual({
      ...decodeTransaction(tx.bytes),
      recentBlockhash: '',
      wire: null,
      staticKeys: tx.compiled.staticAccountKeys.map((k) => k.toBase58()),
    });
  });
});

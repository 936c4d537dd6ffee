/**
 * The benchmark's input: real signed Solana transactions built with `@solana/web3.js`, the shape
 * a trading bot sends Landfall — a priority fee, a transfer, and a tip to one of the service's tip
 * addresses, all paid and signed by one (random) fee payer.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { ComputeBudgetProgram, Keypair, PublicKey, SystemProgram, Transaction } from '@solana/web3.js';

export const TIP_ADDRESS_COUNT = 8;

export interface TxFixture {
  /** Standard base64 of the wire bytes: what a client POSTs. */
  base64: string;
  wire: Buffer;
  /** The signed message bytes (the wire after the signature section). */
  message: Buffer;
  /** Fee payer's signature (the only one) and key, raw bytes. */
  signature: Buffer;
  publicKey: Buffer;
  /** What every implementation must find. */
  expected: { signature: Buffer; feePayer: string; tipLamports: bigint; tipAccount: string; computeUnitPrice: bigint };
}

export interface Pool {
  tipAddresses: string[];
  tipKeys: PublicKey[];
  txs: TxFixture[];
}

/** Read a compact-u16 ("shortvec") at `offset`: its value and its length in bytes. */
export function readShortVec(bytes: Uint8Array, offset: number): { value: number; length: number } {
  let value = 0;
  for (let i = 0; i < 3; i++) {
    const b = bytes[offset + i];
    if (b === undefined) throw new Error('shortvec runs past the end');
    value |= (b & 0x7f) << (7 * i);
    if ((b & 0x80) === 0) return { value, length: i + 1 };
  }
  throw new Error('shortvec longer than 3 bytes');
}

/** Byte offset of the message in a wire transaction (just after the signatures). */
export function messageOffset(wire: Uint8Array): number {
  const { value, length } = readShortVec(wire, 0);
  return length + 64 * value;
}

/** `count` distinct signed legacy transactions, each from its own random fee payer. */
export function buildPool(count: number): Pool {
  const tipKeys = Array.from({ length: TIP_ADDRESS_COUNT }, () => Keypair.generate().publicKey);
  const tipAddresses = tipKeys.map((k) => k.toBase58());
  const txs: TxFixture[] = [];
  for (let i = 0; i < count; i++) {
    const payer = Keypair.generate();
    const tipAccount = tipKeys[i % TIP_ADDRESS_COUNT]!;
    const tipLamports = 1_000 + randomInt(1_000_000);
    const computeUnitPrice = BigInt(1 + randomInt(5_000_000));
    const tx = new Transaction({
      feePayer: payer.publicKey,
      recentBlockhash: new PublicKey(randomBytes(32)).toBase58(),
    }).add(
      ComputeBudgetProgram.setComputeUnitPrice({ microLamports: computeUnitPrice }),
      SystemProgram.transfer({
        fromPubkey: payer.publicKey,
        toPubkey: Keypair.generate().publicKey,
        lamports: 1 + randomInt(1_000_000_000),
      }),
      SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: tipAccount, lamports: tipLamports }),
    );
    tx.sign(payer);
    const wire = tx.serialize();
    const offset = messageOffset(wire);
    const signature = Buffer.from(wire.subarray(offset - 64, offset));
    txs.push({
      base64: wire.toString('base64'),
      wire,
      message: Buffer.from(wire.subarray(offset)),
      signature,
      publicKey: Buffer.from(payer.publicKey.toBytes()),
      expected: {
        signature,
        feePayer: payer.publicKey.toBase58(),
        tipLamports: BigInt(tipLamports),
        tipAccount: tipAccount.toBase58(),
        computeUnitPrice,
      },
    });
  }
  return { tipAddresses, tipKeys, txs };
}

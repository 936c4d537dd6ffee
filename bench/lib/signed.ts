/**
 * Transactions for the load suites: real, distinct, landable transactions from one funded fee
 * payer, each a self-transfer of a unique amount (so no two share a signature) followed by a
 * System transfer tip to one of the service's tip addresses — the shape `harness/stack.ts`
 * sends, at the volume a load run needs.
 *
 * `@solana/web3.js` compiles one message per (blockhash, tip address); each transaction is that
 * message with its self-transfer amount patched in place and signed with `node:crypto` ed25519
 * (~35 µs, a tenth of `Transaction.sign` building and compiling a message every time).
 */
import { createPrivateKey, sign, type KeyObject } from 'node:crypto';
import { Keypair, PublicKey, SystemProgram, Transaction } from '@solana/web3.js';
import { base58Encode } from '../../src/native.js';
import { readShortVec } from './transactions.js';

/** DER prefix of a PKCS#8 Ed25519 private key; the 32-byte seed follows it. */
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

export interface SignedTx {
  wire: Buffer;
  /** Base58 transaction signature (its id). */
  signature: string;
}

/**
 * Byte offset of the lamports (u64 LE) of instruction 0, a System transfer, in a serialized
 * legacy message: header (3), account keys, blockhash (32), then the instructions.
 */
function firstTransferAmountOffset(message: Uint8Array): number {
  let o = 3;
  const keys = readShortVec(message, o);
  o += keys.length + 32 * keys.value + 32;
  o += readShortVec(message, o).length; // instruction count
  o += 1; // program id index
  const accounts = readShortVec(message, o);
  o += accounts.length + accounts.value;
  const data = readShortVec(message, o);
  if (data.value !== 12) throw new Error(`instruction 0 is not a System transfer (data length ${data.value})`);
  return o + data.length + 4; // after the u32 instruction tag
}

export class TxSigner {
  private readonly key: KeyObject;
  private readonly tips: PublicKey[];
  /** The next self-transfer amount: never repeats within a signer, so neither does a signature. */
  private nextAmount = 1n;

  /**
   * @param payer funded fee payer (pays fees, tips, and its own self-transfers)
   * @param tipLamports tip per transaction
   */
  constructor(
    readonly payer: Keypair,
    tipAddresses: string[],
    private readonly tipLamports: number,
  ) {
    this.key = createPrivateKey({
      key: Buffer.concat([ED25519_PKCS8_PREFIX, payer.secretKey.subarray(0, 32)]),
      format: 'der',
      type: 'pkcs8',
    });
    this.tips = tipAddresses.map((a) => new PublicKey(a));
  }

  /** `count` transactions on `blockhash`, tips spread over the tip addresses in turn. */
  sign(blockhash: string, count: number): SignedTx[] {
    const templates = this.tips.map((tip) => {
      const message = new Transaction({ feePayer: this.payer.publicKey, recentBlockhash: blockhash })
        .add(
          SystemProgram.transfer({ fromPubkey: this.payer.publicKey, toPubkey: this.payer.publicKey, lamports: 1 }),
          SystemProgram.transfer({ fromPubkey: this.payer.publicKey, toPubkey: tip, lamports: this.tipLamports }),
        )
        .compileMessage()
        .serialize();
      return { message, amountAt: firstTransferAmountOffset(message) };
    });
    const out: SignedTx[] = [];
    for (let i = 0; i < count; i++) {
      const t = templates[i % templates.length]!;
      // Wire: signature count (1), the signature, the message.
      const wire = Buffer.allocUnsafe(1 + 64 + t.message.length);
      wire[0] = 1;
      const message = wire.subarray(65);
      t.message.copy(message);
      message.writeBigUInt64LE(this.nextAmount++, t.amountAt);
      const signature = sign(null, message, this.key);
      signature.copy(wire, 1);
      out.push({ wire, signature: base58Encode(signature) });
    }
    return out;
  }
}

/**
 * A signed transaction in any form a bot holds one, to the base64 of its wire bytes: without
 * `instanceof` and without importing a Solana library, so the client works with whichever copy
 * of `@solana/web3.js` or `@solana/kit` the bot's project has.
 */

/** `@solana/kit`'s signed `Transaction`: the message bytes and each signer's signature, in order. */
export interface KitTransaction {
  readonly messageBytes: Uint8Array;
  readonly signatures: Readonly<Record<string, Uint8Array | null>>;
}

/**
 * A signed transaction: web3.js `Transaction` / `VersionedTransaction` (anything with
 * `serialize()`), `@solana/kit`'s `Transaction`, wire bytes, or base64.
 */
export type TransactionInput = string | Uint8Array | { serialize(): Uint8Array } | KitTransaction;

const SIGNATURE_BYTES = 64;

function isKitTransaction(tx: object): tx is KitTransaction {
  return 'messageBytes' in tx && 'signatures' in tx && (tx as KitTransaction).messageBytes instanceof Uint8Array;
}

/** Solana's compact-u16 (shortvec) length prefix. */
function shortVec(n: number): number[] {
  const out: number[] = [];
  for (let rest = n; ; ) {
    const byte = rest & 0x7f;
    rest >>= 7;
    if (rest === 0) return [...out, byte];
    out.push(byte | 0x80);
  }
}

/** The wire bytes of a kit transaction: the signature count, the signatures in signer order, the message. */
function kitWire(tx: KitTransaction): Uint8Array {
  const signatures = Object.entries(tx.signatures);
  const missing = signatures.filter(([, s]) => !s || s.length !== SIGNATURE_BYTES).map(([address]) => address);
  if (missing.length > 0) throw new TypeError(`the transaction is not fully signed: no signature of ${missing.join(', ')}`);
  const prefix = shortVec(signatures.length);
  const out = new Uint8Array(prefix.length + signatures.length * SIGNATURE_BYTES + tx.messageBytes.length);
  out.set(prefix, 0);
  signatures.forEach(([, s], i) => out.set(s!, prefix.length + i * SIGNATURE_BYTES));
  out.set(tx.messageBytes, prefix.length + signatures.length * SIGNATURE_BYTES);
  return out;
}

/** The base64 of `tx`'s wire bytes (a string is taken to be base64 already). */
export function toBase64(tx: TransactionInput): string {
  if (typeof tx === 'string') return tx;
  const bytes = tx instanceof Uint8Array ? tx : isKitTransaction(tx) ? kitWire(tx) : tx.serialize();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

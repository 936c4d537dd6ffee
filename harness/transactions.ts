/**
 * Real, signed Solana transactions built with @solana/web3.js 1.x, for the native-core tests.
 *
 * Every expected value a test compares against comes from web3.js (its compiled message, its
 * signatures, its base58) or from the construction itself, never from the code under test.
 */
import {
  AddressLookupTableAccount,
  ComputeBudgetProgram,
  Keypair,
  Message,
  MessageV0,
  NONCE_ACCOUNT_LENGTH,
  PublicKey,
  SystemProgram,
  Transaction,
  TransactionInstruction,
  TransactionMessage,
  VersionedTransaction,
  type MessageAddressTableLookup,
  type MessageCompiledInstruction,
} from '@solana/web3.js';
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import nacl from 'tweetnacl';
import { assemble, compactU16 } from './wire.js';

export { NONCE_ACCOUNT_LENGTH };

// web3.js's own base58 codec: its dependency `bs58`, resolved from web3.js's location.
const requireFromWeb3 = createRequire(createRequire(import.meta.url).resolve('@solana/web3.js'));
const bs58 = requireFromWeb3('bs58') as {
  encode(bytes: Buffer): string;
  decode(text: string): Uint8Array;
};

/** base58 as web3.js encodes it (signatures, keys, blockhashes). */
export function web3Base58(bytes: Uint8Array): string {
  return bs58.encode(Buffer.from(bytes));
}

/** base58 decode as web3.js does it. */
export function web3Base58Decode(text: string): Uint8Array {
  return Uint8Array.from(bs58.decode(text));
}

/** A random blockhash: base58 of 32 random bytes (there is no cluster here). */
export function randomBlockhash(): string {
  return web3Base58(randomBytes(32));
}

/** `n` fresh tip addresses (random keypairs' public keys, new on every run). */
export function makeTipAddresses(n = 8): PublicKey[] {
  return Array.from({ length: n }, () => Keypair.generate().publicKey);
}

export function toBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/** ed25519 signature of `message` by `signer` (tweetnacl, independent of web3.js and the core). */
export function signBytes(message: Uint8Array, signer: Keypair): Uint8Array {
  return nacl.sign.detached(message, signer.secretKey);
}

/** A built transaction and everything web3.js says about it. */
export interface BuiltTx {
  bytes: Uint8Array;
  base64: string;
  version: 'legacy' | 'v0';
  /** Signatures in wire order (all-zero where a signer did not sign). */
  signatures: Uint8Array[];
  /** The keys that must sign, in wire order. */
  signerKeys: PublicKey[];
  feePayer: PublicKey;
  recentBlockhash: string;
  /** The signed message bytes (version prefix included). */
  message: Uint8Array;
  /** Offset of the message in `bytes`. */
  messageOffset: number;
  /** web3.js's compiled view of the message. */
  compiled: Message | MessageV0;
}

export interface BuildOptions {
  feePayer: Keypair;
  /** Other required signers (besides the fee payer). */
  signers?: Keypair[];
  /** Sign with only these (default: the fee payer and all `signers`). */
  signWith?: Keypair[];
  blockhash?: string;
}

function finish(
  bytes: Uint8Array,
  version: 'legacy' | 'v0',
  compiled: Message | MessageV0,
  message: Uint8Array,
  signatures: Uint8Array[],
  feePayer: PublicKey,
  recentBlockhash: string,
): BuiltTx {
  const messageOffset = bytes.length - message.length;
  if (!Buffer.from(bytes.subarray(messageOffset)).equals(Buffer.from(message))) {
    throw new Error('helper: serialized transaction does not end with its message');
  }
  const signerKeys = compiled.staticAccountKeys.slice(0, compiled.header.numRequiredSignatures);
  return {
    bytes,
    base64: toBase64(bytes),
    version,
    signatures,
    signerKeys,
    feePayer,
    recentBlockhash,
    message,
    messageOffset,
    compiled,
  };
}

/** A legacy `Transaction` of `instructions`, signed by web3.js. */
export function legacyTx(instructions: TransactionInstruction[], opts: BuildOptions): BuiltTx {
  const recentBlockhash = opts.blockhash ?? randomBlockhash();
  const tx = new Transaction({ feePayer: opts.feePayer.publicKey, recentBlockhash });
  tx.add(...instructions);
  const all = [opts.feePayer, ...(opts.signers ?? [])];
  const signWith = opts.signWith ?? all;
  if (signWith.length === all.length && opts.signWith === undefined) {
    tx.sign(...all);
  } else if (signWith.length > 0) {
    tx.partialSign(...signWith);
  }
  const bytes = Uint8Array.from(tx.serialize({ requireAllSignatures: false, verifySignatures: false }));
  const compiled = tx.compileMessage();
  const message = Uint8Array.from(tx.serializeMessage());
  const signatures = tx.signatures.map((s) => (s.signature ? Uint8Array.from(s.signature) : new Uint8Array(64)));
  // web3.js keeps signatures in the order of the message's signer keys.
  tx.signatures.forEach((s, i) => {
    if (!s.publicKey.equals(compiled.accountKeys[i]!)) throw new Error('helper: signature order');
  });
  return finish(bytes, 'legacy', compiled, message, signatures, opts.feePayer.publicKey, recentBlockhash);
}

/** A v0 `VersionedTransaction` of `instructions`, compiled against `lookupTables`. */
export function v0Tx(
  instructions: TransactionInstruction[],
  opts: BuildOptions & { lookupTables?: AddressLookupTableAccount[] },
): BuiltTx {
  const recentBlockhash = opts.blockhash ?? randomBlockhash();
  const compiled = new TransactionMessage({
    payerKey: opts.feePayer.publicKey,
    recentBlockhash,
    instructions,
  }).compileToV0Message(opts.lookupTables ?? []);
  const vtx = new VersionedTransaction(compiled);
  const signWith = opts.signWith ?? [opts.feePayer, ...(opts.signers ?? [])];
  if (signWith.length > 0) vtx.sign(signWith);
  const bytes = Uint8Array.from(vtx.serialize());
  const message = Uint8Array.from(compiled.serialize());
  return finish(
    bytes,
    'v0',
    compiled,
    message,
    vtx.signatures.map((s) => Uint8Array.from(s)),
    opts.feePayer.publicKey,
    recentBlockhash,
  );
}

/** An address lookup table account holding `addresses` (active, as a cluster would return it). */
export function makeLookupTable(addresses: PublicKey[]): AddressLookupTableAccount {
  return new AddressLookupTableAccount({
    key: Keypair.generate().publicKey,
    state: {
      deactivationSlot: BigInt('0xffffffffffffffff'),
      lastExtendedSlot: 0,
      lastExtendedSlotStartIndex: 0,
      authority: Keypair.generate().publicKey,
      addresses,
    },
  });
}

/** A System transfer (web3.js `SystemProgram.transfer`). */
export function transfer(from: PublicKey, to: PublicKey, lamports: number | bigint): TransactionInstruction {
  return SystemProgram.transfer({ fromPubkey: from, toPubkey: to, lamports });
}

/** An instruction to an arbitrary program with arbitrary accounts and data. */
export function customInstruction(
  programId: PublicKey,
  keys: { pubkey: PublicKey; isSigner?: boolean; isWritable?: boolean }[],
  data: Uint8Array = new Uint8Array(0),
): TransactionInstruction {
  return new TransactionInstruction({
    programId,
    keys: keys.map((k) => ({ pubkey: k.pubkey, isSigner: k.isSigner ?? false, isWritable: k.isWritable ?? false })),
    data: Buffer.from(data),
  });
}

export function computeBudget(units: number, microLamports: bigint): TransactionInstruction[] {
  return [
    ComputeBudgetProgram.setComputeUnitLimit({ units }),
    ComputeBudgetProgram.setComputeUnitPrice({ microLamports }),
  ];
}

export function nonceAdvance(nonce: PublicKey, authority: PublicKey): TransactionInstruction {
  return SystemProgram.nonceAdvance({ noncePubkey: nonce, authorizedPubkey: authority });
}

/** Simple legacy tip transaction from a fresh payer. */
export function simpleTip(tip: PublicKey, lamports: number | bigint = 10_000, payer = Keypair.generate()): BuiltTx {
  return legacyTx([transfer(payer.publicKey, tip, lamports)], { feePayer: payer });
}

/** Simple v0 tip transaction from a fresh payer. */
export function simpleTipV0(tip: PublicKey, lamports: number | bigint = 10_000, payer = Keypair.generate()): BuiltTx {
  return v0Tx([transfer(payer.publicKey, tip, lamports)], { feePayer: payer });
}

/**
 * A legacy transaction of exactly `size` wire bytes (a padding instruction to a random program),
 * signed with tweetnacl over web3.js's message bytes, so sizes above the packet limit (which
 * web3.js refuses to serialize) are possible too.
 */
export function legacyTxOfSize(size: number, payer = Keypair.generate()): BuiltTx {
  const program = Keypair.generate().publicKey;
  const recentBlockhash = randomBlockhash();
  const messageFor = (dataLen: number): Message =>
    new TransactionMessage({
      payerKey: payer.publicKey,
      recentBlockhash,
      instructions: [customInstruction(program, [], new Uint8Array(dataLen).fill(0xa5))],
    }).compileToLegacyMessage();
  const overhead = 1 + 64 + messageFor(0).serialize().length; // one signature
  for (let dataLen = Math.max(0, size - overhead - 3); dataLen <= size - overhead + 3; dataLen++) {
    const compiled = messageFor(dataLen);
    const message = Uint8Array.from(compiled.serialize());
    if (1 + 64 + message.length !== size) continue;
    const bytes = assemble([signBytes(message, payer)], message);
    return finish(bytes, 'legacy', compiled, message, [bytes.slice(1, 65)], payer.publicKey, recentBlockhash);
  }
  throw new Error(`helper: cannot build a transaction of exactly ${size} bytes`);
}

/** Re-sign `message` with `signers` (in order) and assemble a wire transaction. */
export function resign(message: Uint8Array, signers: Keypair[], countPrefix?: number[]): Uint8Array {
  return assemble(
    signers.map((s) => signBytes(message, s)),
    message,
    countPrefix,
  );
}

/** Byte ranges of a built transaction, computed from web3.js's compiled message. */
export interface Layout {
  signatures: [number, number][];
  messageStart: number;
  staticKeys: [number, number][];
  blockhash: [number, number];
  instructionData: [number, number][];
  instructionAccounts: [number, number][];
  lookupTables: [number, number][];
  end: number;
}

const compactLen = (n: number): number => compactU16(n).length;

/**
 * Where each part of `tx` sits in its wire bytes, derived from web3.js's view of the message
 * (counts, keys, instruction data), and cross-checked byte for byte against the wire.
 */
export function layoutOf(tx: BuiltTx): Layout {
  const m = tx.compiled;
  const nsig = m.header.numRequiredSignatures;
  let o = compactLen(nsig);
  const signatures: [number, number][] = [];
  for (let i = 0; i < nsig; i++, o += 64) signatures.push([o, o + 64]);
  const messageStart = o;
  o += (tx.version === 'v0' ? 1 : 0) + 3;
  const keys = m.staticAccountKeys;
  o += compactLen(keys.length);
  const staticKeys: [number, number][] = [];
  for (let i = 0; i < keys.length; i++, o += 32) staticKeys.push([o, o + 32]);
  const blockhash: [number, number] = [o, o + 32];
  o += 32;
  const ixs: MessageCompiledInstruction[] = m.compiledInstructions;
  o += compactLen(ixs.length);
  const instructionData: [number, number][] = [];
  const instructionAccounts: [number, number][] = [];
  for (const ix of ixs) {
    o += 1;
    o += compactLen(ix.accountKeyIndexes.length);
    instructionAccounts.push([o, o + ix.accountKeyIndexes.length]);
    o += ix.accountKeyIndexes.length;
    o += compactLen(ix.data.length);
    instructionData.push([o, o + ix.data.length]);
    o += ix.data.length;
  }
  const lookupTables: [number, number][] = [];
  if (tx.version === 'v0') {
    const lookups: MessageAddressTableLookup[] = m.addressTableLookups;
    o += compactLen(lookups.length);
    for (const l of lookups) {
      lookupTables.push([o, o + 32]);
      o += 32;
      o += compactLen(l.writableIndexes.length) + l.writableIndexes.length;
      o += compactLen(l.readonlyIndexes.length) + l.readonlyIndexes.length;
    }
  }
  const layout = { signatures, messageStart, staticKeys, blockhash, instructionData, instructionAccounts, lookupTables, end: o };

  // Cross-check against the bytes, so a wrong layout cannot silently weaken a test.
  const b = Buffer.from(tx.bytes);
  const eq = (r: [number, number], v: Uint8Array, what: string): void => {
    if (!b.subarray(r[0], r[1]).equals(Buffer.from(v))) throw new Error(`helper: layout mismatch (${what})`);
  };
  if (o !== tx.bytes.length) throw new Error(`helper: layout ends at ${o}, transaction is ${tx.bytes.length}`);
  if (messageStart !== tx.messageOffset) throw new Error('helper: message offset');
  signatures.forEach((r, i) => eq(r, tx.signatures[i]!, `signature ${i}`));
  staticKeys.forEach((r, i) => eq(r, keys[i]!.toBytes(), `key ${i}`));
  eq(blockhash, web3Base58Decode(m.recentBlockhash), 'blockhash');
  ixs.forEach((ix, i) => {
    eq(instructionData[i]!, ix.data, `instruction ${i} data`);
    eq(instructionAccounts[i]!, Uint8Array.from(ix.accountKeyIndexes), `instruction ${i} accounts`);
  });
  m.addressTableLookups.forEach((l, i) => eq(lookupTables[i]!, l.accountKey.toBytes(), `lookup ${i}`));
  return layout;
}

/** ℓ, the order of the ed25519 prime-order subgroup. */
export const ED25519_L = (1n << 252n) + 27742317777372353535851937790883648493n;

export function leToBigInt(bytes: Uint8Array): bigint {
  let v = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) v = (v << 8n) | BigInt(bytes[i]!);
  return v;
}

export function bigIntToLe(v: bigint, len: number): Uint8Array {
  const out = new Uint8Array(len);
  let x = v;
  for (let i = 0; i < len; i++) {
    out[i] = Number(x & 0xffn);
    x >>= 8n;
  }
  if (x !== 0n) throw new RangeError('value does not fit');
  return out;
}

/**
 * The malleated twin of a valid signature: `s + ℓ` instead of `s`. The group equation still
 * holds, so a lax verifier accepts it; RFC 8032 and the validator (`verify_strict`) require
 * `s < ℓ` and reject it.
 */
export function malleate(signature: Uint8Array): Uint8Array {
  const s = leToBigInt(signature.subarray(32, 64));
  const out = Uint8Array.from(signature);
  out.set(bigIntToLe(s + ED25519_L, 32), 32);
  return out;
}

/** The canonical encoding of the identity point (0, 1): small order. */
export const IDENTITY_POINT = (() => {
  const b = new Uint8Array(32);
  b[0] = 1;
  return b;
})();

/**
 * A transaction whose fee payer is the identity point (a small-order "key") signed with
 * R = identity, s = 0. The cofactorless equation [s]B = R + [k]A holds for every message, so
 * a lax verifier accepts it; `verify_strict` (the validator) rejects weak keys and small-order R.
 */
export function smallOrderForgery(tip: PublicKey): BuiltTx {
  const payer = new PublicKey(IDENTITY_POINT);
  const recentBlockhash = randomBlockhash();
  const compiled = new TransactionMessage({
    payerKey: payer,
    recentBlockhash,
    instructions: [transfer(payer, tip, 1_000_000)],
  }).compileToLegacyMessage();
  const message = Uint8Array.from(compiled.serialize());
  const sig = new Uint8Array(64);
  sig.set(IDENTITY_POINT, 0);
  const bytes = assemble([sig], message);
  return finish(bytes, 'legacy', compiled, message, [sig], payer, recentBlockhash);
}

/** The fee payer's keypair is needed by callers that re-sign; keep builders' inputs explicit. */
export function keypairs(n: number): Keypair[] {
  return Array.from({ length: n }, () => Keypair.generate());
}

export { Keypair, PublicKey, SystemProgram, ComputeBudgetProgram, TransactionInstruction, MessageV0, VersionedTransaction };

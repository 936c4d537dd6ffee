/**
 * The JavaScript reference for `inspectTransaction`: the same work a Node service would do with
 * the usual libraries — `@solana/web3.js` to decode and parse, an ed25519 library to verify every
 * required signature, and a scan of the instructions for System transfers to the tip set (plus
 * the compute-budget price/limit and durable-nonce check the native scan also does).
 *
 * It is written to be fast, not a straw man: signatures are verified against the message bytes
 * sliced from the wire (no `message.serialize()` round trip), tip keys are compared as
 * `PublicKey`s (no base58 per key), and only the transaction id and fee payer are base58-encoded,
 * as the native result has them.
 */
import { createPublicKey, verify as cryptoVerify, type KeyObject } from 'node:crypto';
import { ComputeBudgetProgram, PublicKey, SystemProgram, VersionedTransaction } from '@solana/web3.js';
import nacl from 'tweetnacl';
import { base58Encode } from './base58.js';
import { messageOffset } from './transactions.js';

/** ed25519 verify of one signature by one raw 32-byte public key. */
export type Ed25519Verify = (message: Uint8Array, signature: Uint8Array, publicKey: Uint8Array) => boolean;

export const naclVerify: Ed25519Verify = (message, signature, publicKey) =>
  nacl.sign.detached.verify(message, signature, publicKey);

/** DER prefix of an Ed25519 SubjectPublicKeyInfo; the raw 32-byte key follows it. */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/**
 * `node:crypto` (OpenSSL) verify, with the `KeyObject` built from the raw key on every call: the
 * reference the native suite compares one inspection with (`nodeCryptoVerifyCached` is what a
 * service would run).
 */
export const nodeCryptoVerify: Ed25519Verify = (message, signature, publicKey) => {
  const key = createPublicKey({
    key: Buffer.concat([ED25519_SPKI_PREFIX, publicKey]),
    format: 'der',
    type: 'spki',
  });
  return cryptoVerify(null, message, key, signature);
};

/** `KeyObject`s `nodeCryptoVerifyCached` keeps: as many as Landfall's native cache (`native/src/verify.rs`). */
const KEY_OBJECTS = 1024;
const keyObjects = new Map<string, KeyObject>();

/**
 * `nodeCryptoVerify` with the key cached: the last 1,024 `KeyObject`s built are kept (the cache
 * starts over when full), as Landfall's native inspection keeps each thread's last 1,024 decoded
 * verifying keys. A bot signs with the same few keys; building a `KeyObject` from the raw key
 * (a DER parse and an OpenSSL key) is a large share of a verify. The verdict is computed afresh
 * every time.
 */
export const nodeCryptoVerifyCached: Ed25519Verify = (message, signature, publicKey) => {
  const id = Buffer.from(publicKey.buffer, publicKey.byteOffset, publicKey.byteLength).toString('latin1');
  let key = keyObjects.get(id);
  if (key === undefined) {
    key = createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, publicKey]), format: 'der', type: 'spki' });
    if (keyObjects.size >= KEY_OBJECTS) keyObjects.clear();
    keyObjects.set(id, key);
  }
  return cryptoVerify(null, message, key, signature);
};

export interface JsInspection {
  ok: boolean;
  /** Why not, when `ok` is false. */
  reason?: string;
  signature?: string;
  feePayer?: string;
  recentBlockhash?: string;
  tipLamports?: bigint;
  tipTransfers?: number;
  tipAccount?: string;
  transfersViaLookup?: number;
  durableNonce?: boolean;
  computeUnitLimit?: number;
  computeUnitPrice?: bigint;
  size?: number;
}

const SYSTEM = SystemProgram.programId;
const COMPUTE_BUDGET = ComputeBudgetProgram.programId;
const SYSTEM_TRANSFER = 2;
const SYSTEM_ADVANCE_NONCE = 4;
const CB_SET_LIMIT = 2;
const CB_SET_PRICE = 3;

export class JsTipSet {
  readonly keys: PublicKey[];
  readonly addresses: string[];
  constructor(addresses: string[]) {
    this.addresses = addresses;
    this.keys = addresses.map((a) => new PublicKey(a));
  }
  indexOf(key: PublicKey): number {
    for (let i = 0; i < this.keys.length; i++) if (this.keys[i]!.equals(key)) return i;
    return -1;
  }
}

function u32le(d: Uint8Array, o: number): number {
  return (d[o]! | (d[o + 1]! << 8) | (d[o + 2]! << 16) | (d[o + 3]! << 24)) >>> 0;
}

function u64le(d: Uint8Array, o: number): bigint {
  return BigInt(u32le(d, o)) | (BigInt(u32le(d, o + 4)) << 32n);
}

/** Decode, parse, verify every required signature and scan for tips, all in JavaScript. */
export function jsInspect(base64: string, tips: JsTipSet, verify: Ed25519Verify): JsInspection {
  const wire = Buffer.from(base64, 'base64');
  let tx: VersionedTransaction;
  try {
    tx = VersionedTransaction.deserialize(wire);
  } catch (e) {
    return { ok: false, reason: `malformed: ${(e as Error).message}` };
  }
  const msg = tx.message;
  const keys = msg.staticAccountKeys;
  const required = msg.header.numRequiredSignatures;
  if (required === 0 || tx.signatures.length !== required || keys.length < required) {
    return { ok: false, reason: 'signature count mismatch' };
  }
  const message = wire.subarray(messageOffset(wire));
  for (let i = 0; i < required; i++) {
    if (!verify(message, tx.signatures[i]!, keys[i]!.toBytes())) return { ok: false, reason: `signature ${i} invalid` };
  }

  let tipLamports = 0n;
  let tipTransfers = 0;
  let firstTip = -1;
  let transfersViaLookup = 0;
  let durableNonce = false;
  let computeUnitLimit: number | undefined;
  let computeUnitPrice: bigint | undefined;
  const ixs = msg.compiledInstructions;
  for (let n = 0; n < ixs.length; n++) {
    const ix = ixs[n]!;
    const program = keys[ix.programIdIndex];
    if (program === undefined) return { ok: false, reason: 'invalid program index' };
    const data = ix.data;
    if (program.equals(SYSTEM)) {
      if (data.length < 4) continue;
      const kind = u32le(data, 0);
      if (n === 0 && kind === SYSTEM_ADVANCE_NONCE) durableNonce = true;
      if (kind !== SYSTEM_TRANSFER || data.length !== 12) continue;
      const destIndex = ix.accountKeyIndexes[1];
      if (destIndex === undefined) continue;
      const dest = keys[destIndex];
      if (dest === undefined) {
        transfersViaLookup++;
        continue;
      }
      const t = tips.indexOf(dest);
      if (t < 0) continue;
      tipLamports += u64le(data, 4);
      tipTransfers++;
      if (firstTip < 0) firstTip = t;
    } else if (program.equals(COMPUTE_BUDGET)) {
      if (data[0] === CB_SET_PRICE && data.length === 9) computeUnitPrice = u64le(data, 1);
      else if (data[0] === CB_SET_LIMIT && data.length === 5) computeUnitLimit = u32le(data, 1);
    }
  }
  return {
    ok: true,
    signature: base58Encode(tx.signatures[0]!),
    feePayer: keys[0]!.toBase58(),
    recentBlockhash: msg.recentBlockhash,
    tipLamports,
    tipTransfers,
    tipAccount: firstTip < 0 ? undefined : tips.addresses[firstTip],
    transfersViaLookup,
    durableNonce,
    computeUnitLimit,
    computeUnitPrice,
    size: wire.length,
  };
}

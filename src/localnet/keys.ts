/**
 * Ed25519 keypairs of the cluster's own actors (validators, the RPC node, the faucet), with
 * node:crypto. Seeds are derived from one cluster seed, so a given `seed` option always yields
 * the same identities (tests and fixtures can name them), and a random seed otherwise.
 */
import { createHash, createPrivateKey, createPublicKey, randomBytes, sign, type KeyObject } from 'node:crypto';
import { base58Encode } from '../native.js';

/** PKCS#8 DER header of an Ed25519 private key; the 32-byte seed follows it (RFC 8410). */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

export class Keypair {
  readonly publicKey: Buffer;
  readonly address: string;
  private readonly key: KeyObject;

  constructor(readonly seed: Buffer) {
    if (seed.length !== 32) throw new RangeError(`an ed25519 seed is 32 bytes (got ${seed.length})`);
    this.key = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });
    // The SPKI DER of an Ed25519 key ends with the raw 32-byte public key.
    this.publicKey = createPublicKey(this.key).export({ format: 'der', type: 'spki' }).subarray(-32);
    this.address = base58Encode(this.publicKey);
  }

  sign(message: Uint8Array): Buffer {
    return sign(null, message, this.key);
  }
}

/**
 * The seed of actor `role` in a cluster seeded with `clusterSeed`: SHA-256 of both, so distinct
 * roles never share a key and no role's key reveals another's.
 */
export function deriveKeypair(clusterSeed: string, role: string): Keypair {
  return new Keypair(createHash('sha256').update(`landfall-localnet\0${clusterSeed}\0${role}`).digest());
}

/** A fresh cluster seed (used when the caller gives none). */
export function randomClusterSeed(): string {
  return randomBytes(16).toString('hex');
}

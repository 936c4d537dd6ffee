/**
 * The QUIC identity Landfall presents to validators (its certificate's ed25519 key; a staked
 * identity gets stake-weighted QoS). Read from a Solana CLI keypair file (a JSON array of 64
 * bytes: secret seed then public key); with none configured, one is generated once and kept in
 * the data directory, so restarts present the same identity.
 */
import { createPrivateKey, createPublicKey, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { LandfallError } from '../errors.js';

export const IDENTITY_FILE = 'identity.json';

/** PKCS#8 DER header of an Ed25519 private key; the 32-byte seed follows it. */
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');

/** The ed25519 public key of a 32-byte seed. */
export function ed25519PublicKey(seed: Buffer): Buffer {
  const key = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, seed]), format: 'der', type: 'pkcs8' });
  return Buffer.from(createPublicKey(key).export({ format: 'jwk' }).x!, 'base64url');
}

/** The 32-byte seed of the keypair in `path` (Solana CLI format), checked for consistency. */
export function readKeypairSeed(path: string): Buffer {
  let bytes: unknown;
  try {
    bytes = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new LandfallError('CONFIG_INVALID', `cannot read keypair file ${path}: ${(e as Error).message}`);
  }
  if (!Array.isArray(bytes) || bytes.length !== 64 || !bytes.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)) {
    throw new LandfallError('CONFIG_INVALID', `keypair file ${path} must hold a JSON array of 64 bytes (solana-keygen format)`);
  }
  const seed = Buffer.from(bytes.slice(0, 32) as number[]);
  if (!ed25519PublicKey(seed).equals(Buffer.from(bytes.slice(32) as number[]))) {
    throw new LandfallError('CONFIG_INVALID', `keypair file ${path}: the public half does not match the secret half`);
  }
  return seed;
}

/** The configured identity, or the data directory's own (created on first use). */
export function loadIdentity(dataDir: string, keypairPath?: string): Buffer {
  if (keypairPath) return readKeypairSeed(keypairPath);
  const path = join(dataDir, IDENTITY_FILE);
  if (existsSync(path)) return readKeypairSeed(path);
  mkdirSync(dataDir, { recursive: true });
  const seed = randomBytes(32);
  const keypair = Buffer.concat([seed, ed25519PublicKey(seed)]);
  // 0600: it is a secret key. `wx` fails rather than overwrite a file created concurrently.
  writeFileSync(path, JSON.stringify([...keypair]), { mode: 0o600, flag: 'wx' });
  return seed;
}

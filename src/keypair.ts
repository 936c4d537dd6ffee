/**
 * Solana CLI (solana-keygen) keypairs on disk: a JSON array of 64 bytes, the secret seed then
 * the public key. Used for the QUIC identity and the tip accounts; the one place that reads,
 * checks, generates and writes them.
 */
import { createPrivateKey, createPublicKey, randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { readJsonFile } from './config.js';
import { LandfallError } from './errors.js';

/** PKCS#8 DER header of an Ed25519 private key; the 32-byte seed follows it. */
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');

/** The ed25519 public key of a 32-byte seed. */
export function ed25519PublicKey(seed: Buffer): Buffer {
  const key = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, seed]), format: 'der', type: 'pkcs8' });
  return Buffer.from(createPublicKey(key).export({ format: 'jwk' }).x!, 'base64url');
}

/** A new random keypair, 64 bytes (seed ‖ public key). */
export function newKeypair(): Buffer {
  const seed = randomBytes(32);
  return Buffer.concat([seed, ed25519PublicKey(seed)]);
}

/** Check one keypair value read from `where`: 64 bytes whose public half matches the secret half. */
export function keypairOf(value: unknown, where: string): Buffer {
  if (!Array.isArray(value) || value.length !== 64 || !value.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)) {
    throw new LandfallError('CONFIG_INVALID', `${where} must be a JSON array of 64 bytes (solana-keygen format)`);
  }
  const keypair = Buffer.from(value as number[]);
  if (!ed25519PublicKey(keypair.subarray(0, 32)).equals(keypair.subarray(32))) {
    throw new LandfallError('CONFIG_INVALID', `${where}: the public half does not match the secret half`);
  }
  return keypair;
}

/** Read and check the keypair file at `path`. */
export function readKeypairFile(path: string): Buffer {
  return keypairOf(readJsonFile(path, 'keypair file'), `keypair file ${path}`);
}

/**
 * Write secret keys: mode 0600, whole or not at all, and never over a file created concurrently.
 * Written to a temporary file first and then linked into place (`link` fails if `path` exists):
 * on a full disk a direct write would leave an empty or cut file that every later start refuses
 * to read, even once there is space again.
 */
export function writeSecretJson(path: string, value: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    writeFileSync(tmp, JSON.stringify(value), { mode: 0o600, flag: 'wx' });
    linkSync(tmp, path);
  } catch (e) {
    throw new LandfallError('CONFIG_INVALID', `cannot write ${path}: ${(e as Error).message}`);
  } finally {
    rmSync(tmp, { force: true });
  }
}

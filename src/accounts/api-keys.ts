/**
 * API keys: 32 random bytes, shown once, stored only as SHA-256.
 *
 * Why SHA-256 and not a password hash: a key carries 256 bits of entropy, so a fast hash is
 * already infeasible to invert, and the hot path hashes one key per request. Lookups are by
 * hash, so the secret itself is never compared byte by byte; the final equality check on the
 * stored hash uses `timingSafeEqual`.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { base58Encode } from '../native.js';

export const KEY_PREFIX = 'lf_';

/** A new random API key: `lf_` + base58(32 random bytes). */
export function generateApiKey(): string {
  return KEY_PREFIX + base58Encode(randomBytes(32));
}

/** The stored form of a key. */
export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** Constant-time equality of two key hashes. */
export function sameHash(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

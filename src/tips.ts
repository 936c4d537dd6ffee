/**
 * The service's tip addresses: configured (`tipAddresses`), or else eight keypairs generated
 * once into `<dataDir>/tip-accounts.json` (an array of solana-keygen keypairs, mode 0600) so the
 * operator holds the keys to the tips the service collects. Eight, like the established block
 * engines, so tips spread write-lock contention.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LandfallError } from './errors.js';
import { base58Encode } from './native.js';
import { ed25519PublicKey } from './delivery/identity.js';

export const TIP_ACCOUNTS_FILE = 'tip-accounts.json';
export const DEFAULT_TIP_ACCOUNTS = 8;

export function loadTipAddresses(dataDir: string, configured: string[] | null): string[] {
  if (configured) return configured;
  const path = join(dataDir, TIP_ACCOUNTS_FILE);
  if (existsSync(path)) {
    let keypairs: unknown;
    try {
      keypairs = JSON.parse(readFileSync(path, 'utf8'));
    } catch (e) {
      throw new LandfallError('CONFIG_INVALID', `cannot read ${path}: ${(e as Error).message}`);
    }
    if (!Array.isArray(keypairs) || keypairs.length === 0 || !keypairs.every((k) => Array.isArray(k) && k.length === 64)) {
      throw new LandfallError('CONFIG_INVALID', `${path} must hold a JSON array of 64-byte keypairs`);
    }
    return keypairs.map((k: number[]) => base58Encode(Buffer.from(k.slice(32))));
  }
  mkdirSync(dataDir, { recursive: true });
  const keypairs = Array.from({ length: DEFAULT_TIP_ACCOUNTS }, () => {
    const seed = randomBytes(32);
    return Buffer.concat([seed, ed25519PublicKey(seed)]);
  });
  writeFileSync(path, JSON.stringify(keypairs.map((k) => [...k])), { mode: 0o600, flag: 'wx' });
  return keypairs.map((k) => base58Encode(k.subarray(32)));
}

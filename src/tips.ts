/**
 * The service's tip addresses: configured (`tipAddresses`), or else eight keypairs generated
 * once into `<dataDir>/tip-accounts.json` (an array of solana-keygen keypairs, mode 0600) so the
 * operator holds the keys to the tips the service collects. Eight, like the established block
 * engines, so tips spread write-lock contention.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { LandfallError } from './errors.js';
import { readJsonFile } from './config.js';
import { keypairOf, newKeypair, writeSecretJson } from './keypair.js';
import { base58Encode } from './native.js';

export const TIP_ACCOUNTS_FILE = 'tip-accounts.json';
export const DEFAULT_TIP_ACCOUNTS = 8;

export function loadTipAddresses(dataDir: string, configured: string[] | null): string[] {
  if (configured) return configured;
  const path = join(dataDir, TIP_ACCOUNTS_FILE);
  if (existsSync(path)) {
    const keypairs = readJsonFile(path, 'tip accounts file');
    if (!Array.isArray(keypairs) || keypairs.length === 0) {
      throw new LandfallError('CONFIG_INVALID', `${path} must hold a JSON array of 64-byte keypairs`);
    }
    return keypairs.map((k, i) => base58Encode(keypairOf(k, `${path} entry ${i}`).subarray(32)));
  }
  const keypairs = Array.from({ length: DEFAULT_TIP_ACCOUNTS }, newKeypair);
  writeSecretJson(path, keypairs.map((k) => [...k]));
  return keypairs.map((k) => base58Encode(k.subarray(32)));
}

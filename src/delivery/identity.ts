/**
 * The QUIC identity Landfall presents to validators (its certificate's ed25519 key; a staked
 * identity gets stake-weighted QoS). Read from a Solana CLI keypair file; with none configured,
 * one is generated once and kept in the data directory, so restarts present the same identity.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { newKeypair, readKeypairFile, writeSecretJson } from '../keypair.js';

export const IDENTITY_FILE = 'identity.json';

/** The 32-byte seed of the keypair file at `path`, checked for consistency. */
export function readKeypairSeed(path: string): Buffer {
  return readKeypairFile(path).subarray(0, 32);
}

/** The configured identity, or the data directory's own (created on first use). */
export function loadIdentity(dataDir: string, keypairPath?: string): Buffer {
  if (keypairPath) return readKeypairSeed(keypairPath);
  const path = join(dataDir, IDENTITY_FILE);
  if (existsSync(path)) return readKeypairSeed(path);
  const keypair = newKeypair();
  writeSecretJson(path, [...keypair]);
  return keypair.subarray(0, 32);
}

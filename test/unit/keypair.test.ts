/**
 * Keypair files (QUIC identity, tip accounts): generated once with mode 0600 and read back the
 * same; a file that is not a solana-keygen keypair, or whose halves disagree, is a clear error.
 */
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Keypair } from '@solana/web3.js';
import { afterAll, describe, expect, it } from 'vitest';
import { IDENTITY_FILE, loadIdentity } from '../../src/delivery/identity.js';
import { ed25519PublicKey } from '../../src/keypair.js';
import { loadTipAddresses, TIP_ACCOUNTS_FILE } from '../../src/tips.js';
import { tempDir } from '../../harness/tmp.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

describe('keypair files', () => {
  it('derives the same public key as web3.js', () => {
    const kp = Keypair.generate();
    expect(ed25519PublicKey(Buffer.from(kp.secretKey.subarray(0, 32))).equals(kp.publicKey.toBuffer())).toBe(true);
  });

  it('generates the identity once (0600) and reads the same one back', () => {
    const dir = join(tmp.dir, 'a');
    const seed = loadIdentity(dir);
    expect(statSync(join(dir, IDENTITY_FILE)).mode & 0o777).toBe(0o600);
    expect(loadIdentity(dir).equals(seed)).toBe(true);
  });

  it('reads a solana-keygen file and refuses broken ones with a clear error', () => {
    const kp = Keypair.generate();
    const good = join(tmp.dir, 'good.json');
    writeFileSync(good, JSON.stringify([...kp.secretKey]));
    expect(loadIdentity(tmp.dir, good).equals(Buffer.from(kp.secretKey.subarray(0, 32)))).toBe(true);
    const swapped = join(tmp.dir, 'swapped.json');
    writeFileSync(swapped, JSON.stringify([...kp.secretKey.subarray(0, 32), ...Keypair.generate().publicKey.toBytes()]));
    expect(() => loadIdentity(tmp.dir, swapped)).toThrow(/public half does not match/);
    const short = join(tmp.dir, 'short.json');
    writeFileSync(short, '[1,2,3]');
    expect(() => loadIdentity(tmp.dir, short)).toThrow(/64 bytes/);
    expect(() => loadIdentity(tmp.dir, join(tmp.dir, 'missing.json'))).toThrow(/cannot read keypair file/);
  });

  it('generates eight tip accounts once and reads their addresses back', () => {
    const dir = join(tmp.dir, 'tips');
    const first = loadTipAddresses(dir, null);
    expect(first).toHaveLength(8);
    expect(new Set(first).size).toBe(8);
    expect(statSync(join(dir, TIP_ACCOUNTS_FILE)).mode & 0o777).toBe(0o600);
    expect(loadTipAddresses(dir, null)).toEqual(first);
    writeFileSync(join(dir, TIP_ACCOUNTS_FILE), '[]');
    expect(() => loadTipAddresses(dir, null)).toThrow(/array of 64-byte keypairs/);
  });
});

/**
 * The key cache's generations live in the data directory's `generations` file, not in LMDB
 * (`src/store/generations.ts`, `native/src/generations.rs`). Its promise, held here with a real
 * service (two ingress threads), the real admin CLI in separate processes and the real store:
 * a plan set and a key revoked by another process are answered by the very next request on every
 * ingress thread and on the main thread, and a writer killed (SIGKILL) after its LMDB commit and
 * before it bumped the generation does not leave any thread trusting what it cached.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { get } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyCache } from '../../src/accounts/key-cache.js';
import { BIN } from '../../harness/serve-child.js';
import { startStack, type Stack } from '../../harness/stack.js';

let s: Stack;
beforeAll(async () => {
  s = await startStack({ config: { ingressThreads: 2 } });
});
afterAll(() => s.close());

function cli(env: Record<string, string>, ...args: string[]): void {
  execFileSync(process.execPath, [BIN, ...args, '--data', s.dir], { encoding: 'utf8', env: { ...process.env, ...env }, stdio: 'pipe' });
}

/**
 * `GET /v1/account` on a new connection (no keep-alive): the kernel deals each connection to one
 * ingress thread by a hash of its addresses, so `ROUNDS` of them reach both threads but with
 * probability 2^-(ROUNDS-1).
 */
function fresh(query: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = get(`${s.svc.url}/v1/account?${query}`, { agent: false }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
    req.on('error', reject);
  });
}

const ROUNDS = 16;

async function everyThread(key: string): Promise<{ status: number; body: any }[]> {
  const out = [];
  for (let i = 0; i < ROUNDS; i++) out.push(await fresh(`api-key=${encodeURIComponent(key)}`));
  return out;
}

/** The file's `active` word and its claimed writer slots, read as bytes. */
function marks(): { active: bigint; writers: bigint[] } {
  const b = readFileSync(join(s.dir, 'generations'));
  const writers = Array.from({ length: 64 }, (_, i) => b.readBigUInt64LE(32 + 8 * i)).filter((p) => p !== 0n);
  return { active: b.readBigUInt64LE(24), writers };
}

describe('the generation file', () => {
  it('is created with the store, mode 0600', () => {
    expect(statSync(join(s.dir, 'generations')).mode & 0o777).toBe(0o600);
  });

  it('carries a plan set and a key revoked by the CLI in another process to the next request of every thread', async () => {
    const c = s.svc.accounts.createAccount('gen-bot', 'pro');
    const doomed = s.svc.accounts.createKey(c.account_id, 'doomed').api_key;
    const main = new KeyCache(s.svc.accounts, s.svc.store); // the main thread's own cache
    // Cached on both ingress threads and on the main thread.
    for (const r of await everyThread(c.api_key)) expect(r.body.plan).toBe('pro');
    for (const r of await everyThread(doomed)) expect(r.status).toBe(200);
    expect(main.authenticate(c.api_key)?.account.plan).toBe('pro');
    expect(main.authenticate(doomed)?.key.name).toBe('doomed');

    cli({}, 'accounts', 'set-plan', c.account_id, 'whale');
    for (const r of await everyThread(c.api_key)) expect(r.body.plan).toBe('whale');
    expect(main.authenticate(c.api_key)?.account.plan).toBe('whale');

    cli({}, 'keys', 'revoke', '--account', c.account_id, '--name', 'doomed');
    for (const r of await everyThread(doomed)) expect(r.status).toBe(401);
    expect(main.authenticate(doomed)).toBeUndefined();
    for (const r of await everyThread(c.api_key)) expect(r.status).toBe(200);
  });

  it('does not let a writer killed between its commit and its generation bump leave a revoked key cached', async () => {
    const c = s.svc.accounts.createAccount('gen-killed', 'pro');
    const doomed = s.svc.accounts.createKey(c.account_id, 'doomed').api_key;
    const main = new KeyCache(s.svc.accounts, s.svc.store);
    for (const r of await everyThread(doomed)) expect(r.status).toBe(200);
    expect(main.authenticate(doomed)?.key.name).toBe('doomed');
    const accountsBefore = s.svc.store.accountsGeneration();

    // The CLI commits the revocation, then kills itself (SIGKILL) before bumping the generation.
    let killed: NodeJS.Signals | null = null;
    try {
      cli({ LANDFALL_TEST_KILL_AFTER_COMMIT: '1' }, 'keys', 'revoke', '--account', c.account_id, '--name', 'doomed');
    } catch (e) {
      killed = (e as { signal: NodeJS.Signals | null }).signal;
    }
    expect(killed).toBe('SIGKILL');
    s.svc.store.root.resetReadTxn(); // this thread's snapshot may predate the child's commit
    expect(s.svc.store.keyByHash(createHash('sha256').update(doomed).digest())?.revokedAt).not.toBeNull(); // committed

    // The next request of every thread sees the revocation: the dead writer's mark is released
    // (by that request, or by a thread's stream revocation check before it) with both
    // generations bumped; a revocation that ended normally bumps the key generation only.
    for (const r of await everyThread(doomed)) expect(r.status).toBe(401);
    expect(main.authenticate(doomed)).toBeUndefined();
    expect(marks()).toEqual({ active: 0n, writers: [] });
    expect(s.svc.store.accountsGeneration()).toBeGreaterThan(accountsBefore);
    // And the cache works again for the live key.
    for (const r of await everyThread(c.api_key)) expect(r.status).toBe(200);
    expect(main.authenticate(c.api_key)?.account.id).toBe(c.account_id);
    expect(main.size).toBe(1);
  });

  it('answers an empty, an over-long and a non-ASCII key 401, and caches none', async () => {
    const main = new KeyCache(s.svc.accounts, s.svc.store);
    for (const key of ['', 'lf_' + 'a'.repeat(254), 'lf_clé_ünknown']) {
      expect(main.authenticate(key)).toBeUndefined();
      const r = await fresh(`api-key=${encodeURIComponent(key)}`);
      expect(r.status).toBe(401);
    }
    expect(main.authenticate('lf_\ud800lone')).toBeUndefined(); // a lone surrogate (no URL can carry one)
    expect(main.size).toBe(0);
  });
});


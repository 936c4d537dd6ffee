/**
 * What resolving a cached API key costs a request, in one process: today's `KeyCache`
 * (one addon call, `KeyTable.lookup`: SHA-256, the table, the mapped generation file, the
 * overlay) against the one before it (node:crypto's SHA-256, lmdb-js `resetReadTxn`, two `meta`
 * reads of the generations, the addon's `overlayGet`, a Map lookup: docs/native.md's rows 1–5),
 * copied below as `OldKeyCache` with the generations it read put back in `meta`.
 *
 *   node --import tsx bench/key-cache.ts [calls per block] [blocks]
 *
 * Real LMDB (a temporary data directory) and the real addon; a warm key (every call a hit, as
 * for a bot's every request after its first). CPU µs per call (`process.cpuUsage`), blocks
 * alternated between the two, medians, the load average beside them.
 */
import { hash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Accounts } from '../src/accounts/accounts.js';
import { KeyCache } from '../src/accounts/key-cache.js';
import { DEFAULT_PLANS } from '../src/accounts/plans.js';
import { accountOverlayKey, type AccountRecord, type KeyRecord, Store } from '../src/store/store.js';

const perBlock = Number(process.argv[2] ?? 200_000);
const blocks = Number(process.argv[3] ?? 11);

/** The key cache before the generation file (its fast path exactly; its slow path trimmed to what a hit never runs). */
class OldKeyCache {
  private readonly byHash = new Map<string, { key: KeyRecord; generation: number; account: AccountRecord | undefined; accountsGeneration: number; overlayKey: Buffer }>();
  private readonly meta;
  constructor(
    private readonly accounts: Accounts,
    private readonly store: Store,
  ) {
    this.meta = store.root.openDB<unknown, string>({ name: 'meta' });
  }
  authenticate(apiKey: string): { key: KeyRecord; account: AccountRecord } | undefined {
    if (apiKey.length === 0 || apiKey.length > 256) return undefined;
    const id = hash('sha256', apiKey, 'base64');
    this.store.root.resetReadTxn();
    const generation = (this.meta.get('keys_generation') as number | undefined) ?? 0;
    let e = this.byHash.get(id);
    if (e === undefined || e.generation !== generation) {
      const who = this.accounts.authenticate(apiKey);
      if (!who) return undefined;
      e = { key: who.key, generation, account: undefined, accountsGeneration: -1, overlayKey: accountOverlayKey(who.key.accountId) };
      this.byHash.set(id, e);
    }
    const held = this.store.heldAccount(e.overlayKey);
    if (held !== undefined) return { key: e.key, account: held };
    const ag = (this.meta.get('accounts_generation') as number | undefined) ?? 0;
    if (e.accountsGeneration !== ag) {
      e.account = this.store.committedAccount(e.key.accountId);
      e.accountsGeneration = ag;
    }
    return e.account === undefined ? undefined : { key: e.key, account: e.account };
  }
}

const dir = mkdtempSync(join(tmpdir(), 'lf-bench-keys-'));
const store = Store.open(join(dir, 'data'));
try {
  const accounts = new Accounts(store, { plans: DEFAULT_PLANS, lamportsPerPoint: 1000 });
  const c = accounts.createAccount('bench', 'pro');
  // The generations as the old cache found them: present in `meta`, some revocations and writes old.
  await store.root.transaction(() => {
    const meta = store.root.openDB<unknown, string>({ name: 'meta' });
    meta.putSync('keys_generation', 3);
    meta.putSync('accounts_generation', 41);
  });
  const now = new KeyCache(accounts, store);
  const old = new OldKeyCache(accounts, store);
  const key = c.api_key;
  if (now.authenticate(key)?.account.id !== c.account_id || old.authenticate(key)?.account.id !== c.account_id) throw new Error('a cache did not resolve the key');

  const block = (auth: (k: string) => unknown): number => {
    const t0 = process.cpuUsage();
    for (let i = 0; i < perBlock; i++) if (auth(key) === undefined) throw new Error('miss');
    const d = process.cpuUsage(t0);
    return (d.user + d.system) / perBlock;
  };
  const nowAuth = (k: string) => now.authenticate(k);
  const oldAuth = (k: string) => old.authenticate(k);
  // Warm-up: the JIT's tiers for both.
  block(nowAuth);
  block(oldAuth);
  const a: number[] = [];
  const b: number[] = [];
  const loads: number[] = [];
  for (let i = 0; i < blocks; i++) {
    loads.push(loadavg()[0]!);
    if (i % 2 === 0) {
      a.push(block(nowAuth));
      b.push(block(oldAuth));
    } else {
      b.push(block(oldAuth));
      a.push(block(nowAuth));
    }
  }
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[xs.length >> 1]!;
  const f = (x: number) => (x * 1000).toFixed(0);
  console.log(`key resolution, a cached key, ${perBlock} calls a block, ${blocks} blocks alternated (load ${Math.min(...loads).toFixed(2)}–${Math.max(...loads).toFixed(2)})`);
  console.log(`  one native call (KeyTable.lookup):      ${f(median(a))} ns CPU a call (blocks ${a.map(f).join(' ')})`);
  console.log(`  before (hash, snapshot, meta ×2, overlay): ${f(median(b))} ns CPU a call (blocks ${b.map(f).join(' ')})`);
  console.log(`  ratio ${(median(a) / median(b)).toFixed(2)}`);
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}

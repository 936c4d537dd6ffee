import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { open } from 'lmdb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { base58Encode, overlay } from '../../src/native.js';
import { isPending, type StatusRecord } from '../../src/store/records.js';
import { statusKey } from '../../src/store/status-codec.js';
import { RELEASE_GRACE_MS, Store } from '../../src/store/store.js';
import { tempDir } from '../../harness/tmp.js';
import { startWorker } from '../../harness/worker.js';
import { randomSignature, statusRecord } from '../../harness/records.js';

let tmp: ReturnType<typeof tempDir>;
const opened: Store[] = [];
beforeEach(() => {
  tmp = tempDir();
});
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
  tmp.cleanup();
});

function openStore(dir = tmp.dir, commitWindowMs?: number): Store {
  const s = Store.open(dir, commitWindowMs === undefined ? {} : { commitWindowMs });
  opened.push(s);
  return s;
}

const signature = randomSignature;
const rec = statusRecord;

const committed = (s: Store, sig: string): Buffer | undefined => {
  s.root.resetReadTxn();
  return s.status.getBinary(statusKey(sig)!);
};
const lastTxnId = (s: Store): number => (s.root.getStats() as { lastTxnId: number }).lastTxnId;

describe('status records', () => {
  it('reads a write at once, commits it within the window, updates it and drops it from the pending scan', async () => {
    const store = openStore(tmp.dir, 60);
    const recs = Array.from({ length: 10 }, (_, i) => rec({ submittedAt: 1000 + i }));
    for (const r of recs) store.insertStatus(r);
    // Readable at once, before the window commits (a send is followed by a poll).
    expect(store.getStatus(recs[7]!.signature)).toEqual(recs[7]);
    expect(committed(store, recs[7]!.signature)).toBeUndefined();
    // Committed within the window, with no flush asked for.
    await new Promise((r) => setTimeout(r, 200));
    expect(committed(store, recs[7]!.signature)).toBeDefined();
    expect([...store.pendingEntries()].map((r) => r.signature).sort()).toEqual(recs.map((r) => r.signature).sort());

    const done = { ...recs[3]!, status: 'confirmed' as const, confirmedAt: 2000, latencyMs: 997, slot: 300_000_002 };
    const expired = { ...recs[4]!, expired: true };
    const p = store.updateStatus(done);
    void store.updateStatus(expired);
    expect(store.getStatus(done.signature)).toEqual(done);
    await expect(p).resolves.toBe(true);
    const pending = [...store.pendingEntries()];
    expect(pending).toHaveLength(8);
    expect(pending.every(isPending)).toBe(true);
    expect(pending.map((r) => r.signature)).not.toContain(done.signature);
    expect(pending.map((r) => r.signature)).not.toContain(expired.signature);
    expect(store.getStatus(expired.signature)?.expired).toBe(true);

    // Survives a reopen, exactly.
    await store.close();
    opened.pop();
    const again = openStore();
    expect(again.getStatus(done.signature)).toEqual(done);
    expect(again.getStatus(recs[0]!.signature)).toEqual(recs[0]);
  });

  it('answers undefined for unknown and malformed signatures', () => {
    const store = openStore();
    expect(store.getStatus(signature())).toBeUndefined();
    expect(store.getStatus('not-a-signature')).toBeUndefined();
    expect(store.getStatus(base58Encode(randomBytes(32)))).toBeUndefined();
    expect(() => store.insertStatus(rec({ signature: 'short' }))).toThrow(RangeError);
    return expect(store.updateStatus(rec({ signature: 'short' }))).rejects.toThrow(/64-byte/);
  });

  it('groups the writes of many event turns into one commit', async () => {
    const store = openStore(tmp.dir, 1000);
    await store.flushed();
    const before = lastTxnId(store);
    const recs = Array.from({ length: 200 }, () => rec());
    for (const r of recs) {
      store.insertStatus(r);
      await new Promise((r) => setImmediate(r));
    }
    expect(lastTxnId(store)).toBe(before);
    await store.flushed();
    expect(lastTxnId(store)).toBe(before + 1);
    for (const r of recs) expect(committed(store, r.signature)).toBeDefined();
  });

  it('releases committed writes from the process-wide overlay', async () => {
    const store = openStore(tmp.dir, 10);
    const size0 = overlay.size();
    const recs = Array.from({ length: 50 }, () => rec());
    for (const r of recs) store.insertStatus(r);
    expect(overlay.size()).toBe(size0 + 50);
    await store.flushed();
    await new Promise((r) => setTimeout(r, 2 * RELEASE_GRACE_MS + 50));
    expect(overlay.size()).toBe(size0);
    expect(store.getStatus(recs[9]!.signature)).toEqual(recs[9]);
  });

  it('prunes by submission time in cursor slices', async () => {
    const store = openStore();
    const recs = Array.from({ length: 25 }, (_, i) => rec({ submittedAt: 1000 + i }));
    for (const r of recs) store.insertStatus(r);
    await store.flushed();
    await new Promise((r) => setTimeout(r, 2 * RELEASE_GRACE_MS + 50)); // the overlay let them go
    let deleted = 0;
    let slices = 0;
    let cursor: Buffer | undefined;
    do {
      const s = await store.pruneStatusSlice(1010, cursor, 4);
      expect(s.scanned).toBeLessThanOrEqual(4);
      deleted += s.deleted;
      cursor = s.next;
      slices++;
    } while (cursor);
    expect(deleted).toBe(10);
    expect(slices).toBeGreaterThanOrEqual(7);
    for (const r of recs) expect(store.getStatus(r.signature) !== undefined).toBe(r.submittedAt >= 1010);
  });
});

describe('files', () => {
  it('creates the data directory 0700 and the LMDB files and the generation file 0600', () => {
    const dir = join(tmp.dir, 'nested', 'data');
    openStore(dir);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    for (const f of ['data.mdb', 'lock.mdb', 'generations']) expect(statSync(join(dir, f)).mode & 0o777).toBe(0o600);
  });

  it('tightens the files of an existing store to 0600', async () => {
    const dir = join(tmp.dir, 'old');
    mkdirSync(dir);
    const root = open({ path: dir, noSubdir: false });
    await root.close();
    for (const f of ['data.mdb', 'lock.mdb']) chmodSync(join(dir, f), 0o644);
    openStore(dir);
    for (const f of ['data.mdb', 'lock.mdb']) expect(statSync(join(dir, f)).mode & 0o777).toBe(0o600);
    // The generation file, widened by hand (a restore, a copy): narrowed by the next open.
    chmodSync(join(dir, 'generations'), 0o644);
    openStore(dir);
    expect(statSync(join(dir, 'generations')).mode & 0o777).toBe(0o600);
  });
});

// ---- the old layout -------------------------------------------------------------------------

/** A status record as the old layout stored it (msgpack, tip as a decimal string). */
function oldRecord(r: StatusRecord) {
  return {
    signature: r.signature,
    accountId: r.accountId,
    keyName: r.keyName,
    status: r.status,
    submittedAt: r.submittedAt,
    confirmedAt: r.confirmedAt,
    latencyMs: r.latencyMs,
    slot: r.slot,
    submitSlot: r.submitSlot,
    expired: r.expired,
    tipLamports: r.tipLamports.toString(),
    recentBlockhash: r.recentBlockhash,
    durableNonce: r.durableNonce,
  };
}

describe('migration from the old layout', () => {
  it('moves every record into the compact layout in slices, keeps pending ones pending, drops the old tables', async () => {
    // The old store, written with the old code's exact open/openDB calls.
    const root = open({ path: tmp.dir, noSubdir: false, maxDbs: 16, readOnly: false });
    const accounts = root.openDB({ name: 'accounts' });
    root.openDB({ name: 'usage' });
    root.openDB({ name: 'api_keys', keyEncoding: 'binary' });
    root.openDB({ name: 'key_names', encoding: 'binary' });
    const status = root.openDB({ name: 'status' });
    const statusByTime = root.openDB({ name: 'status_by_time' });
    const pending = root.openDB({ name: 'pending' });
    root.openDB({ name: 'meta' });
    const N = 25_000;
    const expected: StatusRecord[] = [];
    root.transactionSync(() => {
      accounts.putSync('acc_1', { id: 'acc_1', name: 'a', plan: 'starter', points: 7, memberSince: 1, planUpgradedAt: 1 });
      for (let i = 0; i < N; i++) {
        const kind = i % 4;
        let r = rec({ submittedAt: 1_795_000_000_000 + i, tipLamports: BigInt(i) * 1_000_000_007n, durableNonce: i % 7 === 0 });
        if (kind === 1) r = { ...r, status: 'confirmed', confirmedAt: r.submittedAt + 500, latencyMs: 500, slot: 300_000_010 + i };
        if (kind === 2) r = { ...r, status: 'failed', confirmedAt: r.submittedAt + 600, slot: 300_000_011 + i };
        if (kind === 3) r = { ...r, expired: true };
        // Only the pending entry held lastValidBlockHeight.
        const stillPending = kind === 0;
        r = { ...r, lastValidBlockHeight: stillPending ? 280_000_000 + i : null };
        status.putSync(r.signature, oldRecord(r));
        statusByTime.putSync([r.submittedAt, r.signature], null);
        if (stillPending) {
          pending.putSync(r.signature, {
            accountId: r.accountId,
            submittedAt: r.submittedAt,
            recentBlockhash: r.recentBlockhash,
            durableNonce: r.durableNonce,
            lastValidBlockHeight: r.lastValidBlockHeight,
            tipLamports: r.tipLamports.toString(),
          });
        }
        expected.push(r);
      }
      // A record the compact layout cannot hold (not a real blockhash): dropped, and counted apart.
      status.putSync(signature(), oldRecord({ ...rec(), recentBlockhash: 'h' }));
    });
    await root.close();

    const store = openStore();
    expect(store.migrated).toBe(N);
    for (const r of expected) expect(store.getStatus(r.signature)).toEqual(r);
    const pendingNow = [...store.pendingEntries()];
    expect(pendingNow).toHaveLength(N / 4);
    expect(pendingNow.every((r) => r.lastValidBlockHeight !== null && isPending(r))).toBe(true);
    expect(store.getAccount('acc_1')?.points).toBe(7);
    const tables = [...store.root.getKeys()];
    expect(tables).toContain('status_records');
    for (const name of ['status', 'pending', 'status_by_time']) expect(tables).not.toContain(name);
    await store.close();
    opened.pop();
    expect(openStore().migrated).toBe(0);
  });
});

// ---- threads --------------------------------------------------------------------------------

const WORKER = new URL('./fixtures/store-worker.mjs', import.meta.url);
const plain = (r: StatusRecord) => ({ ...r, tipLamports: String(r.tipLamports) });

describe('read-your-writes across threads', () => {
  it('a record written on one thread is read on another before LMDB commits it', async () => {
    const store = openStore(tmp.dir, 5_000);
    const recs = Array.from({ length: 20 }, () => rec());
    const w = startWorker(WORKER, { mode: 'write', dir: tmp.dir, commitWindowMs: 5_000, records: recs.map(plain) });
    expect(await w.next()).toEqual({ written: 20 });
    for (const r of recs) {
      expect(committed(store, r.signature)).toBeUndefined();
      expect(store.getStatus(r.signature)).toEqual(r);
      expect(store.hasStatus(statusKey(r.signature)!)).toBe(true);
    }
    expect(store.hasStatus(statusKey(signature())!)).toBe(false);
    // The other way round: the main thread writes, a worker reads before the commit.
    const mine = rec();
    store.insertStatus(mine);
    const reader = startWorker(WORKER, { mode: 'read', dir: tmp.dir, signatures: [mine.signature, recs[0]!.signature, signature()] });
    expect((await reader.next()).records).toEqual([plain(mine), plain(recs[0]!), null]);
    expect(await reader.exited).toBe(0);
    // The writer closes: its window commits, its overlay entries are released, LMDB has them.
    w.worker.postMessage('close');
    expect(await w.exited).toBe(0);
    for (const r of recs) {
      expect(store.hasStatus(statusKey(r.signature)!)).toBe(true);
      expect(committed(store, r.signature)).toBeDefined();
      expect(store.getStatus(r.signature)).toEqual(r);
    }
  });

  it('an update made on another thread is seen at once, never the older committed state', async () => {
    const store = openStore(tmp.dir, 10);
    const r = rec();
    store.insertStatus(r);
    await store.flushed();
    const done = { ...r, status: 'confirmed' as const, confirmedAt: r.submittedAt + 400, latencyMs: 400, slot: 300_000_001 };
    const w = startWorker(WORKER, { mode: 'update', dir: tmp.dir, commitWindowMs: 5_000, record: plain(done) });
    expect(await w.next()).toEqual({ updated: true });
    expect(store.getStatus(r.signature)).toEqual(done);
    expect([...store.pendingEntries()].map((p) => p.signature)).not.toContain(r.signature);
    w.worker.postMessage('close');
    expect(await w.exited).toBe(0);
    expect(store.getStatus(r.signature)).toEqual(done);
  });
});

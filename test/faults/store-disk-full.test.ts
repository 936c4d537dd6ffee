/**
 * The store on a full disk, for real: LMDB on a small tmpfs filled with a filler file. Two ways a
 * disk runs out: (1) the store finds the filesystem at its reserve before writing (the normal
 * case: LMDB never writes into a full disk), and (2) a commit that runs out of space mid-write
 * (space taken by someone else between the check and the write), which LMDB reports as EIO.
 * Either way: no unhandled rejection (vitest fails a file that has one), the process-wide state
 * says why, status writes are held and stay readable, other writes are refused with
 * `StoreUnavailableError`, and everything held is committed once the probe finds space again.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { accountSlot, base58Decode, overlay, usage, utcDay } from '../../src/native.js';
import { parseSegment } from '../../src/store/ack-log.js';
import { acceptedNames, decodeStatus, resendOf, resendOptionsByte, statusKey } from '../../src/store/status-codec.js';
import { Store, StoreUnavailableError, type StatusRecord } from '../../src/store/store.js';
import { waitFor } from '../../harness/localnet.js';
import { statusRecord } from '../../harness/records.js';
import { mountTmpfs, type Tmpfs } from '../../harness/tmpfs.js';

const MiB = 1 << 20;

let fs: Tmpfs | { error: string };
let n = 0;
const opened: Store[] = [];

beforeAll(() => {
  fs = mountTmpfs(16 * MiB);
  if ('error' in fs) console.warn(`store disk-full tests skipped: ${fs.error}`);
});
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
  if (!('error' in fs)) fs.unfill();
});
afterAll(() => {
  if (!('error' in fs)) fs.unmount();
});

function openStore(opts: Parameters<typeof Store.open>[1] = {}): Store {
  const s = Store.open(join((fs as Tmpfs).dir, `data-${n++}`), { commitWindowMs: 10, ...opts });
  opened.push(s);
  return s;
}

/** The committed value in LMDB (not the overlay). */
function committed(s: Store, signature: string): Buffer | undefined {
  s.root.resetReadTxn();
  return s.status.getBinary(statusKey(signature)!);
}

const account = { id: 'acc_diskfull', name: 'disk', plan: 'starter' as const, points: 0, memberSince: 1, planUpgradedAt: 1 };

describe('store on a full disk', () => {
  it('finds the filesystem at its reserve before writing: holds status writes (readable), refuses the rest and any acceptance it cannot log, commits what it held once space returns', async (ctx) => {
    ctx.skip('error' in fs, 'error' in fs ? fs.error : '');
    const t = fs as Tmpfs;
    const store = openStore();
    store.createAccountSync(account, randomBytes(32), { accountId: account.id, name: 'k', createdAt: 1, revokedAt: null });
    const before = Array.from({ length: 20 }, () => statusRecord());
    for (const r of before) store.insertStatus(r);
    await store.flushed();
    expect(store.health.available).toBe(true);

    t.fill(0);
    // Written while the disk is full (another node's events, the tracker's): held, readable at once, not in LMDB.
    const during = Array.from({ length: 30 }, () => statusRecord());
    for (const r of during) void store.updateStatus(r, { wire: randomBytes(300), antiMev: true, maxRetries: 3 });
    const settled = { ...before[0]!, status: 'confirmed' as const, confirmedAt: Date.now(), latencyMs: 400, slot: 123 };
    const update = store.updateStatus(settled);
    await store.flushed();

    expect(store.health.available).toBe(false);
    const view = store.health.view();
    expect(view.reason).toMatch(/MiB free on the data directory's filesystem .* at or below the reserve of 1\.60 MiB/);
    expect(view.since).not.toBeNull();
    expect(view.free_bytes).toBeLessThan(64 * 1024);
    // Acceptances are logged while the log's file has room (the page it already holds), then
    // refused: nothing is acknowledged that a crash could lose.
    const logged: StatusRecord[] = [];
    let refused: { r: StatusRecord; e: Error } | undefined;
    for (let i = 0; i < 200 && !refused; i++) {
      const r = statusRecord();
      try {
        store.insertStatus(r, { wire: randomBytes(300), antiMev: true, maxRetries: 3 });
        logged.push(r);
      } catch (e) {
        refused = { r, e: e as Error };
      }
    }
    expect(refused?.e.message).toMatch(/not written: acknowledgement log: /);
    expect(store.getStatus(refused!.r.signature)).toBeUndefined();
    for (const r of logged) expect(store.getStatus(r.signature)?.status).toBe('sent');
    for (const r of during) {
      expect(store.getStatus(r.signature)).toMatchObject({ signature: r.signature, status: 'sent' });
      expect(committed(store, r.signature)).toBeUndefined();
    }
    expect(store.getStatus(settled.signature)!.status).toBe('confirmed');
    // Reads of committed records go on.
    for (const r of before.slice(1)) expect(store.getStatus(r.signature)!.status).toBe('sent');
    expect(store.getAccount(account.id)!.name).toBe('disk');
    // Other writes are refused, with the reason.
    await expect(store.updateAccount(account.id, (a) => ({ ...a, points: 5 }))).rejects.toThrow(/account update not written: store unavailable: .*reserve/);
    expect(() => store.addKeySync(randomBytes(32), { accountId: account.id, name: 'k2', createdAt: 1, revokedAt: null })).toThrow(/at or below the reserve/);
    expect(store.health.view().refused_writes).toBeGreaterThan(2);

    // A probe that finds no room changes nothing.
    store.startProbe(50);
    await new Promise((r) => setTimeout(r, 200));
    expect(store.health.available).toBe(false);

    t.unfill();
    await waitFor('the probe to find space', () => (store.health.available ? true : undefined), 5_000);
    expect(await update).toBe(true);
    await store.flushed();
    for (const r of [...during, ...logged]) {
      const v = committed(store, r.signature);
      expect(v).toBeDefined();
      expect(resendOf(v!)).toMatchObject({ antiMev: true, maxRetries: 3 });
    }
    expect(decodeStatus(settled.signature, committed(store, settled.signature)!).status).toBe('confirmed');
    expect(store.health.view()).toMatchObject({ available: true, reason: null, since: null, refused_writes: 0 });
    await expect(store.updateAccount(account.id, (a) => ({ ...a, points: 5 }))).resolves.toMatchObject({ points: 5 });
    // The log cut the failed frame off again: acceptances after it are whole frames a replay reads.
    const after = statusRecord();
    store.insertStatus(after);
    const logDir = join(store.path, 'acks');
    const frames = readdirSync(logDir).flatMap((f) => parseSegment(readFileSync(join(logDir, f))));
    expect(frames.every((f) => !f.torn)).toBe(true);
    expect(frames.flatMap((f) => f.records.map((r) => r.key.toString('hex')))).toContain(statusKey(after.signature)!.toString('hex'));
  });

  it("the send path's native record (insertAccepted) on a full disk: a failed or short write of the log is cut back and refused (ENOSPC), nothing shown or counted, the store unavailable; what was logged commits once space returns", async (ctx) => {
    ctx.skip('error' in fs, 'error' in fs ? fs.error : '');
    const t = fs as Tmpfs;
    const store = openStore();
    const index = accountSlot(account.id);
    usage.init(index, 0, utcDay(), 0);
    const counted = () => usage.get(index, utcDay())!.total;
    const accept = (r: StatusRecord) => {
      const wire = randomBytes(300);
      const key = statusKey(r.signature)!;
      key.copy(wire, 1);
      base58Decode(r.recentBlockhash).copy(wire, 100);
      store.insertAccepted(r, wire.subarray(1, 65), wire, 100, acceptedNames(r.accountId, r.keyName), resendOptionsByte(true, 3, false), index, utcDay());
    };
    const first = statusRecord({ accountId: account.id });
    accept(first);
    await store.flushed();
    const before = counted();

    t.fill(0);
    const logged: StatusRecord[] = [];
    let refused: { r: StatusRecord; e: Error } | undefined;
    for (let i = 0; i < 200 && !refused; i++) {
      const r = statusRecord({ accountId: account.id });
      try {
        accept(r);
        logged.push(r);
      } catch (e) {
        refused = { r, e: e as Error };
      }
    }
    expect(refused?.e).toBeInstanceOf(StoreUnavailableError);
    expect(refused?.e.message).toMatch(/not written: acknowledgement log: ENOSPC/);
    expect(store.health.available).toBe(false);
    expect(store.health.view().reason).toMatch(/^acknowledgement log: ENOSPC/);
    // Not shown (no overlay entry), not counted: only what was logged.
    expect(store.getStatus(refused!.r.signature)).toBeUndefined();
    expect(counted() - before).toBe(logged.length);
    for (const r of logged) expect(store.getStatus(r.signature)?.status).toBe('sent');

    t.unfill();
    store.startProbe(50);
    await waitFor('the probe to find space', () => (store.health.available ? true : undefined), 5_000);
    const after = statusRecord({ accountId: account.id });
    accept(after);
    await store.flushed();
    for (const r of [first, ...logged, after]) {
      const v = committed(store, r.signature);
      expect(v).toBeDefined();
      expect(resendOf(v!)).toMatchObject({ antiMev: true, maxRetries: 3 });
    }
    // The failed frame was cut off: every frame of the log is whole, the one after it included.
    const logDir = join(store.path, 'acks');
    const frames = readdirSync(logDir).map((f) => parseSegment(readFileSync(join(logDir, f))));
    expect(frames.every((f) => !f.torn)).toBe(true);
    const keys = frames.flatMap((f) => f.records.map((r) => r.key.toString('hex')));
    expect(keys).toContain(statusKey(after.signature)!.toString('hex'));
    expect(keys).not.toContain(statusKey(refused!.r.signature)!.toString('hex'));
  });

  it('catches a commit that runs out of space mid-write (EIO): the store becomes unavailable with the errno, the window is held, and it commits once space returns', async (ctx) => {
    ctx.skip('error' in fs, 'error' in fs ? fs.error : '');
    const t = fs as Tmpfs;
    // A tiny reserve, so the check passes and LMDB itself meets the end of the disk.
    const store = openStore({ reserveBytes: 16 * 1024 });
    store.insertStatus(statusRecord());
    await store.flushed();
    t.fill(200 * 1024); // 50 pages: LMDB writes up to 64 contiguous pages at once, so the write ends short (EIO)
    // ~560 KB of pending records with their resend bytes, in one window: more than is left.
    const big = Array.from({ length: 400 }, () => statusRecord());
    for (const r of big) void store.updateStatus(r, { wire: randomBytes(1200), antiMev: false, maxRetries: 0 });
    const probe = statusRecord();
    const held = store.updateStatus(probe);
    await waitFor('the failed commit', () => (store.health.available ? undefined : true), 5_000);
    await waitFor('the errno in the reason', () => (/EIO|ENOSPC/.test(store.health.view().reason ?? '') ? true : undefined), 5_000);
    expect(store.health.view().reason).toMatch(/^status records: commit failed: EIO /);
    for (const r of [...big, probe]) {
      expect(store.getStatus(r.signature)?.signature).toBe(r.signature);
      expect(committed(store, r.signature)).toBeUndefined();
    }
    const inOverlay = overlay.size();
    expect(inOverlay).toBeGreaterThanOrEqual(big.length + 1);

    t.unfill();
    store.startProbe(50);
    expect(await held).toBe(true);
    for (const r of [...big, probe]) expect(committed(store, r.signature)).toBeDefined();
    expect(store.health.available).toBe(true);
  });

  it('a held write never overwrites a newer write of the same record that another thread committed first', async (ctx) => {
    ctx.skip('error' in fs, 'error' in fs ? fs.error : '');
    const t = fs as Tmpfs;
    const dir = join(t.dir, `data-${n++}`);
    // Two stores on one environment sharing one state: two threads of the service.
    const a = Store.open(dir, { commitWindowMs: 10 });
    opened.push(a);
    const b = Store.open(dir, { commitWindowMs: 10, health: a.health });
    opened.push(b);
    const r = statusRecord();
    t.fill(0);
    const heldByA = a.updateStatus(r); // the insert, on an ingress thread
    await a.flushed();
    expect(a.health.available).toBe(false);
    // The tracker (another thread) settles it while the disk is still full: held too, newer.
    const confirmed = { ...r, status: 'confirmed' as const, confirmedAt: Date.now(), latencyMs: 1, slot: 9 };
    const heldByB = b.updateStatus(confirmed);
    await b.flushed();
    t.unfill();
    // b's probe commits b's write at once; a retries on its own timer, a second later.
    b.startProbe(50);
    expect(await heldByB).toBe(true);
    expect(decodeStatus(r.signature, committed(b, r.signature)!).status).toBe('confirmed');
    expect(await heldByA).toBe(true);
    await a.flushed();
    expect(decodeStatus(r.signature, committed(a, r.signature)!).status).toBe('confirmed');
    expect(a.getStatus(r.signature)!.status).toBe('confirmed');
  });

  it('refuses to create a new store on a full filesystem (LMDB would die of SIGBUS there) with a clear error', (ctx) => {
    ctx.skip('error' in fs, 'error' in fs ? fs.error : '');
    const t = fs as Tmpfs;
    t.fill(0);
    expect(() => Store.open(join(t.dir, 'fresh'))).toThrow(StoreUnavailableError);
    expect(() => Store.open(join(t.dir, 'fresh'))).toThrow(/cannot create the store in .*fresh: /);
  });
});

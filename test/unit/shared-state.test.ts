/**
 * The process-wide native state that ingress worker threads share (`overlay`, `accountSlot`,
 * `usage` from src/native.ts), tested across real Node worker threads: what one thread writes,
 * another reads, with no message between them but the native statics.
 *
 * The state is process-wide and lives as long as the process: every test uses keys of its own
 * (a random prefix), and filling the registry to capacity happens in a child process.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Worker } from 'node:worker_threads';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { ACCOUNT_SLOTS, accountSlot, accountSlotCount, accountSlotKey, overlay, usage, utcDay } from '../../src/native.js';

const WORKER = new URL('./fixtures/shared-state-worker.mjs', import.meta.url);

/** A unique key prefix for this test run. */
const run = randomBytes(6).toString('hex');

interface Peer {
  worker: Worker;
  /** Run `op` in the worker; resolves with its result, rejects with its error (code kept). */
  call: <T>(op: string, args?: Record<string, unknown>) => Promise<T>;
}

const started: Worker[] = [];
afterAll(async () => {
  await Promise.all(started.map((w) => w.terminate()));
});

async function startPeer(): Promise<Peer> {
  const worker = new Worker(WORKER);
  started.push(worker);
  let nextId = 0;
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  let ready: () => void = () => {};
  const isReady = new Promise<void>((r) => (ready = r));
  worker.on('message', (m: { ready?: boolean; id?: number; result?: unknown; error?: { code?: string; message: string } }) => {
    if (m.ready) return ready();
    const w = waiting.get(m.id!);
    waiting.delete(m.id!);
    if (m.error) w?.reject(Object.assign(new Error(m.error.message), { code: m.error.code }));
    else w?.resolve(m.result);
  });
  worker.on('error', (e) => waiting.forEach((w) => w.reject(e)));
  await isReady;
  const call = <T>(op: string, args: Record<string, unknown> = {}): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = nextId++;
      waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      worker.postMessage({ id, op, ...args });
    });
  return { worker, call };
}

/** Start `n` workers. */
const peers = (n: number): Promise<Peer[]> => Promise.all(Array.from({ length: n }, startPeer));

/** A go flag: workers block on it (Atomics.wait) until `release()`, so they start together. */
function goFlag(): { shared: SharedArrayBuffer; release: () => void } {
  const shared = new SharedArrayBuffer(4);
  const flags = new Int32Array(shared);
  return {
    shared,
    release: () => {
      Atomics.store(flags, 0, 1);
      Atomics.notify(flags, 0);
    },
  };
}

/** The error `fn` throws. */
function thrown(fn: () => unknown): { code?: string } | undefined {
  try {
    fn();
  } catch (e) {
    return e as { code?: string };
  }
  return undefined;
}

describe('status overlay across threads', () => {
  it('a put in one worker is visible to a get in another at once, and a release anywhere removes it', async () => {
    const [a, b] = await peers(2);
    const key = Buffer.from(`${run}:sig:1`);
    const value = Buffer.from('status=sent slot=123');
    const token = await a!.call<number>('put', { key, value });
    expect(Number.isSafeInteger(token)).toBe(true);

    const seen = await b!.call<Uint8Array | null>('get', { key });
    expect(seen && Buffer.from(seen).equals(value)).toBe(true);
    // And in the main thread, as a copy.
    const here = overlay.get(key);
    expect(here?.equals(value)).toBe(true);

    // A newer put (main thread) replaces it; the older token's release keeps the newer entry.
    const newer = overlay.put(key, Buffer.from('status=confirmed'));
    expect(newer).toBeGreaterThan(token);
    expect(await b!.call<boolean>('release', { key, token })).toBe(false);
    expect(Buffer.from((await a!.call<Uint8Array>('get', { key }))!).toString()).toBe('status=confirmed');
    expect(await b!.call<boolean>('release', { key, token: newer })).toBe(true);
    expect(await a!.call('get', { key })).toBeNull();
    expect(overlay.get(key)).toBeNull();
  });

  it('4 workers putting, reading and releasing one key: values never torn, nothing left behind', async () => {
    const workers = await peers(4);
    const key = Buffer.from(`${run}:churn`);
    const before = overlay.size();
    const go = goFlag();
    const done = workers.map((w, tag) => w.call<number>('churn', { key, tag: tag + 1, count: 5000, shared: go.shared }));
    go.release();
    const released = (await Promise.all(done)).reduce((n, r) => n + r, 0);
    // The last put's release always finds its own token.
    expect(released).toBeGreaterThanOrEqual(1);
    expect(overlay.get(key)).toBeNull();
    expect(overlay.size()).toBe(before);
  });

  it('size counts entries; oversized keys and values throw coded errors and store nothing', () => {
    const before = overlay.size();
    const key = Buffer.from(`${run}:size`);
    const t = overlay.put(key, Buffer.alloc(4096, 1));
    expect(overlay.size()).toBe(before + 1);
    expect(thrown(() => overlay.put(Buffer.alloc(129, 7), Buffer.from('v')))?.code).toBe('OVERLAY_KEY_TOO_LARGE');
    expect(thrown(() => overlay.put(key, Buffer.alloc(4097)))?.code).toBe('OVERLAY_VALUE_TOO_LARGE');
    expect(overlay.get(key)?.length).toBe(4096);
    // A token that is not a whole number never matches.
    expect(overlay.release(key, t + 0.5)).toBe(false);
    expect(overlay.release(key, Number.NaN)).toBe(false);
    expect(overlay.release(key, t)).toBe(true);
    expect(overlay.size()).toBe(before);
  });
});

describe('account slot registry across threads', () => {
  it('4 workers registering the same keys at once, in different orders, agree on every index', async () => {
    const workers = await peers(4);
    const keys = Array.from({ length: 300 }, (_, i) => `${run}:acc_${i}`);
    const countBefore = accountSlotCount();
    const go = goFlag();
    const answers = workers.map((w, k) => {
      // Worker k walks the keys rotated by k·75, half of them backwards.
      const order = keys.map((_, i) => (i + k * 75) % keys.length);
      if (k % 2) order.reverse();
      return w
        .call<number[]>('slots', { keys: order.map((i) => keys[i]), shared: go.shared })
        .then((idx) => new Map(order.map((i, j) => [keys[i]!, idx[j]!])));
    });
    go.release();
    const maps = await Promise.all(answers);
    for (const m of maps.slice(1)) expect(m).toEqual(maps[0]);
    // Every key got its own index; the main thread sees the same ones.
    const indexes = new Set(maps[0]!.values());
    expect(indexes.size).toBe(keys.length);
    expect(accountSlotCount()).toBe(countBefore + keys.length);
    for (const k of keys) {
      const i = accountSlot(k);
      expect(i).toBe(maps[0]!.get(k));
      expect(accountSlotKey(i)).toBe(k);
    }
    expect(accountSlotCount()).toBe(countBefore + keys.length);
    expect(accountSlotKey(ACCOUNT_SLOTS)).toBeNull();
  });

  it('indexes are dense and stay below ACCOUNT_SLOTS; a full registry refuses with ACCOUNT_SLOTS_FULL', async () => {
    expect(ACCOUNT_SLOTS).toBe(32768);
    const a = accountSlot(`${run}:dense_a`);
    const b = accountSlot(`${run}:dense_b`);
    expect(b).toBe(a + 1);
    expect(accountSlot(`${run}:dense_a`)).toBe(a);

    const fixture = new URL('./fixtures/registry-full.mjs', import.meta.url);
    const child = spawn(process.execPath, [fixture.pathname], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code, err).toBe(0);
    const r = JSON.parse(out) as Record<string, unknown>;
    expect(r).toMatchObject({
      capacity: 32768,
      count: 32768,
      refused: { code: 'ACCOUNT_SLOTS_FULL' },
      known: 32767,
      lastKey: 'acc_32767',
      countAfter: 32768,
    });
  });
});

describe('usage counters across threads', () => {
  const day = utcDay();

  it('4 workers × 25 000 adds on one account give an exact total and today', async () => {
    const workers = await peers(4);
    const i = accountSlot(`${run}:usage_hammer`);
    expect(usage.get(i, day)).toBeNull();
    expect(usage.init(i, 1_000_000, day, 40)).toBe(true);
    expect(usage.init(i, 5, day, 5)).toBe(false);
    usage.takeDirty(); // start from a clean slate for this index
    const go = goFlag();
    const done = workers.map((w) => w.call<number>('add', { index: i, count: 25_000, day, shared: go.shared }));
    go.release();
    const notReady = await Promise.all(done);
    expect(notReady).toEqual([0, 0, 0, 0]);
    expect(usage.get(i, day)).toEqual({ total: 1_100_000, today: 100_040 });
    // Another day: same total, nothing today.
    expect(usage.get(i, day + 1)).toEqual({ total: 1_100_000, today: 0 });
    expect(usage.takeDirty()).toContain(i);
    expect(usage.takeDirty()).not.toContain(i);
  });

  it('adds before init count and are added to the persisted counts; the next day restarts today', async () => {
    const [w] = await peers(1);
    const i = accountSlot(`${run}:usage_early`);
    const go = goFlag();
    go.release();
    // Another thread adds before anyone loaded the persisted counts: it is told so.
    expect(await w!.call<number>('add', { index: i, count: 3, day, shared: go.shared })).toBe(3);
    expect(usage.get(i, day)).toBeNull();
    expect(usage.takeDirty()).not.toContain(i);
    expect(usage.init(i, 500, day, 7)).toBe(true);
    expect(usage.get(i, day)).toEqual({ total: 503, today: 10 });
    expect(usage.takeDirty()).toContain(i);

    expect(usage.add(i, 2, day + 1)).toBe(true);
    expect(usage.get(i, day + 1)).toEqual({ total: 505, today: 2 });
    // A late add stamped with the old day counts in the total only.
    usage.add(i, 1, day);
    expect(usage.get(i, day + 1)).toEqual({ total: 506, today: 2 });
  });

  it('bad indexes and numbers throw coded errors instead of being wrapped', () => {
    expect(thrown(() => usage.add(ACCOUNT_SLOTS, 1, day))?.code).toBe('USAGE_INDEX_OUT_OF_RANGE');
    expect(thrown(() => usage.add(-1, 1, day))?.code).toBe('USAGE_INDEX_OUT_OF_RANGE');
    expect(thrown(() => usage.get(1.5, day))?.code).toBe('USAGE_INDEX_OUT_OF_RANGE');
    const i = accountSlot(`${run}:usage_bad`);
    expect(thrown(() => usage.add(i, -1, day))?.code).toBe('USAGE_INVALID_VALUE');
    expect(thrown(() => usage.add(i, 2 ** 32, day))?.code).toBe('USAGE_INVALID_VALUE');
    expect(thrown(() => usage.init(i, 2 ** 53, day, 0))?.code).toBe('USAGE_INVALID_VALUE');
    expect(thrown(() => usage.init(i, 1, Number.NaN, 0))?.code).toBe('USAGE_INVALID_VALUE');
    expect(usage.get(i, day)).toBeNull();
    // The largest exact total is kept exactly.
    expect(usage.init(i, 2 ** 53 - 1, day, 0)).toBe(true);
    expect(usage.get(i, day)).toEqual({ total: 2 ** 53 - 1, today: 0 });
  });
});

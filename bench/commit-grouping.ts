/**
 * How lmdb-js groups asynchronous writes into commits, and what each grouping costs the thread
 * that commits them. Run:
 * `node --require ./bench/lib/thread-names.cjs --import tsx bench/commit-grouping.ts [inserts] [rate]`.
 *
 * Each configuration gets a fresh environment and `inserts` status-record puts (the compact
 * value of `status-codec.ts`, random 64-byte keys) issued at `rate` per second, one per event
 * turn, like a service answering sends. Measured per 1000 inserts: commits (LMDB's transaction
 * id), CPU of the threads other than the main one (lmdb-js's write thread commits and syncs;
 * `/proc/self/task/<tid>/schedstat`, ns on CPU), CPU of the main thread, and how long the last
 * put took to be committed. The result chose `Store`'s options (see the header of `store.ts`).
 *
 * With `--require ./bench/lib/thread-names.cjs` the libuv pool (where lmdb-js commits and syncs)
 * is reported on its own; without it every non-main thread is `node`.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open, type RootDatabaseOptionsWithPath } from 'lmdb';
import { encodeStatus } from '../src/store/status-codec.js';
import { base58Encode } from '../src/native.js';
import type { StatusRecord } from '../src/store/records.js';

interface Config {
  name: string;
  opts: RootDatabaseOptionsWithPath;
  /** Hold puts in a queue and issue them together every `groupMs` (0: put at once). */
  groupMs: number;
}

// lmdb-js's own `commitDelay` (with `eventTurnBatching: false`) is not measured: its commit
// starts from a `setTimeout` that `startWriting` then cancels with `clearImmediate`, which
// corrupts Node's timer lists (lmdb-js 3.5.6; a process waiting on a timer afterwards exits with
// code 13). Grouping is done by holding the puts for a window instead (what `Store` does).
const CONFIGS: Config[] = [
  { name: 'one commit per event turn (lmdb-js default, overlapping sync)', opts: {}, groupMs: 0 },
  { name: 'grouped every 10 ms', opts: {}, groupMs: 10 },
  { name: 'grouped every 25 ms', opts: {}, groupMs: 25 },
  { name: 'grouped every 50 ms', opts: {}, groupMs: 50 },
  { name: 'grouped every 100 ms', opts: {}, groupMs: 100 },
  { name: 'one commit per event turn, noSync', opts: { noSync: true, overlappingSync: false }, groupMs: 0 },
  { name: 'grouped every 50 ms, noSync', opts: { noSync: true, overlappingSync: false }, groupMs: 50 },
];

/** ns on CPU per thread of this process (tid → [name, ns]). */
function threadCpu(): Map<number, [string, number]> {
  const out = new Map<number, [string, number]>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const ns = Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      const name = readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim();
      out.set(Number(tid), [name, ns]);
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

function record(i: number): StatusRecord {
  const t = Date.now();
  return {
    signature: base58Encode(randomBytes(64)),
    accountId: 'acc_7YzZ5xkWQ3rPm2hT9vLn',
    keyName: 'default',
    tipLamports: 1_000_000n,
    recentBlockhash: '4sGjMW1sUnHzSxGspuhpqLDx6wiyjNtZAMdL4VZHirAn',
    durableNonce: false,
    submittedAt: t,
    submitSlot: 300_000_000 + i,
    lastValidBlockHeight: 280_000_150,
    status: 'sent',
    confirmedAt: null,
    latencyMs: null,
    slot: null,
    expired: false,
  };
}

async function measure(c: Config, inserts: number, rate: number): Promise<Record<string, number | string>> {
  const dir = mkdtempSync(join(tmpdir(), 'landfall-commit-'));
  const root = open({ path: dir, noSubdir: false, maxDbs: 4, ...c.opts });
  const db = root.openDB({ name: 'status', keyEncoding: 'binary', encoding: 'binary' });
  try {
    // Warm-up: the first commits grow the map and the file.
    for (let i = 0; i < 200; i++) void db.put(randomBytes(64), encodeStatus(record(i)));
    await root.committed;
    await root.flushed;
    const pid = process.pid;
    const txn0 = (root.getStats() as { lastTxnId: number }).lastTxnId;
    const cpu0 = threadCpu();
    const gap = 1000 / rate;
    const t0 = performance.now();
    let last: Promise<boolean> = Promise.resolve(true);
    let lastAt = 0;
    let queue: [Buffer, Buffer][] = [];
    let timer: NodeJS.Timeout | null = null;
    let resolveBatch: (p: Promise<boolean>) => void = () => {};
    let batch: Promise<boolean> | null = null;
    const flush = (): void => {
      timer = null;
      let p: Promise<boolean> = Promise.resolve(true);
      for (const [k, v] of queue) p = db.put(k, v);
      queue = [];
      batch = null;
      resolveBatch(p);
    };
    const put = (k: Buffer, v: Buffer): Promise<boolean> => {
      if (c.groupMs === 0) return db.put(k, v);
      queue.push([k, v]);
      if (!timer) {
        timer = setTimeout(flush, c.groupMs);
        batch = new Promise<Promise<boolean>>((r) => (resolveBatch = r)).then((p) => p);
      }
      return batch!;
    };
    for (let i = 0; i < inserts; i++) {
      const due = t0 + i * gap;
      const wait = due - performance.now();
      await new Promise((r) => (wait > 1 ? setTimeout(r, wait) : setImmediate(r)));
      last = put(randomBytes(64), encodeStatus(record(i)));
      lastAt = performance.now();
    }
    await last;
    const commitLagMs = performance.now() - lastAt;
    await root.flushed;
    const cpu1 = threadCpu();
    const txn1 = (root.getStats() as { lastTxnId: number }).lastTxnId;
    const byName = new Map<string, number>();
    for (const [tid, [name, ns]] of cpu1) {
      const group = tid === pid ? 'main' : name;
      byName.set(group, (byName.get(group) ?? 0) + ns - (cpu0.get(tid)?.[1] ?? 0));
    }
    const per1000 = (ns: number): number => Math.round((ns / 1e6) * (1000 / inserts) * 10) / 10;
    let otherNs = 0;
    for (const [name, ns] of byName) if (name !== 'main') otherNs += ns;
    return {
      config: c.name,
      commitsPer1000: Math.round(((txn1 - txn0) * 1000) / inserts),
      // lmdb-js commits (and syncs) on the libuv pool: named only with thread-names.cjs preloaded.
      libuvPoolMsPer1000: byName.has('libuv-pool') ? per1000(byName.get('libuv-pool')!) : 'unnamed',
      otherThreadsMsPer1000: per1000(otherNs),
      mainThreadMsPer1000: per1000(byName.get('main') ?? 0),
      lastPutCommittedAfterMs: Math.round(commitLagMs * 10) / 10,
      threads: [...byName].filter(([n]) => n !== 'main').map(([n, ns]) => `${n} ${per1000(ns)}`).join(', '),
    };
  } finally {
    await root.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const inserts = Number(process.argv[2] ?? 2000);
const rate = Number(process.argv[3] ?? 400);
console.log(`${inserts} inserts at ${rate}/s per configuration`);
for (const c of CONFIGS) console.log(JSON.stringify(await measure(c, inserts, rate)));

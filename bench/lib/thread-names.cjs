/**
 * Preloaded (`node --require`) into the benchmarked server processes so their threads carry names
 * the CPU breakdown can group by (`proc-cpu.ts`). Node 20 names none of its threads: the main
 * thread, V8's platform workers, the libuv pool and every worker thread are all `node`. A thread
 * may rename any thread of its own process by writing `/proc/self/task/<tid>/comm`, so:
 *
 * - in the main thread, before any user code runs, every other thread that exists is one of
 *   Node's start-up threads: V8's platform workers (background compilation, GC) with its
 *   delayed-task thread, and Node's idle SIGUSR1 watchdog → `v8-platform`;
 * - the libuv thread pool (file system, DNS, lmdb-js's write transactions, `napi_async_work`
 *   such as an async batch inspect) is found by asking it: `fs.readlink('/proc/thread-self')`
 *   runs on a pool thread and answers with that thread's id → `libuv-pool`;
 * - `--require` preloads run again in every worker thread that inherits the exec arguments (the
 *   default): a user worker (ingress threads, a piscina pool) → `node-worker`; Node's own
 *   module-loader worker (no `parentPort`) → `node-loader`.
 *
 * Plain CommonJS because it loads before the TypeScript loader. Threads it cannot name keep
 * `node`; names are at most 15 bytes.
 */
'use strict';
const { readdirSync, readlink, readlinkSync, writeFileSync } = require('node:fs');
const { isMainThread, parentPort } = require('node:worker_threads');

/** "<pid>/task/<tid>" → tid */
function tidOf(link) {
  return Number(link.slice(link.lastIndexOf('/') + 1));
}

function nameThread(tid, name) {
  try {
    writeFileSync(`/proc/self/task/${tid}/comm`, name);
  } catch {
    // Not Linux, or the thread is gone: it keeps its name.
  }
}

/** Keep asking the pool (64 requests at a time) until every one of its threads has answered. */
function nameLibuvPool() {
  const size = Number(process.env.UV_THREADPOOL_SIZE) || 4;
  const seen = new Set();
  let rounds = 0;
  const round = () => {
    let left = 64;
    for (let i = 0; i < 64; i++) {
      readlink('/proc/thread-self', (err, link) => {
        if (!err) seen.add(tidOf(link));
        if (--left > 0) return;
        if (seen.size < size && ++rounds < 200) setImmediate(round);
        else for (const tid of seen) nameThread(tid, 'libuv-pool');
      });
    }
  };
  round();
}

try {
  if (!isMainThread) {
    nameThread(tidOf(readlinkSync('/proc/thread-self')), parentPort ? 'node-worker' : 'node-loader');
  } else {
    for (const t of readdirSync('/proc/self/task')) if (Number(t) !== process.pid) nameThread(t, 'v8-platform');
    nameLibuvPool();
  }
} catch {
  // No /proc: nothing to name.
}

/**
 * Preloaded (`node --require`) into the benchmarked server processes: every user worker thread
 * (an ingress thread serving HTTP, a worker pool) measures its own event-loop delay, so a phase
 * can report the delay of the loops that serve requests, not only the main thread's.
 *
 * A worker answers on a `BroadcastChannel` (one per process, `CHANNEL`): `{ op: 'reset', id }` →
 * `{ op: 'ack', id, threadId }` after clearing its histogram; `{ op: 'read', id }` →
 * `{ op: 'delay', id, threadId, tid, p50Us, p99Us, maxUs }`. The reading side is
 * `ThreadLoopDelays` in `process-stats.ts`. The channel is unref'd, so it never keeps a worker
 * alive. Node's own module-loader worker (no `parentPort`) and the main thread are left alone.
 *
 * Plain CommonJS because it loads before the TypeScript loader.
 */
'use strict';
const { readlinkSync } = require('node:fs');
const { monitorEventLoopDelay } = require('node:perf_hooks');
const { BroadcastChannel, isMainThread, parentPort, threadId } = require('node:worker_threads');

const CHANNEL = 'landfall-bench-loop-delay';

if (!isMainThread && parentPort) {
  let tid = 0;
  try {
    const link = readlinkSync('/proc/thread-self');
    tid = Number(link.slice(link.lastIndexOf('/') + 1));
  } catch {
    // Not Linux: no thread id.
  }
  // 10 ms, as LOOP_DELAY_RESOLUTION_MS in process-stats.ts says why (a 1 ms timer is CPU of its own).
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  const channel = new BroadcastChannel(CHANNEL);
  channel.unref();
  const us = (ns) => Math.round(ns / 1000);
  channel.onmessage = (event) => {
    const m = event.data;
    if (m === null || typeof m !== 'object') return;
    if (m.op === 'reset') {
      h.reset();
      channel.postMessage({ op: 'ack', id: m.id, threadId });
    } else if (m.op === 'read') {
      channel.postMessage({ op: 'delay', id: m.id, threadId, tid, p50Us: us(h.percentile(50)), p99Us: us(h.percentile(99)), maxUs: us(h.max) });
    }
  };
}

/**
 * piscina worker: writes one transaction to its targets through the native QUIC client. Every
 * worker's client handle with the same identity shares one process-wide endpoint and connection
 * cache (native `quic` registry), so adding workers adds no connections to the validators.
 *
 * A task resolves as soon as one target has the stream written (or every target has failed), so
 * a slow or dead leader never holds up the response; the outcomes that arrive after that are
 * posted on the `LATE_RESULTS` broadcast channel for the main thread's counters.
 */
import { BroadcastChannel } from 'node:worker_threads';
import { QuicClient } from '../../native/index.js';

export const LATE_RESULTS = 'landfall:send-late-results';

export interface SendTask {
  identity: Uint8Array;
  targets: string[];
  wire: Uint8Array;
}

export interface TargetResult {
  target: string;
  ok: boolean;
  reason?: string;
  elapsedUs: number;
  reused: boolean;
}

export interface SendTaskResult {
  /** Outcomes known when the task resolved (the rest follow on `LATE_RESULTS`). */
  results: TargetResult[];
  /** Targets whose outcome was still pending. */
  pending: number;
  /** process.hrtime.bigint() (monotonic, process-wide) when the first stream was written, or null. */
  firstWrittenAt: bigint | null;
}

let client: QuicClient | null = null;
let late: BroadcastChannel | null = null;

export default function send(task: SendTask): Promise<SendTaskResult> {
  client ??= new QuicClient({ identity: task.identity });
  const c = client;
  const wire = Buffer.from(task.wire.buffer, task.wire.byteOffset, task.wire.byteLength);
  const t0 = process.hrtime.bigint();
  return new Promise((resolve) => {
    const results: TargetResult[] = [];
    let pending = task.targets.length;
    let done = false;
    const settle = (r: TargetResult) => {
      pending--;
      if (done) {
        (late ??= new BroadcastChannel(LATE_RESULTS)).postMessage(r);
        return;
      }
      results.push(r);
      if (r.ok || pending === 0) {
        done = true;
        const firstWrittenAt = r.ok ? t0 + BigInt(Math.round(r.elapsedUs * 1000)) : null;
        resolve({ results, pending, firstWrittenAt });
      }
    };
    for (const target of task.targets) {
      c.send([target], wire).then(
        ([r]) => settle(r ?? { target, ok: false, reason: 'no_result', elapsedUs: 0, reused: false }),
        // A thrown send (bad address: the native client validates) is one bounded label, not its text.
        () => settle({ target, ok: false, reason: 'send_threw', elapsedUs: 0, reused: false }),
      );
    }
    if (task.targets.length === 0) resolve({ results, pending: 0, firstWrittenAt: null });
  });
}

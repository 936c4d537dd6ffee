/**
 * piscina worker: writes one transaction to its targets through the native QUIC client. Every
 * worker's client handle with the same identity shares one process-wide endpoint and connection
 * cache (native `quic` registry), so adding workers adds no connections to the validators.
 */
import { QuicClient } from '../../native/index.js';

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
  results: TargetResult[];
  /** process.hrtime.bigint() (monotonic, process-wide) when the first stream was written, or null. */
  firstWrittenAt: bigint | null;
}

let client: QuicClient | null = null;

export default async function send(task: SendTask): Promise<SendTaskResult> {
  client ??= new QuicClient({ identity: Buffer.from(task.identity) });
  const t0 = process.hrtime.bigint();
  const results = await client.send(task.targets, Buffer.from(task.wire.buffer, task.wire.byteOffset, task.wire.byteLength));
  let first: number | null = null;
  for (const r of results) if (r.ok && (first === null || r.elapsedUs < first)) first = r.elapsedUs;
  return { results, firstWrittenAt: first === null ? null : t0 + BigInt(Math.round(first * 1000)) };
}

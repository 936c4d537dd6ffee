/**
 * Benchmark suite "dispatch": what handing a send to the piscina pool costs, against calling the
 * native QUIC client on the main thread (directly, and through the same send task with
 * `SendPool({ threads: 0 })`). Both write the same 300-byte transaction on one warm
 * QUIC connection to a native QuicServer on loopback (limits off), awaited one at a time, in
 * interleaved rounds; the difference of the two is the pool's dispatch overhead per send.
 *
 * Also measured: how long the main thread is busy per send (the synchronous part of the call,
 * until it returns its promise): that is what the HTTP event loop pays, the rest happens on
 * other threads.
 */
import { randomBytes } from 'node:crypto';
import { Bench } from 'tinybench';
import { QuicClient, QuicServer } from '../native/index.js';
import { SendPool } from '../src/delivery/send-pool.js';
import {
  finishMachineInfo,
  fmtNs,
  machineInfo,
  machineLine,
  mdTable,
  pooledStats,
  samplesOf,
  type Suite,
  type SuiteResult,
  type TaskStats,
  warnIfBusy,
} from './lib/suite.js';

const ROUNDS = 4;
const TIME_MS = Number(process.env.BENCH_TIME_MS ?? 1500) / ROUNDS;

export interface DispatchResult extends SuiteResult {
  /** direct: QuicClient.send; inline: SendPool with threads 0 (same task code); pool: piscina. */
  roundTrip: { direct: TaskStats; inline: TaskStats; pool: TaskStats };
  /** Main-thread time per send until the call returned its promise, ns. */
  syncCall: { direct: TaskStats; inline: TaskStats; pool: TaskStats };
  /** pool − inline (the same send task on the calling thread), p50 and mean of the round trip, ns. */
  overheadP50Ns: number;
  overheadMeanNs: number;
}

async function run(): Promise<DispatchResult> {
  const machine = machineInfo();
  warnIfBusy(machine);
  let received = 0;
  const server = new QuicServer({ bind: '127.0.0.1:0', identity: randomBytes(32), maxStreamsPer100ms: 1_000_000, maxConnectionsPerPeer: 64, maxConnectionsPerIpPerMinute: 0 }, () => {
    received++;
  });
  const identity = randomBytes(32);
  const pool = new SendPool({ identity, threads: 2 });
  const inline = new SendPool({ identity, threads: 0 });
  const direct = new QuicClient({ identity }); // the same process-wide client as the pool's workers
  const target = [server.localAddr];
  const tx = randomBytes(300);
  try {
    // Warm: the connection, both paths, the workers.
    for (let i = 0; i < 200; i++) {
      await direct.send(target, tx);
      await pool.send(target, tx);
      await inline.send(target, tx);
    }
    type Impl = 'direct' | 'inline' | 'pool';
    const rt: Record<Impl, number[][]> = { direct: [], inline: [], pool: [] };
    const sync: Record<Impl, number[][]> = { direct: [], inline: [], pool: [] };
    const impls = {
      direct: () => direct.send(target, tx),
      inline: () => inline.send(target, tx),
      pool: () => pool.send(target, tx),
    } as const;
    const orders: Impl[][] = [['direct', 'inline', 'pool'], ['pool', 'direct', 'inline'], ['inline', 'pool', 'direct']];
    for (let round = 0; round < ROUNDS; round++) {
      const order = orders[round % orders.length]!;
      const bench = new Bench({ time: TIME_MS, warmup: false, retainSamples: true });
      const syncSamples: Record<string, number[]> = { direct: [], inline: [], pool: [] };
      for (const name of order) {
        bench.add(name, async () => {
          const t0 = performance.now();
          const p = impls[name]();
          syncSamples[name]!.push(performance.now() - t0);
          const out = await p;
          if ('results' in out ? !out.results[0]?.ok : !out[0]?.ok) throw new Error(`${name}: send failed`);
        });
      }
      await bench.run();
      for (const name of order) {
        rt[name].push([...samplesOf(bench.getTask(name)!)]);
        sync[name].push(syncSamples[name]!);
      }
    }
    const stats = (m: Record<Impl, number[][]>) => ({
      direct: pooledStats('direct', m.direct, 1),
      inline: pooledStats('inline', m.inline, 1),
      pool: pooledStats('pool', m.pool, 1),
    });
    const roundTrip = stats(rt);
    const syncCall = stats(sync);
    if (received === 0) throw new Error('the server received nothing');
    return {
      suite: 'dispatch',
      machine: finishMachineInfo(machine),
      roundTrip,
      syncCall,
      overheadP50Ns: roundTrip.pool.p50Ns - roundTrip.inline.p50Ns,
      overheadMeanNs: roundTrip.pool.meanNs - roundTrip.inline.meanNs,
    };
  } finally {
    direct.close();
    await inline.close();
    await pool.close();
    await server.close();
  }
}

function readmeTable(r: DispatchResult): string {
  const row = (what: string, m: DispatchResult['roundTrip']): string[] => [
    what,
    ...[m.direct, m.inline, m.pool].flatMap((t) => [fmtNs(t.p50Ns), fmtNs(t.p99Ns)]),
  ];
  return [
    mdTable(
      ['one send, awaited', 'QuicClient p50', 'p99', 'SendPool threads 0 p50', 'p99', 'SendPool piscina p50', 'p99'],
      [row('round trip (call → stream written)', r.roundTrip), row('main thread busy (until the call returns)', r.syncCall)],
    ),
    '',
    `Dispatch overhead of the piscina pool over the same send task run on the calling thread: ${fmtNs(r.overheadP50Ns)} at p50 (${fmtNs(r.overheadMeanNs)} mean) per send. ` +
      `The native client is already asynchronous (its writes run on its own tokio threads), so the hand-off to a worker adds latency and main-thread time rather than removing them; ` +
      `\`sendThreads: 0\` in the config selects the calling-thread path.`,
    '',
    machineLine(r.machine),
  ].join('\n');
}

export const suite: Suite<DispatchResult> = { name: 'dispatch', title: 'Send dispatch: piscina pool vs main thread', run, readmeTable };

/**
 * What the acknowledgement log (`src/store/ack-log.ts`) costs an acceptance, A/B in one run:
 *
 *   npm run bench -- ack-log
 *
 * The same status records (a ~120-byte value plus a 300-byte wire tail, as a pending send has)
 * go into a real `Store` at a fixed rate, one per event turn like a service answering sends:
 * - **logged**: `insertStatus` — appended to the log (one `write(2)`, fdatasync every 100 ms)
 *   before it returns, committed by the window's transaction, the segment deleted after;
 * - **not logged**: the same records through `updateStatus` — the same window and transaction,
 *   no log (what an acceptance cost before the log);
 * - **logged, sync every append** (`ackSyncMs: 0`): the strongest setting, for reference.
 * Alternated `ROUNDS` times, each on a fresh store; medians. Measured: the time the call takes
 * (it is on the request path, before the answer), CPU of the whole process per record
 * (`process.cpuUsage`: the calling thread, libuv's pool where lmdb-js commits and where the log is
 * synced) and of the calling thread alone (`/proc/self/task/<tid>/schedstat`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store } from '../src/store/store.js';
import { statusRecord } from '../harness/records.js';
import { finishMachineInfo, machineInfo, machineLine, mdTable, warnIfBusy, type MachineInfo, type Suite, type SuiteResult } from './lib/suite.js';
import { threadCpuNs } from './lib/proc-cpu.js';

const RECORDS = 3000;
const RATE = 1000;
const ROUNDS = 3;
const WIRE = Buffer.alloc(300, 1);

type Variant = 'logged' | 'not logged' | 'logged, sync every append';

interface Sample {
  callP50Us: number;
  callP99Us: number;
  processCpuUsPerRecord: number;
  threadCpuUsPerRecord: number;
}

export interface AckLogResult extends SuiteResult {
  suite: 'ack-log';
  machine: MachineInfo;
  config: { records: number; rate: number; rounds: number; wireBytes: number };
  /** Median over the rounds of each measure. */
  variants: Record<Variant, Sample & { rounds: Sample[] }>;
  /** logged − not logged. */
  added: { callP50Us: number; callP99Us: number; processCpuUsPerRecord: number };
}

const pct = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function measure(variant: Variant): Promise<Sample> {
  const dir = mkdtempSync(join(tmpdir(), 'landfall-acklog-bench-'));
  const store = Store.open(dir, { ackSyncMs: variant === 'logged, sync every append' ? 0 : 100 });
  try {
    const records = Array.from({ length: RECORDS }, () => statusRecord({ submittedAt: Date.now() }));
    const calls: number[] = [];
    const cpu0 = process.cpuUsage();
    const t0 = threadCpuNs();
    const gap = 1000 / RATE;
    const start = performance.now();
    for (let i = 0; i < RECORDS; i++) {
      // One per event turn, on the rate's schedule.
      const due = start + i * gap;
      await new Promise((r) => setTimeout(r, Math.max(0, due - performance.now())));
      const resend = { wire: WIRE, antiMev: false, maxRetries: 3 };
      const c0 = performance.now();
      if (variant === 'not logged') void store.updateStatus(records[i]!, resend);
      else store.insertStatus(records[i]!, resend);
      calls.push((performance.now() - c0) * 1000);
    }
    await store.flushed();
    const threadUs = (threadCpuNs() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    calls.sort((a, b) => a - b);
    return {
      callP50Us: pct(calls, 50),
      callP99Us: pct(calls, 99),
      processCpuUsPerRecord: (cpu.user + cpu.system) / RECORDS,
      threadCpuUsPerRecord: threadUs / RECORDS,
    };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function run(): Promise<AckLogResult> {
  const machine = machineInfo();
  warnIfBusy(machine);
  const order: Variant[] = ['logged', 'not logged', 'logged, sync every append'];
  const rounds = new Map<Variant, Sample[]>(order.map((v) => [v, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const v of order) {
      const s = await measure(v);
      rounds.get(v)!.push(s);
      console.log(`  round ${r + 1} ${v}: call p50 ${s.callP50Us.toFixed(1)} µs, p99 ${s.callP99Us.toFixed(1)} µs, process CPU ${s.processCpuUsPerRecord.toFixed(1)} µs/record`);
    }
  }
  const summary = (v: Variant): Sample & { rounds: Sample[] } => {
    const rs = rounds.get(v)!;
    return {
      callP50Us: median(rs.map((s) => s.callP50Us)),
      callP99Us: median(rs.map((s) => s.callP99Us)),
      processCpuUsPerRecord: median(rs.map((s) => s.processCpuUsPerRecord)),
      threadCpuUsPerRecord: median(rs.map((s) => s.threadCpuUsPerRecord)),
      rounds: rs,
    };
  };
  const variants = Object.fromEntries(order.map((v) => [v, summary(v)])) as AckLogResult['variants'];
  const on = variants.logged;
  const off = variants['not logged'];
  return {
    suite: 'ack-log',
    machine: finishMachineInfo(machine),
    config: { records: RECORDS, rate: RATE, rounds: ROUNDS, wireBytes: WIRE.length },
    variants,
    added: {
      callP50Us: on.callP50Us - off.callP50Us,
      callP99Us: on.callP99Us - off.callP99Us,
      processCpuUsPerRecord: on.processCpuUsPerRecord - off.processCpuUsPerRecord,
    },
  };
}

function readmeTable(r: AckLogResult): string {
  const us = (n: number): string => `${n.toFixed(1)} µs`;
  const rows = (Object.entries(r.variants) as [Variant, AckLogResult['variants'][Variant]][]).map(([name, v]) => [
    name,
    us(v.callP50Us),
    us(v.callP99Us),
    us(v.processCpuUsPerRecord),
    us(v.threadCpuUsPerRecord),
  ]);
  return [
    machineLine(r.machine, `${r.config.records} acceptances at ${r.config.rate}/s per round, ${r.config.rounds} rounds alternated, medians`),
    '',
    mdTable(['acceptance', 'call p50', 'call p99', 'process CPU / record', 'calling thread CPU / record'], rows),
    '',
    `The log adds ${us(r.added.callP50Us)} at p50 and ${us(r.added.callP99Us)} at p99 to the call (it is on the request path) and ${us(r.added.processCpuUsPerRecord)} of process CPU per acceptance.`,
  ].join('\n');
}

export const suite: Suite<AckLogResult> = { name: 'ack-log', title: 'Acknowledgement log', run, readmeTable };

/**
 * Benchmark suite "batch": `POST /v1/send/batch` with 100 distinct signed transactions per
 * request against the full service (the same processes and plan as the send suite): the maximum
 * sustained transactions/s, closed loop with `BATCH_SEND.connections` requests in flight, every
 * item of every response checked to be `"status":"sent"`.
 */
import { BATCH_SEND, BATCH_SIZE, fmtBound, fmtCores, fmtUs, landfallServer, loadMs, maxPhase, PROBE_MS, type Phase } from './lib/phase.js';
import { startStack } from './lib/stack.js';
import { finishMachineInfo, fmtOps, machineInfo, machineLine, mdTable, packageVersion, warnIfBusy, type Suite, type SuiteResult } from './lib/suite.js';

/** Requests signed for the probe: enough for 20 000 transactions/s. */
const PROBE_REQUESTS = 400;
const PAYER_SOL = 2000;

export interface BatchResult extends SuiteResult {
  suite: 'batch';
  durationSec: number;
  config: { batchSize: number; connections: number; loadMs: number; warmupMs: number; loadGenerator: string };
  max: Phase;
  txPerSec: number;
}

async function run(): Promise<BatchResult> {
  const machine = machineInfo();
  warnIfBusy(machine);
  const t0 = performance.now();
  const stack = await startStack({ payerSol: PAYER_SOL });
  try {
    const max = await maxPhase(stack, landfallServer(stack), BATCH_SEND, loadMs(), PROBE_REQUESTS);
    return {
      suite: 'batch',
      machine: finishMachineInfo(machine),
      durationSec: Math.round((performance.now() - t0) / 100) / 10,
      config: {
        batchSize: BATCH_SIZE,
        connections: BATCH_SEND.connections,
        loadMs: loadMs(),
        warmupMs: PROBE_MS,
        loadGenerator: `undici ${packageVersion('undici')}`,
      },
      max,
      txPerSec: max.load.achievedRps * BATCH_SIZE,
    };
  } finally {
    await stack.close();
  }
}

function readmeTable(r: BatchResult): string {
  const p = r.max;
  const sl = p.service?.serviceLatency;
  return [
    machineLine(r.machine, `${r.config.loadGenerator} load generator`),
    '',
    `\`POST /v1/send/batch\` with ${r.config.batchSize} distinct signed transactions per request (the send suite’s transactions, processes and raised plan), ` +
      `closed loop with ${r.config.connections} requests in flight, ${r.config.loadMs / 1000} s after ${r.config.warmupMs / 1000} s of warm-up; every item of every response was \`"status":"sent"\`. ` +
      'CPU per transaction: the service process’s CPU time (every thread, `/proc`) from the start of the measured load until its rebroadcasts were done, ÷ the transactions accepted.',
    '',
    mdTable(
      ['transactions/s', 'requests/s', 'request p50', 'request p99', 'service-added p50 / p99 (per transaction)', 'CPU per transaction', 'CPU cores used'],
      [
        [
          fmtOps(r.txPerSec),
          fmtOps(p.load.achievedRps),
          fmtUs(p.load.latency.p50Us),
          fmtUs(p.load.latency.p99Us),
          sl ? `${fmtBound(sl.p50Us)} / ${fmtBound(sl.p99Us)}` : '—',
          p.cpuPerAcceptedUs === undefined ? '—' : fmtUs(p.cpuPerAcceptedUs / r.config.batchSize),
          fmtCores(p.cores),
        ],
      ],
    ),
    '',
    `Raw numbers: \`bench/results/batch.json\`; run: \`npm run bench -- batch\` (${r.durationSec} s).`,
  ].join('\n');
}

export const suite: Suite<BatchResult> = {
  name: 'batch',
  title: 'Performance (batch send)',
  run,
  readmeTable,
};

/**
 * Benchmark suite "send": `POST /v1/send` end to end, Landfall against the peer, in one run.
 *
 * Processes (each its own, see `lib/child.ts`): the local cluster (4 validators, 400 ms slots,
 * QUIC limits raised), the Landfall service (`startService`, every plan's rate limit raised so
 * the buckets are taken but never refuse), the peer (`peer/app.ts`), the load generator
 * (`hosts/loadgen.ts`, undici), and, before any of them, one ed25519 verifier per core.
 *
 * Steps:
 *   1. the machine's ed25519 limit: every core verifying signatures for `LIMIT_MS`;
 *   2. for Landfall and for the peer: a short probe to size the transaction supply, then the
 *      maximum sustained rate (closed loop, `SINGLE_SEND.connections` connections);
 *   3. at 25 %, 50 % and 90 % of each one's own maximum, an open-loop phase: p50/p99/p99.9, and
 *      for Landfall the service-added latency histogram read from the service process (reset
 *      before the phase). Landfall and peer phases alternate, so a slow spell of a shared
 *      machine does not fall on one of them only.
 *
 * Every request carries a distinct, real transaction (a unique self-transfer plus the minimum
 * tip, signed by one funded payer on a fresh blockhash before each phase): the same bodies, in
 * the same order, for both servers. Every response must be a 200 with `"success":true`.
 * `BENCH_LOAD_MS` sets the measured time of each phase (default 8000).
 */
import os from 'node:os';
import { join } from 'node:path';
import { spawnChild, type Child } from './lib/child.js';
import {
  fmtBound,
  fmtCores,
  fmtUs,
  fractionPhase,
  landfallServer,
  loadMs,
  maxPhase,
  OPEN_CONNECTIONS,
  SINGLE_SEND,
  WARMUP_MS,
  type Phase,
  type Server,
  type ServerStats,
} from './lib/phase.js';
import { startStack, TIP_LAMPORTS, UNLIMITED_TPS, type Stack } from './lib/stack.js';
import {
  finishMachineInfo,
  fmtOps,
  fmtRatio,
  machineInfo,
  machineLine,
  mdTable,
  packageVersion,
  target,
  targetsTable,
  warnIfBusy,
  type Suite,
  type SuiteResult,
  type Target,
} from './lib/suite.js';

// ---- configuration --------------------------------------------------------------------------

const LIMIT_MS = 3000;
/** Requests signed for a probe: enough for 25 000 req/s. */
const PROBE_REQUESTS = 40_000;
export const LOAD_FRACTIONS = [0.25, 0.5, 0.9] as const;
/** SOL for the payer: minimum tip + fee for every transaction Landfall lands, with room to spare. */
const PAYER_SOL = 2000;

// ---- result shape ---------------------------------------------------------------------------

export interface ServerRun {
  max: Phase;
  loads: { fraction: number; phase: Phase }[];
}

export interface SendResult extends SuiteResult {
  suite: 'send';
  durationSec: number;
  config: {
    loadMs: number;
    warmupMs: number;
    maxConnections: number;
    openConnections: number;
    tipLamports: number;
    loadGenerator: string;
    peer: string;
    cluster: string;
  };
  ed25519: { verifiesPerSec: number; processes: number; perProcess: number[]; durationMs: number };
  landfall: ServerRun;
  peer: ServerRun;
  ratios: Record<string, { value: number; meaning: string }>;
  targets: Target[];
}

// ---- the ed25519 limit ----------------------------------------------------------------------

/** Verifications per second with every core verifying at once (one process per core). */
export async function ed25519Limit(durationMs: number): Promise<SendResult['ed25519']> {
  const n = os.cpus().length;
  const verifiers: Child[] = [];
  try {
    for (let i = 0; i < n; i++) verifiers.push(await spawnChild(`verifier${i}`, new URL('./hosts/verifier.ts', import.meta.url)));
    await Promise.all(verifiers.map((v) => v.call('prepare')));
    const runs = await Promise.all(verifiers.map((v) => v.call<{ count: number; elapsedMs: number }>('spin', { durationMs })));
    const perProcess = runs.map((r) => (r.count * 1000) / r.elapsedMs);
    return { verifiesPerSec: perProcess.reduce((a, b) => a + b, 0), processes: n, perProcess, durationMs };
  } finally {
    for (const v of verifiers) await v.close();
  }
}

// ---- the peer ------------------------------------------------------------------------------

async function startPeerServer(stack: Stack): Promise<{ server: Server; child: Child }> {
  const child = await spawnChild('peer', new URL('./peer/host.ts', import.meta.url));
  const { url } = await child.call<{ url: string }>('start', {
    dataDir: join(stack.dir, 'peer'),
    tipAddresses: stack.tipAddresses,
    account: { apiKey: stack.apiKey, id: stack.accountId, keyName: 'default', minTipLamports: BigInt(TIP_LAMPORTS), maxTps: UNLIMITED_TPS },
  });
  const server: Server = {
    name: 'peer',
    url,
    reset: () => child.call('reset'),
    snapshot: () => child.call<ServerStats>('snapshot'),
    settle: async () => {},
  };
  return { server, child };
}

// ---- run ------------------------------------------------------------------------------------

async function run(): Promise<SendResult> {
  const machine = machineInfo();
  warnIfBusy(machine);
  const t0 = performance.now();
  const durationMs = loadMs();

  console.log(`ed25519 limit: ${os.cpus().length} processes verifying for ${LIMIT_MS} ms…`);
  const ed25519 = await ed25519Limit(LIMIT_MS);
  console.log(`  ${fmtOps(ed25519.verifiesPerSec)} verifications/s`);

  const stack = await startStack({ payerSol: PAYER_SOL });
  let peerChild: Child | null = null;
  try {
    const landfall = landfallServer(stack);
    const started = await startPeerServer(stack);
    peerChild = started.child;
    const peer = started.server;

    const lfMax = await maxPhase(stack, landfall, SINGLE_SEND, durationMs, PROBE_REQUESTS);
    const peerMax = await maxPhase(stack, peer, SINGLE_SEND, durationMs, PROBE_REQUESTS);
    const lfLoads: ServerRun['loads'] = [];
    const peerLoads: ServerRun['loads'] = [];
    for (const fraction of LOAD_FRACTIONS) {
      lfLoads.push({ fraction, phase: await fractionPhase(stack, landfall, SINGLE_SEND, lfMax.load.achievedRps, fraction, durationMs) });
      peerLoads.push({ fraction, phase: await fractionPhase(stack, peer, SINGLE_SEND, peerMax.load.achievedRps, fraction, durationMs) });
    }
    const lf: ServerRun = { max: lfMax, loads: lfLoads };
    const pr: ServerRun = { max: peerMax, loads: peerLoads };

    const at50 = (r: ServerRun): Phase => r.loads.find((l) => l.fraction === 0.5)!.phase;
    const ratios: SendResult['ratios'] = {
      throughputOverPeer: {
        value: lf.max.load.achievedRps / pr.max.load.achievedRps,
        meaning: 'Landfall maximum sustained req/s ÷ the peer’s',
      },
      p99At50OverPeer: {
        value: at50(lf).load.latency.p99Us / at50(pr).load.latency.p99Us,
        meaning: 'Landfall p99 at 50 % of its maximum ÷ the peer’s p99 at 50 % of its maximum',
      },
      throughputOverEd25519: {
        value: lf.max.load.achievedRps / ed25519.verifiesPerSec,
        meaning: 'Landfall maximum sustained req/s ÷ ed25519 verifications/s on all cores',
      },
    };
    const serviceP99At50 = at50(lf).service?.serviceLatency.p99Us ?? Number.POSITIVE_INFINITY;
    const targets: Target[] = [
      target('throughput-vs-peer', 'send throughput ≥ 3 × the peer', ratios['throughputOverPeer']!.value, '×', '>=', 3),
      target('p99-vs-peer', 'p99 at 50 % load ≤ 1/3 of the peer’s', ratios['p99At50OverPeer']!.value, '×', '<=', 1 / 3),
      target('throughput-vs-ed25519', 'send throughput ≥ 50 % of the ed25519 limit (all cores)', ratios['throughputOverEd25519']!.value, '×', '>=', 0.5),
      target('service-latency-p99', 'service-added latency p99 ≤ 1 ms at 50 % load', serviceP99At50, 'µs', '<=', 1000),
    ];
    return {
      suite: 'send',
      machine: finishMachineInfo(machine),
      durationSec: Math.round((performance.now() - t0) / 100) / 10,
      config: {
        loadMs: durationMs,
        warmupMs: WARMUP_MS,
        maxConnections: SINGLE_SEND.connections,
        openConnections: OPEN_CONNECTIONS,
        tipLamports: TIP_LAMPORTS,
        loadGenerator: `undici ${packageVersion('undici')} Pool, keep-alive, one process (bench/hosts/loadgen.ts)`,
        peer: `fastify ${packageVersion('fastify')}, @solana/web3.js ${packageVersion('@solana/web3.js')}, node:crypto, lmdb ${packageVersion('lmdb')} (bench/peer/app.ts)`,
        cluster: 'local cluster, 4 validators, 400 ms slots, QUIC limits raised (bench/lib/stack.ts LOAD_CLUSTER)',
      },
      ed25519,
      landfall: lf,
      peer: pr,
      ratios,
      targets,
    };
  } finally {
    await peerChild?.close();
    await stack.close();
  }
}

// ---- README ---------------------------------------------------------------------------------

function readmeTable(r: SendResult): string {
  const out: string[] = [machineLine(r.machine, `${r.config.loadGenerator.split(' Pool')[0]} load generator`), ''];
  out.push(
    `Each request is \`POST /v1/send\` with a distinct signed transaction (self-transfer + ${r.config.tipLamports.toLocaleString('en-US')}-lamport tip), ` +
      'the same transactions in the same order for both servers; every response was checked (200, `"success":true`). ' +
      `Load generator: ${r.config.loadGenerator} (not autocannon, whose latency histogram counts whole milliseconds; not wrk2, which needs a Lua script ` +
      `to vary bodies and a system package). Peer: ${r.config.peer}: it stops after the LMDB write, while Landfall also ` +
      'hands each transaction to its QUIC send pool, answers only once the first stream to a leader is written, and rebroadcasts and tracks it. ' +
      `Cluster: ${r.config.cluster}, in its own process on the same ${r.machine.cpuCores} cores — its CPU time (executing what lands) is counted below.`,
    '',
  );
  const row = (name: string, p: Phase, label: string): string[] => [
    name,
    label,
    fmtOps(p.load.achievedRps),
    fmtUs(p.load.latency.p50Us),
    fmtUs(p.load.latency.p99Us),
    fmtUs(p.load.latency.p999Us),
    p.service ? `${fmtBound(p.service.serviceLatency.p50Us)} / ${fmtBound(p.service.serviceLatency.p99Us)} / ${fmtBound(p.service.serviceLatency.p999Us)}` : '—',
    `${fmtUs(p.loopDelay.p99Us)} / ${fmtUs(p.loopDelay.maxUs)}`,
    fmtCores(p.cores),
  ];
  const rows: string[][] = [];
  for (const [name, run] of [
    ['landfall', r.landfall],
    ['peer', r.peer],
  ] as const) {
    rows.push(row(name, run.max, `max (closed loop, ${r.config.maxConnections} conns)`));
    for (const l of run.loads) rows.push(row(name, l.phase, `${l.fraction * 100} % (${fmtOps(l.phase.load.rate ?? 0)} req/s offered)`));
  }
  out.push(
    mdTable(['server', 'load', 'req/s', 'p50', 'p99', 'p99.9', 'service-added p50 / p99 / p99.9', 'event-loop delay p99 / max', 'CPU cores used'], rows),
    '',
    `Measured ${r.config.loadMs / 1000} s per phase after ${r.config.warmupMs / 1000} s of warm-up. Latency is the client's ` +
      '(request handed to undici → response read); service-added latency is the service’s own histogram (request received → first QUIC ' +
      'stream written), reset before each phase; its values are bucket bounds. Event-loop delay: how late a 1 ms timer ran on the ' +
      'server’s main thread (`monitorEventLoopDelay`): a request arriving then waits as long.',
    '',
    `Machine limit: ${fmtOps(r.ed25519.verifiesPerSec)} ed25519 verifications/s on ${r.ed25519.processes} cores ` +
      `(\`ed25519Verify\`, one process per core, ${r.ed25519.durationMs / 1000} s). ` +
      `Landfall ÷ peer: ${fmtRatio(r.ratios['throughputOverPeer']!.value)} throughput, ${fmtRatio(r.ratios['p99At50OverPeer']!.value)} p99 at 50 % load.`,
    '',
    '**Targets**',
    '',
    targetsTable(r.targets, (v, unit) => (unit === 'µs' ? fmtUs(v) : `${v.toFixed(2)}${unit}`)),
    '',
    `Raw numbers: \`bench/results/send.json\`; run: \`npm run bench -- send\` (${r.durationSec} s).`,
  );
  return out.join('\n');
}

export const suite: Suite<SendResult> = {
  name: 'send',
  title: 'Performance (send path)',
  run,
  readmeTable,
};

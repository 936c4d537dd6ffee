/**
 * Benchmark suite "delivery": does what Landfall accepts land, and how soon, when the cluster
 * misbehaves? The local cluster runs with one validator down and another dropping 30 % of its
 * UDP datagrams (both directions); `TRANSACTIONS` distinct transactions go through the full
 * service at a moderate `RATE` (open loop, default send options: anti-MEV on, 3 rebroadcast
 * rounds, no preflight), then the service's own status records are read until every one has
 * settled (or `SETTLE_TIMEOUT_MS` passed: longer than a blockhash lives).
 *
 * Reported: landed % (status `confirmed`), confirmation slots after submission (the record's
 * landed slot − the slot the send response carried: median, p90, max), the service-added latency
 * histogram (request received → first QUIC stream written) from the service process, and what
 * the engine and the cluster counted (rebroadcasts, drops, received, included).
 */
import { fmtBound, fmtCores, sendEachOnce, type CoresUsed } from './lib/phase.js';
import { LOAD_CLUSTER, settleStatuses, startStack } from './lib/stack.js';
import type { LandfallSnapshot } from './hosts/landfall.js';
import { finishMachineInfo, machineInfo, machineLine, mdTable, packageVersion, target, targetsTable, warnIfBusy, type Suite, type SuiteResult, type Target } from './lib/suite.js';
import type { Fault } from '../src/localnet/index.js';

const TRANSACTIONS = 2000;
const RATE = 100;
const FAULTS: Record<string, Fault> = { v2: { down: true }, v3: { packetLossPct: 30 } };
/** A blockhash lives 150 slots (60 s at 400 ms); after that every record has settled or expired. */
const SETTLE_TIMEOUT_MS = 90_000;
const POLL_MS = 500;
const PAYER_SOL = 100;

export interface DeliveryResult extends SuiteResult {
  suite: 'delivery';
  durationSec: number;
  config: { transactions: number; rate: number; faults: Record<string, Fault>; validators: number; slotMs: number; loadGenerator: string };
  accepted: number;
  /** Status records at the end: confirmed, failed (landed with an error), expired, still sent. */
  outcome: { confirmed: number; failed: number; expired: number; pending: number; notAccepted: number };
  landedPercent: number;
  /** Slots from the send response's slot to the landed slot, over confirmed transactions. */
  confirmationSlots: { median: number; p90: number; max: number; histogram: Record<string, number> };
  /** Time from the first request until the last record settled, s. */
  settleSec: number;
  service: Omit<LandfallSnapshot, 'memory' | 'loopDelay' | 'cpuMs'>;
  cluster: { counters: Record<string, number>; servers: Record<string, unknown> };
  cores: CoresUsed;
  targets: Target[];
}

function quantile(sorted: number[], q: number): number {
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

async function run(): Promise<DeliveryResult> {
  const machine = machineInfo();
  warnIfBusy(machine);
  const t0 = performance.now();
  const cluster = { ...LOAD_CLUSTER, faults: FAULTS };
  const stack = await startStack({ cluster, payerSol: PAYER_SOL });
  try {
    const txs = await stack.transactions(TRANSACTIONS);
    await stack.landfall.reset();
    const cpu0 = (await stack.landfall.snapshot()).cpuMs;
    const c0 = await stack.cluster.child.call<{ cpuMs: number }>('stats');
    const sendStart = performance.now();
    const load = await sendEachOnce(stack, 'delivery', txs, { connections: 16, durationMs: Math.ceil((TRANSACTIONS / RATE) * 1000), rate: RATE });
    // The slot each accepted transaction was submitted in, from its response.
    const sentSlot = new Map<string, number>();
    for (const [i, body] of (load.bodies ?? []).entries()) {
      const r = body === null ? null : (JSON.parse(body) as { success?: boolean; signature?: string; slot?: number });
      if (r?.success && typeof r.slot === 'number' && r.signature === txs[i]!.signature) sentSlot.set(r.signature, r.slot);
    }
    console.log(`  accepted ${sentSlot.size} of ${TRANSACTIONS}; waiting for every status to settle…`);

    const sigs = [...sentSlot.keys()];
    const records = await settleStatuses(stack.landfall, sigs, SETTLE_TIMEOUT_MS, POLL_MS);
    const settleSec = Math.round((performance.now() - sendStart) / 100) / 10;
    const after = await stack.landfall.snapshot();
    const c1 = await stack.cluster.child.call<{ cpuMs: number; counters: Record<string, number>; servers: Record<string, unknown> }>('stats');
    const wallMs = performance.now() - sendStart;

    const outcome = { confirmed: 0, failed: 0, expired: 0, pending: 0, notAccepted: TRANSACTIONS - sentSlot.size };
    const slots: number[] = [];
    for (const r of records) {
      if (r === null || (r.status === 'sent' && !r.expired)) outcome.pending++;
      else if (r.status === 'sent') outcome.expired++;
      else if (r.status === 'failed') outcome.failed++;
      else {
        outcome.confirmed++;
        slots.push(r.slot! - sentSlot.get(r.signature)!);
      }
    }
    slots.sort((a, b) => a - b);
    const histogram: Record<string, number> = {};
    for (const s of slots) histogram[String(s)] = (histogram[String(s)] ?? 0) + 1;
    const landedPercent = (100 * outcome.confirmed) / TRANSACTIONS;
    const confirmationSlots = { median: quantile(slots, 0.5), p90: quantile(slots, 0.9), max: slots[slots.length - 1] ?? Number.NaN, histogram };
    const { memory: _m, loopDelay: _l, cpuMs, ...service } = after;
    const sl = service.serviceLatency;
    console.log(
      `  landed ${landedPercent.toFixed(2)} % (${JSON.stringify(outcome)}); slots median ${confirmationSlots.median}, p90 ${confirmationSlots.p90}; ` +
        `service-added p50 ${fmtBound(sl.p50Us)}, p99 ${fmtBound(sl.p99Us)}`,
    );
    const targets: Target[] = [
      target('landed', `landed ≥ 99.9 % of ${TRANSACTIONS.toLocaleString('en-US')}`, landedPercent, '%', '>=', 99.9),
      target('confirmation-slots', 'median confirmation ≤ 2 slots after submission', confirmationSlots.median, ' slots', '<=', 2),
    ];
    return {
      suite: 'delivery',
      machine: finishMachineInfo(machine),
      durationSec: Math.round((performance.now() - t0) / 100) / 10,
      config: {
        transactions: TRANSACTIONS,
        rate: RATE,
        faults: FAULTS,
        validators: cluster.validators ?? 4,
        slotMs: cluster.slotMs ?? 400,
        loadGenerator: `undici ${packageVersion('undici')}`,
      },
      accepted: sentSlot.size,
      outcome,
      landedPercent,
      confirmationSlots,
      settleSec,
      service,
      cluster: { counters: c1.counters, servers: c1.servers },
      cores: {
        landfall: Math.round(((cpuMs - cpu0) / wallMs) * 100) / 100,
        cluster: Math.round(((c1.cpuMs - c0.cpuMs) / wallMs) * 100) / 100,
      },
      targets,
    };
  } finally {
    await stack.close();
  }
}

function readmeTable(r: DeliveryResult): string {
  const faults = Object.entries(r.config.faults)
    .map(([v, f]) => `${v} ${f.down ? 'down' : `${f.packetLossPct} % packet loss`}`)
    .join(', ');
  const sl = r.service.serviceLatency;
  const drops = Object.entries(r.service.drops)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  return [
    machineLine(r.machine, `${r.config.loadGenerator} load generator`),
    '',
    `${r.config.transactions.toLocaleString('en-US')} distinct transactions through the full service at ${r.config.rate} req/s (default send options), ` +
      `local cluster of ${r.config.validators} validators with ${faults}; ${r.config.slotMs} ms slots. Outcomes are the service’s own status records once all had settled (${r.settleSec} s after the first send).`,
    '',
    mdTable(
      ['landed', 'failed', 'expired', 'unsettled', 'refused', 'confirmation slots median / p90 / max', 'service-added p50 / p99', 'rebroadcasts', 'send failures by reason'],
      [
        [
          `${r.landedPercent.toFixed(2)} % (${r.outcome.confirmed.toLocaleString('en-US')})`,
          String(r.outcome.failed),
          String(r.outcome.expired),
          String(r.outcome.pending),
          String(r.outcome.notAccepted),
          `${r.confirmationSlots.median} / ${r.confirmationSlots.p90} / ${r.confirmationSlots.max}`,
          `${fmtBound(sl.p50Us)} / ${fmtBound(sl.p99Us)}`,
          r.service.rebroadcasts.toLocaleString('en-US'),
          drops || 'none',
        ],
      ],
    ),
    '',
    `Confirmation slots = landed slot − the slot in the send response. CPU: ${fmtCores(r.cores)} cores.`,
    '',
    '**Targets**',
    '',
    targetsTable(r.targets, (v, unit) => (unit === '%' ? `${v.toFixed(2)} %` : `${v}${unit}`)),
    '',
    `Raw numbers: \`bench/results/delivery.json\`; run: \`npm run bench -- delivery\` (${r.durationSec} s).`,
  ].join('\n');
}

export const suite: Suite<DeliveryResult> = {
  name: 'delivery',
  title: 'Delivery under faults',
  run,
  readmeTable,
};

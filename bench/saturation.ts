/**
 * Benchmark suite "saturation": the rebroadcast scheduler against leaders that throttle, as every
 * Agave validator throttles an unstaked sender. The local cluster keeps Agave's default QUIC
 * limits for an unstaked peer (20 streams per 100 ms, 8 connections, 8 new connections a minute
 * per IP) — unlike the other suites, which lift them — and `RATE` sends/s of distinct
 * transactions go through the full service for `SECONDS` (default send options: 3 rounds).
 *
 * Reported: of the valid accepted transactions, how many landed and expired; writes per
 * transaction (from each one's delivery trace: attempts that reached a connection) and the
 * highest round, against the ceiling (`max_retries` + 1 = 4 writes per leader targeted); the
 * service's `queue_full` drops; its resident anonymous memory before the load, when everything
 * has settled, and `IDLE_MS` later (it must come back down, not keep rising).
 */
import { writeFileSync } from 'node:fs';
import { SINGLE_SEND } from './lib/phase.js';
import { settleStatuses, startStack } from './lib/stack.js';
import { finishMachineInfo, machineInfo, machineLine, mdTable, packageVersion, warnIfBusy, type Suite, type SuiteResult } from './lib/suite.js';
import type { LocalnetOptions } from '../src/localnet/index.js';

const RATE = Number(process.env.SATURATION_RATE ?? 200);
const SECONDS = Number(process.env.SATURATION_SECONDS ?? 45);
const TRANSACTIONS = RATE * SECONDS;
/** Parts of the run, each on its own fresh blockhash (15 s each by default). */
const PHASES = 3;
/** Agave's limits for an unstaked peer are the local cluster's defaults: nothing lifted. */
const CLUSTER: LocalnetOptions = { validators: 4, slotMs: 400, historySlots: 300 };
const SETTLE_TIMEOUT_MS = 150_000;
/**
 * A directory: with it, the run also writes `diag.json` there — every transaction's status, trace
 * and what each validator received of it (the cluster's receive log), the service's memory and
 * queues sampled each second, and its heap after a full collection at the end (with a heap
 * snapshot beside it) — to find out where the expired ones went wrong and what holds memory.
 */
const DIAG = process.env.SATURATION_DIAG ?? null;
const IDLE_MS = 30_000;
const POLL_MS = 1_000;

export interface SaturationResult extends SuiteResult {
  suite: 'saturation';
  config: { rate: number; seconds: number; transactions: number; slotMs: number; loadGenerator: string };
  accepted: number;
  outcome: { confirmed: number; failed: number; expired: number; pending: number };
  expiredPercent: number;
  /** Writes per transaction that reached a connection (first send + rounds, every target). */
  writes: { p50: number; p99: number; max: number };
  /** Highest round per transaction (0: the first send only). */
  rounds: { max: number; overMaxRetries: number };
  queueFull: number;
  memory: { beforeMiB: number; settledMiB: number; idleMiB: number };
  settleSec: number;
}

const q = (sorted: number[], p: number): number => (sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!);

async function run(): Promise<SaturationResult> {
  const machine = machineInfo();
  warnIfBusy(machine);
  const stack = await startStack({ cluster: CLUSTER, payerSol: Math.max(100, TRANSACTIONS / 50) });
  try {
    await stack.landfall.reset();
    const before = (await stack.landfall.snapshot()).memory.rssAnonMiB;
    const t0 = performance.now();
    const samples: unknown[] = [];
    let sampling = DIAG !== null;
    const sampler = (async () => {
      while (sampling) {
        if (!(await stack.landfall.child.call('heap', {}).then(() => true, () => false))) break;
        const h = await stack.landfall.child.call<Record<string, unknown>>('heap', {});
        const c = await stack.cluster.child.call<{ slot: number; counters: unknown; servers: unknown }>('stats');
        samples.push({ atMs: Math.round(performance.now() - t0), ...h, slot: c.slot, counters: c.counters });
        await new Promise((r) => setTimeout(r, POLL_MS));
      }
    })();
    // In PHASES parts, each signed on a fresh blockhash just before it is sent: one blockhash
    // for the whole run would leave the last sends of a 45 s run 15 s of its 60 s life, and
    // their expiry would say more about the load generator than about the service.
    const accepted: string[] = [];
    for (let phase = 0; phase < PHASES; phase++) {
      const n = Math.round(TRANSACTIONS / PHASES);
      const txs = await stack.transactions(n);
      const itemsFile = stack.items(`saturation-${phase}`, txs.map((t) => SINGLE_SEND.body([t])));
      const load = await stack.load({
        origin: stack.landfall.url,
        method: 'POST',
        path: SINGLE_SEND.path,
        headers: { authorization: `Bearer ${stack.apiKey}` },
        itemsFile,
        reuse: false,
        connections: 32,
        durationMs: Math.round((SECONDS * 1000) / PHASES),
        rate: RATE,
        collectBodies: true,
      });
      for (const [i, body] of (load.bodies ?? []).entries()) {
        const r = body === null ? null : (JSON.parse(body) as { success?: boolean; signature?: string });
        if (r?.success && r.signature === txs[i]!.signature) accepted.push(r.signature);
      }
    }
    console.log(`  accepted ${accepted.length} of ${TRANSACTIONS}; waiting for every status to settle…`);
    const records = await settleStatuses(stack.landfall, accepted, SETTLE_TIMEOUT_MS, POLL_MS);
    const settleSec = Math.round((performance.now() - t0) / 100) / 10;
    const settled = await stack.landfall.snapshot();
    const outcome = { confirmed: 0, failed: 0, expired: 0, pending: 0 };
    for (const r of records) {
      if (r === null || (r.status === 'sent' && !r.expired)) outcome.pending++;
      else if (r.status === 'sent') outcome.expired++;
      else outcome[r.status === 'failed' ? 'failed' : 'confirmed']++;
    }
    // Every transaction's trace: its writes and its highest round.
    const writes: number[] = [];
    let maxRound = 0;
    let overMaxRetries = 0;
    for (let i = 0; i < accepted.length; i += 32) {
      const part = await Promise.all(
        accepted.slice(i, i + 32).map(async (sig) => {
          const r = await fetch(`${stack.landfall.url}/v1/status/${sig}/trace`, { headers: { authorization: `Bearer ${stack.apiKey}` } });
          return (await r.json()) as { attempts: Array<{ round: number; outcome: string }>; attempts_omitted: number };
        }),
      );
      for (const t of part) {
        writes.push(t.attempts.filter((a) => a.outcome === 'written' || a.outcome === 'pending').length);
        const top = Math.max(0, ...t.attempts.map((a) => a.round));
        maxRound = Math.max(maxRound, top);
        if (top > 3) overMaxRetries++;
      }
    }
    writes.sort((a, b) => a - b);
    await new Promise((r) => setTimeout(r, IDLE_MS));
    const idle = await stack.landfall.snapshot();
    if (DIAG !== null) {
      sampling = false;
      await sampler;
      const heapIdle = await stack.landfall.child.call('heap', {});
      const heapGc = await stack.landfall.child.call('heap', { gc: true });
      await stack.landfall.child.call('heap', { snapshot: `${DIAG}/idle.heapsnapshot` }, 120_000);
      const txs: unknown[] = [];
      for (let i = 0; i < accepted.length; i += 200) {
        const sigs = accepted.slice(i, i + 200);
        const receipts = await stack.cluster.child.call<unknown[]>('receipts', sigs);
        const traces = await Promise.all(
          sigs.map(async (sig) => (await fetch(`${stack.landfall.url}/v1/status/${sig}/trace`, { headers: { authorization: `Bearer ${stack.apiKey}` } })).json()),
        );
        for (let k = 0; k < sigs.length; k++) txs.push({ signature: sigs[k], record: records[i + k], trace: traces[k], receipts: receipts[k] });
      }
      const cstats = await stack.cluster.child.call<{ slot: number }>('stats');
      const slots = Array.from({ length: cstats.slot + 1 }, (_, i) => i);
      const leaders = await stack.cluster.child.call<string[]>('leaders', slots);
      writeFileSync(`${DIAG}/diag.json`, JSON.stringify({ samples, heapIdle, heapGc, clusterStats: cstats, leaders, txs }, (_k, v) => (typeof v === "bigint" ? String(v) : v)));
      console.log(`  diagnosis in ${DIAG}/diag.json`);
    }
    const result: SaturationResult = {
      suite: 'saturation',
      machine: finishMachineInfo(machine),
      config: { rate: RATE, seconds: SECONDS, transactions: TRANSACTIONS, slotMs: CLUSTER.slotMs ?? 400, loadGenerator: `undici ${packageVersion('undici')}` },
      accepted: accepted.length,
      outcome,
      expiredPercent: Math.round((10_000 * outcome.expired) / Math.max(1, accepted.length)) / 100,
      writes: { p50: q(writes, 0.5), p99: q(writes, 0.99), max: writes[writes.length - 1] ?? Number.NaN },
      rounds: { max: maxRound, overMaxRetries },
      queueFull: idle.drops['queue_full'] ?? 0,
      memory: { beforeMiB: before, settledMiB: settled.memory.rssAnonMiB, idleMiB: idle.memory.rssAnonMiB },
      settleSec,
    };
    console.log(`  ${JSON.stringify({ ...result, machine: undefined })}`);
    return result;
  } finally {
    await stack.close();
  }
}

function readmeTable(r: SaturationResult): string {
  return [
    machineLine(r.machine, `${r.config.loadGenerator} load generator`),
    '',
    `${r.config.transactions.toLocaleString('en-US')} distinct transactions at ${r.config.rate} sends/s for ${r.config.seconds} s (3 parts, each signed on a fresh blockhash) through the full service ` +
      `(default send options: 3 rounds), local cluster of 4 validators with Agave's default limits for an unstaked peer (20 streams per 100 ms); ${r.config.slotMs} ms slots. ` +
      `Outcomes are the service's own records once all had settled (${r.settleSec} s after the first send); writes and rounds from each transaction's trace.`,
    '',
    mdTable(
      ['accepted', 'confirmed', 'failed', 'expired', 'unsettled', 'writes a transaction p50 / p99 / max', 'highest round (ceiling 3)', 'queue_full drops', 'anon memory before / settled / 30 s later'],
      [
        [
          r.accepted.toLocaleString('en-US'),
          r.outcome.confirmed.toLocaleString('en-US'),
          String(r.outcome.failed),
          `${r.outcome.expired} (${r.expiredPercent} %)`,
          String(r.outcome.pending),
          `${r.writes.p50} / ${r.writes.p99} / ${r.writes.max}`,
          `${r.rounds.max} (${r.rounds.overMaxRetries} over)`,
          r.queueFull.toLocaleString('en-US'),
          `${r.memory.beforeMiB} / ${r.memory.settledMiB} / ${r.memory.idleMiB} MiB`,
        ],
      ],
    ),
  ].join('\n');
}

export const suite: Suite<SaturationResult> = { name: 'saturation', title: 'Rebroadcasts against throttling leaders', run, readmeTable };

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
import { loadavg } from 'node:os';
import { sendEachOnce } from './lib/phase.js';
import { settleStatuses, startStack, type Stack } from './lib/stack.js';
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
/** The same load this many times, one after the other's idle wait (`SATURATION_LOADS`, 1–3). */
const LOADS = Math.min(3, Math.max(1, Number(process.env.SATURATION_LOADS ?? 2)));
/**
 * `SATURATION_GIVE_BACK=0`: the service never gives memory back (the bench host starts it so),
 * to measure what the give-back changes; `gc`: also a full V8 collection on the service's main
 * thread right after each give-back (measured, not built into the service).
 */
const GIVE_BACK = process.env.SATURATION_GIVE_BACK ?? '1';
const POLL_MS = 1_000;

/** What one load gave: outcomes, writes, and memory before / settled / `IDLE_MS` later. */
interface LoadOutcome {
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

export interface SaturationResult extends SuiteResult, LoadOutcome {
  suite: 'saturation';
  config: { rate: number; seconds: number; transactions: number; slotMs: number; loadGenerator: string; loads: number; giveBack: string };
  /** Every load's own numbers (the fields of `LoadOutcome` above are the first's). */
  loads: LoadResult[];
}

const q = (sorted: number[], p: number): number => (sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!);

/** One load and what followed it. */
interface LoadResult extends LoadOutcome {
  /** Times the service gave memory back (`src/memory/give-back.ts`) by the end of the idle wait. */
  gaveBack: number;
  /** 1-minute load average when this load started. */
  loadAvg: number;
}

async function oneLoad(stack: Stack, index: number, samples: unknown[], t0: number): Promise<LoadResult & { signatures: string[]; records: unknown[] }> {
  await stack.landfall.reset();
  const loadAvg = Math.round(loadavg()[0]! * 100) / 100;
  const before = (await stack.landfall.snapshot()).memory.rssAnonMiB;
  const tLoad = performance.now();
  // In PHASES parts, each signed on a fresh blockhash just before it is sent: one blockhash
  // for the whole run would leave the last sends of a 45 s run 15 s of its 60 s life, and
  // their expiry would say more about the load generator than about the service.
  const accepted: string[] = [];
  for (let phase = 0; phase < PHASES; phase++) {
    const n = Math.round(TRANSACTIONS / PHASES);
    const txs = await stack.transactions(n);
    const load = await sendEachOnce(stack, `saturation-${index}-${phase}`, txs, { connections: 32, durationMs: Math.round((SECONDS * 1000) / PHASES), rate: RATE });
    for (const [i, body] of (load.bodies ?? []).entries()) {
      const r = body === null ? null : (JSON.parse(body) as { success?: boolean; signature?: string });
      if (r?.success && r.signature === txs[i]!.signature) accepted.push(r.signature);
    }
  }
  console.log(`  load ${index + 1}: accepted ${accepted.length} of ${TRANSACTIONS}; waiting for every status to settle…`);
  const records = await settleStatuses(stack.landfall, accepted, SETTLE_TIMEOUT_MS, POLL_MS);
  const settleSec = Math.round((performance.now() - tLoad) / 100) / 10;
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
  samples.push({ atMs: Math.round(performance.now() - t0), mark: `load ${index + 1} idle` });
  return {
    signatures: accepted,
    records,
    accepted: accepted.length,
    outcome,
    expiredPercent: Math.round((10_000 * outcome.expired) / Math.max(1, accepted.length)) / 100,
    writes: { p50: q(writes, 0.5), p99: q(writes, 0.99), max: writes[writes.length - 1] ?? Number.NaN },
    rounds: { max: maxRound, overMaxRetries },
    queueFull: idle.drops['queue_full'] ?? 0,
    memory: { beforeMiB: before, settledMiB: settled.memory.rssAnonMiB, idleMiB: idle.memory.rssAnonMiB },
    gaveBack: idle.gaveBack,
    settleSec,
    loadAvg,
  };
}

async function run(): Promise<SaturationResult> {
  const machine = machineInfo();
  warnIfBusy(machine);
  const stack = await startStack({ cluster: CLUSTER, payerSol: Math.max(100, (LOADS * TRANSACTIONS) / 50) });
  try {
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
    // The same load LOADS times, each after the last one's idle wait: does a second burst reuse
    // the memory the first left (or gave back), or add to it?
    const loads: Array<Awaited<ReturnType<typeof oneLoad>>> = [];
    for (let i = 0; i < LOADS; i++) {
      const l = await oneLoad(stack, i, samples, t0);
      console.log(`  load ${i + 1}: ${JSON.stringify({ ...l, signatures: undefined, records: undefined })}`);
      loads.push(l);
    }
    if (DIAG !== null) {
      sampling = false;
      await sampler;
      const heapIdle = await stack.landfall.child.call('heap', {});
      const heapGc = await stack.landfall.child.call('heap', { gc: true });
      await stack.landfall.child.call('heap', { snapshot: `${DIAG}/idle.heapsnapshot` }, 120_000);
      const accepted = loads[0]!.signatures;
      const records = loads[0]!.records;
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
    const first = loads[0]!;
    const result: SaturationResult = {
      suite: 'saturation',
      machine: finishMachineInfo(machine),
      config: { rate: RATE, seconds: SECONDS, transactions: TRANSACTIONS, slotMs: CLUSTER.slotMs ?? 400, loadGenerator: `undici ${packageVersion('undici')}`, loads: LOADS, giveBack: GIVE_BACK },
      accepted: first.accepted,
      outcome: first.outcome,
      expiredPercent: first.expiredPercent,
      writes: first.writes,
      rounds: first.rounds,
      queueFull: first.queueFull,
      memory: first.memory,
      settleSec: first.settleSec,
      loads: loads.map(({ signatures: _s, records: _r, ...l }) => l),
    };
    console.log(`  ${JSON.stringify({ ...result, machine: undefined })}`);
    return result;
  } finally {
    await stack.close();
  }
}

function readmeTable(r: SaturationResult): string {
  const loads = r.loads ?? [{ ...r, gaveBack: Number.NaN, loadAvg: Number.NaN }];
  const giveBack = r.config.giveBack === '0' ? 'memory is never given back (`SATURATION_GIVE_BACK=0`)' : r.config.giveBack === 'gc' ? 'memory is given back once quiet, and V8 collects fully right after (`SATURATION_GIVE_BACK=gc`)' : 'memory is given back once quiet (the default)';
  return [
    machineLine(r.machine, `${r.config.loadGenerator} load generator`),
    '',
    `${r.config.transactions.toLocaleString('en-US')} distinct transactions at ${r.config.rate} sends/s for ${r.config.seconds} s (3 parts, each signed on a fresh blockhash) through the full service ` +
      `(default send options: 3 rounds), local cluster of 4 validators with Agave's default limits for an unstaked peer (20 streams per 100 ms); ${r.config.slotMs} ms slots; ` +
      `${loads.length === 1 ? 'one load' : `${loads.length} loads, each started ${IDLE_MS / 1000} s after the one before had settled`}; ${giveBack}. ` +
      `Outcomes are the service's own records once all had settled (${loads.map((l) => `${l.settleSec} s`).join(', ')} after the first send); writes and rounds from each transaction's trace.`,
    '',
    mdTable(
      ['load', 'accepted', 'confirmed', 'failed', 'expired', 'unsettled', 'writes a transaction p50 / p99 / max', 'highest round (ceiling 3)', 'queue_full drops', `anon memory before / settled / ${IDLE_MS / 1000} s later`, 'given back', 'load average'],
      loads.map((l, i) => [
        String(i + 1),
        l.accepted.toLocaleString('en-US'),
        l.outcome.confirmed.toLocaleString('en-US'),
        String(l.outcome.failed),
        `${l.outcome.expired} (${l.expiredPercent} %)`,
        String(l.outcome.pending),
        `${l.writes.p50} / ${l.writes.p99} / ${l.writes.max}`,
        `${l.rounds.max} (${l.rounds.overMaxRetries} over)`,
        l.queueFull.toLocaleString('en-US'),
        `${l.memory.beforeMiB} / ${l.memory.settledMiB} / ${l.memory.idleMiB} MiB`,
        String(l.gaveBack),
        String(l.loadAvg),
      ]),
    ),
  ].join('\n');
}

export const suite: Suite<SaturationResult> = { name: 'saturation', title: 'Rebroadcasts against throttling leaders', run, readmeTable };

/**
 * Tip-floor bench (issue 14, item 3): what `/v1/tip-floor` costs the service.
 *
 *   npm run bench -- tip-floor
 *
 * - `landed`: one confirmed transaction recorded by the tracker (its tip and its compute-unit
 *   price into the current second's and minute's histograms), the only work per landing.
 * - `view`: one recomputation over a full hour (60 one-second and 61 one-minute histograms), which
 *   happens at most once a second however many requests come. Two fillings, the same for every run (a seeded
 *   sequence): "realistic" (50 landings a second, tips spread over 1-5 BP steps of a few plans),
 *   and "wide" (200 landings a second, each a different random tip up to 2^40 lamports: ~200
 *   distinct bins in every bucket, far past what real tips spread over).
 * - the size of the JSON a request gets.
 * tinybench, each in its own `Bench`; a clock the bench moves forces a recomputation per call.
 */
import { Bench } from 'tinybench';
import { TipFloor } from '../src/tracker/tip-floor.js';
import { finishMachineInfo, fmtNs, machineInfo, machineLine, mdTable, pooledStats, samplesOf, warnIfBusy, type MachineInfo, type Suite, type SuiteResult, type TaskStats } from './lib/suite.js';
import { mulberry32 } from '../harness/wire.js';

export interface TipFloorResult extends SuiteResult {
  suite: 'tip-floor';
  machine: MachineInfo;
  landed: TaskStats;
  viewRealistic: TaskStats & { landingsPerSecond: number; bins: number };
  viewWide: TaskStats & { landingsPerSecond: number; bins: number };
  /** Bytes of the JSON body of a full view (without the plan minimum). */
  responseBytes: number;
}

/**
 * A floor filled for a whole hour by `tip()` and `price()` (each landing's compute-unit price),
 * `perSecond` landings a second; and its clock.
 */
function filled(perSecond: number, tip: () => number, price: () => number) {
  let now = 1_795_000_000_000;
  const floor = new TipFloor(1000, () => now);
  for (let s = 0; s < 3600; s++, now += 1000) for (let i = 0; i < perSecond; i++) floor.landed(BigInt(tip()), price());
  type Rings = { seconds: Array<{ bins: Map<number, unknown> }>; minutes: Array<{ bins: Map<number, unknown> }> };
  const { tips, prices } = floor as unknown as { tips: Rings; prices: Rings };
  const bins = [...tips.seconds, ...tips.minutes, ...prices.seconds, ...prices.minutes].reduce((n, b) => n + b.bins.size, 0);
  // Each call sets the clock to another of the last 50 seconds, so `view()` recomputes (it
  // caches within a second) over the same full hour.
  let calls = 0;
  const start = now;
  const view = () => {
    now = start - 1000 - (calls++ % 50) * 1000;
    return floor.view();
  };
  return { floor, bins, view };
}

async function measure(name: string, fn: () => unknown): Promise<TaskStats> {
  const bench = new Bench({ name, time: 1500, warmup: true, warmupTime: 300, retainSamples: true, throws: true });
  let sink = 0;
  bench.add(name, () => {
    sink ^= fn() === undefined ? 1 : 0;
  });
  await bench.run();
  if (sink < 0) console.log(sink);
  return pooledStats(name, [samplesOf(bench.getTask(name)!)], 1);
}

async function run(): Promise<TipFloorResult> {
  const machine = machineInfo();
  warnIfBusy(machine);
  const r1 = mulberry32(14);
  // Tips of bots on a few plans: multiples of 250 000 lamports up to 5 000 000; a third set no
  // compute-unit price, the rest round prices up to 100 000 micro-lamports per CU.
  const realistic = filled(
    50,
    () => 250_000 * (1 + Math.floor(r1() * 20)),
    () => (r1() < 1 / 3 ? 0 : 1000 * (1 + Math.floor(r1() * 100))),
  );
  const r2 = mulberry32(15);
  const wide = filled(
    200,
    () => Math.floor(r2() * 2 ** 40),
    () => Math.floor(r2() * 2 ** 40),
  );

  let t = 1_795_000_000_000;
  const live = new TipFloor(1000, () => t);
  let tip = 0;
  const landed = await measure('landed', () => {
    t += 0.02; // 50 000 landings a second of bench clock: buckets turn over as in a busy hour
    live.landed(BigInt(1_000_000 + (tip++ % 97) * 1000), (tip % 89) * 1000);
  });
  const viewRealistic = await measure('view (realistic hour)', realistic.view);
  const viewWide = await measure('view (wide hour)', wide.view);
  const responseBytes = Buffer.byteLength(JSON.stringify(realistic.view()));
  return {
    suite: 'tip-floor',
    machine: finishMachineInfo(machine),
    landed,
    viewRealistic: { ...viewRealistic, landingsPerSecond: 50, bins: realistic.bins },
    viewWide: { ...viewWide, landingsPerSecond: 200, bins: wide.bins },
    responseBytes,
  };
}

function readmeTable(r: TipFloorResult): string {
  const row = (what: string, s: TaskStats, note: string) => [what, fmtNs(s.meanNs), fmtNs(s.p50Ns), fmtNs(s.p99Ns), note];
  return [
    mdTable(
      ['operation', 'mean', 'p50', 'p99', 'note'],
      [
        row('record one landing (`landed`)', r.landed, 'per confirmed transaction, on the main thread'),
        row('recompute the view, realistic hour', r.viewRealistic, `${r.viewRealistic.landingsPerSecond} landings/s for 1 h, ${r.viewRealistic.bins} bins kept; at most once a second`),
        row('recompute the view, wide hour', r.viewWide, `${r.viewWide.landingsPerSecond} landings/s of random tips to 2^40, ${r.viewWide.bins} bins kept; at most once a second`),
      ],
    ),
    '',
    `A response is ${r.responseBytes} bytes of JSON. Requests in between read the cached view.`,
    '',
    machineLine(r.machine),
  ].join('\n');
}

export const suite: Suite<TipFloorResult> = { name: 'tip-floor', title: 'Performance (tip floor)', run, readmeTable };

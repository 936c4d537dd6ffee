/**
 * Slot-view bench (issue 15, item 4): on a real Agave test validator, how many ms earlier the
 * leader tracker's view of the current slot moves when it follows `slotsUpdatesSubscribe` than
 * with `slotSubscribe` alone.
 *
 *   npm run bench -- slot-view          # SLOT_VIEW_SLOTS=150 slots by default (~1 min)
 *
 * Two LeaderTrackers in this process follow the same validator: one as the service runs it
 * (slotsUpdates + slotSubscribe + polling), one with `slotsUpdates: false`. Each notes
 * performance.now() when its view moves to a slot (`onSlot`); for every slot both saw, the gain is
 * the second's time minus the first's. Same process, same event loop, two WebSockets: the only
 * difference is the events each follows. Needs the validator (see harness/agave.ts).
 */
import { LeaderTracker } from '../src/delivery/leaders.js';
import { findAgaveValidator, startAgaveValidator, AGAVE_VERSION } from '../harness/agave.js';
import { finishMachineInfo, machineInfo, warnIfBusy, type MachineInfo, type Suite, type SuiteResult } from './lib/suite.js';

export interface SlotViewResult extends SuiteResult {
  suite: 'slot-view';
  machine: MachineInfo;
  validator: string;
  slots: number;
  /** Slots whose move both trackers saw (the gain is measured on these). */
  compared: number;
  /** ms by which the slotsUpdates view moved before the slotSubscribe-only view. */
  gainMs: { p10: number; p50: number; p90: number; mean: number; min: number; max: number };
  /** Fraction of compared slots the slotsUpdates view reached first (ties count as not first). */
  firstShare: number;
  /** What moved the slotsUpdates tracker's view to a new slot, per source. */
  moves: { updates: number; slot: number; poll: number };
  /** Its events per source. */
  events: { updates: number; slot: number; poll: number };
}

const round2 = (x: number): number => Math.round(x * 100) / 100;

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(q * (sorted.length - 1))))]!;
}

async function run(): Promise<SlotViewResult> {
  if (!findAgaveValidator()) throw new Error('slot-view needs solana-test-validator (LANDFALL_AGAVE_VALIDATOR, .cache/agave or PATH)');
  const slots = Number(process.env.SLOT_VIEW_SLOTS ?? 150);
  const machine = machineInfo();
  warnIfBusy(machine);
  const agave = await startAgaveValidator();
  const seen = { fast: new Map<number, number>(), plain: new Map<number, number>() };
  const track = (map: Map<number, number>) => (slot: number) => {
    if (!map.has(slot)) map.set(slot, performance.now());
  };
  const fast = new LeaderTracker({ rpcUrl: agave.rpcUrl, wsUrl: agave.wsUrl, onSlot: track(seen.fast) });
  const plain = new LeaderTracker({ rpcUrl: agave.rpcUrl, wsUrl: agave.wsUrl, slotsUpdates: false, onSlot: track(seen.plain) });
  try {
    await Promise.all([fast.ready(30_000), plain.ready(30_000)]);
    const start = fast.currentSlot();
    const deadline = performance.now() + slots * 2_000; // bounded: 5x the nominal 400 ms slot
    while (fast.currentSlot() < start + slots && performance.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    // Let the slower view catch up with the last slot.
    await new Promise((r) => setTimeout(r, 1_000));
  } finally {
    fast.close();
    plain.close();
    await agave.stop();
  }
  const gains: number[] = [];
  for (const [slot, at] of seen.fast) {
    const other = seen.plain.get(slot);
    if (other !== undefined) gains.push(other - at);
  }
  if (gains.length === 0) throw new Error('no slot seen by both trackers');
  const sorted = [...gains].sort((a, b) => a - b);
  return {
    suite: 'slot-view',
    machine: finishMachineInfo(machine),
    validator: `solana-test-validator ${AGAVE_VERSION} (one node, leader of every slot)`,
    slots,
    compared: gains.length,
    gainMs: {
      p10: round2(quantile(sorted, 0.1)),
      p50: round2(quantile(sorted, 0.5)),
      p90: round2(quantile(sorted, 0.9)),
      mean: round2(gains.reduce((s, g) => s + g, 0) / gains.length),
      min: round2(sorted[0]!),
      max: round2(sorted[sorted.length - 1]!),
    },
    firstShare: round2(gains.filter((g) => g > 0).length / gains.length),
    moves: { ...fast.slotMoves },
    events: { ...fast.slotEvents },
  };
}

export const suite: Suite<SlotViewResult> = {
  name: 'slot-view',
  title: 'Slot view: slotsUpdatesSubscribe vs slotSubscribe',
  run,
  readmeTable(r) {
    const g = r.gainMs;
    return [
      `Against ${r.validator}, ${r.compared} slots compared (${r.machine.cpuCores} cores, load ${r.machine.loadAvg1mStart}→${r.machine.loadAvg1mEnd}, ${r.machine.date.slice(0, 10)}).`,
      '',
      '| view moves earlier with slotsUpdates by | p10 | p50 | p90 | mean | min | max | slotsUpdates first |',
      '|---|---:|---:|---:|---:|---:|---:|---:|',
      `| ms | ${g.p10} | ${g.p50} | ${g.p90} | ${g.mean} | ${g.min} | ${g.max} | ${Math.round(r.firstShare * 100)} % |`,
      '',
      `What moved the view (slotsUpdates tracker): slotsUpdates ${r.moves.updates}, slotSubscribe ${r.moves.slot}, polling ${r.moves.poll}.`,
    ].join('\n');
  },
};

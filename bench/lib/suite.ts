/**
 * The shape every benchmark suite has, and the helpers they share: turning a finished tinybench
 * task into plain numbers, machine information, and markdown formatting.
 *
 * A suite is a module exporting `suite: Suite<R>`; `bench/run.ts` lists them. The runner writes
 * `bench/results/<name>.json` from `run()` and rebuilds its block (in `docs/`) between
 * `<!-- bench:<name>:start -->` and `<!-- bench:<name>:end -->` from that JSON with `readmeTable`.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import type { Task } from 'tinybench';

export interface Suite<R extends SuiteResult = SuiteResult> {
  /** Short id: the CLI argument, the results file name and the block marker name. */
  name: string;
  /** Heading of the block appended to docs/performance.md when no page holds it yet. */
  title: string;
  run(): Promise<R>;
  /** Markdown placed between the suite's block markers (regenerated from the JSON). */
  readmeTable(result: R): string;
  /**
   * More of it, for a second block (`<name>-details`, appended to docs/performance.md when no
   * page holds it), where `readmeTable` is the short one the README shows.
   */
  details?(result: R): string;
}

/** Fields every suite result carries, so the runner can check a results file is the suite's. */
export interface SuiteResult {
  suite: string;
  machine: MachineInfo;
}

export interface MachineInfo {
  cpuModel: string;
  cpuCores: number;
  totalMemoryGiB: number;
  platform: string;
  arch: string;
  node: string;
  v8: string;
  tinybench: string;
  /** When the suite started. */
  date: string;
  /** 1-minute load average when the suite started and when it ended: other work on the machine. */
  loadAvg1mStart: number;
  loadAvg1mEnd: number;
}

/** Call when the suite starts; `finish` fills in the load average at the end. */
export function machineInfo(): MachineInfo {
  const cpus = os.cpus();
  const load = round2(os.loadavg()[0] ?? 0);
  return {
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cpuCores: cpus.length,
    totalMemoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    platform: `${os.platform()} ${os.release()}`,
    arch: os.arch(),
    node: process.version,
    v8: process.versions.v8,
    tinybench: packageVersion('tinybench'),
    date: new Date().toISOString(),
    loadAvg1mStart: load,
    loadAvg1mEnd: load,
  };
}

export function finishMachineInfo(m: MachineInfo): MachineInfo {
  return { ...m, loadAvg1mEnd: round2(os.loadavg()[0] ?? 0) };
}

/** Warn when something else is keeping the CPUs busy: the numbers would be noisy. */
export function warnIfBusy(m: MachineInfo): void {
  if (m.loadAvg1mStart > 0.5 * m.cpuCores) {
    console.warn(`warning: 1-minute load average is ${m.loadAvg1mStart} on ${m.cpuCores} cores; results will be noisy`);
  }
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}

export function packageVersion(name: string): string {
  try {
    const url = new URL(`../../node_modules/${name}/package.json`, import.meta.url);
    const pkg = JSON.parse(readFileSync(url, 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** Plain, JSON-ready numbers for one implementation in one scenario. Times in nanoseconds. */
export interface TaskStats {
  name: string;
  /** Operations per second, `1e9 / meanNs` (one operation = one call of the measured unit). */
  opsPerSec: number;
  meanNs: number;
  p50Ns: number;
  p99Ns: number;
  minNs: number;
  maxNs: number;
  /** Relative margin of error of the mean, percent (95 %, normal approximation). */
  rmePercent: number;
  /** Number of tinybench samples (each sample is one call, or one batch mean, see `perSample`). */
  samples: number;
  /** What one sample is: `1` for one timed call, `n` for the mean of `n` calls timed together. */
  perSample: number;
  /** Mean of each round separately (rounds interleave the implementations; see `pooledStats`). */
  roundMeansNs: number[];
}

/** The retained latency samples (ms) of a finished task; throws if it errored or kept none. */
export function samplesOf(task: Task): readonly number[] {
  const r = task.result;
  if (r.state === 'errored') throw new Error(`task "${task.name}" failed: ${r.error.message}`, { cause: r.error });
  if (r.state !== 'completed' && r.state !== 'aborted-with-statistics') {
    throw new Error(`task "${task.name}" has no statistics (state: ${r.state})`);
  }
  const samples = r.latency.samples;
  if (samples === undefined) throw new Error(`task "${task.name}" kept no samples (retainSamples is off)`);
  return samples;
}

/** Linear-interpolated quantile of ascending-sorted values. */
function quantile(sorted: readonly number[], q: number): number {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const a = sorted[lo] ?? Number.NaN;
  const b = sorted[Math.min(lo + 1, sorted.length - 1)] ?? a;
  return a + (b - a) * (pos - lo);
}

/**
 * Statistics over the samples of several rounds of one implementation. A scenario runs its
 * implementations in a few short rounds, rotating their order, and pools the samples: a slow
 * period of a shared machine then lands on every implementation instead of on whichever task
 * happened to be running, which a single sequential pass cannot promise.
 */
export function pooledStats(name: string, roundsMs: ReadonlyArray<readonly number[]>, perSample: number): TaskStats {
  const all = roundsMs.flat().sort((a, b) => a - b);
  const n = all.length;
  if (n === 0) throw new Error(`no samples for "${name}"`);
  const mean = all.reduce((a, v) => a + v, 0) / n;
  const variance = n > 1 ? all.reduce((a, v) => a + (v - mean) ** 2, 0) / (n - 1) : 0;
  const sem = Math.sqrt(variance / n);
  const ns = (ms: number): number => ms * 1e6;
  return {
    name,
    opsPerSec: mean > 0 ? 1000 / mean : 0,
    meanNs: ns(mean),
    p50Ns: ns(quantile(all, 0.5)),
    p99Ns: ns(quantile(all, 0.99)),
    minNs: ns(all[0]!),
    maxNs: ns(all[n - 1]!),
    rmePercent: mean > 0 ? (100 * 1.96 * sem) / mean : 0,
    samples: n,
    perSample,
    roundMeansNs: roundsMs.map((r) => ns(r.reduce((a, v) => a + v, 0) / Math.max(1, r.length))),
  };
}

/** The median of `xs`, NaN values left out (NaN if none is left); of an even count, the mean of the middle two. */
export function median(xs: number[]): number {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** One stated target, checked against one measured value. */
export interface Target {
  id: string;
  description: string;
  measured: number;
  unit: string;
  comparison: '<=' | '>=';
  limit: number;
  met: boolean;
}

export function target(id: string, description: string, measured: number, unit: string, comparison: '<=' | '>=', limit: number): Target {
  return { id, description, measured, unit, comparison, limit, met: comparison === '<=' ? measured <= limit : measured >= limit };
}

/**
 * The block's targets table: each target, its measured value (`show` formats it), met or missed.
 * A target measured as NaN (the run could not measure it) says so instead.
 */
export function targetsTable(targets: Target[], show: (value: number, unit: string) => string): string {
  return mdTable(
    ['target', 'measured', 'result'],
    targets.map((t) =>
      Number.isNaN(t.measured)
        ? [t.description, 'not measured', '—']
        : [t.description, show(t.measured, t.unit), t.met ? 'met' : `**missed** (needs ${t.comparison === '<=' ? '≤' : '≥'} ${show(t.limit, t.unit)})`],
    ),
  );
}

/** Human-readable duration from nanoseconds: `42 ns`, `31.2 µs`, `3.05 ms`. */
export function fmtNs(ns: number): string {
  if (ns < 1e3) return `${ns.toFixed(ns < 10 ? 2 : 1)} ns`;
  if (ns < 1e6) return `${(ns / 1e3).toFixed(ns < 1e4 ? 2 : 1)} µs`;
  if (ns < 1e9) return `${(ns / 1e6).toFixed(ns < 1e7 ? 2 : 1)} ms`;
  return `${(ns / 1e9).toFixed(2)} s`;
}

/** Operations per second with thousands separators, no decimals above 100. */
export function fmtOps(ops: number): string {
  return ops >= 100 ? Math.round(ops).toLocaleString('en-US') : ops.toFixed(1);
}

export function fmtRatio(r: number): string {
  return `${r.toFixed(r < 10 ? 2 : 1)}×`;
}

/** A GitHub-flavoured markdown table. Pipes in cells are escaped. */
export function mdTable(header: string[], rows: string[][]): string {
  const esc = (c: string): string => c.replaceAll('|', '\\|');
  const line = (cells: string[]): string => `| ${cells.map(esc).join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

/** The "Measured … on …" line; `tools` names what measured (default: tinybench and its version). */
export function machineLine(m: MachineInfo, tools = `tinybench ${m.tinybench}`): string {
  return (
    `Measured ${m.date.slice(0, 10)} on ${m.cpuModel} (${m.cpuCores} cores, ${m.totalMemoryGiB} GiB), ` +
    `${m.platform} ${m.arch}, Node ${m.node} (V8 ${m.v8}), ${tools}; ` +
    `1-minute load average ${m.loadAvg1mStart} at start, ${m.loadAvg1mEnd} at end.`
  );
}

/**
 * Benchmark runner.
 *
 *   npm run bench              # every suite
 *   npm run bench -- native    # the named suites only
 *
 * Each suite is a module exporting `suite: Suite` (`bench/lib/suite.ts`): `{ name, title, run(),
 * readmeTable(result) }`. For each suite run, the result is written to
 * `bench/results/<name>.json`; then every suite that has a results file gets its README block —
 * the lines between `<!-- bench:<name>:start -->` and `<!-- bench:<name>:end -->` — rebuilt from
 * that JSON (a missing block is appended under the suite's title). Nothing else in README.md is
 * touched.
 *
 * To add a suite: create `bench/<name>.ts` exporting `suite`, and list it in `SUITES` below.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Suite, SuiteResult } from './lib/suite.js';

/**
 * Registered suites, in run order. Loaded lazily so one suite's imports never slow another.
 * (`Suite<R>` is assignable to `Suite`: `readmeTable` is a method, so its parameter is bivariant.)
 */
const SUITES: Record<string, () => Promise<Suite>> = {
  native: async () => (await import('./native.js')).suite,
  send: async () => (await import('./send.js')).suite,
  batch: async () => (await import('./batch.js')).suite,
  status: async () => (await import('./status.js')).suite,
  delivery: async () => (await import('./delivery.js')).suite,
  'tip-floor': async () => (await import('./tip-floor.js')).suite,
  trace: async () => (await import('./trace.js')).suite,
  'slot-view': async () => (await import('./slot-view.js')).suite,
  agave: async () => (await import('./agave.js')).suite,
  cluster: async () => (await import('./cluster.js')).suite,
  'ack-log': async () => (await import('./ack-log.js')).suite,
};

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));
const README = `${ROOT}README.md`;

function resultsPath(name: string): string {
  return `${RESULTS_DIR}${name}.json`;
}

/** Replace (or append) the README block of one suite. Returns the new README text. */
export function replaceBlock(readme: string, name: string, title: string, body: string): string {
  const start = `<!-- bench:${name}:start -->`;
  const end = `<!-- bench:${name}:end -->`;
  const block = `${start}\n${body.trim()}\n${end}`;
  const s = readme.indexOf(start);
  const e = readme.indexOf(end);
  if (s >= 0 && e > s) return readme.slice(0, s) + block + readme.slice(e + end.length);
  if (s >= 0 || e >= 0) throw new Error(`README.md has an unmatched ${s >= 0 ? 'start' : 'end'} marker for "${name}"`);
  return `${readme.trimEnd()}\n\n## ${title}\n\n${block}\n`;
}

/** Rebuild the README blocks of every suite that has a results file. */
async function updateReadme(): Promise<void> {
  let readme = readFileSync(README, 'utf8');
  const before = readme;
  for (const [name, load] of Object.entries(SUITES)) {
    const file = resultsPath(name);
    if (!existsSync(file)) continue;
    const result = JSON.parse(readFileSync(file, 'utf8')) as SuiteResult;
    if (result.suite !== name) throw new Error(`${file} holds results of suite "${String(result.suite)}", not "${name}"`);
    const suite = await load();
    readme = replaceBlock(readme, name, suite.title, suite.readmeTable(result));
  }
  if (readme !== before) writeFileSync(README, readme);
  console.log(`README.md ${readme !== before ? 'updated' : 'unchanged'}`);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2).filter((a) => a !== '--');
  const unknown = args.filter((a) => !(a in SUITES));
  if (unknown.length > 0) {
    console.error(`unknown suite(s): ${unknown.join(', ')}; known: ${Object.keys(SUITES).join(', ')}`);
    process.exitCode = 2;
    return;
  }
  const names = args.length > 0 ? args : Object.keys(SUITES);
  mkdirSync(RESULTS_DIR, { recursive: true });
  for (const name of names) {
    const suite = await SUITES[name]!();
    console.log(`\n=== suite: ${name} ===`);
    const result = await suite.run();
    const file = resultsPath(name);
    writeFileSync(file, `${JSON.stringify(result, jsonReplacer, 2)}\n`);
    console.log(`\nwrote ${file}`);
    console.log(`\n${suite.readmeTable(result)}`);
  }
  await updateReadme();
}

/** JSON cannot hold bigint; write it as a decimal string. */
function jsonReplacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}

await main();

/**
 * Benchmark runner.
 *
 *   npm run bench              # every suite
 *   npm run bench -- native    # the named suites only
 *   npm run bench -- --docs    # only rebuild the docs blocks from bench/results/*.json
 *
 * Each suite is a module exporting `suite: Suite` (`bench/lib/suite.ts`): `{ name, title, run(),
 * readmeTable(result) }`. For each suite run, the result is written to
 * `bench/results/<name>.json`; then every suite that has a results file gets its block — the
 * lines between `<!-- bench:<name>:start -->` and `<!-- bench:<name>:end -->`, in whichever page
 * of `docs/` (or the README) holds them — rebuilt from that JSON (a missing block is appended to
 * `docs/performance.md` under the suite's title), and a suite with `details` a second block,
 * `<name>-details`, the same way. Nothing else in the pages is touched.
 *
 * To add a suite: create `bench/<name>.ts` exporting `suite`, and list it in `SUITES` below.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
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
  'ack-replication': async () => (await import('./ack-replication.js')).suite,
  targets: async () => (await import('./targets.js')).suite,
  landing: async () => (await import('./landing.js')).suite,
  'ws-flood': async () => (await import('./ws-flood.js')).suite,
  saturation: async () => (await import('./saturation.js')).suite,
};

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));
const DOCS = `${ROOT}docs/`;
/** The README: its performance section is the targets suite's block. */
const README = `${ROOT}README.md`;
/** Where a block no page holds yet is appended. */
const PERFORMANCE_PAGE = `${DOCS}performance.md`;

function resultsPath(name: string): string {
  return `${RESULTS_DIR}${name}.json`;
}

/** Replace (or append) the block of one suite in a page's text. Returns the new text. */
export function replaceBlock(readme: string, name: string, title: string, body: string): string {
  const start = `<!-- bench:${name}:start -->`;
  const end = `<!-- bench:${name}:end -->`;
  const block = `${start}\n${body.trim()}\n${end}`;
  const s = readme.indexOf(start);
  const e = readme.indexOf(end);
  if (s >= 0 && e > s) return readme.slice(0, s) + block + readme.slice(e + end.length);
  if (s >= 0 || e >= 0) throw new Error(`a page has an unmatched ${s >= 0 ? 'start' : 'end'} marker for "${name}"`);
  return `${readme.trimEnd()}\n\n## ${title}\n\n${block}\n`;
}

/** The page of `docs/` that holds the suite's block, else the performance page. */
function pageOf(name: string, pages: Map<string, string>): string {
  for (const [path, text] of pages) if (text.includes(`<!-- bench:${name}:start -->`)) return path;
  return PERFORMANCE_PAGE;
}

/** Rebuild the blocks of every suite that has a results file, in the pages that hold them. */
async function updateDocs(): Promise<void> {
  const files = [README, ...readdirSync(DOCS).filter((f) => f.endsWith('.md')).map((f) => `${DOCS}${f}`)];
  const pages = new Map(files.map((f) => [f, readFileSync(f, 'utf8')]));
  const before = new Map(pages);
  for (const [name, load] of Object.entries(SUITES)) {
    const file = resultsPath(name);
    if (!existsSync(file)) continue;
    const result = JSON.parse(readFileSync(file, 'utf8')) as SuiteResult;
    if (result.suite !== name) throw new Error(`${file} holds results of suite "${String(result.suite)}", not "${name}"`);
    const suite = await load();
    const page = pageOf(name, pages);
    pages.set(page, replaceBlock(pages.get(page)!, name, suite.title, suite.readmeTable(result)));
    if (suite.details) {
      const detailsPage = pageOf(`${name}-details`, pages);
      pages.set(detailsPage, replaceBlock(pages.get(detailsPage)!, `${name}-details`, `${suite.title}: details`, suite.details(result)));
    }
  }
  for (const [path, text] of pages) {
    if (text === before.get(path)) continue;
    writeFileSync(path, text);
    console.log(`${path} updated`);
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2).filter((a) => a !== '--');
  if (args.includes('--docs')) {
    // Rebuild the blocks from the results files only (after changing how a suite renders them).
    await updateDocs();
    return;
  }
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
  await updateDocs();
}

/** JSON cannot hold bigint; write it as a decimal string. */
function jsonReplacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}

await main();

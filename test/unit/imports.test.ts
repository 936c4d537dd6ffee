/**
 * The layering rule of src/ (docs/architecture.md, "Folders": dependencies point one way): every
 * folder (or top-level file) sits on a layer, and a module imports only from layers below its own,
 * never from a sibling on its layer or from above; inside a folder, no module may reach itself
 * through its imports. Every import form counts: `import … from`, `export … from`, `import type`
 * (a back-arrow cannot hide behind it), a bare side-effect `import '…'`, a dynamic `import('…')`,
 * with single or double quotes. Only `src/native.ts` loads the native addon.
 *
 * Beyond src/: test/, bench/, harness/, examples/ and scripts/ have no import circle either, the
 * harness (what tests and benches stand on) imports neither, and src/ imports nothing outside
 * itself but the addon.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cycles } from '../../harness/cycles.js';

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const SRC = join(ROOT, 'src');

/**
 * The layers, top first. Each part imports only from the layers after its own.
 * (docs/architecture.md, "Folders", gives each its row.)
 */
const LAYERS: readonly (readonly string[])[] = [
  ['index.ts', 'cli/'], // entry points: the package's exports, the `landfall` command
  ['service.ts'], // assembles one service from the parts below, on a chain at the URLs it is given
  ['ingress/'], // the ingress threads, each running the HTTP app
  ['http/'], // routes and rendering
  ['cluster/', 'submission/'], // several nodes over NATS; the one send pipeline
  ['delivery/'], // chain view, first send, rebroadcast, traces
  ['tracker/', 'tips.ts'], // confirmations; the service's tip addresses
  ['telemetry/', 'keypair.ts'], // logs and metrics; key files
  ['memory/'], // the process's resident memory; memory given back after a load
  ['config.ts'],
  ['accounts/', 'config-nats.ts', 'tip-rent.ts'],
  ['store/', 'localnet/'], // LMDB and every stored shape; the embedded cluster
  ['chain/', 'client/'], // the chain node's clients; the bots' client and its wire shapes
  ['native.ts'],
  ['errors.ts'],
];

/** Parts only some parts may import: the local cluster is for the CLI (and tests, bench), never the service's code paths. */
const ONLY_IMPORTED_BY: Record<string, readonly string[]> = { 'localnet/': ['cli/'] };

const MODULE = /\.(ts|mts|mjs)$/;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (f === 'node_modules' || f === 'fixtures') return [];
    return statSync(p).isDirectory() ? files(p) : MODULE.test(p) && !p.endsWith('.d.mts') ? [p] : [];
  });
}

/**
 * Every module specifier a source text names, in every form: `import … from` / `export … from`
 * (over several lines, `import type` too), a bare `import '…'`, a dynamic `import('…')` with a
 * literal; single or double quotes.
 */
function specifiers(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s*(['"])([^'"]+)\1/gm)) out.push(m[2]!);
  for (const m of text.matchAll(/^\s*import\s*(['"])([^'"]+)\1/gm)) out.push(m[2]!);
  for (const m of text.matchAll(/\bimport\s*\(\s*(['"`])([^'"`$]+)\1\s*[,)]/g)) out.push(m[2]!);
  return out;
}

/** The files a module's relative imports name, absolute, `.js` read as the `.ts` beside it where there is one. */
function relativeImports(file: string, text: string = readFileSync(file, 'utf8')): string[] {
  const named = specifiers(text)
    .filter((s) => s.startsWith('./') || s.startsWith('../'))
    .map((s) => {
      const target = resolve(dirname(file), s);
      const ts = target.replace(/\.js$/, '.ts');
      return target.endsWith('.js') && (existsTs(ts) || ts.startsWith(SRC + sep)) ? ts : target;
    });
  return [...new Set(named)];
}

function existsTs(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/** Relative imports of a module, as .ts paths relative to src/ (imports leaving src/ are not listed). */
function importsOf(file: string, text?: string): string[] {
  return relativeImports(file, text)
    .filter((t) => t.startsWith(SRC + sep))
    .map((t) => t.slice(SRC.length + 1));
}

/** src/ as a graph: module (relative to src/) → the modules it imports. */
function srcGraph(): Map<string, string[]> {
  return new Map(files(SRC).map((f) => [f.slice(SRC.length + 1), importsOf(f)]));
}

/** What src/ imports from outside src/, as `module → target` (relative to the repository). */
function leavingSrc(sources: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [file, text] of sources) {
    for (const t of relativeImports(file, text)) {
      if (!t.startsWith(SRC + sep)) out.push(`${relative(ROOT, file)} → ${relative(ROOT, t)}`);
    }
  }
  return out;
}

/** The folders beside src/ whose modules are checked for circles, and what the harness may not import. */
const OUTSIDE = ['test', 'bench', 'harness', 'examples', 'scripts'] as const;

/** The repository's modules (src/ and OUTSIDE) as a graph, paths relative to the repository. */
function repoGraph(sources: Map<string, string>): Map<string, string[]> {
  return new Map(
    [...sources].map(([f, text]) => [relative(ROOT, f), relativeImports(f, text).map((t) => relative(ROOT, t))]),
  );
}

function repoSources(): Map<string, string> {
  const all = [SRC, ...OUTSIDE.map((d) => join(ROOT, d))].flatMap(files);
  return new Map(all.map((f) => [f, readFileSync(f, 'utf8')]));
}

/** Imports of the harness into test/ or bench/ (the harness is beneath them). */
function harnessUpward(graph: Map<string, string[]>): string[] {
  return [...graph].flatMap(([from, tos]) =>
    from.startsWith('harness/') ? tos.filter((t) => t.startsWith('test/') || t.startsWith('bench/')).map((t) => `${from} → ${t}`) : [],
  );
}

/** The part a module belongs to: its top folder (`store/`), or itself for a top-level file. */
function partOf(module: string): string {
  const slash = module.indexOf('/');
  return slash < 0 ? module : module.slice(0, slash + 1);
}

const layerOf = new Map(LAYERS.flatMap((parts, i) => parts.map((p) => [p, i] as const)));

/** Every import that breaks the layer order, as `from → to (why)`; empty when the graph keeps it. */
function backArrows(graph: Map<string, string[]>): string[] {
  const out: string[] = [];
  for (const [from, targets] of graph) {
    const a = partOf(from);
    const la = layerOf.get(a);
    if (la === undefined) {
      out.push(`${from}: ${a} has no place in LAYERS`);
      continue;
    }
    for (const to of targets) {
      const b = partOf(to);
      if (a === b) continue;
      const lb = layerOf.get(b);
      if (lb === undefined) out.push(`${from} → ${to}: ${b} has no place in LAYERS`);
      else if (lb <= la) out.push(`${from} → ${to}: ${a} may not import ${b} (${lb === la ? 'same layer' : 'a layer above'})`);
      else if (ONLY_IMPORTED_BY[b] && !ONLY_IMPORTED_BY[b]!.includes(a)) out.push(`${from} → ${to}: only ${ONLY_IMPORTED_BY[b]!.join(', ')} may import ${b}`);
    }
  }
  return out;
}

describe('the layers of src/', () => {
  const graph = srcGraph();

  it('src/ has no import cycle', () => {
    expect(graph.size).toBeGreaterThan(50); // the walk really read the tree
    expect(cycles(graph)).toEqual([]);
  });

  it('every import points down the layer order', () => {
    // Every part of src/ is placed (a new folder must be given its layer).
    expect([...new Set([...graph.keys()].map(partOf))].filter((p) => !layerOf.has(p))).toEqual([]);
    expect(backArrows(graph)).toEqual([]);
  });

  it('the check fails on a back-arrow: the store importing delivery, telemetry importing http', () => {
    const synthetic = new Map(graph);
    synthetic.set('store/store.ts', [...graph.get('store/store.ts')!, 'delivery/trace.ts']);
    synthetic.set('telemetry/telemetry.ts', [...graph.get('telemetry/telemetry.ts')!, 'http/request.ts']);
    expect(backArrows(synthetic)).toEqual([
      'store/store.ts → delivery/trace.ts: store/ may not import delivery/ (a layer above)',
      'telemetry/telemetry.ts → http/request.ts: telemetry/ may not import http/ (a layer above)',
    ]);
  });

  it('reads every import form: multi-line, type-only, double quotes, bare, dynamic, export-from', () => {
    const at = join(SRC, 'store', 'x.ts');
    const text = [
      "import {\n  a,\n  b,\n} from '../delivery/a.js';",
      "import type { T } from \"../http/b.js\";",
      "import '../service.js';",
      'import "../ingress/c.js";',
      "const m = await import('../cli/d.js');",
      'const n = await import("../tracker/e.js");',
      "export { f } from '../submission/f.js';",
      "export * from \"../cluster/g.js\";",
      "const dynamic = await import(`../http/${name}.js`); // not a literal: not read",
    ].join('\n');
    expect(importsOf(at, text)).toEqual([
      'delivery/a.ts',
      'http/b.ts',
      'submission/f.ts',
      'cluster/g.ts',
      'service.ts',
      'ingress/c.ts',
      'cli/d.ts',
      'tracker/e.ts',
    ]);
  });

  it('the check fails on a bare side-effect import closing a circle, and on a dynamic import pointing up', () => {
    // `import '../service.js'` once closed a circle and the check, reading only `from '…'`, passed.
    const synthetic = new Map(graph);
    const config = join(SRC, 'config.ts');
    synthetic.set('config.ts', [...graph.get('config.ts')!, ...importsOf(config, 'import "./service.js";')]);
    const store = join(SRC, 'store', 'store.ts');
    synthetic.set('store/store.ts', [...graph.get('store/store.ts')!, ...importsOf(store, "const h = await import(\"../http/request.js\");")]);
    expect(backArrows(synthetic)).toEqual([
      'config.ts → service.ts: config.ts may not import service.ts (a layer above)',
      'store/store.ts → http/request.ts: store/ may not import http/ (a layer above)',
    ]);
    expect(cycles(synthetic).some((c) => c.startsWith('config.ts → service.ts') || c.includes('→ config.ts → service.ts'))).toBe(true);
  });

  it('the check fails on an import between siblings, from an unplaced folder, and of the local cluster by the service', () => {
    const synthetic = new Map([
      ['store/store.ts', ['localnet/index.ts']],
      ['service.ts', ['localnet/index.ts']],
      ['cli/main.ts', ['localnet/index.ts']],
      ['newpart/thing.ts', ['store/store.ts']],
    ]);
    expect(backArrows(synthetic)).toEqual([
      'store/store.ts → localnet/index.ts: store/ may not import localnet/ (same layer)',
      'service.ts → localnet/index.ts: only cli/ may import localnet/',
      'newpart/thing.ts: newpart/ has no place in LAYERS',
    ]);
  });
});

describe('imports beyond src/', () => {
  const sources = repoSources();
  const graph = repoGraph(sources);

  it('src/ imports nothing outside src/ but the addon, and only src/native.ts loads the addon', () => {
    const src = new Map([...sources].filter(([f]) => f.startsWith(SRC + sep)));
    expect(leavingSrc(src)).toEqual(['src/native.ts → native/index.js']);
  });

  it('the check fails on a second module loading the addon, in any form', () => {
    const src = new Map([...sources].filter(([f]) => f.startsWith(SRC + sep)));
    src.set(join(SRC, 'delivery', 'engine.ts'), 'import { QuicClient } from "../../native/index.js";');
    src.set(join(SRC, 'ingress', 'worker.ts'), "const addon = await import('../../native/index.js');");
    src.set(join(SRC, 'http', 'app.ts'), "import '../../harness/stack.js';");
    expect(leavingSrc(src).sort()).toEqual([
      'src/delivery/engine.ts → native/index.js',
      'src/http/app.ts → harness/stack.ts',
      'src/ingress/worker.ts → native/index.js',
      'src/native.ts → native/index.js',
    ]);
  });

  it('test/, bench/, harness/, examples/ and scripts/ have no import circle, and the harness imports neither tests nor benches', () => {
    expect([...graph.keys()].filter((f) => f.startsWith('harness/')).length).toBeGreaterThan(15); // the walk read them
    expect([...graph.keys()].filter((f) => f.startsWith('test/')).length).toBeGreaterThan(100);
    expect(cycles(graph)).toEqual([]);
    expect(harnessUpward(graph)).toEqual([]);
  });

  it('the check fails on a harness module importing a test helper, and on a circle through a dynamic import', () => {
    const broken = new Map(sources);
    const stack = join(ROOT, 'harness', 'stack.ts');
    const records = join(ROOT, 'harness', 'records.ts');
    broken.set(stack, `${sources.get(stack)}\nimport { x } from "../test/agave/landfall.js";\nconst r = await import('./records.js');`);
    broken.set(records, `${sources.get(records)}\nimport './stack.js';`);
    const g = repoGraph(broken);
    expect(harnessUpward(g)).toEqual(['harness/stack.ts → test/agave/landfall.ts']);
    expect(cycles(g)).toEqual([
      'harness/stack.ts → test/agave/landfall.ts → harness/stack.ts', // that test helper stands on the harness
      'harness/stack.ts → harness/records.ts → harness/stack.ts',
    ]);
  });
});

/**
 * The layering rule of src/ (ARCHITECTURE.md: dependencies point one way): every folder (or
 * top-level file) sits on a layer, and a module imports only from layers below its own, never from
 * a sibling on its layer or from above; inside a folder, no module may reach itself through its
 * imports. Type-only imports count too, so a back-arrow cannot hide behind `import type`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(new URL('../../src', import.meta.url).pathname);

/**
 * The layers, top first. Each part imports only from the layers after its own.
 * (ARCHITECTURE.md: http → submission → accounts/store/delivery; delivery → native; tracker → store.)
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
  ['config.ts'],
  ['accounts/', 'config-nats.ts', 'tip-rent.ts'],
  ['store/', 'localnet/'], // LMDB and every stored shape; the embedded cluster
  ['chain/', 'client/'], // the chain node's clients; the bots' client and its wire shapes
  ['native.ts'],
  ['errors.ts'],
];

/** Parts only some parts may import: the local cluster is for the CLI (and tests, bench), never the service's code paths. */
const ONLY_IMPORTED_BY: Record<string, readonly string[]> = { 'localnet/': ['cli/'] };

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Relative imports of a module, as .ts paths relative to src/ (imports leaving src/ are not listed). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/^(?:import|export)\s[^;]*?from\s+'(\.{1,2}\/[^']+)'/gms)) {
    const target = resolve(dirname(file), m[1]!).replace(/\.js$/, '.ts');
    if (target.startsWith(SRC + sep)) out.push(target.slice(SRC.length + 1));
  }
  return out;
}

/** src/ as a graph: module (relative to src/) → the modules it imports. */
function srcGraph(): Map<string, string[]> {
  return new Map(files(SRC).map((f) => [f.slice(SRC.length + 1), importsOf(f)]));
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

/** Every import circle, each as `a → b → … → a`. */
function cycles(graph: Map<string, string[]>): string[] {
  const found: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (f: string): void => {
    if (state.get(f) === 'done') return;
    if (state.get(f) === 'open') {
      found.push([...stack.slice(stack.indexOf(f)), f].join(' → '));
      return;
    }
    state.set(f, 'open');
    stack.push(f);
    for (const g of graph.get(f) ?? []) if (graph.has(g)) visit(g);
    stack.pop();
    state.set(f, 'done');
  };
  for (const f of graph.keys()) visit(f);
  return found;
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

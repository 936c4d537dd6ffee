/**
 * The layering rule of src/ (ARCHITECTURE.md: dependencies point one way; src/http/api.ts says
 * which layer imports which): no module may reach itself through its imports. Type-only imports
 * count too, so a circle cannot hide behind `import type`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { expect, it } from 'vitest';

const SRC = resolve(new URL('../../src', import.meta.url).pathname);

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Relative imports of a module, as absolute .ts paths inside src/. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/^(?:import|export)\s[^;]*?from\s+'(\.{1,2}\/[^']+)'/gms)) {
    const target = resolve(dirname(file), m[1]!).replace(/\.js$/, '.ts');
    if (target.startsWith(SRC)) out.push(target);
  }
  return out;
}

it('src/ has no import cycle', () => {
  const graph = new Map(files(SRC).map((f) => [f, importsOf(f)]));
  const cycles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (f: string): void => {
    if (state.get(f) === 'done') return;
    if (state.get(f) === 'open') {
      cycles.push([...stack.slice(stack.indexOf(f)), f].map((p) => p.slice(SRC.length + 1)).join(' → '));
      return;
    }
    state.set(f, 'open');
    stack.push(f);
    for (const g of graph.get(f) ?? []) if (graph.has(g)) visit(g);
    stack.pop();
    state.set(f, 'done');
  };
  for (const f of graph.keys()) visit(f);
  expect(graph.size).toBeGreaterThan(50); // the walk really read the tree
  expect(cycles).toEqual([]);
});

/**
 * Every circle of a dependency graph, each as `a → b → … → a`: the one walk behind the layering
 * tests of src/ and the repository (`test/unit/imports.test.ts`) and of native/src
 * (`test/unit/native-layers.test.ts`). A depth-first search from each root in turn; a name that
 * is not a node of the graph (a module outside the checked tree) has no edges and closes no circle.
 * The circles come out in the order the walk finds them, so a test may compare them exactly: pass
 * `roots` (e.g. sorted) to fix that order, otherwise the graph's own key order is used.
 */
export function cycles(graph: ReadonlyMap<string, Iterable<string>>, roots: Iterable<string> = graph.keys()): string[] {
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
  for (const f of roots) visit(f);
  return found;
}

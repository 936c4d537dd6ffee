/**
 * A single node never loads anything of `src/cluster/` (issue 13: `npm start` with no NATS runs
 * exactly as before): outside that folder, a module may import it only for types, or at run time
 * through a dynamic `import()` made when NATS is configured (service.ts, the admin CLI's --nats)
 * or the cluster demo is asked for (cli/main.ts). Checked on the source text, so it fails on the
 * first static import someone adds.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { expect, it } from 'vitest';

const SRC = resolve(new URL('../../src', import.meta.url).pathname);
/** Modules that are themselves only reached through a dynamic import. */
const LOADED_ON_DEMAND = new Set(['cli/cluster-demo.ts']);

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

it('nothing outside src/cluster imports it at run time, except by a dynamic import()', () => {
  const offenders: string[] = [];
  for (const file of files(SRC)) {
    const rel = relative(SRC, file);
    if (rel.startsWith('cluster/') || LOADED_ON_DEMAND.has(rel)) continue;
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/^(import|export)\s+(type\s+)?[^;]*?from\s+'([^']+)'/gms)) {
      if (m[2] === undefined && /(^|\/)cluster\//.test(m[3]!) && m[3]!.startsWith('.')) offenders.push(`${rel}: ${m[0].split('\n')[0]}`);
    }
  }
  expect(offenders).toEqual([]);
  // And the dynamic imports are there (the check above would pass vacuously without them).
  expect(readFileSync(join(SRC, 'service.ts'), 'utf8')).toMatch(/await import\('\.\/cluster\/index\.js'\)/);
  expect(readFileSync(join(SRC, 'cli/main.ts'), 'utf8')).toMatch(/await import\('\.\/cluster-demo\.js'\)/);
});

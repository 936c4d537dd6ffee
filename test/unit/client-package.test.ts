/**
 * `src/client` is packed on its own (`packages/client`, `landfall-client`): it may import only
 * itself, Node's built-ins and its declared dependencies, and the API shapes it defines for both
 * sides must agree with the service's.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect, expectTypeOf, it } from 'vitest';
import type { AccountView } from '../../src/accounts/accounts.js';
import { PLAN_ORDER, type PlanName as ServicePlanName } from '../../src/accounts/plans.js';
import type { AccountRecord, PlanName } from '../../src/client/index.js';

const CLIENT = resolve(import.meta.dirname, '../../src/client');
const PACKAGE = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../packages/client/package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
};

it('src/client imports only itself, node: built-ins and the package\'s dependencies', () => {
  const allowed = new Set([...Object.keys(PACKAGE.dependencies), ...Object.keys(PACKAGE.peerDependencies)]);
  const stray: string[] = [];
  for (const file of readdirSync(CLIENT).filter((f) => f.endsWith('.ts'))) {
    const text = readFileSync(join(CLIENT, file), 'utf8');
    for (const m of text.matchAll(/^(?:import|export)\s[^;]*?from\s+'([^']+)'/gms)) {
      const spec = m[1]!;
      const ok = spec.startsWith('node:') || (spec.startsWith('./') && !spec.includes('..')) || allowed.has(spec);
      if (!ok) stray.push(`${file}: ${spec}`);
    }
  }
  expect(stray).toEqual([]);
});

it("the client's plan names and account record are the service's", () => {
  expectTypeOf<PlanName>().toEqualTypeOf<ServicePlanName>();
  expectTypeOf<AccountView>().toEqualTypeOf<AccountRecord>();
  const names: PlanName[] = [...PLAN_ORDER];
  expect(names).toEqual(['starter', 'growth', 'pro', 'whale']);
});

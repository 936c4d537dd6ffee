import { expect } from 'vitest';

/** Expect `fn` to throw an error carrying `code` (the addon's coded errors). */
export function expectCode(fn: () => unknown, code: string): void {
  let thrown: unknown;
  try {
    fn();
  } catch (e) {
    thrown = e;
  }
  expect(thrown, `expected a throw with code ${code}`).toBeInstanceOf(Error);
  expect((thrown as { code?: string }).code).toBe(code);
}

/**
 * The native error codes are defined once, in Rust (`Code` and `Code::as_str` in
 * `native/src/error.rs`), and TypeScript's one list of them (`src/errors.ts`) is held to that
 * table here: a code added, renamed or removed on one side and not the other fails this test,
 * before any request could meet a code the service does not know how to answer.
 *
 * The Rust file is read as text (the table is a `match` of literal strings, so reading it is
 * exact), and the addon itself is asked for a code of each kind, so the test also fails if the
 * built addon disagrees with its source.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NATIVE_STATE_ERROR_CODES, SERVICE_ERROR_CODES, TRANSACTION_ERRORS, TRANSACTION_ERROR_CODES } from '../../src/errors.js';
import { base58Decode, inspectTransaction, overlay, TipSet } from '../../src/native.js';
import { invalidTransaction } from '../../src/submission/refusals.js';

const ERROR_RS = readFileSync(new URL('../../native/src/error.rs', import.meta.url), 'utf8');

/** `Code`'s variants in declaration order, split at the shared-state marker, and `as_str`'s strings. */
function rustTable(): { transaction: string[]; state: string[] } {
  const body = /pub enum Code \{([\s\S]*?)\n\}/.exec(ERROR_RS)?.[1];
  if (body === undefined) throw new Error('pub enum Code not found in native/src/error.rs');
  const names = new Map<string, string>();
  for (const m of ERROR_RS.matchAll(/Code::(\w+) => "([A-Z0-9_]+)"/g)) names.set(m[1]!, m[2]!);
  const [before, after] = body.split('// ---- process-wide shared state');
  if (after === undefined) throw new Error('the shared-state marker of Code is gone');
  const variants = (part: string) =>
    part
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => /^[A-Z]\w*,$/.test(l))
      .map((l) => {
        const s = names.get(l.slice(0, -1));
        if (s === undefined) throw new Error(`Code::${l.slice(0, -1)} has no as_str string`);
        return s;
      });
  return { transaction: variants(before!), state: variants(after) };
}

describe('native error codes: one table, in Rust', () => {
  it('the Rust table parses: every variant has exactly one string, none repeated', () => {
    const { transaction, state } = rustTable();
    const all = [...transaction, ...state];
    expect(all.length).toBeGreaterThan(10);
    expect(new Set(all).size).toBe(all.length);
  });

  it("TypeScript's transaction codes are the Rust table's (its base58 code is the service's BASE58_INVALID)", () => {
    const { transaction } = rustTable();
    expect(transaction).toContain('BASE58_INVALID');
    expect((SERVICE_ERROR_CODES as readonly string[]).includes('BASE58_INVALID')).toBe(true);
    expect([...TRANSACTION_ERROR_CODES].sort()).toEqual(transaction.filter((c) => c !== 'BASE58_INVALID').sort());
  });

  it("TypeScript's shared-state codes are the Rust table's", () => {
    expect([...NATIVE_STATE_ERROR_CODES].sort()).toEqual(rustTable().state.sort());
  });

  it('the built addon answers with codes of the table', () => {
    const tips = new TipSet([]);
    const bad = inspectTransaction('not base64!', tips);
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(TRANSACTION_ERROR_CODES).toContain(bad.error.code);
    expect(() => base58Decode('0OIl')).toThrow(expect.objectContaining({ code: 'BASE58_INVALID' }));
    expect(() => overlay.put(new Uint8Array(129), new Uint8Array(1))).toThrow(expect.objectContaining({ code: NATIVE_STATE_ERROR_CODES[0] }));
  });

  it('a signature code is refused as a signature failure, every other code as an invalid transaction', () => {
    for (const code of TRANSACTION_ERROR_CODES) {
      expect(invalidTransaction(code, 'x').code).toBe(TRANSACTION_ERRORS[code] === 'signature' ? 'TX_SIGNATURE' : 'TX_INVALID');
    }
    expect(TRANSACTION_ERROR_CODES.filter((c) => TRANSACTION_ERRORS[c] === 'signature').sort()).toEqual(['SIGNATURE_COUNT_MISMATCH', 'SIGNATURE_INVALID', 'UNSIGNED']);
    expect(invalidTransaction('NOT_A_CODE', 'x').code).toBe('TX_INVALID');
  });
});

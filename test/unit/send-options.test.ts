/**
 * The REST send options (`parseSendOptions`): `rebroadcast_until_expiry` beside the others, and
 * the refusals that name the key (a silently ignored option is worse than an error). And the
 * options are defined once (`SEND_OPTIONS` in src/client/wire.ts): every place that lists them —
 * the defaults, the validation, the OpenAPI schema, the client's wire names, the "goes inside
 * options" hint — is derived from that table, so an entry added there reaches all of them.
 */
import { describe, expect, it } from 'vitest';
import { SEND_OPTIONS, type SendOptionName } from '../../src/client/wire.js';
import { OPENAPI } from '../../src/http/openapi.js';
import { DEFAULT_SEND_OPTIONS, namesSendOption, OPTION_KEYS, parseSendOptions } from '../../src/submission/options.js';
import { Refusal } from '../../src/submission/refusals.js';

function refusal(v: unknown): string {
  try {
    parseSendOptions(v);
  } catch (e) {
    expect(e).toBeInstanceOf(Refusal);
    return (e as Refusal).reason;
  }
  throw new Error(`accepted ${JSON.stringify(v)}`);
}

describe('send options', () => {
  it('rebroadcast_until_expiry: false by default, true when asked, beside the other options', () => {
    expect(parseSendOptions(undefined).rebroadcastUntilExpiry).toBe(false);
    expect(parseSendOptions({ rebroadcast_until_expiry: false })).toBe(DEFAULT_SEND_OPTIONS);
    expect(parseSendOptions({ rebroadcast_until_expiry: true, max_retries: 0 })).toEqual({ ...DEFAULT_SEND_OPTIONS, maxRetries: 0, rebroadcastUntilExpiry: true });
  });

  it('refuses a wrong type and the likely misspellings, naming the key meant', () => {
    expect(refusal({ rebroadcast_until_expiry: 'yes' })).toBe('options.rebroadcast_until_expiry must be a boolean');
    expect(refusal({ rebroadcastUntilExpiry: true })).toMatch(/^unknown option "rebroadcastUntilExpiry" \(did you mean "rebroadcast_until_expiry"\?\); options are .*rebroadcast_until_expiry/);
    expect(refusal({ retry_until_expiry: true })).toMatch(/did you mean "rebroadcast_until_expiry"/);
  });

  it('every option of the table: its default, a value that is not, a value of the wrong type, and the hint for a stray body field', () => {
    const names = Object.keys(SEND_OPTIONS) as SendOptionName[];
    expect(OPTION_KEYS).toEqual(names);
    expect(Object.keys(DEFAULT_SEND_OPTIONS)).toEqual(names.map((k) => SEND_OPTIONS[k].field));
    for (const k of names) {
      const { field, schema } = SEND_OPTIONS[k];
      expect(DEFAULT_SEND_OPTIONS[field]).toBe(schema.default);
      expect(parseSendOptions({ [k]: schema.default })).toBe(DEFAULT_SEND_OPTIONS);
      const other = schema.type === 'boolean' ? !schema.default : 7;
      expect(parseSendOptions({ [k]: other })).toEqual({ ...DEFAULT_SEND_OPTIONS, [field]: other });
      expect(refusal({ [k]: 'x' })).toMatch(new RegExp(`^options\\.${k} must be `));
      expect(refusal({ [field]: other })).toContain(`did you mean "${k}"?`);
      expect(namesSendOption(k) && namesSendOption(field)).toBe(true);
    }
    expect(namesSendOption('transaction')).toBe(false);
  });

  it("the OpenAPI document's SendOptions schema is the table's", () => {
    const schema = (OPENAPI as { components: { schemas: Record<string, { properties: Record<string, unknown> }> } }).components.schemas.SendOptions!;
    expect(schema.properties).toEqual(Object.fromEntries(Object.entries(SEND_OPTIONS).map(([k, o]) => [k, o.schema])));
  });
});

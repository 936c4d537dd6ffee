/**
 * The REST send options (`parseSendOptions`): `rebroadcast_until_expiry` beside the others, and
 * the refusals that name the key (a silently ignored option is worse than an error).
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_SEND_OPTIONS, parseSendOptions } from '../../src/submission/options.js';
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
});

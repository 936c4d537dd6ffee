/**
 * `redactKeys`: what the request log does to anything shaped like an API key that a client put
 * in a path, a request id or input a reason quotes (the log file itself is checked end to end in
 * test/faults/http-edges.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/accounts/api-keys.js';
import { redactKeys } from '../../src/telemetry/redact.js';

describe('redactKeys', () => {
  const key = generateApiKey();

  it('replaces a whole key, a piece of one and a URL-encoded one, wherever they are', () => {
    expect(redactKeys(`/nope/${key}`)).toBe('/nope/lf_[REDACTED]');
    expect(redactKeys(`unsupported encoding: ${key}. Supported encodings: base58, base64`)).toBe('unsupported encoding: lf_[REDACTED]. Supported encodings: base58, base64');
    expect(redactKeys(`unknown option "${key.slice(0, 20)}"`)).toBe('unknown option "lf_[REDACTED]"');
    expect(redactKeys(`/a/${key.replace('lf_', 'lf%5F')}/b`)).toBe('/a/lf_[REDACTED]/b');
    expect(redactKeys(`${key} and ${key}`)).toBe('lf_[REDACTED] and lf_[REDACTED]');
  });

  it('the base58 secret itself: after a letter or digit, percent-encoded, without its prefix', () => {
    const secret = key.slice(3);
    const everyByteEncoded = [...secret].map((c) => '%' + c.charCodeAt(0).toString(16).toUpperCase()).join('');
    expect(redactKeys(`/nope/x${key}`)).toBe('/nope/xlf_[REDACTED]');
    expect(redactKeys(`Bearer${key}`)).toBe('Bearerlf_[REDACTED]');
    expect(redactKeys(`/nope/%6Cf_${secret}`)).toBe('/nope/lf_[REDACTED]');
    expect(redactKeys(`/nope/%6C%66%5F${secret}`)).toBe('/nope/lf_[REDACTED]');
    expect(redactKeys(`/nope/%256C%2566%255F${secret}`)).toBe('/nope/lf_[REDACTED]');
    expect(redactKeys(`/v1/status/${secret}`)).toBe('/v1/status/[REDACTED]');
    expect(redactKeys(`/v1/status/${everyByteEncoded}`)).toBe('/v1/status/[REDACTED]');
    expect(redactKeys(`unknown field "${secret}"; the body takes transaction and options`)).toBe('unknown field "[REDACTED]"; the body takes transaction and options');
    expect(redactKeys(`Bearer${secret}`)).toBe('[REDACTED]');
    expect(redactKeys(`9${secret}9`)).toBe('[REDACTED]');
  });

  it('leaves everything else as it is (option names, addresses, signatures)', () => {
    for (const s of ['/v1/send', 'options.max_retries must be an integer 0..10', 'tip of 1000 lamports (1 BP) is below the starter minimum', '/v1/status/5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW', 'self_test']) {
      expect(redactKeys(s)).toBe(s);
    }
  });
});

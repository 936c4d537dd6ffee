/** Loopback decided on the parsed address, not a prefix (issue 33, smaller items). */
import { describe, expect, it } from 'vitest';
import { isLoopback, isLoopbackHostHeader, urlHost } from '../../src/http/server.js';

describe('isLoopback', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.8.9.10', true],
    ['::1', true],
    ['0:0:0:0:0:0:0:1', true],
    ['[::1]', true],
    ['::ffff:127.0.0.1', true],
    ['localhost', true],
    ['127.internal.corp', false],
    ['127.0.0.1.nip.io', false],
    ['::ffff:10.0.0.1', false],
    ['0.0.0.0', false],
    ['::', false],
    ['1::1', false],
    ['10.1.2.3', false],
  ])('%s → %s', (host, loopback) => {
    expect(isLoopback(host)).toBe(loopback);
  });

  it('a Host header: a loopback name or address with any port, or none', () => {
    for (const h of ['localhost:8080', '127.0.0.1', '[::1]:8080', '']) expect(isLoopbackHostHeader(h)).toBe(true);
    for (const h of ['evil.example', 'evil.example:80', '127.internal.corp:8080', '[2001:db8::1]:80']) expect(isLoopbackHostHeader(h)).toBe(false);
  });

  it('an IPv6 address is written in brackets in a URL', () => {
    expect(urlHost('::1')).toBe('[::1]');
    expect(urlHost('127.0.0.1')).toBe('127.0.0.1');
    expect(urlHost('localhost')).toBe('localhost');
  });
});

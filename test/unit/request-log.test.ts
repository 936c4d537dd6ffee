/**
 * The request log's bounds on what clients can make it write (issue 33 item 8), on the real
 * RequestLog and a real pino logger writing into memory: a per-source bound alone is bypassed by
 * rotating source addresses (any IPv6 client has millions), so clients without an account share
 * one bound too.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ANONYMOUS_LINES, ANONYMOUS_TOTAL_LINES, RequestLog } from '../../src/telemetry/request-log.js';
import type { RequestFacts } from '../../src/telemetry/request-facts.js';

function capture() {
  const lines: any[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { lines, rl: new RequestLog(log) };
}

const facts = (peer: string, accountId: string | null = null): RequestFacts => ({
  route: '(no route)',
  method: 'GET',
  url: '/nope',
  receivedAt: process.hrtime.bigint(),
  requestId: 'r',
  accountId,
  signature: null,
  peer,
});

describe('RequestLog bounds', () => {
  it('600 rotating sources × 20 404s write at most the key-less total, the rest counted', () => {
    const { lines, rl } = capture();
    const SOURCES = 600;
    const EACH = 20;
    for (let i = 0; i < SOURCES; i++) for (let j = 0; j < EACH; j++) rl.finished(facts(`2001:db8::${i.toString(16)}`), 404, 'no such route');
    rl.close();
    const told = lines.filter((l) => l.msg === 'request refused');
    expect(told.length).toBe(ANONYMOUS_TOTAL_LINES);
    const summary = lines.find((l) => l.msg === 'request lines suppressed (per-source bound)');
    expect(summary.suppressed + told.length).toBe(SOURCES * EACH);
    expect(summary.bounds).toMatchObject({ per_source: ANONYMOUS_LINES, all_keyless: ANONYMOUS_TOTAL_LINES });
  });

  it('one source still gets its own bound, an account is not held by the key-less total, and the next interval starts afresh', () => {
    const { lines, rl } = capture();
    for (let j = 0; j < 3 * ANONYMOUS_LINES; j++) rl.finished(facts('203.0.113.9'), 404, 'no such route');
    for (let i = 0; i < ANONYMOUS_TOTAL_LINES; i++) rl.finished(facts(`203.0.113.${i % 200}`), 404, 'x');
    for (let j = 0; j < 50; j++) rl.finished(facts('203.0.113.1', 'acct1'), 400, 'bad');
    expect(lines.filter((l) => l.account === 'acct1')).toHaveLength(50);
    rl.close(); // also ends the interval
    rl.finished(facts('198.51.100.1'), 404, 'no such route');
    expect(lines.at(-1)).toMatchObject({ msg: 'request refused', status: 404 });
  });
});

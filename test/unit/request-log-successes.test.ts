/**
 * The request log's default for successes (`logSuccesses: "summary"`): a successful request or a
 * landed transaction is counted and told in one line per interval, at `info`, each at `debug`;
 * every refusal and error still gets its own line. Real pino, writing to memory.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { RequestLog, SUMMARY_MS } from '../../src/telemetry/request-log.js';
import type { RequestFacts } from '../../src/telemetry/request-facts.js';

function logger(level: 'info' | 'debug'): { log: pino.Logger; lines: () => Record<string, unknown>[] } {
  const out: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      out.push(String(chunk));
      done();
    },
  });
  const log = pino({ level, formatters: { level: (label) => ({ level: label }) } }, sink);
  return { log, lines: () => out.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) };
}

let n = 0;
function req(route: string, signature: string | null = null): RequestFacts {
  return { route, method: 'POST', url: route, receivedAt: process.hrtime.bigint(), requestId: `r-${++n}`, accountId: 'acc_1', signature, peer: '127.0.0.1' };
}

/** A mixed interval: 50 sends and 20 status reads served, one refused send, one failure, 30 landings, one expiry. */
function traffic(r: RequestLog): void {
  for (let i = 0; i < 50; i++) r.finished(req('/v1/send', `sig${i}`), 200, null);
  for (let i = 0; i < 20; i++) r.finished(req('/v1/status/:signature'), 200, null);
  r.finished(req('/v1/send', 'low'), 402, 'Tip insufficient: below the starter minimum');
  r.finished(req('/v1/rpc'), 200, 'Tip insufficient: a JSON-RPC error in a 200');
  r.finished(req('/v1/send', 'boom'), 500, 'Delivery failed: no leader');
  for (let i = 0; i < 30; i++) r.outcome('transaction landed', { sig: `sig${i}` });
  r.outcome('transaction expired', { sig: 'sig49' });
}

describe('the request log, successes summarised (the default)', () => {
  it('counts successes and landings into one info line per interval; every refusal, failure and expiry keeps its own line', () => {
    const { log, lines } = logger('info');
    const r = new RequestLog(log, 'summary');
    traffic(r);
    r.close();
    const all = lines();
    expect(all.map((l) => l.msg).sort()).toEqual(['request failed', 'request refused', 'request refused', 'requests served, counted', 'transaction expired']);
    const summary = all.find((l) => l.msg === 'requests served, counted')!;
    expect(summary).toMatchObject({
      level: 'info',
      interval_s: SUMMARY_MS / 1000,
      served: { 'transaction accepted /v1/send': 50, 'request served /v1/status/:signature': 20, 'transaction landed': 30 },
    });
    // A 200 carrying a refusal (JSON-RPC) is a refusal, logged as one.
    expect(all.filter((l) => l.msg === 'request refused').map((l) => l.status)).toEqual([402, 200]);
  });

  it('at debug each success has its line too, beside the summary', () => {
    const { log, lines } = logger('debug');
    const r = new RequestLog(log, 'summary');
    traffic(r);
    r.close();
    const all = lines();
    expect(all.filter((l) => l.msg === 'transaction accepted' && l.level === 'debug')).toHaveLength(50);
    expect(all.filter((l) => l.msg === 'transaction landed' && l.level === 'debug')).toHaveLength(30);
    expect(all.filter((l) => l.msg === 'requests served, counted')).toHaveLength(1);
  });

  it('"every" writes one info line per success and landing, and no summary of them', () => {
    const { log, lines } = logger('info');
    const r = new RequestLog(log, 'every');
    traffic(r);
    r.close();
    const all = lines();
    expect(all.filter((l) => l.msg === 'transaction accepted' && l.level === 'info')).toHaveLength(50);
    expect(all.filter((l) => l.msg === 'request served')).toHaveLength(20);
    expect(all.filter((l) => l.msg === 'transaction landed' && l.level === 'info')).toHaveLength(30);
    expect(all.some((l) => l.msg === 'requests served, counted')).toBe(false);
  });

  it('the summary is a fraction of the log a line per success wrote', () => {
    const sizes = (['summary', 'every'] as const).map((mode) => {
      const { log, lines } = logger('info');
      const r = new RequestLog(log, mode);
      traffic(r);
      r.close();
      return JSON.stringify(lines()).length;
    });
    expect(sizes[0]! * 10).toBeLessThan(sizes[1]!);
  });
});

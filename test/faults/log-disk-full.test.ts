/**
 * A full log filesystem, for real: the service's `logFile` on a small tmpfs filled by a filler
 * file (the data directory elsewhere). A failed log write never reaches a request handler: every
 * request is still answered, the lines that could not be written are dropped and counted
 * (`landfall_log_lines_dropped_total`, `/health` `log`), `/health` stays 200, and the log resumes
 * by itself once there is room, with a line saying how many were lost. A restart with the log
 * filesystem already full starts and serves. (Before: SIGABRT after 19 requests, "Cork buffer
 * must not be acquired…", and a crash loop on restart.)
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../harness/localnet.js';
import { freshMetricsText } from '../../harness/metrics.js';
import { startStack, type Stack, health } from '../../harness/stack.js';
import { mountTmpfs, type Tmpfs } from '../../harness/tmpfs.js';

const SIZE = 4 << 20;
/** Requests sent while the filesystem is full: each writes a debug line (~200 bytes). */
const REQUESTS = 500;

let fs: Tmpfs | { error: string };
let s: Stack | undefined;
let logFile: string;

beforeAll(async () => {
  fs = mountTmpfs(SIZE);
  if ('error' in fs) {
    console.warn(`log disk-full tests skipped: ${fs.error}`);
    return;
  }
  logFile = join(fs.dir, 'logs', 'landfall.log');
  s = await startStack({ config: { logLevel: 'debug', logFile, ingressThreads: 1 } });
}, 60_000);

afterAll(async () => {
  await s?.close();
  if (!('error' in fs)) fs.unmount();
});


async function dropped(st: Stack): Promise<number> {
  const text = await freshMetricsText(st.svc.url);
  const line = text.split('\n').find((l) => l.startsWith('landfall_log_lines_dropped_total '));
  if (!line) throw new Error('no landfall_log_lines_dropped_total in /metrics');
  return Number(line.split(' ')[1]);
}

/** `n` key-less reads (a debug line each), all of which must be answered 200. */
async function reads(st: Stack, n: number): Promise<void> {
  for (let i = 0; i < n; i += 10) {
    const statuses = await Promise.all(Array.from({ length: 10 }, async () => (await fetch(`${st.svc.url}/v1/tip-floor`)).status));
    expect(statuses).toEqual(Array(10).fill(200));
  }
}

describe('log filesystem full', () => {
  it('drops and counts lines, keeps serving, says so in /health, and resumes once there is room', async (ctx) => {
    ctx.skip('error' in fs, 'error' in fs ? fs.error : '');
    const t = fs as Tmpfs;
    const st = s!;
    await reads(st, 20);
    await waitFor('lines written', () => (readFileSync(logFile, 'utf8').includes('"route":"/v1/tip-floor"') ? true : undefined));
    expect((await health(st)).body.log).toEqual({ writing: true, dropped_lines: 0, failing_since: null });

    t.fill(0);
    await reads(st, REQUESTS);
    const failing = await waitFor('the log failing in /health', async () => {
      const h = await health(st);
      return h.body.log.writing === false ? h : undefined;
    });
    expect(failing.status).toBe(200);
    expect(failing.body.status).toBe('ok');
    expect(failing.body.log.dropped_lines).toBeGreaterThan(0);
    expect(Date.parse(failing.body.log.failing_since)).toBeGreaterThan(0);
    expect(await dropped(st)).toBeGreaterThan(0);

    t.unfill();
    const told = await waitFor('the log resumed, telling what was lost', async () => {
      await reads(st, 10);
      const h = await health(st);
      const line = readFileSync(logFile, 'utf8')
        .split('\n')
        .find((l) => l.includes('log lines dropped: the log could not be written'));
      return h.body.log.writing && line ? JSON.parse(line) : undefined;
    });
    expect(told).toMatchObject({ level: 'warn', reason: 'ENOSPC' });
    expect(told.dropped).toBeGreaterThan(0);
  });

  it('a restart with the log filesystem already full starts and serves', async (ctx) => {
    ctx.skip('error' in fs, 'error' in fs ? fs.error : '');
    const t = fs as Tmpfs;
    const st = s!;
    await st.stop();
    t.fill(0);
    await st.start();
    await reads(st, REQUESTS);
    const h = await waitFor('the log failing in /health', async () => {
      const r = await health(st);
      return r.body.log.writing === false ? r : undefined;
    });
    expect(h.status).toBe(200);
    expect(await dropped(st)).toBeGreaterThan(0);
    t.unfill();
  });

  it('with the data directory on the same full filesystem: reads answered, the store and the log both say so', async (ctx) => {
    ctx.skip('error' in fs, 'error' in fs ? fs.error : '');
    const t = fs as Tmpfs;
    await s!.stop(); // one service at a time on the small filesystem
    const both = await startStack({ config: { logLevel: 'debug', logFile: join(t.dir, 'both', 'landfall.log'), dataDir: join(t.dir, 'both', 'data'), ingressThreads: 1 } });
    try {
      t.fill(0);
      await reads(both, REQUESTS);
      const h = await waitFor('the store and the log failing in /health', async () => {
        const r = await health(both);
        return r.body.log.writing === false && r.body.store.available === false ? r : undefined;
      });
      expect(h.status).toBe(503);
      expect(h.body.status).toBe('store_unavailable');
      await reads(both, 20);
    } finally {
      await both.close();
      t.unfill();
      await s!.start();
    }
  });
});

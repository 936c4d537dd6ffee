/**
 * The dashboard in a real browser: Debian's chromium driven by playwright-core, against the
 * running service on the local cluster. What a person sees is checked against what the API says
 * (the account's numbers, a landed transaction's latency and slots, its trace, the operator's
 * counts from /metrics), the API key never appears in a URL, and each view is saved as a
 * screenshot (test-results/dashboard/, the copies in docs/img/ come from there).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findTool, missingTool } from '../../scripts/debian-tools.mjs';
import { waitFor } from '../../harness/localnet.js';
import { metricSum } from '../../harness/metrics.js';
import { account, accountView, payer, send, settled, startStack, tipped, type Stack } from '../../harness/stack.js';

const browserPath = findTool('chromium');
const SCREENSHOTS = join(import.meta.dirname, '..', '..', 'test-results', 'dashboard');
const METRICS_TOKEN = 'dashboard-test-metrics-token';
if (browserPath === null) process.stderr.write(`dashboard browser tests not run: ${missingTool('chromium')}\n`);

/** Wait until `selector`'s text is `expected`; on time-out, fail showing what it is instead. */
async function expectShown(page: Page, selector: string, expected: string, timeout = 15_000): Promise<void> {
  try {
    await page.waitForFunction(([sel, want]) => document.querySelector(sel!)?.textContent === want, [selector, expected], { timeout, polling: 50 });
  } catch {
    expect(await page.locator(selector).textContent(), selector).toBe(expected);
  }
}

/** The texts of the SVG charts matching `selector` drawn over one another (per chart), as "a / b". */
function overlappingLabels(page: Page, selector: string): Promise<string[]> {
  return page.evaluate((sel) => {
    const out: string[] = [];
    for (const chart of document.querySelectorAll(sel)) {
      const boxes = [...chart.querySelectorAll('text')].map((t) => ({ text: t.textContent, box: (t as SVGGraphicsElement).getBBox() }));
      for (let i = 0; i < boxes.length; i++)
        for (let j = i + 1; j < boxes.length; j++) {
          const [a, b] = [boxes[i]!.box, boxes[j]!.box];
          if (a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height) out.push(`${boxes[i]!.text} / ${boxes[j]!.text}`);
        }
    }
    return out;
  }, selector);
}

/** How the page formats a number (`fmt` in dashboard/app.js). */
const fmt = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: 2 });
/** How the page formats seconds (`seconds` in dashboard/app.js). */
const secs = (s: number) => (s < 0.001 ? `${(s * 1e6).toFixed(0)} µs` : s < 1 ? `${(s * 1000).toFixed(1)} ms` : `${s.toFixed(2)} s`);

/** The bucket bounds holding a histogram's `q` quantile in a /metrics text (every series summed): what the operator view shows, never a value inside the bucket. */
function bucketOf(text: string, name: string, q: number): { lo: number; hi: number } {
  const byLe = new Map<number, number>();
  for (const m of text.matchAll(new RegExp(`^${name}_bucket\\{[^}]*le="([^"]+)"[^}]*\\} (\\S+)$`, 'gm'))) {
    const le = m[1] === '+Inf' ? Infinity : Number(m[1]);
    byLe.set(le, (byLe.get(le) ?? 0) + Number(m[2]));
  }
  const buckets = [...byLe].sort((a, b) => a[0] - b[0]);
  const rank = q * buckets.at(-1)![1];
  let lo = 0;
  for (const [le, n] of buckets) {
    if (n >= rank) return { lo, hi: le };
    lo = le;
  }
  return { lo, hi: Infinity };
}

describe.runIf(browserPath !== null)('the dashboard in Chromium', () => {
  let s: Stack;
  let browser: Browser;
  let page: Page;
  let bot: { id: string; key: string };
  /** Every URL the page asked for (requests and WebSockets). */
  const urls: string[] = [];

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    s = await startStack({ localnet: { slotMs: 100, seed: 'dashboard' }, config: { metricsToken: METRICS_TOKEN } });
    bot = account(s, 'growth');
    // --no-sandbox: CI runs as root, where Chromium's sandbox cannot start.
    browser = await chromium.launch({ executablePath: browserPath!, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    page.on('request', (r) => urls.push(r.url()));
    page.on('websocket', (ws) => urls.push(ws.url()));
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await s?.close();
  });

  it('GET / sends the browser to the dashboard', async () => {
    await page.goto(`${s.svc.url}/`);
    expect(new URL(page.url()).pathname).toBe('/dashboard/');
    expect(await page.locator('#bot-login').isVisible()).toBe(true);
  });

  it('a wrong key is refused in words, and the stream is not retried with it', async () => {
    await page.fill('#bot-key', 'lf_NotAKeyOfThisService');
    await page.click('#bot-login button[type=submit]');
    await page.waitForFunction(() => document.querySelector('#bot-error')?.textContent?.startsWith('/v1/account: 401 Unauthorized'));
    await expectShown(page, '#stream-state', 'closed (4001: invalid or revoked API key)');
    expect(await page.locator('#bot-body').isHidden()).toBe(true);
  });

  it("bot view: the account's plan, limits, usage and progress as GET /v1/account gives them", async () => {
    await page.fill('#bot-key', bot.key);
    await page.click('#bot-login button[type=submit]');
    const a = await accountView(s, bot.key);
    await expectShown(page, '#plan', a.plan);
    await expectShown(page, '#max-tps', fmt(a.limits.max_tps));
    await expectShown(page, '#min-tip-bp', fmt(a.limits.min_tip_bp));
    await expectShown(page, '#points', fmt(a.usage.service_points));
    await expectShown(page, '#tx-total', fmt(a.usage.transactions_total));
    await expectShown(page, '#next-tier', `${a.next_tier.plan}: ${a.next_tier.progress_percent} %`);
    await expectShown(page, '#stream-state', 'live');
    // The key field is cleared once used; the key lives in the tab's sessionStorage only.
    expect(await page.inputValue('#bot-key')).toBe('');
    expect(await page.evaluate(() => sessionStorage.getItem('landfall.apiKey'))).toBe(bot.key);
  });

  it('a transaction that lands appears live with its latency and slots; a click draws its trace', async () => {
    const from = await payer(s);
    const txs = await Promise.all([tipped(s, from, 1_000_000), tipped(s, from, 2_000_000)]);
    for (const tx of txs) expect((await send(s, bot.key, tx.base64)).status).toBe(200);
    for (const tx of txs) {
      const record = await settled(s, bot.key, tx.signature);
      expect(record.status).toBe('confirmed');
      const row = `#tx-table tr[data-signature="${tx.signature}"]`;
      await expectShown(page, `${row} td:nth-child(2)`, 'confirmed');
      await expectShown(page, `${row} td:nth-child(3)`, `${record.latency_ms} ms`);
      const stored = s.svc.store.getStatus(tx.signature)!;
      await expectShown(page, `${row} td:nth-child(4)`, String(stored.slot! - stored.submitSlot));
      await expectShown(page, `${row} td:nth-child(5)`, fmt(Number(stored.tipLamports)));
    }
    // The landing-latency histogram counts both landings.
    await page.waitForFunction(() => [...document.querySelectorAll('#latency-hist rect')].reduce((a, r) => a + Number(r.getAttribute('data-count')), 0) === 2);

    const tx = txs[0]!;
    await page.click(`#tx-table tr[data-signature="${tx.signature}"]`);
    const trace = (await (await fetch(`${s.svc.url}/v1/status/${tx.signature}/trace`, { headers: { authorization: `Bearer ${bot.key}` } })).json()) as any;
    await expectShown(page, '#trace-sig', tx.signature);
    await expectShown(page, '#trace-cause', trace.cause);
    expect(trace.cause).toMatch(/^landed in slot \d+$/);
    await expectShown(page, '#trace-reached', String(trace.leaders_reached));
    await expectShown(page, '#trace-tried', String(trace.leaders_tried));
    expect(await page.locator('#trace-timeline circle.attempt').count()).toBe(trace.attempts.length);
    expect(trace.attempts.length).toBeGreaterThan(0);
    expect(await page.locator('#trace-timeline line.landed').count()).toBe(1);

    // The tips against the floor: once the floor has the two landings, the page shows its p50.
    const floor = await waitFor('a tip floor over both landings', async () => {
      const f = (await (await fetch(`${s.svc.url}/v1/tip-floor`)).json()) as any;
      return f.windows['10m'].landed === 2 ? f.windows['10m'] : undefined;
    });
    await page.waitForFunction((want) => document.querySelector('#tips-summary')?.textContent?.startsWith(want), `10 min floor p50 ${fmt(floor.lamports.p50)} lamports over 2 landings`, { timeout: 15_000 });
    expect(await page.locator('#tips-chart circle.tip').count()).toBe(2);
    // With the trace card open beside it, no header of the transactions table is cut short.
    const cut = await page.evaluate(() => [...document.querySelectorAll('#tx-table th')].filter((th) => th.scrollWidth > th.clientWidth).map((th) => th.textContent));
    expect(cut).toEqual([]);
    // The chart's labels (floor p50, p75, plan minimum) are never drawn over each other.
    const overlaps = await page.evaluate(() => {
      const boxes = [...document.querySelectorAll('#tips-chart text')].map((t) => ({ text: t.textContent, box: (t as SVGGraphicsElement).getBBox() }));
      const out: string[] = [];
      for (let i = 0; i < boxes.length; i++)
        for (let j = i + 1; j < boxes.length; j++) {
          const [a, b] = [boxes[i]!.box, boxes[j]!.box];
          if (a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height) out.push(`${boxes[i]!.text} / ${boxes[j]!.text}`);
        }
      return out;
    });
    expect(overlaps).toEqual([]);
    await page.screenshot({ path: join(SCREENSHOTS, 'dashboard-bot.png'), fullPage: true });
  });

  it('a tab opened after the sends lists them (GET /v1/transactions), newest first, with the live stream open', async () => {
    const later = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    later.on('request', (r) => urls.push(r.url()));
    later.on('websocket', (ws) => urls.push(ws.url()));
    try {
      await later.goto(`${s.svc.url}/dashboard/`);
      await later.fill('#bot-key', bot.key);
      await later.click('#bot-login button[type=submit]');
      const listed = (await (await fetch(`${s.svc.url}/v1/transactions`, { headers: { authorization: `Bearer ${bot.key}` } })).json()) as any;
      expect(listed.transactions.length).toBe(2);
      const sigs = listed.transactions.map((t: any) => t.signature);
      await later.waitForFunction((n) => document.querySelectorAll('#tx-table tbody tr').length === n, sigs.length, { timeout: 15_000 });
      expect(await later.evaluate(() => [...document.querySelectorAll('#tx-table tbody tr')].map((tr) => (tr as HTMLElement).dataset.signature))).toEqual(sigs);
      for (const t of listed.transactions) {
        const row = `#tx-table tr[data-signature="${t.signature}"]`;
        await expectShown(later, `${row} td:nth-child(2)`, 'confirmed');
        await expectShown(later, `${row} td:nth-child(3)`, `${t.latency_ms} ms`);
      }
      // Both landings count in its latency histogram too.
      await later.waitForFunction(() => [...document.querySelectorAll('#latency-hist rect')].reduce((a, r) => a + Number(r.getAttribute('data-count')), 0) === 2);
      // ...and the live stream is open beside them (the tests below send while the first tab watches).
      await expectShown(later, '#stream-state', 'live');
    } finally {
      await later.close();
    }
  });

  it('operator view with the metrics token: counts as /metrics has them', async () => {
    await page.click('button[data-view=operator]');
    // Without the token the page says the service wants it.
    await page.waitForFunction(() => document.querySelector('#op-error')?.textContent?.includes('401'));
    await page.fill('#op-token', METRICS_TOKEN);
    await page.click('#op-login button[type=submit]');
    const text = await (await fetch(`${s.svc.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    const confirmed = metricSum(text, 'landfall_transactions_total', { outcome: 'confirmed' });
    expect(confirmed).toBe(2);
    await expectShown(page, '#op-accepted', fmt(metricSum(text, 'landfall_plan_accepted_total')));
    await expectShown(page, '#op-confirmed', fmt(confirmed));
    await expectShown(page, '#op-landing-rate', '100.0 %');
    await expectShown(page, '#op-latency-count', fmt(metricSum(text, 'landfall_service_latency_seconds_count')));
    await expectShown(page, '#op-chain-state', 'synced');
    // Percentiles as the bucket that holds them (bounds from /metrics), not a point interpolated inside it.
    for (const [id, q] of [['#op-landing-p50', 0.5], ['#op-landing-p99', 0.99]] as const) {
      const b = bucketOf(text, 'landfall_landing_latency_seconds', q);
      expect(b.hi).not.toBe(Infinity);
      await expectShown(page, id, b.lo === 0 ? `≤ ${secs(b.hi)}` : `${secs(b.lo)}–${secs(b.hi)}`);
    }
    await expectShown(page, '#op-cluster', 'single node');
    const leaders = new Set(
      text
        .split('\n')
        .filter((l) => l.startsWith('landfall_leader_sends_total{') && l.includes('result="ok"') && !l.endsWith(' 0'))
        .map((l) => /leader="([^"]+)"/.exec(l)![1]),
    );
    await expectShown(page, '#op-leaders', String(leaders.size));
    await expectShown(page, '#op-build', `Landfall 0.1.0 on Node.js ${process.version}`);
    // From the second refresh on, sends/s is a rate over the interval: nothing was sent since.
    await expectShown(page, '#op-sends-rate', '0');
    await page.screenshot({ path: join(SCREENSHOTS, 'dashboard-operator.png'), fullPage: true });
  });

  it('a transaction that did not land: its trace shows why; the landing analytics as GET /v1/analytics gives them, by leader, for either window', async () => {
    const { Keypair } = await import('@solana/web3.js');
    await page.click('button[data-view=bot]');
    const tx = await tipped(s, Keypair.generate(), 1_000_000); // never funded: it cannot land
    const deadline = s.net.slot() + 3;
    expect((await send(s, bot.key, tx.base64, { deadline_slot: deadline })).status).toBe(200);
    await settled(s, bot.key, tx.signature, (r) => r.expired === true);
    const row = `#tx-table tr[data-signature="${tx.signature}"]`;
    await expectShown(page, `${row} td:nth-child(2)`, 'expired');
    await page.click(row);
    const trace = await waitFor('the post-mortem', async () => {
      const t = (await (await fetch(`${s.svc.url}/v1/status/${tx.signature}/trace`, { headers: { authorization: `Bearer ${bot.key}` } })).json()) as any;
      return t.post_mortem ? t : undefined;
    });
    expect(trace.post_mortem.summary).toMatch(new RegExp(`^deadline slot ${deadline} passed after `));
    await expectShown(page, '#trace-post-mortem', `Why it did not land: ${trace.post_mortem.summary}`);

    // The analytics card: two landings (the test above) and this miss.
    const analytics = async (window: string) => (await (await fetch(`${s.svc.url}/v1/analytics?window=${window}`, { headers: { authorization: `Bearer ${bot.key}` } })).json()) as any;
    for (const window of ['24h', '1h']) {
      await page.selectOption('#analytics-window', window);
      const v = await analytics(window);
      expect(v).toMatchObject({ transactions: 3, landed: 2, expired: 1 });
      await expectShown(page, '#analytics-summary', `2 of 3 landed (66.7 %); 1 expired, 0 failed on chain; slots to land p50 ≤${v.slots_to_land.p50}, p90 ≤${v.slots_to_land.p90}`);
      await expectShown(page, '#analytics-step', String(v.series_minutes));
      await page.waitForFunction((n) => document.querySelectorAll('#analytics-leaders tbody tr').length === n, v.by_leader.length);
      for (const l of v.by_leader) {
        await expectShown(page, `#analytics-leaders tr[data-leader="${l.leader}"] td:nth-child(2)`, fmt(l.transactions));
        await expectShown(page, `#analytics-leaders tr[data-leader="${l.leader}"] td:nth-child(3)`, fmt(l.landed));
      }
      expect(await page.locator('#analytics-series rect').count()).toBe(v.series.length);
      // No axis label written over another: 24 hourly buckets, and the latency histogram's ≤1000 ≤2000 ≤5000.
      await page.waitForFunction((n) => document.querySelectorAll('#analytics-series text').length > 0 && document.querySelectorAll('#analytics-series rect').length === n, v.series.length);
      expect(await overlappingLabels(page, '#analytics-series svg, #latency-hist svg, #slots-hist svg')).toEqual([]);
    }
    await page.screenshot({ path: join(SCREENSHOTS, 'dashboard-bot-analytics.png'), fullPage: true });
  });

  it('operator view: the last 15 minutes drawn from its own refreshes (sends/s, landing rate, mean landing latency)', async () => {
    // The operator view kept refreshing behind the bot view: the miss above settled in one of its intervals.
    await page.click('button[data-view=operator]');
    const dots = (id: string) => page.evaluate((sel) => [...document.querySelectorAll(`${sel} circle.sample`)].map((c) => Number(c.getAttribute('data-value'))), id);
    await page.waitForFunction(() => [...document.querySelectorAll('#op-chart-rate circle.sample')].some((c) => c.getAttribute('data-value') === '0'), undefined, { timeout: 15_000 });
    // A landing now: its interval's mean landing latency is the record's, its sends/s above 0.
    const tx = await tipped(s, await payer(s), 1_000_000);
    expect((await send(s, bot.key, tx.base64)).status).toBe(200);
    const record = await settled(s, bot.key, tx.signature);
    expect(record.status).toBe('confirmed');
    await page.waitForFunction(
      (ms) => [...document.querySelectorAll('#op-chart-latency circle.sample')].some((c) => Math.abs(Number(c.getAttribute('data-value')) - ms) < 0.5),
      record.latency_ms,
      { timeout: 15_000 },
    );
    await page.waitForFunction(() => [...document.querySelectorAll('#op-chart-rate circle.sample')].some((c) => c.getAttribute('data-value') === '100'), undefined, { timeout: 15_000 });
    const sends = await dots('#op-chart-sends');
    expect(sends.some((v) => v > 0)).toBe(true);
    expect(sends.every((v) => v >= 0)).toBe(true);
    // One dot per interval: never more than the refreshes of 15 minutes; labels apart.
    expect(sends.length).toBeLessThanOrEqual(451);
    expect(await overlappingLabels(page, '#operator .history svg')).toEqual([]);
    await page.screenshot({ path: join(SCREENSHOTS, 'dashboard-operator.png'), fullPage: true });
  });

  it('changing the address between #bot and #operator switches the view; the page asks for no /favicon.ico', async () => {
    const shown = () => page.evaluate(() => [...document.querySelectorAll('.view')].filter((v) => !(v as HTMLElement).hidden).map((v) => v.id));
    await page.evaluate(() => (location.hash = '#bot'));
    await page.waitForFunction(() => !(document.querySelector('#bot') as HTMLElement).hidden);
    expect(await shown()).toEqual(['bot']);
    await page.evaluate(() => (location.hash = '#operator'));
    await page.waitForFunction(() => !(document.querySelector('#operator') as HTMLElement).hidden);
    expect(await shown()).toEqual(['operator']);
    expect(await page.locator('button[data-view=operator]').getAttribute('aria-selected')).toBe('true');
    await page.goBack(); // back to #bot
    await page.waitForFunction(() => !(document.querySelector('#bot') as HTMLElement).hidden);
    expect(await shown()).toEqual(['bot']);
    // Its icon is inline: nothing was asked of /favicon.ico (a 404 there was a refusal in the counts).
    expect(await page.locator('link[rel=icon]').getAttribute('href')).toMatch(/^data:image\/svg\+xml,/);
    expect(urls.filter((u) => new URL(u).pathname === '/favicon.ico')).toEqual([]);
  });

  it('never put a key or the token in a URL', () => {
    expect(urls.length).toBeGreaterThan(5);
    for (const u of urls) {
      expect(u).not.toContain(bot.key);
      expect(u).not.toContain(METRICS_TOKEN);
    }
    expect(urls.some((u) => u.endsWith('/v1/stream'))).toBe(true);
  });
});

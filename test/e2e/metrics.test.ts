/**
 * `GET /metrics` of the running service after real traffic on the local cluster: each counter
 * moved by what the test did (responses by route and code, 429s by budget, first sends in the
 * service-latency histogram, writes per leader, landed / failed / expired outcomes, drops when a
 * validator is down), the gauges read live state, and the text is Prometheus's.
 */
import { Keypair, LAMPORTS_PER_SOL } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../harness/localnet.js';
import { METRICS_MAX_AGE_MS } from '../../src/telemetry/rendered-text.js';
import { renderedAt } from '../../harness/metrics.js';
import { PLAN_ORDER } from '../../src/accounts/plans.js';
import { sendOutcomeReasons } from '../../src/native.js';
import { account, nextSlot, payer, send, settled, startStack, status, tipped, type Stack } from '../../harness/stack.js';
import { transfer } from '../../harness/transactions.js';

let s: Stack;
let bot: { id: string; key: string };
let from: Keypair;

beforeAll(async () => {
  s = await startStack({ localnet: { slotMs: 100, seed: 'metrics' } });
  bot = account(s);
  from = await payer(s);
});
afterAll(async () => {
  await s?.close();
});

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (comments skipped). */
function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** A scrape rendered after this call began (a render is served again for up to a second). */
async function scrape(): Promise<{ samples: Sample[]; contentType: string | null }> {
  const since = Date.now();
  return waitFor('a fresh /metrics render', async () => {
    const r = await fetch(`${s.svc.url}/metrics`);
    expect(r.status).toBe(200);
    const text = await r.text();
    return renderedAt(text) >= since ? { samples: parse(text), contentType: r.headers.get('content-type') } : undefined;
  });
}

/** Sum of the samples of `name` whose labels include `labels` (0 when there are none yet). */
function total(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v))
    .reduce((a, x) => a + x.value, 0);
}

describe('/metrics', () => {
  it('is Prometheus text with the service and process metrics', async () => {
    const { samples, contentType } = await scrape();
    expect(contentType).toBe('text/plain; version=0.0.4; charset=utf-8');
    const names = new Set(samples.map((x) => x.name));
    for (const name of [
      'landfall_service_latency_seconds_bucket',
      'landfall_service_latency_native_seconds_bucket',
      'landfall_chain_slot',
      'landfall_chain_synced',
      'landfall_chain_slot_age_seconds',
      'landfall_tracker_pending',
      'landfall_tracker_last_sweep_seconds',
      'landfall_delivery_in_flight',
      'landfall_rate_limited_total',
      'landfall_transactions_total',
      'nodejs_eventloop_lag_seconds',
      'process_cpu_seconds_total',
    ]) {
      expect(names, name).toContain(name);
    }
    expect(total(samples, 'landfall_chain_synced')).toBe(1);
    expect(total(samples, 'landfall_chain_slot')).toBeGreaterThan(0);
  });

  it('has every series whose labels are known in advance from the start, at 0, before any send', async () => {
    const { samples } = await scrape();
    const has = (name: string, labels: Record<string, string>): Sample | undefined =>
      samples.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
    const missing: string[] = [];
    const want = (name: string, labels: Record<string, string>, zero = true): void => {
      const x = has(name, labels);
      if (!x || (zero && x.value !== 0)) missing.push(`${name}${JSON.stringify(labels)} = ${x?.value}`);
    };
    for (const plan of PLAN_ORDER) {
      // The headline latency, per plan: an alert on its quantile has a series to evaluate.
      want('landfall_landing_latency_seconds_count', { plan });
      want('landfall_landing_latency_seconds_bucket', { plan, le: '+Inf' });
      want('landfall_slots_to_land_count', { plan });
      want('landfall_plan_accepted_total', { plan });
      for (const budget of ['send', 'query', 'in_flight']) want('landfall_rate_limited_total', { plan, budget });
      for (const outcome of ['confirmed', 'failed', 'expired']) want('landfall_plan_transactions_total', { plan, outcome });
    }
    for (const outcome of ['confirmed', 'failed', 'expired']) want('landfall_transactions_total', { outcome });
    for (const source of ['push', 'poll']) want('landfall_tracker_observations_total', { source });
    // Drops by every reason the QUIC client gives (prewarming may already have counted some).
    for (const reason of sendOutcomeReasons()) want('landfall_send_drops_total', { reason }, false);
    expect(missing).toEqual([]);
  });

  it('exports resident memory by kind: anonymous apart from the mapped files (the LMDB store)', async () => {
    const { samples } = await scrape();
    const anon = total(samples, 'landfall_process_resident_memory_bytes', { kind: 'anon' });
    const file = total(samples, 'landfall_process_resident_memory_bytes', { kind: 'file' });
    expect(anon).toBeGreaterThan(10 * 1024 * 1024); // a Node process's heap alone
    expect(file).toBeGreaterThan(0); // the binaries and the store's maps
    expect(samples.some((x) => x.name === 'landfall_process_resident_memory_bytes' && x.labels.kind === 'shmem')).toBe(true);
    // The parts are what RSS is made of (read a moment apart: within a quarter).
    const rss = total(samples, 'process_resident_memory_bytes');
    const parts = total(samples, 'landfall_process_resident_memory_bytes');
    expect(Math.abs(parts - rss) / rss).toBeLessThan(0.25);
  });

  it('counts what real traffic did', async () => {
    const before = (await scrape()).samples;
    const starter = account(s, 'starter'); // 8 sends/s, 16 queries/s

    // Three sends over REST and one over JSON-RPC that land, and one that lands failed.
    const ok = await Promise.all(Array.from({ length: 3 }, () => tipped(s, from, 300_000)));
    for (const tx of ok) expect((await send(s, bot.key, tx.base64)).status).toBe(200);
    const viaRpc = await tipped(s, from, 300_000);
    const rpc = await fetch(`${s.svc.url}/v1/rpc?api-key=${bot.key}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'sendTransaction', params: [viaRpc.base64, { encoding: 'base64', skipPreflight: true }] }),
    });
    expect(((await rpc.json()) as any).result).toBe(viaRpc.signature);
    const poor = await payer(s, 0.05);
    const failing = await tipped(s, poor, 300_000, { extra: [transfer(poor.publicKey, Keypair.generate().publicKey, LAMPORTS_PER_SOL)] });
    expect((await send(s, bot.key, failing.base64)).status).toBe(200);

    // Refusals: a bad key, and both budgets of the starter account overrun.
    expect((await send(s, 'lf_wrong', ok[0]!.base64)).status).toBe(401);
    const burst = await Promise.all(Array.from({ length: 14 }, () => tipped(s, from, 1_000_000)));
    const sends = await Promise.all(burst.map((tx) => send(s, starter.key, tx.base64)));
    const sendLimited = sends.filter((r) => r.status === 429).length;
    const sendOk = sends.filter((r) => r.status === 200).length;
    expect(sendLimited).toBeGreaterThan(0);
    expect(sendOk + sendLimited).toBe(sends.length);
    const queries = await Promise.all(Array.from({ length: 30 }, () => status(s, starter.key, burst[0]!.signature)));
    const queryLimited = queries.filter((r) => r.status === 429).length;
    expect(queryLimited).toBeGreaterThan(0);

    for (const tx of [...ok, viaRpc]) expect((await settled(s, bot.key, tx.signature)).status).toBe('confirmed');
    expect((await settled(s, bot.key, failing.signature)).status).toBe('failed');
    const landedOk = [...ok, viaRpc].length + sendOk;
    // The starter account's sends land too. Watched in the store, not through /v1/status: its
    // polling would draw from the query budget the assertions below count.
    const starterSigs = burst.filter((_, i) => sends[i]!.status === 200).map((tx) => tx.signature);
    await waitFor('the starter sends confirmed', () => (starterSigs.every((sig) => s.svc.store.getStatus(sig)?.status === 'confirmed') ? true : undefined));

    const after = (await scrape()).samples;
    const delta = (name: string, labels: Record<string, string> = {}) => total(after, name, labels) - total(before, name, labels);

    expect(delta('landfall_http_requests_total', { route: '/v1/send', code: '200' })).toBe(4 + sendOk);
    expect(delta('landfall_http_requests_total', { route: '/v1/send', code: '401' })).toBe(1);
    expect(delta('landfall_http_requests_total', { route: '/v1/send', code: '429' })).toBe(sendLimited);
    expect(delta('landfall_http_requests_total', { route: '/v1/rpc', code: '200' })).toBe(1);
    expect(delta('landfall_http_requests_total', { route: '/v1/status/:signature', code: '429' })).toBe(queryLimited);
    // Scrapes are counted: how many depends on how many it took to get a fresh render each time.
    expect(delta('landfall_http_requests_total', { route: '/metrics', code: '200' })).toBeGreaterThanOrEqual(1);
    expect(delta('landfall_rate_limited_total', { budget: 'send' })).toBe(sendLimited);
    expect(delta('landfall_rate_limited_total', { budget: 'query' })).toBe(queryLimited);

    // Every accepted transaction's first send is one observation of the service-added latency.
    const accepted = landedOk + 1; // + the one that landed failed
    expect(delta('landfall_service_latency_seconds_count')).toBe(accepted);
    expect(delta('landfall_service_latency_seconds_sum')).toBeGreaterThan(0);
    expect(delta('landfall_service_latency_seconds_bucket', { le: '+Inf' })).toBe(accepted);
    // Its native part (handed to the QUIC client → written) is observed with it, and is a part.
    expect(delta('landfall_service_latency_native_seconds_count')).toBe(accepted);
    expect(delta('landfall_service_latency_native_seconds_sum')).toBeGreaterThan(0);
    expect(delta('landfall_service_latency_native_seconds_sum')).toBeLessThan(delta('landfall_service_latency_seconds_sum'));
    // Fan-out: each first send wrote to at least one leader.
    expect(delta('landfall_leader_sends_total', { result: 'ok' })).toBeGreaterThanOrEqual(accepted);

    expect(delta('landfall_transactions_total', { outcome: 'confirmed' })).toBe(landedOk);
    expect(delta('landfall_transactions_total', { outcome: 'failed' })).toBe(1);
    expect(delta('landfall_tracker_observations_total')).toBe(landedOk + 1);

    // Per plan: the whale bot's five and the starter's accepted sends; its 429s under its plan.
    expect(delta('landfall_plan_accepted_total', { plan: 'whale' })).toBe(5);
    expect(delta('landfall_plan_accepted_total', { plan: 'starter' })).toBe(sendOk);
    expect(delta('landfall_rate_limited_total', { budget: 'send', plan: 'starter' })).toBe(sendLimited);
    expect(delta('landfall_rate_limited_total', { plan: 'whale' })).toBe(0);
    expect(delta('landfall_plan_transactions_total', { plan: 'whale', outcome: 'confirmed' })).toBe(4);
    expect(delta('landfall_plan_transactions_total', { plan: 'whale', outcome: 'failed' })).toBe(1);
    expect(delta('landfall_plan_transactions_total', { plan: 'starter', outcome: 'confirmed' })).toBe(sendOk);
    // The landing histograms: one observation per confirmed transaction, with the latency and
    // slots its status record reports.
    expect(delta('landfall_landing_latency_seconds_count')).toBe(landedOk);
    expect(delta('landfall_landing_latency_seconds_bucket', { plan: 'whale', le: '+Inf' })).toBe(4);
    expect(delta('landfall_slots_to_land_count', { plan: 'starter' })).toBe(sendOk);
    const records = [...ok, viaRpc].map((tx) => s.svc.store.getStatus(tx.signature)!);
    const latencySum = records.reduce((a, r) => a + r.latencyMs! / 1000, 0);
    const slotsSum = records.reduce((a, r) => a + (r.slot! - r.submitSlot), 0);
    expect(delta('landfall_landing_latency_seconds_sum', { plan: 'whale' })).toBeCloseTo(latencySum, 6);
    expect(delta('landfall_slots_to_land_sum', { plan: 'whale' })).toBe(slotsSum);
    // The request duration histogram counts each response once, under its route and status.
    expect(delta('landfall_http_request_duration_seconds_count', { route: '/v1/send', code: '200' })).toBe(4 + sendOk);
    expect(delta('landfall_http_request_duration_seconds_bucket', { route: '/v1/send', code: '429', le: '+Inf' })).toBe(sendLimited);
    expect(delta('landfall_http_request_duration_seconds_sum', { route: '/v1/send', code: '200' })).toBeGreaterThan(0);
  });

  it('tells the build it runs', async () => {
    const { samples } = await scrape();
    const info = samples.filter((x) => x.name === 'landfall_build_info');
    expect(info).toEqual([{ name: 'landfall_build_info', labels: { version: '0.1.0', node: process.version }, value: 1 }]);
  });

  it('counts a transaction that can never land as expired, and the tracker pending gauge falls back', { timeout: 60_000 }, async () => {
    const before = (await scrape()).samples;
    const broke = Keypair.generate(); // never funded: cannot pay its fee, so no leader includes it
    const tx = await tipped(s, broke, 300_000);
    expect((await send(s, bot.key, tx.base64)).status).toBe(200);
    expect(total((await scrape()).samples, 'landfall_tracker_pending')).toBeGreaterThanOrEqual(1);
    await settled(s, bot.key, tx.signature, (r) => r.expired === true, 45_000);
    const after = (await scrape()).samples;
    expect(total(after, 'landfall_transactions_total', { outcome: 'expired' }) - total(before, 'landfall_transactions_total', { outcome: 'expired' })).toBe(1);
    expect(total(after, 'landfall_tracker_pending')).toBe(0);
  });
  it('counts the drops and failed writes of a validator that is down, under its identity', async () => {
    const down = s.net.validators[1]!;
    await s.net.setFault(down.name, { down: true });
    const before = (await scrape()).samples;
    // One per slot until a send has targeted the dead validator (it leads 4 of every 16 slots).
    await waitFor(
      'a drop at the downed validator',
      async () => {
        await nextSlot(s);
        expect((await send(s, bot.key, (await tipped(s, from, 300_000)).base64)).status).toBe(200);
        const now = (await scrape()).samples;
        return total(now, 'landfall_send_drops_total') > total(before, 'landfall_send_drops_total') ? now : undefined;
      },
      20_000,
    );
    const after = (await scrape()).samples;
    expect(total(after, 'landfall_leader_sends_total', { leader: down.identity, result: 'failed' })).toBeGreaterThan(
      total(before, 'landfall_leader_sends_total', { leader: down.identity, result: 'failed' }),
    );
    await s.net.setFault(down.name, {});
  });

  it('a burst of scrapes shares renders: each render is served again for up to a second', async () => {
    const t0 = Date.now();
    const texts = await Promise.all(Array.from({ length: 100 }, async () => (await fetch(`${s.svc.url}/metrics`)).text()));
    const elapsed = Date.now() - t0;
    const renders = new Set(texts.map(renderedAt));
    // Renders at most once per METRICS_MAX_AGE_MS on each thread: one per started second, plus
    // one for a thread's cache holding the main thread's render across a boundary.
    expect(renders.size).toBeLessThanOrEqual(2 * (Math.ceil(elapsed / METRICS_MAX_AGE_MS) + 1));
    expect(renders.size).toBeLessThan(texts.length);
    for (const at of renders) expect(at).toBeGreaterThan(0);
  });
});

/**
 * The Grafana dashboard and the Prometheus rules against a real Prometheus (Debian's package)
 * scraping two real Landfall nodes (child processes, joined through real nats-servers, on the
 * local Solana cluster) under a bounded send load: every rule loads healthy, and every rule's
 * expression (an alert's with its thresholds taken out, so it says what the alert watches) and
 * every dashboard panel's query returns data.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findTool, missingTool } from '../../scripts/debian-tools.mjs';
import { SendLoad, startClusterEnv, type ClusterEnv } from '../../harness/cluster-load.js';
import { waitFor } from '../../harness/localnet.js';
import { freePort } from '../../harness/nats-cluster.js';
import { tempDir } from '../../harness/tmp.js';

const ROOT = join(import.meta.dirname, '..', '..');
const RULES = join(ROOT, 'deploy', 'prometheus', 'landfall.rules.yml');
const DASHBOARD = join(ROOT, 'deploy', 'grafana', 'landfall.json');
const prometheusPath = findTool('prometheus');
if (prometheusPath === null) process.stderr.write(`Prometheus tests not run: ${missingTool('prometheus')}\n`);
/** Seconds of load: enough for several scrapes and rule evaluations at 1 s. */
const LOAD_S = 8;

/** Grafana's variables as the dashboard's defaults resolve them against this Prometheus. */
function resolveVariables(expr: string): string {
  return expr.replaceAll('$__rate_interval', '1m').replaceAll('$job', 'landfall').replaceAll('$instance', '.*');
}

/** An alert's expression without its comparisons with constants: the signals it watches. */
function signalsOf(expr: string): string {
  return expr.replace(/\s*(==|!=|<=|>=|<|>)\s*-?[0-9.]+(e-?[0-9]+)?/g, '');
}

interface Panel {
  type: string;
  title: string;
  targets?: Array<{ expr: string }>;
}

describe.runIf(prometheusPath !== null)('Prometheus scraping Landfall nodes under load', () => {
  let env: ClusterEnv;
  let prometheus: ChildProcess;
  let promUrl: string;
  const tmp = tempDir('landfall-prometheus-');

  /** The result vector of an instant query (throws on a query error). */
  async function query(expr: string): Promise<unknown[]> {
    const r = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await r.json()) as { status: string; error?: string; data?: { result: unknown[] } };
    if (body.status !== 'success') throw new Error(`${expr}: ${body.error}`);
    return body.data!.result;
  }

  /** Of `exprs`, those still without data when every one has data or the time is up. */
  async function withoutData(exprs: string[], timeoutMs = 30_000): Promise<string[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const empty: string[] = [];
      for (const e of exprs) if ((await query(e)).length === 0) empty.push(e);
      if (empty.length === 0 || Date.now() > deadline) return empty;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  beforeAll(async () => {
    env = await startClusterEnv({ seed: 'prometheus', slotMs: 100, names: ['a', 'b'] });
    const port = await freePort();
    promUrl = `http://127.0.0.1:${port}`;
    const targets = env.cluster.nodes.map((n) => new URL(n.url).host);
    const config = join(tmp.dir, 'prometheus.yml');
    writeFileSync(
      config,
      [
        'global: { scrape_interval: 1s, evaluation_interval: 1s }',
        `rule_files: [${JSON.stringify(RULES)}]`,
        'scrape_configs:',
        `  - { job_name: landfall, static_configs: [{ targets: ${JSON.stringify(targets)} }] }`,
      ].join('\n'),
    );
    prometheus = spawn(prometheusPath!, [`--config.file=${config}`, `--storage.tsdb.path=${join(tmp.dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], { stdio: 'ignore' });
    await waitFor('Prometheus ready', async () => ((await fetch(`${promUrl}/-/ready`).catch(() => null))?.status === 200 ? true : undefined), 30_000);
    // A whale key on both nodes, and a starter key over its 8 sends/s on one (429s).
    const starter = JSON.parse(await env.cluster.cli('accounts', 'create', '--name', 'small', '--plan', 'starter', '--json')) as { api_key: string };
    const [a, b] = env.cluster.nodes as [ClusterEnv['cluster']['nodes'][0], ClusterEnv['cluster']['nodes'][0]];
    await waitFor('node a to know the starter key', async () => ((await fetch(`${a.url}/v1/account`, { headers: { authorization: `Bearer ${starter.api_key}` } })).status === 200 ? true : undefined));
    const loads = [new SendLoad(env, [a, b], { workers: 2, gapMs: 50 }), new SendLoad(env, [a], { workers: 2, gapMs: 20, keys: [starter.api_key] })];
    await new Promise((r) => setTimeout(r, LOAD_S * 1000));
    await Promise.all(loads.map((l) => l.stop()));
    expect(loads[0]!.acks.length).toBeGreaterThan(0);
    expect(loads[1]!.refused.get(429) ?? 0).toBeGreaterThan(0);
  }, 180_000);

  afterAll(async () => {
    if (prometheus && prometheus.exitCode === null) {
      const exited = new Promise((r) => prometheus.once('exit', r));
      prometheus.kill('SIGTERM');
      await exited;
    }
    await env?.close();
    tmp.cleanup();
  });

  it('scrapes both nodes', async () => {
    expect(await withoutData(['up{job="landfall"} == 1'])).toEqual([]);
    expect((await query('up{job="landfall"} == 1')).length).toBe(2);
  });

  it('loads every rule healthy, and every rule expression returns data', async () => {
    const groups = ((await (await fetch(`${promUrl}/api/v1/rules`)).json()) as any).data.groups as Array<{ rules: Array<{ name: string; query: string; type: string; health: string; lastError?: string }> }>;
    const rules = groups.flatMap((g) => g.rules);
    const alerts = rules.filter((r) => r.type === 'alerting').map((r) => r.name);
    expect(alerts.sort()).toEqual([
      'LandfallBudgetRefusalsSurge',
      'LandfallChainViewStale',
      'LandfallLandingRateDrop',
      'LandfallNatsDegraded',
      'LandfallServiceLatencyHigh',
      'LandfallStoreUnavailable',
    ]);
    expect(rules.length).toBe(18);
    // Evaluated at least once without an error.
    await waitFor('every rule evaluated', async () => {
      const now = ((await (await fetch(`${promUrl}/api/v1/rules`)).json()) as any).data.groups.flatMap((g: any) => g.rules);
      return now.every((r: any) => r.health === 'ok') ? true : undefined;
    });
    const exprs = rules.map((r) => (r.type === 'alerting' ? signalsOf(r.query) : r.query));
    expect(await withoutData(exprs)).toEqual([]);
  });

  it('every panel of the Grafana dashboard returns data', async () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] };
    const panels = dashboard.panels.filter((p) => p.type !== 'row');
    expect(panels.length).toBeGreaterThanOrEqual(20);
    for (const p of panels) expect(p.targets?.length, p.title).toBeGreaterThan(0);
    const exprs = panels.flatMap((p) => p.targets!.map((t) => resolveVariables(t.expr)));
    expect(await withoutData(exprs)).toEqual([]);
  });
});

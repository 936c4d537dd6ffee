/**
 * One account floods the JSON-RPC WebSocket; what do the others see? (issue 33, docs/hardening.md
 * "What one account can make a socket cost"). Run: `npm run bench -- ws-flood`.
 *
 * `landfall serve` (the built CLI, its embedded local cluster, one ingress thread as the issue's
 * probe had) in a process of its own. A prober — another client, no key — sends `GET /ping` on a
 * keep-alive connection every 2 ms and keeps each latency. First idle, then for each method one
 * starter account's flood from a process of its own: its 10 sockets (the account's cap) each write
 * the method's message as fast as the kernel takes it, and reopen when the server closes them.
 * Each flood follows an idle phase of its own, and its p99 is compared with that one (the shared
 * machine's load drifts over minutes). Reported per phase: the prober's /ping p50 and p99 and the
 * p99's ratio to the idle one just before, the flood's
 * messages written and frames received, the close codes, and the service's RSS before the flood,
 * at its end (sockets still open) and 3 s after its sockets closed.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { finishMachineInfo, machineInfo, warnIfBusy, type MachineInfo, type Suite, type SuiteResult } from './lib/suite.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'bin/landfall.js');
const PHASE_MS = Number(process.env.WS_FLOOD_PHASE_MS ?? 8_000);
const SOCKETS = 10;
const METHODS = ['slotSubscribe', 'signatureSubscribe', 'signatureSubscribe-15KiB', 'unknown-method', 'parse-error'] as const;

interface Phase {
  phase: string;
  ping_p50_ms: number;
  ping_p99_ms: number;
  p99_vs_idle: number;
  pings: number;
  flood_messages_per_s?: number;
  flood_frames_received_per_s?: number;
  closes?: Record<string, number>;
  rss_before_mib?: number;
  rss_end_mib?: number;
  rss_after_close_mib?: number;
}

export interface WsFloodResult extends SuiteResult {
  phaseMs: number;
  sockets: number;
  phases: Phase[];
}

const rssMiB = (pid: number) => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024);
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.max(0, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
};
const r2 = (x: number) => Math.round(x * 100) / 100;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** GET /ping every 2 ms on one keep-alive connection for `ms`; the latencies in ms. */
async function probe(url: string, ms: number): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const out: number[] = [];
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const t0 = performance.now();
    await new Promise<void>((resolve, reject) => {
      const req = request(`${url}/ping`, { agent }, (res) => {
        res.resume();
        res.on('end', () => resolve());
      });
      req.on('error', reject);
      req.end();
    });
    out.push(performance.now() - t0);
    await sleep(2);
  }
  agent.destroy();
  return out;
}

async function run(): Promise<WsFloodResult> {
  const machine: MachineInfo = machineInfo();
  warnIfBusy(machine);
  const dir = mkdtempSync(join(tmpdir(), 'landfall-ws-flood-'));
  const data = join(dir, 'data');
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ ingressThreads: 1, logLevel: 'warn' }), { mode: 0o600 });
  const svc = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--data', data, '--config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  svc.stdout.on('data', (d) => (out += d));
  svc.stderr.on('data', (d) => (out += d));
  try {
    const until = Date.now() + 60_000;
    let url: string | undefined;
    while (!(url = /listening on (http:\/\/\S+)/.exec(out)?.[1])) {
      if (Date.now() > until || svc.exitCode !== null) throw new Error(`landfall serve did not start: ${out}`);
      await sleep(100);
    }
    mkdirSync(data, { recursive: true });
    const account = () => (JSON.parse(execFileSync(process.execPath, [BIN, 'accounts', 'create', '--name', 'flood', '--plan', 'starter', '--json', '--data', data], { encoding: 'utf8' })) as { api_key: string }).api_key;
    const wsUrl = url.replace(/^http/, 'ws');
    await probe(url, 2_000); // warm-up
    const phases: Phase[] = [];
    // Each flood right after an idle phase of its own, and compared with it: the shared machine's
    // load drifts over minutes, not over seconds.
    for (const method of METHODS) {
      const idle = await probe(url, PHASE_MS - 2_000);
      const idleP99 = pct(idle, 99);
      phases.push({ phase: `idle (before ${method})`, ping_p50_ms: r2(pct(idle, 50)), ping_p99_ms: r2(idleP99), p99_vs_idle: 1, pings: idle.length });
      const key = account(); // a fresh account each time: its 10 streams free
      await sleep(1_000);
      const rssBefore = rssMiB(svc.pid!);
      const agent = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench/lib/ws-flood-agent.ts'), wsUrl, key, method, String(PHASE_MS), String(SOCKETS)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
      let agentOut = '';
      agent.stdout.on('data', (d) => (agentOut += d));
      const exited = new Promise<void>((r) => agent.once('exit', () => r()));
      await sleep(1_000); // the agent's start (tsx) and its sockets open
      // (A refused upgrade is retried after 50 ms by the agent: an account whose budget is spent
      // gets HTTP 429s, as any HTTP request of it would.)
      const pings = await probe(url, PHASE_MS - 2_000);
      const rssEnd = rssMiB(svc.pid!);
      await exited;
      await sleep(3_000);
      const stats = JSON.parse(agentOut.trim().split('\n').at(-1)!) as { sent: number; received: number; closes: Record<string, number> };
      const p99 = pct(pings, 99);
      phases.push({
        phase: method,
        ping_p50_ms: r2(pct(pings, 50)),
        ping_p99_ms: r2(p99),
        p99_vs_idle: r2(p99 / idleP99),
        pings: pings.length,
        flood_messages_per_s: Math.round(stats.sent / (PHASE_MS / 1000)),
        flood_frames_received_per_s: Math.round(stats.received / (PHASE_MS / 1000)),
        closes: stats.closes,
        rss_before_mib: rssBefore,
        rss_end_mib: rssEnd,
        rss_after_close_mib: rssMiB(svc.pid!),
      });
      console.log(JSON.stringify(phases.at(-1)));
    }
    return { suite: 'ws-flood', machine: finishMachineInfo(machine), phaseMs: PHASE_MS, sockets: SOCKETS, phases };
  } finally {
    svc.kill('SIGTERM');
    await new Promise((r) => (svc.exitCode !== null ? r(null) : svc.once('exit', r)));
    rmSync(dir, { recursive: true, force: true });
  }
}

function table(r: WsFloodResult): string {
  const rows = r.phases.map(
    (p) =>
      `| ${p.phase} | ${p.ping_p50_ms} / ${p.ping_p99_ms} | **${p.p99_vs_idle}×** | ${p.flood_messages_per_s ?? ''} | ${p.flood_frames_received_per_s ?? ''} | ${p.closes ? Object.entries(p.closes).map(([c, n]) => `${c}×${n}`).join(' ') : ''} | ${p.rss_before_mib === undefined ? '' : `${p.rss_before_mib} → ${p.rss_end_mib} → ${p.rss_after_close_mib}`} |`,
  );
  return [
    `One starter account, ${r.sockets} sockets, ${r.phaseMs / 1000} s a phase, 1 ingress thread; the prober's \`GET /ping\` every 2 ms on another connection (${r.machine.cpuCores} cores, load ${r.machine.loadAvg1mStart} → ${r.machine.loadAvg1mEnd}, ${r.machine.date.slice(0, 10)}).`,
    '',
    '| flood | /ping p50 / p99 (ms) | p99 ÷ idle | messages written/s | frames back/s | closes (code×n) | service RSS MiB: before → end → 3 s after close |',
    '|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

export const suite: Suite<WsFloodResult> = { name: 'ws-flood', title: 'One account flooding the JSON-RPC WebSocket', run, readmeTable: table };

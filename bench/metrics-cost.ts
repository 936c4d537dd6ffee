/**
 * What a `/metrics` scrape costs the service (docs/hardening.md "/metrics cost"). Run:
 * `node --import tsx bench/metrics-cost.ts [scrapes]`.
 *
 * The bench stack (`lib/stack.ts`: the local cluster, the service and the load generator, each
 * its own process; the service with its default ingress threads):
 * 1. CPU per scrape: the service process's CPU time (`/proc/<pid>/task/*\/stat`, every thread)
 *    over `scrapes` closed-loop `GET /metrics` (4 connections), less its idle CPU over as long,
 *    divided by the scrapes; the same for `GET /ping` for scale.
 * 2. The effect of a scrape flood on paying sends: `POST /v1/send` open loop at {@link SEND_RATE}
 *    req/s for {@link PHASE_MS}, alone, then with this process scraping `/metrics` closed loop on
 *    {@link FLOOD_CONNECTIONS} connections for the same time: the sends' p50 and p99, and the cores
 *    the service process kept busy.
 */
import { Pool } from 'undici';
import { landfallServer, ratePhase, SINGLE_SEND, type Phase } from './lib/phase.js';
import { clockTicks, readCpu } from './lib/proc-cpu.js';
import { startStack } from './lib/stack.js';

const SCRAPES = Number(process.argv[2] ?? 3000);
const SEND_RATE = 200;
const PHASE_MS = 8000;
const FLOOD_CONNECTIONS = 8;

const stack = await startStack({ payerSol: 1000 });
const server = landfallServer(stack);
const pool = new Pool(server.url, { connections: FLOOD_CONNECTIONS });

/** Closed-loop GETs of `path` on `connections` loops: `count` of them, or until `stop()` is true. */
async function hammer(path: string, connections: number, count: number, stop: () => boolean = () => false): Promise<number> {
  let issued = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (issued < count && !stop()) {
        issued++;
        const r = await pool.request({ method: 'GET', path });
        if (r.statusCode !== 200) throw new Error(`${path}: ${r.statusCode}`);
        await r.body.dump();
      }
    }),
  );
  return issued;
}

/** Service CPU µs per request of `path`, less the idle CPU over the same time. */
async function cpuPer(path: string): Promise<{ us: number; perSecond: number }> {
  const idle0 = readCpu(server.pid);
  await new Promise((r) => setTimeout(r, 3000));
  const idle1 = readCpu(server.pid);
  const idlePerMs = (idle1.ticks - idle0.ticks) / (idle1.at - idle0.at);
  const a = readCpu(server.pid);
  const n = await hammer(path, 4, SCRAPES);
  const b = readCpu(server.pid);
  const ticks = b.ticks - a.ticks - idlePerMs * (b.at - a.at);
  return { us: Math.round(((ticks / clockTicks()) * 1e6) / n), perSecond: Math.round((n / (b.at - a.at)) * 1000) };
}

const row = (p: Phase) => ({ p50_us: Math.round(p.load.latency.p50Us), p99_us: Math.round(p.load.latency.p99Us), achieved_rps: Math.round(p.load.achievedRps), service_cores: p.cores.landfall });

try {
  await hammer('/metrics', 4, 200); // warm-up
  const metrics = await cpuPer('/metrics');
  const ping = await cpuPer('/ping');
  const alone = await ratePhase(stack, server, SINGLE_SEND, SEND_RATE, PHASE_MS);
  let stop = false;
  const t0 = performance.now();
  const flood = hammer('/metrics', FLOOD_CONNECTIONS, Number.MAX_SAFE_INTEGER, () => stop);
  const flooded = await ratePhase(stack, server, SINGLE_SEND, SEND_RATE, PHASE_MS);
  stop = true;
  const scrapes = await flood;
  const floodRate = Math.round((scrapes / (performance.now() - t0)) * 1000);
  console.log(
    JSON.stringify(
      {
        cpu_per_request_us: { metrics: metrics.us, ping: ping.us },
        scrapes_per_s_closed_loop_4_connections: metrics.perSecond,
        sends_at_rate: SEND_RATE,
        sends_alone: row(alone),
        sends_with_scrape_flood: { ...row(flooded), scrapes_per_s: floodRate },
      },
      null,
      2,
    ),
  );
} finally {
  await pool.close();
  await stack.close();
}

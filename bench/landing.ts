/**
 * Benchmark suite "landing": how Landfall lands where it is hard, side by side with what a bot
 * already has, in one interleaved run per scenario on the local cluster (4 validators, real QUIC
 * over emulated links, LiteSVM executing):
 *
 * - **Landfall**: `POST /v1/send` with the default options (the bot next to the service);
 * - **RPC**: the local cluster's own JSON-RPC `sendTransaction` (`skipPreflight`), which behaves
 *   as Agave's send-transaction service (`src/localnet/send-service.ts`: forward to the current
 *   and next leader over the same links, retry every 2 s until the blockhash expires), reached by
 *   the bot over the same distance (the request waits one one-way delay of the link);
 * - **direct**: a hand-written TPU sender: one QUIC write to the current leader (by the slot it
 *   sees), no rebroadcast; its connections stay open between sends, as a bot's would.
 *
 * Scenarios: clean; 80 ms RTT; 80 ms + 3 % loss each way; 150 ms with a 10 % loss burst of 5 s;
 * one leader in four skipping its slots; congestion — a competing load filling blocks by price
 * (`block-space.ts`), where every path pays the compute-unit price Landfall's `/v1/tip-floor`
 * `priority_fee` p75 gives (other bots landing through Landfall set it), plus Landfall without a
 * priority fee for contrast. All at 400 ms slots; clean and the lossy ones at 200 ms too.
 *
 * Measured per scenario and path, from the chain (the cluster's receive log): landed / sent;
 * slots from submission (the cluster's slot when the bot sent) to the landing slot p50/p90/p99;
 * ms from submission to confirmed (the landing slot's end, when the cluster confirms it); how many
 * landed in a later slot than their distance floor (the slot a write sent at once could first
 * reach a validator in), and the mean slots: finer than whole-slot quantiles, for an A/B. Each
 * send that did not land is printed with what every validator did with its copies and, for
 * Landfall, its post-mortem; in congestion, each change of the guidance.
 *
 * `BENCH_LANDING_CONFIG='{"fanout":3}'`: service settings over the defaults, for an A/B of one lever.
 * `BENCH_LANDING_N` (default 40): sends per path per scenario. The whole run is 4–6 minutes at 40.
 * `BENCH_LANDING_ONLY=congestion`: only the scenarios whose name contains it (`skips|congestion`:
 * any of them; scenarios run in their order here, on one cluster per slot length).
 */
import type { Keypair } from '@solana/web3.js';
import { randomBytes } from 'node:crypto';
import { QuicClient } from '../native/index.js';
import type { Config } from '../src/config.js';
import type { Localnet } from '../src/localnet/index.js';
import { account, payer, startStack, tipped, type Stack } from '../harness/stack.js';
import { computeBudget } from '../harness/transactions.js';
import { finishMachineInfo, machineInfo, machineLine, mdTable, target, targetsTable, warnIfBusy, type Suite, type SuiteResult, type Target } from './lib/suite.js';

const N = Number(process.env.BENCH_LANDING_N ?? 40);
/** Between two sends (of any path): the three paths interleave, one send each per round. */
const GAP_MS = 120;
/** The local cluster's acceptance margin after a leader window's last slot (`graceMs`' default). */
const GRACE_MS = 20;
/** After the last send, how long a transaction may still land (then it counts as not landed). */
const SETTLE_SLOTS = 40;
const TIP_LAMPORTS = 1_000_000;
/** Compute units the bot asks for when it sets a price (a transfer and a tip need ~450). */
const BOT_CU = 5_000;
/** The congestion scenario's competing load: ~2x a 48 M block at 400 ms slots (1.4 M CU each). */
const LOAD = { tps: 200, prices: [0, 1_000, 10_000, 50_000, 200_000] };
/** Other bots landing through Landfall during congestion (what its fee guidance learns from). */
const MARKET_ACCOUNTS = 4;
const MARKET_GAP_MS = 250;
const GUIDANCE_PERCENTILE = 'p75';

type PathName = 'landfall' | 'rpc' | 'direct' | 'landfall-unpriced';

interface Scenario {
  name: string;
  slotMs: number;
  link: string;
  /** A timed change during the sends: at this fraction of them, this link for this long. */
  burst?: { at: number; link: string; forMs: number };
  skip?: string;
  congestion?: boolean;
}

const SCENARIOS: Scenario[] = [
  { name: 'clean', slotMs: 400, link: '' },
  { name: '80 ms RTT', slotMs: 400, link: 'rtt=80ms' },
  { name: '80 ms + 3 % loss each way', slotMs: 400, link: 'rtt=80ms,loss=3%' },
  { name: '150 ms + a 5 s burst of 10 % loss', slotMs: 400, link: 'rtt=150ms', burst: { at: 0.3, link: 'rtt=150ms,loss=10%', forMs: 5000 } },
  { name: 'one leader in four skips', slotMs: 400, link: '', skip: 'v2' },
  { name: 'congestion, priced by the guidance', slotMs: 400, link: '', congestion: true },
  { name: 'clean', slotMs: 200, link: '' },
  { name: '80 ms + 3 % loss each way', slotMs: 200, link: 'rtt=80ms,loss=3%' },
  { name: '150 ms + a 5 s burst of 10 % loss', slotMs: 200, link: 'rtt=150ms', burst: { at: 0.3, link: 'rtt=150ms,loss=10%', forMs: 5000 } },
];

interface Quantiles {
  p50: number | null;
  p90: number | null;
  p99: number | null;
}

interface PathResult {
  path: PathName;
  sent: number;
  /** Accepted by the path (Landfall 200, RPC a signature, direct a written stream). */
  accepted: number;
  landed: number;
  slots: Quantiles & { max: number | null; mean: number | null };
  /** Landed in a later slot than its distance floor (see `floor`). */
  overFloor: number;
  confirmMs: Quantiles;
  /** How long the bot waited for the path's answer, ms (p50). */
  answerMs: number | null;
  /** Compute-unit price paid (congestion), micro-lamports per CU: median. */
  price?: number;
  /**
   * The distance's floor: slots from submission to the slot in which a write sent at once could
   * first arrive (one one-way delay later, less the cluster's 20 ms grace at a window's end) —
   * what no sender at this distance beats, whatever it does. For the Landfall path only.
   */
  floor?: Quantiles;
}

interface ScenarioResult {
  name: string;
  slotMs: number;
  link: string;
  burst?: Scenario['burst'];
  skip?: string;
  congestion?: { load: typeof LOAD; guidance: string };
  paths: PathResult[];
}

export interface LandingResult extends SuiteResult {
  suite: 'landing';
  durationSec: number;
  config: { perPath: number; gapMs: number; validators: number; settleSlots: number; limits: string; service?: Partial<Config> };
  scenarios: ScenarioResult[];
  targets: Target[];
}

function q(sorted: number[], p: number): number | null {
  return sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface Sent {
  path: PathName;
  signature: string;
  submitMs: number;
  submitSlot: number;
  accepted: boolean;
  answerMs: number;
  price: number;
  /** The link's one-way delay when it was sent, ms. */
  oneWayMs: number;
}

/** One-way delay of the link now (the bot → RPC leg): half the RTT, or the up delay. */
function oneWayMs(link: string): number {
  const rtt = /rtt=(\d+)ms/.exec(link);
  return rtt ? Number(rtt[1]) / 2 : 0;
}

class Bench {
  private blockhash = '';
  private blockhashAt = 0;
  private readonly direct = new QuicClient({ identity: randomBytes(32) });
  private bot!: { key: string };
  private payers: Keypair[] = [];
  private guidance = 0;

  get price(): number {
    return this.guidance;
  }

  constructor(private readonly s: Stack) {}

  get net(): Localnet {
    return this.s.net;
  }

  async setup(): Promise<void> {
    this.bot = account(this.s, 'whale');
    this.payers = [];
    for (let i = 0; i < 4; i++) this.payers.push(await payer(this.s, 200));
  }

  private async freshBlockhash(): Promise<string> {
    if (Date.now() - this.blockhashAt > 1000) {
      this.blockhash = (await this.s.connection.getLatestBlockhash('confirmed')).blockhash;
      this.blockhashAt = Date.now();
    }
    return this.blockhash;
  }

  private async tx(from: Keypair, price: number | null): Promise<{ base64: string; bytes: Uint8Array; signature: string }> {
    const extra = price === null ? [] : computeBudget(BOT_CU, BigInt(price));
    return tipped(this.s, from, TIP_LAMPORTS, { extra, blockhash: await this.freshBlockhash() });
  }

  /** Landfall's guidance: `/v1/tip-floor` priority_fee p75 of the shortest window with landings. */
  async refreshGuidance(): Promise<number> {
    const r = await fetch(`${this.s.svc.url}/v1/tip-floor`, { headers: { authorization: `Bearer ${this.bot.key}` } });
    const body = (await r.json()) as { priority_fee: Record<string, { micro_lamports_per_cu: Record<string, number> | null }> };
    for (const w of ['1m', '10m', '1h']) {
      const p = body.priority_fee[w]?.micro_lamports_per_cu;
      if (p) return (this.guidance = p[GUIDANCE_PERCENTILE]!);
    }
    return (this.guidance = 0);
  }

  async send(path: PathName, link: string, priced: boolean): Promise<Sent> {
    const from = this.payers[['landfall', 'rpc', 'direct', 'landfall-unpriced'].indexOf(path)]!;
    const price = priced && path !== 'landfall-unpriced' ? this.guidance : null;
    const tx = await this.tx(from, price);
    const submitMs = Date.now();
    const submitSlot = this.net.slot();
    let accepted = false;
    if (path === 'landfall' || path === 'landfall-unpriced') {
      const r = await fetch(`${this.s.svc.url}/v1/send`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${this.bot.key}` },
        body: JSON.stringify({ transaction: tx.base64 }),
      });
      accepted = r.status === 200;
      await r.arrayBuffer();
    } else if (path === 'rpc') {
      // The bot's request crosses the same distance to its RPC provider, and the answer back.
      const d = oneWayMs(link);
      await sleep(d);
      const r = await fetch(this.net.rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'sendTransaction', params: [tx.base64, { encoding: 'base64', skipPreflight: true }] }),
      });
      accepted = typeof ((await r.json()) as { result?: string }).result === 'string';
      await sleep(d);
    } else {
      const leader = this.net.leaderAt(this.net.slot()).tpuQuic;
      const [outcome] = await this.direct.send([leader], Buffer.from(tx.bytes));
      accepted = outcome?.ok === true;
    }
    return { path, signature: tx.signature, submitMs, submitSlot, accepted, answerMs: Date.now() - submitMs, price: price ?? 0, oneWayMs: oneWayMs(link) };
  }

  landedSlot(signature: string): number | null {
    return this.net.receivedBy(signature).find((r) => r.outcome === 'included')?.landedSlot ?? null;
  }

  /** Landfall's post-mortem of a send that did not land, as the trace gives it (JSON), or why not. */
  async postMortem(signature: string): Promise<string> {
    const r = await fetch(`${this.s.svc.url}/v1/status/${signature}/trace`, { headers: { authorization: `Bearer ${this.bot.key}` } });
    if (r.status !== 200) return `(trace ${r.status})`;
    const t = (await r.json()) as { post_mortem?: unknown };
    return JSON.stringify(t.post_mortem ?? null);
  }

  async close(): Promise<void> {
    this.direct.close();
  }
}

/** Other bots landing through Landfall at the load's prices (four accounts: the guidance needs more than one). */
async function startMarket(s: Stack, stop: { done: boolean }): Promise<{ running: Promise<void> }> {
  const bots = Array.from({ length: MARKET_ACCOUNTS }, () => account(s, 'whale'));
  const payers: Keypair[] = [];
  for (let i = 0; i < MARKET_ACCOUNTS; i++) payers.push(await payer(s, 100));
  const running = (async () => {
    let i = 0;
    let blockhash = '';
    let at = 0;
    while (!stop.done) {
      if (Date.now() - at > 1000) {
        blockhash = (await s.connection.getLatestBlockhash('confirmed')).blockhash;
        at = Date.now();
      }
      const k = i++ % MARKET_ACCOUNTS;
      const price = LOAD.prices[Math.floor(Math.random() * LOAD.prices.length)]!;
      const tx = await tipped(s, payers[k]!, TIP_LAMPORTS, { extra: computeBudget(BOT_CU, BigInt(price)), blockhash });
      void fetch(`${s.svc.url}/v1/send`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${bots[k]!.key}` },
        body: JSON.stringify({ transaction: tx.base64 }),
      })
        .then((r) => r.arrayBuffer())
        .catch(() => undefined);
      await sleep(MARKET_GAP_MS);
    }
  })();
  return { running };
}

async function runScenario(b: Bench, s: Stack, sc: Scenario): Promise<ScenarioResult> {
  const net = s.net;
  await net.setLink(null, sc.link);
  for (const v of net.validators) await net.setFault(v.name, {});
  if (sc.skip) await net.setFault(sc.skip, { skipSlots: true });
  const paths: PathName[] = sc.congestion ? ['landfall', 'rpc', 'direct', 'landfall-unpriced'] : ['landfall', 'rpc', 'direct'];
  const stop = { done: false };
  let market: { running: Promise<void> } | null = null;
  if (sc.congestion) {
    net.setLoad(LOAD);
    market = await startMarket(s, stop);
    // Until Landfall has seen other bots land: the guidance exists, and blocks are full.
    const until = Date.now() + 60_000;
    await sleep(8 * sc.slotMs);
    while ((await b.refreshGuidance()) === 0 && Date.now() < until) await sleep(1000);
  }
  // A few slots for connections and the chain view to settle on the new path.
  await sleep(4 * sc.slotMs);
  console.log(`  ${sc.name} @ ${sc.slotMs} ms${sc.congestion ? ` (guidance ${GUIDANCE_PERCENTILE} ${b.price} uL/CU)` : ''}…`);
  const pending: Promise<Sent>[] = [];
  const burstAt = sc.burst ? Math.floor(sc.burst.at * N) : -1;
  let lastRefresh = Date.now();
  for (let i = 0; i < N; i++) {
    if (i === burstAt) await net.setLink(null, sc.burst!.link, sc.burst!.forMs);
    if (sc.congestion && Date.now() - lastRefresh > 1000) {
      const was = b.price;
      if ((await b.refreshGuidance()) !== was) console.log(`    guidance ${was} -> ${b.price} uL/CU at send ${i}`);
      lastRefresh = Date.now();
    }
    for (const p of paths) {
      pending.push(b.send(p, i >= burstAt && burstAt >= 0 ? sc.burst!.link : sc.link, sc.congestion === true));
      await sleep(GAP_MS);
    }
  }
  const sent = await Promise.all(pending);
  // Settle: until everything landed, or SETTLE_SLOTS slots after the last send.
  const deadline = Date.now() + SETTLE_SLOTS * sc.slotMs;
  while (Date.now() < deadline && sent.some((x) => b.landedSlot(x.signature) === null)) await sleep(sc.slotMs);
  stop.done = true;
  await market?.running;
  net.setLoad(null);

  const results: PathResult[] = paths.map((path) => {
    const mine = sent.filter((x) => x.path === path);
    const slots: number[] = [];
    const confirm: number[] = [];
    for (const x of mine) {
      const landed = b.landedSlot(x.signature);
      if (landed === null) continue;
      slots.push(landed - x.submitSlot);
      confirm.push(net.slotStartMs(landed + 1) - x.submitMs);
    }
    slots.sort((a, c) => a - c);
    confirm.sort((a, c) => a - c);
    const answers = mine.map((x) => x.answerMs).sort((a, c) => a - c);
    const prices = mine.map((x) => x.price).sort((a, c) => a - c);
    const floorOf = (x: Sent): number => {
      const arrive = x.submitMs + x.oneWayMs - GRACE_MS;
      let slot = x.submitSlot;
      while (net.slotStartMs(slot + 1) <= arrive) slot++;
      return slot - x.submitSlot;
    };
    const floor: number[] = path === 'landfall' ? mine.map(floorOf).sort((a, c) => a - c) : [];
    // Finer than the quantiles (whole slots) for an A/B: the mean, and how many landed in a later
    // slot than their own distance floor (lost time a sender could have saved).
    let overFloor = 0;
    for (const x of mine) {
      const landed = b.landedSlot(x.signature);
      if (landed !== null && landed - x.submitSlot > floorOf(x)) overFloor++;
    }
    return {
      path,
      sent: mine.length,
      accepted: mine.filter((x) => x.accepted).length,
      landed: slots.length,
      slots: { p50: q(slots, 0.5), p90: q(slots, 0.9), p99: q(slots, 0.99), max: slots.at(-1) ?? null, mean: slots.length === 0 ? null : Math.round((1000 * slots.reduce((a, c) => a + c, 0)) / slots.length) / 1000 },
      overFloor,
      confirmMs: { p50: q(confirm, 0.5), p90: q(confirm, 0.9), p99: q(confirm, 0.99) },
      answerMs: q(answers, 0.5),
      ...(sc.congestion && { price: q(prices, 0.5) ?? 0 }),
      ...(floor.length > 0 && { floor: { p50: q(floor, 0.5), p90: q(floor, 0.9), p99: q(floor, 0.99) } }),
    };
  });
  // Every miss, with what the chain's receive log says became of each copy, and for Landfall its
  // post-mortem: why it did not land, from the receivers' side and from the service's.
  for (const x of sent) {
    if (b.landedSlot(x.signature) !== null || x.path === 'landfall-unpriced') continue;
    const receipts = net.receivedBy(x.signature).map((r) => `${r.validator}@${r.slot}:${r.outcome}`);
    const pm = x.path === 'landfall' ? await b.postMortem(x.signature) : null;
    console.log(`    miss ${x.path} at slot ${x.submitSlot} priced ${x.price}: ${receipts.join(' ') || 'never received'}${pm ? `  post-mortem ${pm}` : ''}`);
  }
  for (const r of results) {
    console.log(
      `    ${r.path.padEnd(18)} landed ${r.landed}/${r.sent}  slots p50/p90/p99 ${r.slots.p50}/${r.slots.p90}/${r.slots.p99} mean ${r.slots.mean}, ${r.overFloor} after their floor  confirmed p50 ${r.confirmMs.p50} ms  answer p50 ${r.answerMs} ms` +
        (r.floor ? `  distance floor p50/p90/p99 ${r.floor.p50}/${r.floor.p90}/${r.floor.p99}` : ''),
    );
  }
  await net.setLink(null, '');
  if (sc.skip) await net.setFault(sc.skip, {});
  return {
    name: sc.name,
    slotMs: sc.slotMs,
    link: sc.link || 'clean',
    ...(sc.burst && { burst: sc.burst }),
    ...(sc.skip && { skip: sc.skip }),
    ...(sc.congestion && { congestion: { load: LOAD, guidance: `/v1/tip-floor priority_fee ${GUIDANCE_PERCENTILE}` } }),
    paths: results,
  };
}

function targetsOf(scenarios: ScenarioResult[]): Target[] {
  const out: Target[] = [];
  for (const sc of scenarios) {
    const lf = sc.paths.find((p) => p.path === 'landfall')!;
    const rpc = sc.paths.find((p) => p.path === 'rpc')!;
    const id = `${sc.name} @ ${sc.slotMs} ms`;
    const pct = (100 * lf.landed) / lf.sent;
    out.push(target(`${id}: landed`, `${id}: Landfall lands ≥ ${sc.congestion ? 95 : 99} %`, pct, '%', '>=', sc.congestion ? 95 : 99));
    out.push(target(`${id}: p50`, `${id}: Landfall p50 ≤ 1 slot`, lf.slots.p50 ?? 99, ' slots', '<=', 1));
    out.push(target(`${id}: p50 vs rpc`, `${id}: Landfall p50 ≤ the RPC path's (${rpc.slots.p50})`, lf.slots.p50 ?? 99, ' slots', '<=', rpc.slots.p50 ?? 99));
    if (/loss/.test(sc.link) || sc.burst) {
      out.push(target(`${id}: p90 vs rpc`, `${id}: Landfall p90 ≥ 1 slot better than the RPC path's (${rpc.slots.p90})`, lf.slots.p90 ?? 99, ' slots', '<=', (rpc.slots.p90 ?? 99) - 1));
    }
  }
  return out;
}

async function run(): Promise<LandingResult> {
  const machine = machineInfo();
  warnIfBusy(machine);
  const t0 = performance.now();
  const scenarios: ScenarioResult[] = [];
  // BENCH_LANDING_ONLY=congestion: the scenarios whose name contains it (a quick look at one);
  // `skips|congestion`: those whose name contains any of them.
  const only = process.env.BENCH_LANDING_ONLY?.split('|');
  // BENCH_LANDING_CONFIG='{"fanout":3}': service settings over the defaults (an A/B of one lever).
  const serviceConfig = process.env.BENCH_LANDING_CONFIG ? (JSON.parse(process.env.BENCH_LANDING_CONFIG) as Partial<Config>) : null;
  const chosen = SCENARIOS.filter((x) => only === undefined || only.some((o) => x.name.includes(o)));
  for (const slotMs of [...new Set(chosen.map((x) => x.slotMs))]) {
    // Every sender here shares 127.0.0.1: the per-IP QUIC limits (meant for one unstaked peer
    // each) are lifted, as for the other benchmarks; each path still has its own connections.
    const s = await startStack({
      ...(serviceConfig && { config: serviceConfig }),
      localnet: { slotMs, validators: 4, seed: `landing-${slotMs}`, maxStreamsPer100ms: 0, maxConnectionsPerPeer: 64, maxConnectionsPerIpPerMinute: 0 },
    });
    const b = new Bench(s);
    try {
      await b.setup();
      for (const sc of chosen.filter((x) => x.slotMs === slotMs)) scenarios.push(await runScenario(b, s, sc));
    } finally {
      await b.close();
      await s.close();
    }
  }
  return {
    suite: 'landing',
    machine: finishMachineInfo(machine),
    durationSec: Math.round((performance.now() - t0) / 100) / 10,
    config: { perPath: N, gapMs: GAP_MS, validators: 4, settleSlots: SETTLE_SLOTS, limits: 'per-IP QUIC limits lifted (every sender is on 127.0.0.1)', ...(serviceConfig && { service: serviceConfig }) },
    scenarios,
    targets: targetsOf(scenarios),
  };
}

const PATH_LABEL: Record<PathName, string> = {
  landfall: 'Landfall `/v1/send`',
  rpc: 'RPC `sendTransaction`',
  direct: 'direct (one QUIC write)',
  'landfall-unpriced': 'Landfall, no priority fee',
};

function fmtQ(x: Quantiles & { max?: number | null }): string {
  return [x.p50, x.p90, x.p99].map((v) => (v === null ? '–' : String(Math.round(v)))).join(' / ');
}

function readmeTable(r: LandingResult): string {
  const rows: string[][] = [];
  for (const sc of r.scenarios) {
    for (const p of sc.paths) {
      rows.push([
        `${sc.name}, ${sc.slotMs} ms`,
        PATH_LABEL[p.path] + (p.price !== undefined ? ` (${p.price.toLocaleString('en-US')} µL/CU)` : ''),
        `${p.landed}/${p.sent} (${((100 * p.landed) / p.sent).toFixed(0)} %)`,
        fmtQ(p.slots),
        p.floor ? fmtQ(p.floor) : '',
        p.landed === 0 ? '–' : `${p.overFloor} (mean ${p.slots.mean?.toFixed(2)})`,
        fmtQ(p.confirmMs),
        p.answerMs === null ? '–' : `${Math.round(p.answerMs)} ms`,
      ]);
    }
  }
  const missed = r.targets.filter((t) => !t.met);
  return [
    machineLine(r.machine, 'in-process stack'),
    '',
    `${r.config.perPath} sends per path per scenario, interleaved (one send every ${r.config.gapMs} ms, paths in turn), on the local cluster of ${r.config.validators} validators with links (\`--link\`), skipped slots and a competing load; ${r.config.limits}. ` +
      `Slots from submission (the cluster's slot when the bot sent) to the landing slot; the distance floor: slots from submission to the slot a write sent at once first reaches a validator in (one one-way delay later, less the 20 ms grace at a window's end), which no sender at that distance beats; landed after its floor: sends that landed in a later slot than their own floor (a skipped window counts: the floor does not know of skips), with the mean slots to land — finer than the whole-slot quantiles; ms from submission to confirmed (the landing slot's end). Not landed within ${r.config.settleSlots} slots of the last send counts as not landed.`,
    '',
    mdTable(['scenario', 'path', 'landed', 'slots p50 / p90 / p99', 'distance floor p50 / p90 / p99', 'landed after its floor (mean slots)', 'ms to confirmed p50 / p90 / p99', 'answer p50'], rows),
    '',
    `**Targets**: ${r.targets.length - missed.length} of ${r.targets.length} met.`,
    '',
    targetsTable(r.targets, (v, unit) => (unit === '%' ? `${v.toFixed(1)} %` : `${v}${unit}`)),
    '',
    `Raw numbers: \`bench/results/landing.json\`; run: \`npm run bench -- landing\` (${r.durationSec} s; \`BENCH_LANDING_N\` sets the sends per path).`,
  ].join('\n');
}

export const suite: Suite<LandingResult> = {
  name: 'landing',
  title: 'Landing where it is hard',
  run,
  readmeTable,
};

/**
 * `landfall demo`: the whole system on one machine, watched live. It starts the embedded local
 * cluster and the service, creates an account, and sends a stream of tipped web3.js
 * transactions through the typed client while a terminal table shows what the status stream
 * reports: statuses, landing rate and the service-measured latency percentiles.
 *
 * On purpose, one transaction in five transfers more than its payer holds (it lands and fails),
 * and mid-run one validator starts losing packets and a later one goes down, so the table shows
 * failures and the delivery engine routing around a faulty leader. At the end, the delivery
 * trace (`client.trace`) of a few failed and expired ones says what happened to each: every
 * attempt, to which validator, and why it ended as it did.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection, Keypair, LAMPORTS_PER_SOL, SystemProgram, Transaction } from '@solana/web3.js';
import { PLAN_ORDER, type PlanName } from '../accounts/plans.js';
import { addTip, LandfallApiError, LandfallClient, type DeliveryTrace, type StatusRecord } from '../client/index.js';
import { DEFAULT_CONFIG, type Config } from '../config.js';
import { LandfallError } from '../errors.js';
import type { Fault } from '../localnet/faults.js';
import type { Localnet } from '../localnet/index.js';
import type { Service } from '../service.js';
import { parseOptions } from './args.js';
import { startServiceOnChain, type ServiceOnChain } from './chain.js';

/** Every n-th transaction is built to fail on chain. */
const FAIL_EVERY = 5;
/** The payer's airdrop; a failing transaction tries to move twice this. */
const PAYER_SOL = 1_000;
/** Table redraws per second on a terminal; plain progress lines come once a second otherwise. */
const TTY_FPS = 4;
/** After the last send, wait at most this long for transactions in flight to settle. */
const SETTLE_MS = 15_000;
const BLOCKHASH_REFRESH_MS = 2_000;
/**
 * Rebroadcast rounds per send: one per slot, so 10 outlast a down leader's 4-slot window and
 * reach the next leader; the default 3 can all fall inside that window.
 */
const MAX_RETRIES = 10;
/** Delivery traces shown at the end, per state (failed, expired). */
const TRACES_SHOWN = 2;

/** When, as a share of the run, which validator gets which fault. */
const FAULT_PLAN: Array<{ at: number; validator: string; fault: Fault; label: string }> = [
  { at: 1 / 3, validator: 'v2', fault: { packetLossPct: 30, delayMs: 20 }, label: 'loses 30% of its packets, 20 ms delay' },
  { at: 2 / 3, validator: 'v3', fault: { down: true }, label: 'is down' },
];

type Write = (s: string) => void;

/** `landfall demo [--duration 30] [--rate 5] [--log FILE]`: returns the exit code. */
export async function demoCommand(argv: string[], write: Write, tty: boolean): Promise<number> {
  const { values } = parseOptions({
    args: argv,
    options: { duration: { type: 'string' }, rate: { type: 'string' }, log: { type: 'string' } },
    strict: true,
  });
  const durationS = positive(values.duration ?? '30', '--duration');
  const rate = positive(values.rate ?? '5', '--rate');
  const plan = planFor(rate, DEFAULT_CONFIG);

  const dataDir = mkdtempSync(join(tmpdir(), 'landfall-demo-'));
  const removeDataDir = () => rmSync(dataDir, { recursive: true, force: true });
  // The temporary directory goes however the demo ends. Ctrl-C (SIGINT), SIGTERM, SIGHUP, or a
  // reader that went away (EPIPE on stdout, e.g. `landfall demo | head`) stop it, also during
  // start-up: the service is closed once it has started and the directory removed. A second
  // signal exits at once; the 'exit' listener still removes the directory then (and after an
  // uncaught error), since those paths skip `finally`.
  let interrupted = false;
  let outputGone = false;
  const interrupt = () => {
    if (interrupted) process.exit(130);
    interrupted = true;
  };
  const onOutputError = (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE' && e.code !== 'ERR_STREAM_DESTROYED') throw e;
    outputGone = true;
    interrupted = true;
  };
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  for (const sig of signals) process.on(sig, interrupt);
  process.stdout.on('error', onOutputError);
  process.on('exit', removeDataDir);
  const out: Write = (s) => {
    if (!outputGone) write(s);
  };
  // The service's request log would scroll the table away: it goes to a file.
  const logFile = values.log ?? join(dataDir, 'service.log');
  const config: Config = { ...DEFAULT_CONFIG, port: 0, dataDir, logFile };
  let running: ServiceOnChain | undefined;
  let client: LandfallClient | undefined;
  let ran = false;
  try {
    out(
      `starting the local cluster (${config.localnet.validators} validators, ${config.localnet.slotMs} ms slots) and the service…\n` +
        `service log: ${values.log ?? 'in the temporary data directory, removed at the end (--log FILE keeps it)'}\n`,
    );
    running = await startServiceOnChain(config);
    const { service: svc, localnet: net } = running;
    if (!interrupted) {
      client = new LandfallClient({ url: svc.url, apiKey: svc.accounts.createAccount('demo', plan).api_key });
      ran = true;
      // The config names no chain: the service runs on the embedded cluster started for it.
      await new Demo(svc, net!, client, { durationS, rate, plan, write: out, tty, stopped: () => interrupted }).run();
    }
    // Stopped by Ctrl-C while it ran: a normal end. Stopped before it ran: 128 + SIGINT.
    return ran ? 0 : 130;
  } finally {
    client?.close();
    await running?.close();
    removeDataDir();
    for (const sig of signals) process.removeListener(sig, interrupt);
    process.stdout.removeListener('error', onOutputError);
    process.removeListener('exit', removeDataDir);
  }
}

function positive(v: string, name: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new LandfallError('CONFIG_INVALID', `${name} must be a positive number, got ${JSON.stringify(v)}`);
  return n;
}

/** The cheapest plan whose send rate covers `rate`, so the demo is not rate limited. */
function planFor(rate: number, config: Config): PlanName {
  const plan = PLAN_ORDER.find((p) => config.plans[p].maxTps >= rate);
  if (!plan) {
    const top = config.plans.whale.maxTps;
    throw new LandfallError('CONFIG_INVALID', `--rate ${rate} is above the top plan's ${top} tx/s`);
  }
  return plan;
}

/** Nearest-rank percentile of an ascending array. */
function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

type State = 'sent' | 'confirmed' | 'failed' | 'expired';

/** What the stream and the send responses have said so far. */
class Tally {
  submitted = 0;
  rejected = 0;
  lastRejection = '';
  private readonly states = new Map<string, State>();
  private readonly latencies: number[] = [];

  /** The service took it. The stream's `sent` may already have arrived, or even its outcome. */
  accepted(signature: string): void {
    if (!this.states.has(signature)) this.states.set(signature, 'sent');
  }

  record(r: StatusRecord): void {
    const state: State = r.expired ? 'expired' : r.status;
    if (state === 'confirmed' && this.states.get(r.signature) !== 'confirmed' && r.latency_ms !== null) this.latencies.push(r.latency_ms);
    this.states.set(r.signature, state);
  }

  /** Signatures whose last known state is `state`, in the order they were first seen. */
  inState(state: State): string[] {
    return [...this.states].filter(([, s]) => s === state).map(([sig]) => sig);
  }

  counts(): Record<State, number> {
    const c = { sent: 0, confirmed: 0, failed: 0, expired: 0 };
    for (const s of this.states.values()) c[s]++;
    return c;
  }

  /** Latency percentiles of the confirmed ones, in ms. */
  latency(): { p50: number | null; p90: number | null; p99: number | null; n: number } {
    const sorted = [...this.latencies].sort((a, b) => a - b);
    return { p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99), n: sorted.length };
  }
}

interface DemoOptions {
  durationS: number;
  rate: number;
  plan: PlanName;
  write: Write;
  tty: boolean;
  /** True once the demo was asked to stop (Ctrl-C, SIGTERM, the output closed). */
  stopped: () => boolean;
}

class Demo {
  private readonly tally = new Tally();
  private readonly payer = Keypair.generate();
  private readonly connection: Connection;
  private readonly events: string[] = [];
  private readonly inFlightSends = new Set<Promise<void>>();
  private blockhash = '';
  private startedAt = 0;
  private sequence = 0;
  private drawnLines = 0;

  constructor(
    private readonly svc: Service,
    /** The embedded cluster the demo runs on (its config names no chain), where it funds its payer and sets faults. */
    private readonly net: Localnet,
    private readonly client: LandfallClient,
    private readonly o: DemoOptions,
  ) {
    this.connection = new Connection(svc.rpcUrl, 'confirmed');
  }

  async run(): Promise<void> {
    const net = this.net;
    await net.airdrop(this.payer.publicKey, BigInt(PAYER_SOL * LAMPORTS_PER_SOL));
    const stream = this.client.stream();
    stream.onStatus((r) => this.tally.record(r));
    await stream.ready;
    await this.refreshBlockhash();
    const tip = await this.client.tipInfo();
    const plan = this.svc.config.plans[this.o.plan];
    this.o.write(
      `service ${this.svc.url}  account on the ${this.o.plan} plan (${plan.maxTps} tx/s, min tip ${tip.minTipBp} BP = ${tip.minTipLamports} lamports)\n` +
        `sending ${this.o.rate} tx/s for ${this.o.durationS} s (max_retries ${MAX_RETRIES}); 1 in ${FAIL_EVERY} transfers more than its payer holds\n`,
    );

    this.startedAt = Date.now();
    const durationMs = this.o.durationS * 1000;
    const stopped = this.o.stopped;
    const timers = [
      setInterval(() => this.sendOne(), 1000 / this.o.rate),
      setInterval(() => void this.refreshBlockhash(), BLOCKHASH_REFRESH_MS),
      setInterval(() => this.draw(), this.o.tty ? 1000 / TTY_FPS : 1000),
      ...FAULT_PLAN.map((f) =>
        setTimeout(() => {
          net.setFault(f.validator, f.fault).then(
            () => this.event(`fault: ${f.validator} ${f.label}`),
            (e: Error) => this.event(`fault on ${f.validator} not applied: ${e.message}`),
          );
        }, f.at * durationMs),
      ),
    ];
    if (this.o.tty) this.o.write('\x1b[?25l'); // hide the cursor while redrawing
    try {
      await until(() => stopped() || Date.now() - this.startedAt >= durationMs);
      clearInterval(timers[0]);
      await Promise.all(this.inFlightSends);
      this.event('sending stopped; waiting for transactions in flight');
      const settleBy = Date.now() + SETTLE_MS;
      await until(() => stopped() || this.tally.counts().sent === 0 || Date.now() >= settleBy);
    } finally {
      for (const t of timers) clearInterval(t);
      this.draw();
      if (this.o.tty) this.o.write('\x1b[?25h');
    }
    this.o.write(`final: ${this.line()}\n`);
    if (!stopped()) await this.showTraces();
  }

  /** What happened to a few of the failed and expired ones, from their delivery traces. */
  private async showTraces(): Promise<void> {
    const names = new Map(this.net.validators.map((v) => [v.identity, v.name]));
    for (const state of ['failed', 'expired'] as const) {
      for (const sig of this.tally.inState(state).slice(0, TRACES_SHOWN)) {
        try {
          this.o.write(describeTrace(await this.client.trace(sig), names));
        } catch (e) {
          this.o.write(`trace ${sig}: ${e instanceof LandfallApiError ? `${e.status} ${e.reason}` : (e as Error).message}\n`);
        }
      }
    }
  }

  private async refreshBlockhash(): Promise<void> {
    try {
      this.blockhash = (await this.connection.getLatestBlockhash('confirmed')).blockhash;
    } catch (e) {
      this.event(`blockhash refresh failed: ${(e as Error).message}`);
    }
  }

  /** Build, tip, sign and send the next transaction; the outcome arrives on the stream. */
  private sendOne(): void {
    const n = ++this.sequence;
    const from = this.payer.publicKey;
    const transfer =
      n % FAIL_EVERY === 0
        ? SystemProgram.transfer({ fromPubkey: from, toPubkey: Keypair.generate().publicKey, lamports: 2 * PAYER_SOL * LAMPORTS_PER_SOL })
        : SystemProgram.transfer({ fromPubkey: from, toPubkey: from, lamports: n }); // a unique signature each time
    const p = (async () => {
      const tx = await addTip(new Transaction({ feePayer: from, recentBlockhash: this.blockhash }).add(transfer), { client: this.client });
      tx.sign(this.payer);
      this.tally.submitted++;
      try {
        this.tally.accepted((await this.client.send(tx, { maxRetries: MAX_RETRIES })).signature);
      } catch (e) {
        this.tally.rejected++;
        this.tally.lastRejection = e instanceof LandfallApiError ? `${e.status} ${e.message}: ${e.reason}` : (e as Error).message;
      }
    })();
    this.inFlightSends.add(p);
    void p.finally(() => this.inFlightSends.delete(p));
  }

  private elapsed(): string {
    return `${((Date.now() - this.startedAt) / 1000).toFixed(1)} s`;
  }

  private event(text: string): void {
    this.events.push(`${this.elapsed()}  ${text}`);
    if (!this.o.tty) this.o.write(`[${this.elapsed()}] ${text}\n`);
  }

  private draw(): void {
    if (!this.o.tty) return this.o.write(`[${this.elapsed()}] ${this.line()}\n`);
    const c = this.tally.counts();
    const l = this.tally.latency();
    const ms = (v: number | null) => (v === null ? '-' : `${v} ms`);
    const color = (code: number, s: string | number) => `\x1b[${code}m${s}\x1b[0m`;
    const lines = [
      `\x1b[1mlandfall demo\x1b[0m  ${this.elapsed()}  (sending ${this.o.rate} tx/s for ${this.o.durationS} s)`,
      `  submitted   ${this.tally.submitted}   rejected by the API ${this.tally.rejected}${this.tally.lastRejection ? ` (last: ${this.tally.lastRejection})` : ''}`,
      `  sent        ${color(33, c.sent)}   in flight`,
      `  confirmed   ${color(32, c.confirmed)}`,
      `  failed      ${color(31, c.failed)}   landed with an execution error (1 in ${FAIL_EVERY} by design)`,
      `  expired     ${color(35, c.expired)}`,
      `  landing     ${landingRate(c)}   of settled transactions reached a block`,
      `  latency     p50 ${ms(l.p50)}   p90 ${ms(l.p90)}   p99 ${ms(l.p99)}   (${l.n} confirmed, measured by the service)`,
      ...this.events.slice(-4).map((e) => `  ${e}`),
    ];
    // Move up over the previous frame and rewrite each line in place.
    const up = this.drawnLines > 0 ? `\x1b[${this.drawnLines}F` : '';
    this.o.write(up + lines.map((x) => `\x1b[2K${x}\n`).join(''));
    this.drawnLines = lines.length;
  }

  /** One line of counts, for logs and non-terminal output. */
  private line(): string {
    const c = this.tally.counts();
    const l = this.tally.latency();
    const ms = (v: number | null) => (v === null ? '-' : String(v));
    return (
      `submitted=${this.tally.submitted} sent=${c.sent} confirmed=${c.confirmed} failed=${c.failed} expired=${c.expired} ` +
      `rejected=${this.tally.rejected} landing=${landingRate(c)} p50_ms=${ms(l.p50)} p90_ms=${ms(l.p90)} p99_ms=${ms(l.p99)}`
    );
  }
}

/**
 * A delivery trace in a few lines: its cause, then one line per round (the first send is round
 * 0): the slot and each attempt as "validator outcome", with the close code when there is one.
 *
 *   trace 3Hv…Tq: failed on chain in slot 412: Error processing Instruction 0: custom program error: 0x1 (6 attempts)
 *     round 0  slot 409  +0.4 ms  v1 written, v2 pending
 */
export function describeTrace(t: DeliveryTrace, names: Map<string, string>): string {
  const lines = [`trace ${t.signature.slice(0, 8)}…: ${t.cause} (${t.attempts.length} attempts${t.attempts_omitted > 0 ? `, ${t.attempts_omitted} more not kept` : ''})`];
  const rounds = new Map<number, DeliveryTrace['attempts']>();
  for (const a of t.attempts) rounds.set(a.round, [...(rounds.get(a.round) ?? []), a]);
  for (const [round, attempts] of rounds) {
    const who = (a: DeliveryTrace['attempts'][number]) => (a.leader !== null ? (names.get(a.leader) ?? a.leader.slice(0, 8)) : (a.tpu ?? '?'));
    const what = attempts.map((a) => `${who(a)} ${a.outcome}${a.close_code !== null ? ` (code ${a.close_code})` : ''}`);
    lines.push(`  round ${round}  slot ${attempts[0]!.slot}  +${(attempts[0]!.at_us / 1000).toFixed(1)} ms  ${what.join(', ')}`);
  }
  return lines.map((l) => `${l}\n`).join('');
}

/** Landed (confirmed or failed: both are in a block) over settled (landed or expired). */
function landingRate(c: Record<State, number>): string {
  const settled = c.confirmed + c.failed + c.expired;
  return settled === 0 ? '-' : `${(((c.confirmed + c.failed) / settled) * 100).toFixed(1)}%`;
}

/** Resolve once `done()` holds, checking every 50 ms. */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((r) => setTimeout(r, 50));
}

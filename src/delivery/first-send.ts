/**
 * The first send of a transaction, from the thread that took the request: no hand-off, no
 * message to another thread. The native QUIC client is asynchronous (its writes run on its own
 * tokio threads, shared by every thread of the process), and `sendFirst` resolves as soon as
 * one leader has the stream written, so a dead or slow leader never delays the answer; the other
 * targets' outcomes are counted natively and drained by the engine for the metrics.
 *
 * Targets come from the thread's chain view (`Route`, computed once per slot): the current and
 * next leader(s); if none accepted the stream, the leaders after those get one more try; if that
 * fails too, `DeliveryError` (→ 500 Delivery failed).
 *
 * Bounded: both rounds together answer within `FIRST_SEND_BUDGET_MS` whatever the leaders do
 * (dead, silent, handshaking, backed up), and the native deadline makes "not written" final —
 * a transaction answered 500 is not on any leader's connection and never will be. A stale chain
 * view is refused before anything is sent (`StaleViewError`): its leaders and addresses may
 * belong to a chain that is gone.
 */
import { Histogram } from 'prom-client';
import { TpuTargets, type QuicClient } from '../native.js';
import type { ChainViewReplica, Leader, Route } from './chain-view.js';
import { DeliveryError, type FirstSend, type SendOptions } from './delivery.js';
import { outcomeOf, packAttempt, type PackedAttempts } from './trace.js';

/**
 * The whole first send, both rounds, answers within this (ms), whatever the leaders do. A warm
 * write takes tens of µs; what the budget bounds is a handshake (a reconnect after a failure, a
 * leader not yet prewarmed) and a leader connection that stopped taking streams. A trading bot
 * would rather hear "500, retry" at once than wait seconds for a leader that may be gone.
 */
export const FIRST_SEND_BUDGET_MS = 500;

/** The first round (current and next leader) may use this much of the budget (ms); the second round gets the rest. */
export const FIRST_ROUND_MS = 300;

/** The chain view is stale: the service does not know who leads now, or where. */
export class StaleViewError extends DeliveryError {
  constructor(
    readonly slot: number,
    readonly slotAgeMs: number,
  ) {
    super(
      Number.isFinite(slotAgeMs)
        ? `chain view stale: last slot ${slot} was seen ${Math.round(slotAgeMs)} ms ago; the chain node is unreachable, not advancing, or being resynced`
        : 'chain view stale: no slot seen yet; the service has not synced with the chain',
    );
  }
}

/**
 * Bucket bounds of the service-added latency histogram, seconds: 10 µs to 100 ms, tens of µs apart
 * below 100 µs, where a send on a warm connection falls, so a p50 or p99 read from the buckets
 * says which side of 100 µs and 1 ms it is on (the bench's targets), not just "under 300 µs".
 */
export const SERVICE_LATENCY_BUCKETS = [
  0.00001, 0.00002, 0.00003, 0.00005, 0.000075, 0.0001, 0.00015, 0.0002, 0.0003, 0.0005, 0.00075, 0.001, 0.0015, 0.002, 0.003, 0.005, 0.01, 0.02,
  0.05, 0.1,
];

/** Request received → first QUIC stream written (a prom-client histogram in no registry). */
export function serviceLatencyHistogram(): Histogram {
  return new Histogram({
    name: 'landfall_service_latency_seconds',
    help: 'Service-added latency: request received to first QUIC stream written to a leader',
    buckets: SERVICE_LATENCY_BUCKETS,
    registers: [],
  });
}

/**
 * The native part of the service-added latency: the first send handed to the QUIC client → the
 * stream written (the QUIC thread's wake-up, a connection, the peer's stream credit). The rest,
 * request received → handed over, is the ingress thread's. Same buckets, no registry.
 */
export function nativeLatencyHistogram(): Histogram {
  return new Histogram({
    name: 'landfall_service_latency_native_seconds',
    help: "The native QUIC client's part of the service-added latency: first send handed to the QUIC client to first stream written",
    buckets: SERVICE_LATENCY_BUCKETS,
    registers: [],
  });
}

export function tpuTargets(leaders: Leader[]): string[] {
  const out: string[] = [];
  for (const l of leaders) if (l.tpuQuic) out.push(l.tpuQuic);
  return out;
}

export class FirstSender {
  readonly serviceLatency = serviceLatencyHistogram();
  readonly nativeLatency = nativeLatencyHistogram();
  /** Signatures sent in `sentSlot` (a resubmission within its slot is not resent). */
  private sentIn = new Set<string>();
  private sentSlot = -1;
  /**
   * Targets by route (a slot snapshot's), built once, not per request: the texts (results name
   * targets by them) and the native handle `sendFirst` takes, parsed once (fast path: a call with
   * it copies no strings out of V8 and parses no address).
   */
  private readonly targets = new WeakMap<Leader[], { texts: string[]; handle: TpuTargets }>();

  constructor(
    private readonly client: QuicClient,
    private readonly view: ChainViewReplica,
  ) {}

  async send(signature: string, wire: Buffer, options: SendOptions, receivedAt: bigint): Promise<FirstSend> {
    const route = this.view.route(options.antiMev);
    const slot = this.view.currentSlot();
    if (route === null || !this.view.synced()) {
      throw new StaleViewError(slot, this.view.slotAgeMs());
    }
    if (slot !== this.sentSlot) {
      this.sentSlot = slot;
      this.sentIn = new Set();
    }
    if (this.sentIn.has(signature)) return { slot, reached: 0, held: false };
    if (route.hold) return { slot, reached: 0, held: true };
    const started = performance.now();
    const failures: string[] = [];
    const attempts: PackedAttempts = [];
    if (
      !(await this.round(route.first, wire, receivedAt, FIRST_ROUND_MS, failures, attempts)) &&
      !(await this.round(route.next, wire, receivedAt, FIRST_SEND_BUDGET_MS - (performance.now() - started), failures, attempts))
    ) {
      const tried = failures.length > 0 ? failures.join(', ') : describe(route) || 'no leader with a TPU QUIC address';
      throw new DeliveryError(`no leader accepted the transaction within ${FIRST_SEND_BUDGET_MS} ms (tried ${tried})`);
    }
    this.sentIn.add(signature);
    return { slot, reached: 1, held: false, attempts };
  }

  /**
   * One round to `leaders` with `budgetMs` to write to one of them; true once one has the
   * stream written. The targets that failed go to `failures` as "address (reason)"; every
   * target's attempt to `attempts` (for the delivery trace: from the result `sendFirst` gives
   * anyway — the targets neither written nor failed by then are `pending`).
   */
  private async round(leaders: Leader[], wire: Buffer, receivedAt: bigint, budgetMs: number, failures: string[], attempts: PackedAttempts): Promise<boolean> {
    let cached = this.targets.get(leaders);
    if (cached === undefined) {
      const texts = tpuTargets(leaders);
      this.targets.set(leaders, (cached = { texts, handle: new TpuTargets(texts) }));
    }
    const targets = cached.texts;
    if (targets.length === 0 || budgetMs < 1) return false;
    const t0 = process.hrtime.bigint();
    const r = await this.client.sendFirst(cached.handle, wire, Math.floor(budgetMs));
    const sinceUs = Number(t0 - receivedAt) / 1000;
    for (const f of r.failures) {
      const reason = f.reason ?? 'other';
      packAttempt(attempts, f.target, outcomeOf(reason, f.code ?? null), f.code ?? null, sinceUs + f.elapsedUs, reason);
    }
    if (r.target !== null) packAttempt(attempts, r.target, 'written', null, sinceUs + r.elapsedUs);
    if (r.failures.length + (r.target === null ? 0 : 1) < targets.length) {
      for (const t of targets) if (t !== r.target && !r.failures.some((f) => f.target === t)) packAttempt(attempts, t, 'pending', null, sinceUs);
    }
    if (r.target === null) {
      for (const f of r.failures) failures.push(`${f.target} (${f.reason ?? 'failed'})`);
      return false;
    }
    this.serviceLatency.observe(sinceUs / 1e6 + r.elapsedUs / 1e6);
    this.nativeLatency.observe(r.elapsedUs / 1e6);
    return true;
  }
}

function describe(route: Route): string {
  return [...route.first, ...route.next].map((l) => l.tpuQuic ?? l.identity).join(', ');
}

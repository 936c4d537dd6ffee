/**
 * The first send of a transaction, from the thread that took the request: no hand-off, no
 * message to another thread. The native QUIC client is asynchronous (its writes run on its own
 * tokio threads, shared by every thread of the process), and `sendFirstRoute` (both rounds, one
 * call) resolves as soon as one leader has the stream written, so a dead or slow leader never
 * delays the answer; the other targets' outcomes are counted natively and drained by the engine
 * for the metrics.
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
import { sendOutcomeReasons, TpuTargets, type QuicClient } from '../native.js';
import type { ChainViewReplica, Leader, Route } from './chain-view.js';
import { DeliveryError, type EarlySend, type FirstSend, type ReadyRoute, type RouteTargets, type SendOptions } from './delivery.js';
import { pushPacked, type PackedAttempts } from './trace.js';

/** The send failure reasons by the index `sendFirstRoute` gives them. */
const REASONS = sendOutcomeReasons();

/** Numbers per attempt in `sendFirstRoute`'s result (after its two latencies). */
const RESULT_STRIDE = 5;

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
   * Targets by route (a slot snapshot's), built once, not per request: the texts (the attempts
   * name targets by them) and the native handle `sendFirstRoute` takes, parsed once (a call with
   * it copies no strings out of V8 and parses no address).
   */
  private readonly targets = new WeakMap<Leader[], RouteTargets>();
  /** `readyFor`'s answer by route, for the slot it was made in. */
  private readonly readies = new WeakMap<Route, EarlySend>();

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
    if (this.sentThisSlot(slot).has(signature)) return { slot, reached: 0, held: false };
    if (route.hold) return { slot, reached: 0, held: true };
    // Both rounds in one native call (`sendFirstRoute`, native/src/quic/first_rounds.rs): round 1
    // to `first` within FIRST_ROUND_MS, round 2 to `next` with the rest of the budget only if
    // round 1 wrote to nobody. It resolves with numbers (or the failure text): the attempts
    // become `PackedAttempts` here, the names put in from lists this thread holds.
    const ready = this.readyFor(route, slot);
    const sinceUs = Number(process.hrtime.bigint() - receivedAt) / 1000;
    const r = await this.client.sendFirstRoute(ready.first.handle, ready.next.handle, wire, FIRST_ROUND_MS, FIRST_SEND_BUDGET_MS, sinceUs);
    return this.settle(signature, ready, r);
  }

  /**
   * What a send made inside the send's one native call (`inspectAdmitKeySend`) goes to, or null
   * when it cannot be made there and must go through `send`: no route or a stale view (`send`
   * throws `StaleViewError`), a route held for anti-MEV (`send` answers held).
   */
  ready(options: SendOptions): EarlySend | null {
    const route = this.view.route(options.antiMev);
    if (route === null || route.hold || !this.view.synced()) return null;
    return this.readyFor(route, this.view.currentSlot());
  }

  /** `route` in `slot` with its targets and the client: one object per route and slot, not per request (it is never changed). */
  private readyFor(route: Route, slot: number): EarlySend {
    let ready = this.readies.get(route);
    if (ready === undefined || ready.slot !== slot) {
      ready = { client: this.client, route, slot, first: this.route(route.first), next: this.route(route.next) };
      this.readies.set(route, ready);
    }
    return ready;
  }

  /** A send the one call made to `ready`'s route, settled as `send` settles its own. */
  async sent(signature: string, ready: ReadyRoute, sent: Promise<Float64Array | string>): Promise<FirstSend> {
    return this.settle(signature, ready, await sent);
  }

  /** Signatures sent in `slot` (a new set when the slot moved on). */
  private sentThisSlot(slot: number): Set<string> {
    if (slot !== this.sentSlot) {
      this.sentSlot = slot;
      this.sentIn = new Set();
    }
    return this.sentIn;
  }

  /** `sendFirstRoute`'s answer `r` for `ready`'s route: the latencies observed, the attempts named, or `DeliveryError`. */
  private settle(signature: string, ready: ReadyRoute, r: Float64Array | string): FirstSend {
    const { first, next, slot } = ready;
    if (typeof r === 'string') {
      const tried = r !== '' ? r : describe(ready.route) || 'no leader with a TPU QUIC address';
      throw new DeliveryError(`no leader accepted the transaction within ${FIRST_SEND_BUDGET_MS} ms (tried ${tried})`);
    }
    this.serviceLatency.observe(r[0]! / 1e6);
    this.nativeLatency.observe(r[1]! / 1e6);
    // Into the newest slot's set (a send that settles after the slot moved on joins the newer one, as ever).
    (slot > this.sentSlot ? this.sentThisSlot(slot) : this.sentIn).add(signature);
    const attempts: PackedAttempts = [];
    const n = first.texts.length;
    for (let i = 2; i + RESULT_STRIDE <= r.length; i += RESULT_STRIDE) {
      const t = r[i]!;
      const reason = r[i + 4]!;
      pushPacked(attempts, t < n ? first.texts[t]! : next.texts[t - n]!, r[i + 1]!, r[i + 2]!, r[i + 3]!, reason < 0 ? '' : REASONS[reason]!);
    }
    return { slot, reached: 1, held: false, attempts };
  }

  /** A route's targets (those leaders with a TPU QUIC address): texts and native handle, built once per route. */
  private route(leaders: Leader[]): RouteTargets {
    let cached = this.targets.get(leaders);
    if (cached === undefined) {
      const texts = tpuTargets(leaders);
      this.targets.set(leaders, (cached = { texts, handle: new TpuTargets(texts) }));
    }
    return cached;
  }
}

function describe(route: Route): string {
  return [...route.first, ...route.next].map((l) => l.tpuQuic ?? l.identity).join(', ');
}

/**
 * Per-account budgets across nodes: demand-weighted shares (issue 13, part 5).
 *
 * Why this scheme: the hot path must never wait on NATS, so a node can only ever take from its
 * own native bucket. Each node's bucket of account a holds share w of the plan's rate and burst,
 *
 *     w_self = max(d_self, ε) / Σ_live max(d_j, ε)        ε = EPSILON × rate
 *
 * where d_j is the tokens node j was asked for (granted or refused) over the last second. The
 * shares of the live nodes add up to 1, so their rates add up to the plan's; a node alone gets
 * d / (d + (n−1)·ε) ≈ 99 % and an idle node a trickle. Every node reports its demand every
 * TICK_MS on core NATS (`lf.demand.<node>`, fire and forget: a lost report only delays a
 * re-balance) and recomputes its weights from the latest reports. Token leasing with CAS was
 * the alternative: it puts a NATS round trip in front of every refill, which the rule above
 * forbids, and NATS counters would put one in front of every take.
 *
 * Shares are leases (issue 32): a node cut off from NATS (it still serves its clients) and the
 * nodes that stop hearing it must agree on what it may use without talking. A peer silent for
 * STALE_MS is no longer weighed by demand, but it is not forgotten either: the live nodes keep a
 * slice of 1 / known nodes *reserved* for it until LEASE_MS (+ MARGIN_MS) after they last heard
 * it, and split the rest by demand. A node that stops hearing its own reports back (NATS down,
 * or it is cut off) uses at most that slice ("local share"): from STALE_MS − MARGIN_MS the least
 * of its share and the slice (it may hold more than the slice and must give it up before the
 * others count it as reserved), from STALE_MS + 3 × MARGIN_MS the slice (the others reserve it by
 * then), and from LEASE_MS − MARGIN_MS nothing more (a weight of ~0: one token of burst, then
 * 0.01/s) until NATS is back — the others may hand its slice out again from LEASE_MS + MARGIN_MS.
 * Through any partition, either side, the sum of the shares in use stays ≤ the plan's. The clocks
 * are in src/cluster/timing.ts.
 *
 * Layers: `ShareTable` (pure: reports in, weights out) ← `DemandMeter` (drains the limiters'
 * demand counters) ← `BudgetSharer` (the timer, NATS, and applying weights to the buckets).
 */
import { accountSlot, accountSlotCount, accountSlotKey } from '../native.js';
import { QUERY, SEND, type BudgetShares } from '../accounts/budget-shares.js';
import { queryTps, type PlanTable } from '../accounts/plans.js';
import { RateLimiter } from '../accounts/rate-limiter.js';
import type { AccountRecord } from '../store/store.js';
import type { NatsConnection } from '@nats-io/transport-node';
import { SHARE_LEASE_MS, SHARE_MARGIN_MS, SHARE_STALE_MS } from './timing.js';

/** ε as a fraction of a budget's rate: the demand an idle node is counted with. */
export const EPSILON = 0.01;
/** How often a node reports its demand and re-balances, ms. */
export const TICK_MS = 200;
/** A peer whose last report is older than this is not live (its slice is reserved); own reports older → local share. */
export const STALE_MS = SHARE_STALE_MS;
/** The slack on each side of a share's hand-over. */
export const MARGIN_MS = SHARE_MARGIN_MS;
/** A silent peer's slice stays reserved this long after it was last heard; a cut-off node uses its slice this long. */
export const LEASE_MS = SHARE_LEASE_MS;
/** Peers seen within this long before NATS was last heard count as known nodes (the slice's divisor). */
export const KNOWN_MS = LEASE_MS;
/** The weight of a node past its lease: nothing (the buckets keep a token of burst and 0.01/s). */
const NOTHING = 0;
/** Demand is measured over the last second: this many ticks. */
const WINDOW_TICKS = Math.round(1000 / TICK_MS);
/**
 * A live peer not heard for longer than this (three report periods) is *aging*: while one is,
 * no node raises its own weight (it may lower it). Raising it would weigh this node's newer
 * demand against that peer's last known one, and the peer, which may not hear this node either,
 * does the same against this node's: their weights can then add up to more than 1. Measured in
 * the split test (a | b + c) on a loaded machine: 36–42 sends admitted a second in the first
 * three seconds of the split against the plan's 30, 125 % over two seconds, before this rule.
 */
export const FRESH_MS = 3 * TICK_MS;
/** A weight is re-applied to the buckets only when it moves by more than this fraction. */
const REWEIGH_THRESHOLD = 0.01;

export type BudgetMode = 'shared' | 'local-share';
/** Tokens asked for over the last second: [send, query]. */
export type Demand = [number, number];

/** What a node publishes on `lf.demand.<node>`: accounts with any demand over the last second. */
export interface DemandReport {
  node: string;
  accounts: Record<string, Demand>;
}

interface Peer {
  /** Local time the latest report arrived (never the sender's clock: no skew). */
  at: number;
  accounts: Map<string, Demand>;
}

/** The demand reports seen, and the weights that follow from them. Pure: time is passed in. */
export class ShareTable {
  private readonly peers = new Map<string, Peer>();
  /** When this node last heard its own report back through NATS. */
  private lastEcho = -Infinity;
  /** Nodes known from elsewhere (the leases), counted for the local share. */
  private knownHint = 1;

  constructor(readonly self: string) {}

  /** Record a report (this node's own, echoed by NATS, proves the round trip works). */
  observe(report: DemandReport, now: number): void {
    if (report.node === this.self) {
      this.lastEcho = now;
      return;
    }
    this.peers.set(report.node, { at: now, accounts: new Map(Object.entries(report.accounts)) });
  }

  /**
   * Nodes known to be up from another source (the live leases), including this one: counted for
   * the local share, and as idle nodes while their first demand report has not arrived.
   */
  hintKnownNodes(n: number): void {
    this.knownHint = Math.max(1, n);
  }

  mode(now: number): BudgetMode {
    return now - this.lastEcho <= STALE_MS - MARGIN_MS ? 'shared' : 'local-share';
  }

  /** Whether peer `p` is weighed by its demand (heard within STALE_MS + MARGIN_MS). */
  private live(p: Peer, now: number): boolean {
    return now - p.at <= STALE_MS + MARGIN_MS;
  }

  /** Whether silent peer `p` still holds its reserved slice. */
  private reserved(p: Peer, now: number): boolean {
    return !this.live(p, now) && now - p.at <= LEASE_MS + MARGIN_MS;
  }

  /** This node and the peers weighed by their demand, sorted. */
  liveNodes(now: number): string[] {
    const live = [this.self];
    for (const [name, p] of this.peers) if (this.live(p, now)) live.push(name);
    return live.sort();
  }

  /** Silent peers whose slice is still reserved. */
  private reservedCount(now: number): number {
    let n = 0;
    for (const p of this.peers.values()) if (this.reserved(p, now)) n++;
    return n;
  }

  /**
   * This node's weight while it does not hear its own reports (see the file's comment), given the
   * weight it holds now (`held`; undefined: none of its own, the default weight applies).
   */
  private localShare(now: number, held: number | undefined): number {
    const slice = 1 / this.knownNodes(now);
    const silent = now - this.lastEcho;
    // Never heard at all (started without NATS): no share was ever handed out to anyone else
    // for this node to give back; the leases' count is all it knows.
    if (this.lastEcho === -Infinity) return slice;
    if (silent > LEASE_MS - MARGIN_MS) return NOTHING;
    if (silent <= STALE_MS + 3 * MARGIN_MS && held !== undefined) return Math.min(held, slice);
    return slice;
  }

  /**
   * Nodes counted for the local share: this one and the peers heard within KNOWN_MS of the last
   * time NATS worked (frozen while it is down, so a long outage does not shrink the divisor).
   */
  knownNodes(now: number): number {
    const since = Math.min(now, this.lastEcho) - KNOWN_MS;
    let n = 1;
    for (const p of this.peers.values()) if (p.at >= since) n++;
    return Math.max(n, this.knownHint);
  }

  /**
   * This node's share of one budget of an account.
   * @param demand what this node was asked for over the last second
   * @param rate the budget's rate (tokens/s), for ε
   * @param held the weight this node applies now (for the hand-over when it stops hearing NATS)
   */
  weight(account: string, budget: number, demand: number, rate: number, now: number, held?: number): number {
    if (this.mode(now) === 'local-share') return this.localShare(now, held);
    const eps = EPSILON * rate;
    const mine = Math.max(demand, eps);
    let sum = mine;
    let live = 1;
    let reserved = 0;
    let aging = false;
    for (const p of this.peers.values()) {
      if (this.reserved(p, now)) reserved++;
      if (!this.live(p, now)) continue;
      live++;
      if (now - p.at > FRESH_MS) aging = true;
      sum += Math.max(p.accounts.get(account)?.[budget] ?? 0, eps);
    }
    // Nodes the leases know to be up but not heard from yet (just started) count as idle.
    const share = mine / (sum + Math.max(0, this.knownHint - live - reserved) * eps);
    // What the silent nodes may still be using is not handed out.
    const w = reserved === 0 ? share : share * Math.max(0, 1 - reserved / this.knownNodes(now));
    return aging && held !== undefined ? Math.min(w, held) : w;
  }

  /** The share of an account nobody has asked for: ε / (n·ε) = 1 / (live + reserved) nodes, or the local share. */
  defaultWeight(now: number): number {
    if (this.mode(now) === 'local-share') return this.localShare(now, undefined);
    return 1 / Math.max(this.liveNodes(now).length + this.reservedCount(now), this.knownHint);
  }

  /** Accounts live peers report demand for. */
  peerAccounts(now: number): Set<string> {
    const out = new Set<string>();
    for (const p of this.peers.values()) if (this.live(p, now)) for (const a of p.accounts.keys()) out.add(a);
    return out;
  }

  /** Drop peers whose reserved slice ended while NATS works (a departed node stops counting). */
  forgetGone(now: number): void {
    if (this.mode(now) !== 'shared') return;
    for (const [name, p] of this.peers) if (now - p.at > LEASE_MS + MARGIN_MS) this.peers.delete(name);
  }
}

/**
 * This node's demand per account over the last second, from the limiters' counters
 * (`BudgetShares.addDemand`, every thread), drained once per tick into a ring of WINDOW_TICKS.
 */
export class DemandMeter {
  /** Per account slot index: WINDOW_TICKS send counts then WINDOW_TICKS query counts. */
  private readonly rings = new Map<number, Float64Array>();
  private tick = 0;

  constructor(private readonly shares: BudgetShares) {}

  /** Drain the counters; returns the demand over the last second of every account that has any. */
  sample(): Map<number, Demand> {
    const slot = this.tick++ % WINDOW_TICKS;
    const out = new Map<number, Demand>();
    const n = Math.min(accountSlotCount(), this.shares.accounts);
    for (let i = 0; i < n; i++) {
      const send = this.shares.takeDemand(i, SEND);
      const query = this.shares.takeDemand(i, QUERY);
      let ring = this.rings.get(i);
      if (!ring) {
        if (send === 0 && query === 0) continue;
        ring = new Float64Array(2 * WINDOW_TICKS);
        this.rings.set(i, ring);
      }
      ring[slot] = send;
      ring[WINDOW_TICKS + slot] = query;
      let s = 0;
      let q = 0;
      for (let k = 0; k < WINDOW_TICKS; k++) {
        s += ring[k]!;
        q += ring[WINDOW_TICKS + k]!;
      }
      if (s === 0 && q === 0) this.rings.delete(i);
      else out.set(i, [s, q]);
    }
    return out;
  }
}

/** The two things the sharer needs from the cluster's NATS link. */
export interface ShareLink {
  readonly up: boolean;
  publish(subject: string, data: Uint8Array): void;
  /** Subscribe; returns the unsubscribe. `onData` is told the subject each message came on. */
  subscribe(subject: string, onData: (data: Uint8Array, subject: string) => void): () => void;
}

/** A `ShareLink` over a NATS connection; `up` is the cluster link's view of it. */
export function natsShareLink(nc: NatsConnection, up: () => boolean): ShareLink {
  return {
    get up() {
      return up();
    },
    publish: (subject, data) => nc.publish(subject, data),
    subscribe(subject, onData) {
      const sub = nc.subscribe(subject, {
        callback: (err, msg) => {
          if (err === null) onData(msg.data, msg.subject);
        },
      });
      return () => sub.unsubscribe();
    },
  };
}

export interface BudgetSharerOptions {
  node: string;
  link: ShareLink;
  shares: BudgetShares;
  plans: PlanTable;
  /** The account's record in the local store (for its plan), or undefined. */
  account(id: string): AccountRecord | undefined;
  /** Reported problems (a malformed report): never thrown. */
  log?: (msg: string) => void;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Runs the shares on the main thread: every TICK_MS drains the demand, publishes this node's
 * report, recomputes every weight and applies the ones that moved to the process-wide buckets.
 */
export class BudgetSharer {
  readonly table: ShareTable;
  private readonly meter: DemandMeter;
  /** The main thread's own handle on the buckets (same slots as every thread's limiter). */
  private readonly limiter: RateLimiter;
  /** Weights applied, per account id: [send, query]. */
  private readonly applied = new Map<string, Demand>();
  /** This node's demand as of its last report. */
  private reported = new Map<string, Demand>();
  private timer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;

  constructor(private readonly opts: BudgetSharerOptions) {
    this.table = new ShareTable(opts.node);
    this.meter = new DemandMeter(opts.shares);
    this.limiter = new RateLimiter(opts.plans);
  }

  start(): void {
    this.unsubscribe = this.opts.link.subscribe('lf.demand.*', (data, subject) => this.receive(data, Date.now(), subject));
    this.tick(Date.now());
    this.timer = setInterval(() => this.tick(Date.now()), TICK_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  mode(): BudgetMode {
    return this.table.mode(Date.now());
  }

  /**
   * A report from NATS; a malformed one, or one whose node is not the node of the subject it
   * came on (`lf.demand.<node>`: another node's demand claimed), is logged and ignored.
   */
  receive(data: Uint8Array, now: number, subject?: string): void {
    let report: DemandReport;
    try {
      report = JSON.parse(decoder.decode(data)) as DemandReport;
      if (typeof report?.node !== 'string' || typeof report.accounts !== 'object' || report.accounts === null) throw new Error('not a demand report');
      if (subject !== undefined && subject !== `lf.demand.${report.node}`) throw new Error(`node ${JSON.stringify(report.node.slice(0, 64))} is not the node of its subject ${subject}`);
    } catch (e) {
      this.opts.log?.(`cluster: ignoring a malformed demand report: ${(e as Error).message}`);
      return;
    }
    this.table.observe(report, now);
  }

  /** One round: measure, report, re-balance. Public for tests that drive time themselves. */
  tick(now: number): void {
    const demand = new Map<string, Demand>();
    for (const [index, d] of this.meter.sample()) {
      const id = accountSlotKey(index);
      if (id !== null) demand.set(id, d);
    }
    if (this.opts.link.up) {
      const report: DemandReport = { node: this.opts.node, accounts: Object.fromEntries(demand) };
      this.opts.link.publish(`lf.demand.${this.opts.node}`, encoder.encode(JSON.stringify(report)));
    }
    this.table.forgetGone(now);
    this.opts.shares.setDefaultWeight(this.table.defaultWeight(now));
    // Weigh this node's demand as the others see it: as of its previous report, exactly as
    // stale as theirs. With its fresh demand against their older reports, every node would
    // believe itself alone for a report period whenever demand appears everywhere at once.
    const mine = this.reported;
    this.reported = demand;
    const ids = new Set([...this.applied.keys(), ...mine.keys(), ...this.table.peerAccounts(now)]);
    for (const id of ids) this.rebalance(id, mine.get(id) ?? [0, 0], now);
  }

  private rebalance(id: string, demand: Demand, now: number): void {
    const a = this.opts.account(id);
    if (!a) return; // not mirrored here yet: it has the default share until it is
    const plan = this.opts.plans[a.plan];
    const old = this.applied.get(id);
    const ws = this.table.weight(id, SEND, demand[SEND], plan.maxTps, now, old?.[SEND]);
    const wq = this.table.weight(id, QUERY, demand[QUERY], queryTps(plan), now, old?.[QUERY]);
    if (old && !moved(old[SEND], ws) && !moved(old[QUERY], wq)) return;
    const index = accountSlot(id);
    const stored: Demand = [this.opts.shares.setWeight(index, SEND, ws), this.opts.shares.setWeight(index, QUERY, wq)];
    this.applied.set(id, stored);
    this.limiter.reweigh(a);
  }
}

const moved = (from: number, to: number): boolean => Math.abs(to - from) > REWEIGH_THRESHOLD * from;

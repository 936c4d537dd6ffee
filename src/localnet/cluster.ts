/**
 * The local cluster's core: validators, slot clock, leader schedule, ledger and the rule that
 * decides which transactions land. No RPC here; `index.ts` puts the JSON-RPC and WebSocket
 * servers in front of it.
 *
 * The inclusion rule is mainnet's without forwarding: a transaction lands only if it reached the
 * validator that leads the slot it arrived in. Because arrival times and slot boundaries never
 * line up exactly, a validator also accepts what arrives within `graceMs` of its leader window:
 * just before it, the transaction is held and executed when the window opens (as Agave's banking
 * stage holds packets for an imminent leader slot); just after it, it still lands in the
 * validator's last block. Either way a transaction lands in a block of the validator that
 * received it. Anything else sent to a non-leader is dropped and logged as such.
 *
 * Every stream a validator's QUIC server completes is counted first (`arrivals`: per validator,
 * and whether it came while the validator led, within the grace). In sink mode that count is
 * all: nothing arriving over QUIC is decoded, logged or executed, so a benchmark measures the
 * sender, not LiteSVM sharing its cores. The clock, schedule, blockhashes, RPC and PubSub run as
 * usual (blocks are empty), so a service syncs with a sink exactly as with an executing cluster.
 */
import { performance } from 'node:perf_hooks';
import { LandfallError } from '../errors.js';
import { LAMPORTS_PER_SIGNATURE, LEADER_SLOTS } from './constants.js';
import { checkFault, checkFaults, type Fault } from './faults.js';
import { deriveKeypair, randomClusterSeed, type Keypair } from './keys.js';
import { Ledger, type ExecuteResult, type TxRecord } from './ledger.js';
import { ReceiveLog, type Receipt } from './receive-log.js';
import { LeaderSchedule } from './schedule.js';
import { SlotClock } from './slot-clock.js';
import { decodeTransaction, DecodeError, isBase58Of, type DecodedTransaction } from './transaction.js';
import { base58Decode } from '../native.js';
import { Validator, type ServerLimits, type ValidatorInfo } from './validator.js';
import { checkLink, Links, type LinkSettings, type LinkStats } from './link.js';
import { BlockSpace, checkLoad, DEFAULT_BLOCK_COMPUTE_UNITS, drawDemand, priceAndCost, type LoadSettings, type ResolvedLoad } from './block-space.js';
import { competingTransaction } from './faucet.js';
import type { ReceivedTransaction } from './quic.js';

export interface ClusterOptions {
  /** Number of validators (default 4). */
  validators?: number;
  /** Slot duration in ms (default 400, as mainnet). */
  slotMs?: number;
  /** Acceptance margin at leader-window boundaries, ms (default 20; less than half a slot). */
  graceMs?: number;
  /** Slots per epoch (default 432: mainnet's shape, 1000× shorter); a multiple of 4. */
  slotsPerEpoch?: number;
  /** Address the QUIC servers (and the RPC) bind to (default 127.0.0.1). */
  host?: string;
  /** Seed for every identity (validators, RPC node, faucet): same seed, same keys. Random if absent. */
  seed?: string;
  /** Initial faults, by validator name. */
  faults?: Record<string, Fault>;
  /**
   * The link to every validator (`link.ts`: delay, jitter, loss, bursts, bandwidth each way), as
   * an object or the string form `"rtt=80ms,jitter=10ms,loss=2%"`; a validator's `link` fault
   * refines it field by field. Default: clean (a relay that forwards at once). Not in sink mode.
   */
  link?: LinkSettings | string;
  /**
   * Passed to every validator's QUIC server. Their defaults are Agave's limits for an unstaked
   * peer (20 streams per 100 ms, 8 connections, 8 new connections a minute per IP); benchmarks,
   * whose every sender shares 127.0.0.1, raise them.
   */
  maxStreamsPer100ms?: number;
  maxConnectionsPerPeer?: number;
  maxConnectionsPerIpPerMinute?: number;
  /** Slots of blocks, statuses and receipts kept (default 4500: 30 minutes at 400 ms). */
  historySlots?: number;
  /**
   * Sink mode (default false): validators count what arrives over QUIC (`arrivals`) and do
   * nothing else with it, so nothing sent to them lands (airdrops and RPC simulation still
   * execute). See the module comment.
   */
  sink?: boolean;
  /** Compute units a block holds (default 48 M, Agave's); transactions are taken by compute-unit price (`block-space.ts`). */
  blockComputeUnits?: number;
  /** Competing transactions filling blocks in the background (default none); `setLoad` changes it while running. */
  load?: LoadSettings;
}

type LimitOption = 'maxStreamsPer100ms' | 'maxConnectionsPerPeer' | 'maxConnectionsPerIpPerMinute';

export type ResolvedClusterOptions = Required<Omit<ClusterOptions, 'seed' | 'faults' | 'link' | 'load' | LimitOption>> & {
  seed: string;
  faults: Record<string, Fault>;
  link: LinkSettings;
  load: ResolvedLoad | null;
  limits: ServerLimits;
};

/** Lamports the faucet starts with: 1M SOL, below 2^53 so every balance is an exact JSON number. */
const FAUCET_LAMPORTS = 1_000_000_000_000_000n;

/** Payers of the competing load, and what each gets from the faucet (10,000 SOL: hours of fees at any price here). */
const COMPETITOR_PAYERS = 16;
const COMPETITOR_LAMPORTS = 10_000_000_000_000;

/** Slots whose block space is kept (late arrivals go into recent blocks; readers look back a little). */
const BLOCK_SPACE_KEPT_SLOTS = 64;

/** Largest cluster: far past any test's or benchmark's need, and a typo (400) binds no hundreds of sockets. */
const MAX_VALIDATORS = 64;

function integerIn(name: string, value: number | undefined, fallback: number, min: number, max: number): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new LandfallError('CONFIG_INVALID', `localnet ${name} must be an integer from ${min} to ${max} (got ${String(value)})`);
  }
  return v;
}

/** Validate options once, with a clear error per field. */
export function resolveClusterOptions(o: ClusterOptions): ResolvedClusterOptions {
  const validators = integerIn('validators', o.validators, 4, 1, MAX_VALIDATORS);
  const slotMs = integerIn('slotMs', o.slotMs, 400, 10, 60_000);
  const graceMs = integerIn('graceMs', o.graceMs, Math.min(20, Math.floor(slotMs / 4)), 0, Math.floor((slotMs - 1) / 2));
  const slotsPerEpoch = integerIn('slotsPerEpoch', o.slotsPerEpoch, 432, LEADER_SLOTS * validators, 432_000);
  if (slotsPerEpoch % LEADER_SLOTS !== 0) {
    throw new LandfallError('CONFIG_INVALID', `localnet slotsPerEpoch must be a multiple of ${LEADER_SLOTS} (got ${slotsPerEpoch})`);
  }
  const historySlots = integerIn('historySlots', o.historySlots, 4500, 200, 10_000_000);
  if (o.sink !== undefined && typeof o.sink !== 'boolean') {
    throw new LandfallError('CONFIG_INVALID', `localnet sink must be true or false (got ${String(o.sink)})`);
  }
  const names = Array.from({ length: validators }, (_, i) => validatorName(i));
  return {
    validators,
    slotMs,
    graceMs,
    slotsPerEpoch,
    historySlots,
    sink: o.sink ?? false,
    host: o.host ?? '127.0.0.1',
    seed: o.seed ?? randomClusterSeed(),
    faults: checkFaults('localnet faults', o.faults ?? {}, names),
    link: checkLink('localnet link', o.link ?? {}),
    blockComputeUnits: integerIn('blockComputeUnits', o.blockComputeUnits, DEFAULT_BLOCK_COMPUTE_UNITS, 1000, 1_000_000_000),
    load: o.load === undefined ? null : checkLoad('localnet load', o.load),
    // The QUIC server checks their ranges itself and names the bad one.
    limits: {
      ...(o.maxStreamsPer100ms !== undefined && { maxStreamsPer100ms: o.maxStreamsPer100ms }),
      ...(o.maxConnectionsPerPeer !== undefined && { maxConnectionsPerPeer: o.maxConnectionsPerPeer }),
      ...(o.maxConnectionsPerIpPerMinute !== undefined && { maxConnectionsPerIpPerMinute: o.maxConnectionsPerIpPerMinute }),
    },
  };
}

export function validatorName(index: number): string {
  return `v${index + 1}`;
}

/** What the cluster reports as it runs (the RPC and WebSocket layers listen). */
export interface ClusterListener {
  /**
   * A slot began (the newest block before it is now confirmed, the one 32 slots further back
   * finalized). `produced` false: its leader skips it, it will have no block.
   */
  slot?(slot: number, produced: boolean): void;
  /** A leader accepted a transaction (before executing it). */
  received?(signature: string, slot: number): void;
  /** A transaction landed, in `record.slot`: the current slot, or an ended one whose leader received it in time. */
  landed?(record: TxRecord): void;
}

/** What one validator's QUIC server delivered, counted before anything looks at the bytes. */
export interface Arrivals {
  /** Transactions (completed streams) received. */
  received: number;
  /** Of those, received while the validator led the slot, or within the grace at its window's edges. */
  atLeader: number;
  /** Their bytes. */
  bytes: number;
}

export function emptyArrivals(): Arrivals {
  return { received: 0, atLeader: 0, bytes: 0 };
}

interface Held {
  decoded: DecodedTransaction;
  receipt: Receipt;
}

export class Cluster {
  readonly schedule: LeaderSchedule;
  readonly ledger: Ledger;
  readonly validators: Validator[];
  readonly log: ReceiveLog;
  readonly faucet: Keypair;
  /** The RPC node's identity (it forwards `sendTransaction` over QUIC with it). */
  readonly rpcIdentity: Keypair;
  private readonly clock: SlotClock;
  private readonly held = new Map<number, Held[]>();
  private readonly listeners = new Set<ClusterListener>();
  /** Per validator index: what its server delivered (see `Arrivals`). */
  private readonly arrived: Arrivals[];
  private closed = false;
  /** The cluster-wide link now (`setLink` with no name). */
  private clusterLink: LinkSettings;
  /** Pending restores of timed `setLink`s. */
  private readonly timers = new Set<NodeJS.Timeout>();

  /** Every validator's link, in one worker thread (none in a sink cluster). */
  private readonly links: Links | null;
  /** Room used in the recent blocks (the current slot's and the last `BLOCK_SPACE_KEPT_SLOTS`). */
  private readonly space = new Map<number, BlockSpace>();
  /** The background competing load (null: none). */
  private load: ResolvedLoad | null;
  /** Its payers (funded when a load is first set) and a counter making each transaction distinct. */
  private competitors: Keypair[] = [];
  private competitorSink: Keypair | null = null;
  private competed = 0;
  /** Airdrops made while the current slot has no block (its leader skips it): land in the next block. */
  private readonly pendingAirdrops: DecodedTransaction[] = [];
  /** Resolvers waiting for a signature to land (`whenLanded`). */
  private readonly landWaiters = new Map<string, Array<() => void>>();
  /** A leader that starts its block late: when the current slot's block opens (performance.now()), and the timer. */
  private openAt = 0;
  private openTimer: NodeJS.Timeout | null = null;

  constructor(readonly opts: ResolvedClusterOptions) {
    this.clusterLink = opts.link;
    this.links = opts.sink ? null : new Links();
    this.load = null;
    this.faucet = deriveKeypair(opts.seed, 'faucet');
    this.rpcIdentity = deriveKeypair(opts.seed, 'rpc');
    this.validators = Array.from(
      { length: opts.validators },
      (_, i) =>
        new Validator(
          i,
          validatorName(i),
          deriveKeypair(opts.seed, `validator-${i}`),
          opts.host,
          opts.limits,
          (v, tx) => this.receive(v, tx),
          this.links,
        ),
    );
    this.schedule = new LeaderSchedule(
      this.validators.map((v) => v.identity),
      opts.slotsPerEpoch,
    );
    this.ledger = new Ledger({
      schedule: this.schedule,
      faucet: this.faucet,
      faucetLamports: FAUCET_LAMPORTS,
      historySlots: opts.historySlots,
    });
    this.log = new ReceiveLog(opts.historySlots);
    this.arrived = this.validators.map(() => emptyArrivals());
    this.space.set(0, new BlockSpace(opts.blockComputeUnits, [])); // genesis: slot 0's block
    this.clock = new SlotClock(opts.slotMs, (slot) => this.beginSlot(slot));
  }

  /** Bring every validator up in its initial fault state (down ones listen once, then close, so they own a port). */
  async start(): Promise<void> {
    try {
      for (const v of this.validators) await v.setClusterLink(this.opts.link);
      for (const v of this.validators) await v.setFault({});
      for (const v of this.validators) {
        const fault = this.opts.faults[v.name];
        if (fault) await v.setFault(fault);
      }
      if (this.opts.load) this.setLoad(this.opts.load);
    } catch (e) {
      await this.close();
      throw e;
    }
  }

  get slot(): number {
    return this.ledger.slot;
  }

  listen(l: ClusterListener): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }

  /** When slot `slot` begins by the schedule, in ms since the Unix epoch (the receipts' `arrivalMs` clock). */
  slotStartMs(slot: number): number {
    return this.clock.startOf(slot) + (Date.now() - performance.now());
  }

  leaderAt(slot: number): Validator {
    return this.validators[this.schedule.leaderIndexAt(slot)]!;
  }

  validator(name: string): Validator {
    const v = this.validators.find((x) => x.name === name);
    if (!v) {
      throw new LandfallError('CONFIG_INVALID', `no validator named '${name}' (validators: ${this.validators.map((x) => x.name).join(', ')})`);
    }
    return v;
  }

  infos(): ValidatorInfo[] {
    return this.validators.map((v) => v.info());
  }

  /** What validator `name` (or every validator, summed) received over QUIC; counts only grow. */
  arrivals(name?: string): Arrivals {
    if (name !== undefined) return { ...this.arrived[this.validator(name).index]! };
    const sum = emptyArrivals();
    for (const a of this.arrived) {
      sum.received += a.received;
      sum.atLeader += a.atLeader;
      sum.bytes += a.bytes;
    }
    return sum;
  }

  private beginSlot(slot: number): void {
    // The block that just ended takes the competing transactions that still fit, highest price first.
    this.closeBlock(slot - 1);
    const leaderValidator = this.leaderAt(slot);
    const produced = leaderValidator.faults.skipSlots !== true;
    this.ledger.beginSlot(slot, Date.now(), produced);
    this.log.prune(slot);
    for (const s of this.space.keys()) if (s < slot - BLOCK_SPACE_KEPT_SLOTS) this.space.delete(s);
    if (produced) {
      this.space.set(slot, new BlockSpace(this.opts.blockComputeUnits, this.load ? drawDemand(this.load, this.opts.slotMs) : []));
      for (const tx of this.pendingAirdrops.splice(0)) this.landAirdrop(tx);
    }
    for (const l of this.listeners) l.slot?.(slot, produced);
    const leader = leaderValidator.index;
    if (this.openTimer) clearTimeout(this.openTimer);
    this.openTimer = null;
    const late = produced ? (leaderValidator.faults.lateStartMs ?? 0) : 0;
    this.openAt = late > 0 ? this.clock.startOf(slot) + late : 0;
    if (late > 0) {
      // Its block starts late: what waits for it (and what arrives meanwhile) goes in when it opens.
      this.openTimer = setTimeout(() => {
        this.openTimer = null;
        this.openAt = 0;
        this.flushHeld(leader, slot);
      }, Math.max(0, this.openAt - performance.now()));
      this.openTimer.unref();
      return;
    }
    this.flushHeld(leader, slot);
  }

  /** Include what validator `leader` holds for its block at `slot` (highest compute-unit price first). */
  private flushHeld(leader: number, slot: number): void {
    const waiting = this.held.get(leader);
    if (!waiting) return;
    this.held.delete(leader);
    // A validator taken down since it buffered them lost them with everything else.
    const down = this.validators[leader]!.info().down;
    waiting.sort((a, b) => priceAndCost(b.decoded).price - priceAndCost(a.decoded).price);
    for (const h of waiting) {
      if (down) this.log.settle(h.receipt, 'rejected', { reason: 'the validator went down before its leader slot' });
      else this.include(h.decoded, h.receipt, slot);
    }
  }

  /** Execute the competing load's transactions that still fit in the block of `slot` (it is ending). */
  private closeBlock(slot: number): void {
    const space = this.space.get(slot);
    if (!space || !this.ledger.hasBlock(slot) || this.competitors.length === 0) return;
    const block = this.ledger.block(slot)!;
    const blockhash = base58Decode(block.blockhash);
    for (const c of space.closeWithDemand()) {
      const payer = this.competitors[this.competed % this.competitors.length]!;
      this.competed++;
      const wire = competingTransaction(payer, this.competitorSink!.publicKey, BigInt(1 + (this.competed % 1_000_000)), blockhash, c.computeUnits, c.price);
      try {
        const result = this.ledger.execute(decodeTransaction(wire), slot);
        if (result.kind === 'landed') this.announce(result.record);
      } catch {
        // A competitor that cannot be executed is demand that did not turn up.
      }
    }
  }

  /**
   * Set the background competing load (null or tps 0: none). Its payers are funded from the
   * faucet the first time. Applies from the next block.
   */
  setLoad(load: LoadSettings | null): void {
    const resolved = load === null ? null : checkLoad('setLoad', load);
    if (resolved && resolved.tps > 0 && this.competitors.length === 0) {
      this.competitorSink = deriveKeypair(this.opts.seed, 'competitor-sink');
      this.competitors = Array.from({ length: COMPETITOR_PAYERS }, (_, i) => deriveKeypair(this.opts.seed, `competitor-${i}`));
      this.airdrop(this.competitorSink.address, 1_000_000_000);
      for (const c of this.competitors) this.airdrop(c.address, COMPETITOR_LAMPORTS);
    }
    this.load = resolved && resolved.tps > 0 ? resolved : null;
  }

  /** The competing load now (null: none). */
  get competingLoad(): ResolvedLoad | null {
    return this.load;
  }

  /** The room used in the block of `slot` and its limit (undefined once it is older than a few slots). */
  blockSpace(slot: number): { used: number; limit: number } | undefined {
    const s = this.space.get(slot);
    return s ? { used: s.used, limit: s.limit } : undefined;
  }

  /**
   * A transaction arrived at `v` over QUIC. Runs on the event loop for every stream a server
   * completes, so it never throws: whatever goes wrong is logged against the receipt.
   */
  private receive(v: Validator, rx: ReceivedTransaction): void {
    if (this.closed) return;
    // The server stamps a stream's end as it completes: the link's delay towards the validator
    // was paid before (the relay held the datagrams), so this is when it arrives.
    const arrivalMs = rx.arrivalMs;
    const arrival = arrivalMs - (Date.now() - performance.now());
    const slot = this.clock.slotAt(arrival);
    const leads = (s: number): boolean => this.schedule.leaderIndexAt(s) === v.index;
    const grace = this.opts.graceMs;
    // The slot of v's whose block takes it: the arrival slot, else within the grace after v's
    // window (its last slot), else within the grace before it (its first slot).
    const target = [slot, this.clock.slotAt(arrival - grace), this.clock.slotAt(arrival + grace)].find(leads);
    const count = this.arrived[v.index]!;
    count.received++;
    count.bytes += rx.bytes.length;
    if (target !== undefined) count.atLeader++;
    // Sink: counted, and that is all (fast path: no decode, no receipt, no execution).
    if (this.opts.sink) return;
    const receipt: Receipt = {
      validator: v.name,
      signature: null,
      slot,
      wasLeader: leads(slot),
      arrivalMs,
      peer: rx.peer,
      remoteAddr: rx.remoteAddr,
      outcome: 'held',
    };
    let decoded: DecodedTransaction;
    try {
      decoded = decodeTransaction(rx.bytes);
    } catch (e) {
      receipt.outcome = 'rejected';
      receipt.reason = e instanceof DecodeError ? e.message : String(e);
      this.log.add(receipt);
      return;
    }
    receipt.signature = decoded.signature;
    if (target === undefined) {
      receipt.outcome = 'dropped-not-leader';
      this.log.add(receipt);
      return;
    }
    this.log.add(receipt);
    if (leads(this.slot) && this.openAt > 0 && performance.now() < this.openAt) {
      // v leads now but its block has not started yet (a late leader): it waits for it.
      let list = this.held.get(v.index);
      if (!list) this.held.set(v.index, (list = []));
      list.push({ decoded, receipt });
    } else if (leads(this.slot)) {
      this.include(decoded, receipt, this.slot);
    } else if (target < this.slot) {
      // It reached v in time, but v's window has closed since (a callback that waited for the
      // event loop, or the grace after the boundary): it goes into v's last block.
      this.include(decoded, receipt, target);
    } else {
      // v's window has not opened yet (the grace before it, or the boundary's tick is still
      // pending): hold it for v's first slot, as a leader-to-be buffers packets.
      let list = this.held.get(v.index);
      if (!list) this.held.set(v.index, (list = []));
      list.push({ decoded, receipt });
    }
  }

  /**
   * Execute an accepted transaction into the block of `slot` (a slot its validator leads) and
   * settle its receipt. A slot its leader skips takes nothing. A block without room for it (the
   * compute-unit limit, with the competing demand priced at or above it first) passes it to the
   * leader's next slot, and drops it after the leader's last.
   */
  private include(decoded: DecodedTransaction, receipt: Receipt, slot: number): void {
    if (!this.ledger.hasBlock(slot)) {
      this.log.settle(receipt, 'skipped', { reason: `the leader skipped slot ${slot}` });
      return;
    }
    const space = this.space.get(slot);
    const { price, cost, limit } = priceAndCost(decoded);
    if (space && !this.ledger.record(decoded.signature) && !space.fits(price, cost)) {
      const leader = this.schedule.leaderIndexAt(slot);
      const next = slot + 1;
      if (this.schedule.leaderIndexAt(next) !== leader) {
        this.log.settle(receipt, 'dropped-block-full', { reason: `no room at ${price} micro-lamports per CU in the leader's blocks (last: slot ${slot})` });
      } else if (next <= this.slot) {
        this.include(decoded, receipt, next);
      } else {
        let list = this.held.get(leader);
        if (!list) this.held.set(leader, (list = []));
        list.push({ decoded, receipt });
      }
      return;
    }
    // A copy of one that already landed (the next leader got it too) is no news to subscribers.
    if (!this.ledger.record(decoded.signature)) for (const l of this.listeners) l.received?.(decoded.signature, slot);
    let result: ExecuteResult;
    try {
      result = this.ledger.execute(decoded, slot);
    } catch (e) {
      this.log.settle(receipt, 'rejected', { reason: `execution failed: ${(e as Error).message}` });
      return;
    }
    switch (result.kind) {
      case 'landed':
        // Charged what it used, not what it asked for (Agave updates its cost tracker so).
        space?.take(cost - limit + Math.min(limit, result.record.computeUnitsConsumed));
        this.log.settle(receipt, 'included', { landedSlot: result.record.slot, failed: result.record.err !== null });
        this.announce(result.record);
        return;
      case 'duplicate':
        this.log.settle(receipt, 'duplicate', { landedSlot: result.record.slot });
        return;
      case 'rejected':
        this.log.settle(receipt, result.err.json === 'BlockhashNotFound' ? 'expired' : 'rejected', { reason: result.err.message });
    }
  }

  private announce(record: TxRecord): void {
    for (const l of this.listeners) l.landed?.(record);
    const waiters = this.landWaiters.get(record.signature);
    if (waiters) {
      this.landWaiters.delete(record.signature);
      for (const w of waiters) w();
    }
  }

  /** Resolves once `signature` has landed (at once if it has). */
  whenLanded(signature: string): Promise<void> {
    if (this.ledger.record(signature)) return Promise.resolve();
    return new Promise((resolve) => {
      let list = this.landWaiters.get(signature);
      if (!list) this.landWaiters.set(signature, (list = []));
      list.push(resolve);
    });
  }

  private landAirdrop(tx: DecodedTransaction): void {
    const result = this.ledger.execute(tx);
    if (result.kind === 'landed') {
      for (const l of this.listeners) l.received?.(result.record.signature, this.slot);
      this.announce(result.record);
    }
  }

  /**
   * Airdrop `lamports` to `address` from the faucet; lands in the current slot. Returns the
   * transaction's signature. Throws `CONFIG_INVALID` for a bad address or amount.
   */
  airdrop(address: string, lamports: number | bigint): string {
    if (typeof address !== 'string' || !isBase58Of(address, 32)) {
      throw new LandfallError('CONFIG_INVALID', `airdrop: '${String(address)}' is not a base58 public key`);
    }
    if (typeof lamports !== 'bigint' && !Number.isSafeInteger(lamports)) {
      throw new LandfallError('CONFIG_INVALID', `airdrop: lamports must be a whole number (got ${String(lamports)})`);
    }
    const amount = BigInt(lamports);
    const faucetBalance = this.ledger.account(this.faucet.address)?.lamports ?? 0n;
    if (amount <= 0n || amount + BigInt(LAMPORTS_PER_SIGNATURE) > faucetBalance) {
      throw new LandfallError('CONFIG_INVALID', `airdrop: lamports must be from 1 to ${faucetBalance - BigInt(LAMPORTS_PER_SIGNATURE)} (got ${amount})`);
    }
    if (!this.ledger.hasBlock(this.slot)) {
      // The current slot is being skipped: the faucet's transfer lands in the next block.
      const tx = this.ledger.airdropTransaction(address, amount);
      this.pendingAirdrops.push(tx);
      return tx.signature;
    }
    const result = this.ledger.airdrop(address, amount);
    if (result.kind === 'rejected') {
      throw new LandfallError('CONFIG_INVALID', `airdrop to ${address} refused: ${result.err.message}`);
    }
    if (result.kind === 'landed') {
      for (const l of this.listeners) l.received?.(result.record.signature, this.slot);
      this.announce(result.record);
    }
    return result.record.signature;
  }

  async setFault(name: string, fault: Fault): Promise<void> {
    const v = this.validator(name);
    await v.setFault(checkFault(`setFault ${name}`, fault));
  }

  /**
   * Set the link of validator `name` (its `link` fault, the rest of its faults kept), or with
   * `name` undefined the cluster's link for every validator (each one's own `link` still refines
   * it). With `forMs`, the previous setting comes back after that long (a loss burst, a slow
   * patch). Throws `CONFIG_INVALID` for a bad setting or name, or in a sink cluster.
   */
  async setLink(name: string | undefined, settings: LinkSettings | string, forMs?: number): Promise<void> {
    const link = checkLink(name === undefined ? 'setLink' : `setLink ${name}`, settings);
    if (forMs !== undefined && (!Number.isFinite(forMs) || forMs <= 0 || forMs > 3_600_000)) {
      throw new LandfallError('CONFIG_INVALID', `setLink: forMs must be from 1 to 3600000 ms (got ${String(forMs)})`);
    }
    let restore: () => Promise<void>;
    if (name === undefined) {
      const previous = this.clusterLink;
      this.clusterLink = link;
      await Promise.all(this.validators.map((v) => v.setClusterLink(link)));
      restore = async () => {
        if (this.clusterLink !== link) return; // changed again since: the later setting stands
        this.clusterLink = previous;
        await Promise.all(this.validators.map((v) => v.setClusterLink(previous)));
      };
    } else {
      const v = this.validator(name);
      const previous = v.faults;
      const next: Fault = { ...previous, link };
      await v.setFault(next);
      restore = async () => {
        if (v.faults !== next) return;
        await v.setFault(previous);
      };
    }
    if (forMs !== undefined) {
      const t = setTimeout(() => {
        this.timers.delete(t);
        if (!this.closed) restore().catch(() => undefined);
      }, forMs);
      t.unref();
      this.timers.add(t);
    }
  }

  /** The cluster-wide link settings now. */
  get link(): LinkSettings {
    return this.clusterLink;
  }

  /** The link's counters of validator `name` (null while it is down, or in a sink cluster). */
  linkStats(name: string): LinkStats | null {
    return this.validator(name).linkStats();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    if (this.openTimer) clearTimeout(this.openTimer);
    this.openTimer = null;
    this.landWaiters.clear();
    this.closed = true;
    this.clock.stop();
    this.held.clear();
    this.listeners.clear();
    await Promise.all(this.validators.map((v) => v.close()));
    await this.links?.close();
  }
}

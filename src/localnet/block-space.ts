/**
 * Full blocks: a compute-unit limit per block, transactions taken in order of compute-unit
 * price, and a background demand of competing transactions.
 *
 * What Agave does, roughly: the leader's scheduler takes buffered transactions in order of
 * priority — the fee it earns per unit of cost, which for transactions of one shape is the
 * compute-unit price set by `SetComputeUnitPrice` — and packs them while the block's cost
 * tracker has room (48 M CU per block). A transaction's cost at scheduling is what it *asks*
 * for: its `SetComputeUnitLimit` (else 200 k per instruction, at most 1.4 M) plus a cost per
 * signature and per write lock. What does not fit waits in the leader's buffer for its next slot;
 * when the leader's window ends it is gone (forwarding to the next leader is off on mainnet).
 *
 * Once a transaction has executed, the block is charged what it used rather than what it asked
 * for (Agave's cost tracker is updated with the actual units after execution): a block of plain
 * transfers holds thousands, as on mainnet.
 *
 * The model here keeps the cluster's rule that a transaction executes when it reaches the
 * leader (nothing else about landing changes when blocks are not full): each block starts with a
 * *demand* of competing transactions drawn for it (`CompetingLoad`: a rate, a price
 * distribution, a compute-unit size). A transaction arriving at price p fits if the competing
 * demand priced at p or more, plus what already went into the block, plus its own cost stays
 * within the limit — exactly the transactions a price-ordered packer would take ahead of it. The
competing transactions stand for programs that use what they ask for: they are charged their
whole `computeUnits`.
 * When the slot ends, the competing transactions that still fit are executed for real (signed
 * transfers from funded payers, through LiteSVM, with their compute-budget instructions and
 * fees), highest price first: they land in the block, visible to every reader, and the rest of
 * the demand is dropped. See docs/local-cluster.md for why the load executes rather than only
 * occupying room, and what is simplified.
 */
import { LandfallError } from '../errors.js';
import type { DecodedTransaction } from './transaction.js';

/** Agave's block limit (`MAX_BLOCK_UNITS`). */
export const DEFAULT_BLOCK_COMPUTE_UNITS = 48_000_000;
/** Compute units a transaction may ask for at most (`MAX_COMPUTE_UNIT_LIMIT`). */
export const MAX_COMPUTE_UNIT_LIMIT = 1_400_000;
/** Asked per instruction when no `SetComputeUnitLimit` is given. */
const DEFAULT_INSTRUCTION_COMPUTE_UNITS = 200_000;
/** Agave's cost model: per signature, per write lock. */
const SIGNATURE_COST = 720;
const WRITE_LOCK_COST = 300;

const COMPUTE_BUDGET_PROGRAM = 'ComputeBudget111111111111111111111111111111';

/**
 * The compute-unit price (micro-lamports per CU), the cost at scheduling of a transaction, and
 * the compute-unit limit inside that cost (replaced by the units used once it has executed).
 */
export function priceAndCost(decoded: DecodedTransaction): { price: number; cost: number; limit: number } {
  let limit: number | null = null;
  let price = 0;
  let budgetInstructions = 0;
  for (const ix of decoded.instructions) {
    if (decoded.staticKeys[ix.programIdIndex]?.address !== COMPUTE_BUDGET_PROGRAM) continue;
    budgetInstructions++;
    const view = Buffer.from(ix.data);
    if (ix.data[0] === 2 && ix.data.length >= 5) limit = view.readUInt32LE(1);
    if (ix.data[0] === 3 && ix.data.length >= 9) price = Number(view.readBigUInt64LE(1));
  }
  limit ??= DEFAULT_INSTRUCTION_COMPUTE_UNITS * (decoded.instructions.length - budgetInstructions);
  limit = Math.min(limit, MAX_COMPUTE_UNIT_LIMIT);
  const h = decoded.header;
  const signatures = h.numRequiredSignatures;
  const writable = signatures - h.numReadonlySignedAccounts + (decoded.staticKeys.length - signatures - h.numReadonlyUnsignedAccounts);
  return { price, cost: limit + SIGNATURE_COST * signatures + WRITE_LOCK_COST * Math.max(0, writable), limit };
}

/** The background demand: who else wants block space, and at what price. */
export interface LoadSettings {
  /** Competing transactions per second (0: none). */
  tps: number;
  /** Their compute-unit prices, micro-lamports per CU: each draws one of these uniformly. */
  prices: number[];
  /** Compute units each asks for (default 1.4 M: a block holds about 34). */
  computeUnits?: number;
}

export interface ResolvedLoad {
  tps: number;
  prices: number[];
  computeUnits: number;
}

export function checkLoad(where: string, v: unknown): ResolvedLoad {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new LandfallError('CONFIG_INVALID', `${where} must be an object like {"tps": 100, "prices": [0, 1000, 100000]}`);
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!['tps', 'prices', 'computeUnits'].includes(k)) throw new LandfallError('CONFIG_INVALID', `${where}: unknown field '${k}' (known: tps, prices, computeUnits)`);
  }
  const tps = o.tps;
  if (typeof tps !== 'number' || !Number.isFinite(tps) || tps < 0 || tps > 100_000) throw new LandfallError('CONFIG_INVALID', `${where}.tps must be a number from 0 to 100000 (got ${JSON.stringify(tps)})`);
  const prices = o.prices ?? [0];
  if (!Array.isArray(prices) || prices.length === 0 || prices.some((p) => typeof p !== 'number' || !Number.isSafeInteger(p) || p < 0)) {
    throw new LandfallError('CONFIG_INVALID', `${where}.prices must be a non-empty list of whole micro-lamport prices (got ${JSON.stringify(prices)})`);
  }
  const cu = o.computeUnits ?? MAX_COMPUTE_UNIT_LIMIT;
  if (typeof cu !== 'number' || !Number.isInteger(cu) || cu < 1000 || cu > MAX_COMPUTE_UNIT_LIMIT) {
    throw new LandfallError('CONFIG_INVALID', `${where}.computeUnits must be an integer from 1000 to ${MAX_COMPUTE_UNIT_LIMIT} (got ${JSON.stringify(cu)})`);
  }
  return { tps, prices: prices as number[], computeUnits: cu };
}

/** One competing transaction of a block's demand. */
export interface Competitor {
  price: number;
  computeUnits: number;
}

/** The competing demand of one block, drawn when it starts (`count` ≈ tps × slot length). */
export function drawDemand(load: ResolvedLoad, slotMs: number, random: () => number = Math.random): Competitor[] {
  if (load.tps === 0) return [];
  const mean = (load.tps * slotMs) / 1000;
  const count = Math.floor(mean) + (random() < mean - Math.floor(mean) ? 1 : 0);
  const out: Competitor[] = [];
  for (let i = 0; i < count; i++) out.push({ price: load.prices[Math.floor(random() * load.prices.length)]!, computeUnits: load.computeUnits });
  // Highest price first: the order the packer takes them in.
  return out.sort((a, b) => b.price - a.price);
}

/** One block's room: its limit, what went in, and the competing demand priced ahead of a newcomer. */
export class BlockSpace {
  /** Cost of what went into the block (transactions that reached the leader; competitors at the end). */
  used = 0;

  constructor(
    readonly limit: number,
    /** Highest price first. */
    readonly demand: Competitor[],
  ) {}

  /** Compute units of competing demand priced at `price` or more (ties go ahead: they came first). */
  private demandAhead(price: number): number {
    let sum = 0;
    for (const c of this.demand) {
      if (c.price < price) break;
      sum += c.computeUnits;
    }
    return sum;
  }

  /** Would a price-ordered packer take a transaction of this price and cost into this block? */
  fits(price: number, cost: number): boolean {
    return Math.min(this.demandAhead(price), this.limit) + this.used + cost <= this.limit;
  }

  take(cost: number): void {
    this.used += cost;
  }

  /** The block is closing: the competitors that still fit, highest price first (their cost taken). */
  closeWithDemand(): Competitor[] {
    const out: Competitor[] = [];
    for (const c of this.demand) {
      if (this.used + c.computeUnits > this.limit) continue;
      this.used += c.computeUnits;
      out.push(c);
    }
    return out;
  }
}

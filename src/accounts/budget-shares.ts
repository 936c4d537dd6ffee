/**
 * Per-account budget shares of this node, process-wide (multi-node only).
 *
 * Why: when several nodes serve one account, each node's native bucket of that account must
 * hold only its share w of the plan's rate and burst (src/cluster/shares.ts computes w from the
 * nodes' demand). The buckets are process-wide, but every ingress thread's `RateLimiter`
 * (re)configures them itself when it first sees an account or its plan changes, so the weight
 * must be readable by every thread at that moment, without a message: a SharedArrayBuffer of
 * weights indexed like the buckets (2·accountSlot + SEND/QUERY). The same buffer carries the
 * demand counters the limiters add to (tokens asked for, granted or refused), which the main
 * thread drains every ~200 ms to report the node's demand.
 *
 * Single node: nothing is enabled, `budgetShares` stays null, and the limiter's only extra work
 * is one null check per take (no atomics, no weight reads).
 */

/** Index of the send budget within an account's pair (matches the bucket slot layout). */
export const SEND = 0;
/** Index of the query budget within an account's pair. */
export const QUERY = 1;

/** Weights are stored in parts per million (Int32, read and written with Atomics). */
const PPM = 1_000_000;

/** Bytes per account slot: 2 budgets × (weight + demand) × 4 bytes. */
const BYTES_PER_ACCOUNT = 16;
/** Trailing header: the default weight (ppm) of an account with no weight of its own. */
const HEADER_BYTES = 8;

const toPpm = (w: number): number => Math.min(PPM, Math.max(1, Math.round(w * PPM)));

export class BudgetShares {
  /** Weight per (account, budget) in ppm. */
  private readonly weights: Int32Array;
  /** Tokens asked for per (account, budget) since the last drain. */
  private readonly demand: Int32Array;
  /** [0]: default weight in ppm (0 = whole budget). */
  private readonly header: Int32Array;
  /** Account slots the buffer covers. */
  readonly accounts: number;

  /** @param buffer from `BudgetShares.allocate(accounts)` (or the main thread's, in a worker) */
  constructor(readonly buffer: SharedArrayBuffer) {
    this.accounts = (buffer.byteLength - HEADER_BYTES) / BYTES_PER_ACCOUNT;
    this.weights = new Int32Array(buffer, 0, 2 * this.accounts);
    this.demand = new Int32Array(buffer, 8 * this.accounts, 2 * this.accounts);
    this.header = new Int32Array(buffer, BYTES_PER_ACCOUNT * this.accounts, HEADER_BYTES / 4);
  }

  /** A zeroed buffer for `accounts` account slots (no weights set: every account has the whole budget). */
  static allocate(accounts: number): SharedArrayBuffer {
    return new SharedArrayBuffer(BYTES_PER_ACCOUNT * accounts + HEADER_BYTES);
  }

  /**
   * The weight (0, 1] of `budget` (SEND/QUERY) of the account at slot index `index`: its own,
   * else the default (the share of an account no node has asked for yet), else 1.
   */
  weight(index: number, budget: number): number {
    const ppm = Atomics.load(this.weights, 2 * index + budget) || Atomics.load(this.header, 0);
    return ppm === 0 ? 1 : ppm / PPM;
  }

  /** Set an account's weight; clamped to [1 ppm, 1]. Returns the weight stored. */
  setWeight(index: number, budget: number, w: number): number {
    const ppm = toPpm(w);
    Atomics.store(this.weights, 2 * index + budget, ppm);
    return ppm / PPM;
  }

  /** Set the weight of every account without one of its own. */
  setDefaultWeight(w: number): void {
    Atomics.store(this.header, 0, toPpm(w));
  }

  /** Count `n` tokens asked for (hot path, any thread). */
  addDemand(index: number, budget: number, n: number): void {
    Atomics.add(this.demand, 2 * index + budget, n);
  }

  /** Tokens asked for since the last call, and reset (one thread drains). */
  takeDemand(index: number, budget: number): number {
    return Atomics.exchange(this.demand, 2 * index + budget, 0);
  }
}

/**
 * This thread's view of the process's shares: null on a single node. Set once at start-up:
 * by the main thread (`enableBudgetShares`) before the ingress threads start, and by each
 * ingress thread from its `workerData` (`adoptBudgetShares`).
 */
export let budgetShares: BudgetShares | null = null;

/** Main thread, clustered: allocate the process's shares and return the buffer for the workers. */
export function enableBudgetShares(accounts: number): SharedArrayBuffer {
  if (budgetShares === null) budgetShares = new BudgetShares(BudgetShares.allocate(accounts));
  return budgetShares.buffer;
}

/** Ingress thread: use the main thread's shares (null = single node, nothing to do). */
export function adoptBudgetShares(buffer: SharedArrayBuffer | null | undefined): void {
  if (buffer) budgetShares = new BudgetShares(buffer);
}

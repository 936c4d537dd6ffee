/**
 * Priority-fee guidance from Landfall's own landings: the compute-unit price that a percentile of
 * the transactions Landfall saw land paid (`GET /v1/tip-floor` `priority_fee`), and a web3.js
 * `SetComputeUnitPrice` instruction of it (the `@solana/kit` one is in `kit.ts`).
 */
import { ComputeBudgetProgram, type TransactionInstruction } from '@solana/web3.js';
import type { LandfallClient } from './client.js';
import { TIP_PERCENTILES, TIP_WINDOWS, type TipPercentile, type TipWindowName } from './wire.js';

export interface PriorityFeeChoice {
  client: LandfallClient;
  /** Which percentile of the landed compute-unit prices (25, 50, 75, 95, 99; default 75). */
  percentile?: TipPercentile;
  /** Whose landings: `1m`, `10m` or `1h`. Default: the shortest window in which any landed. */
  window?: TipWindowName;
  /** Never less than this (micro-lamports per CU; default 0): the price when nothing landed. */
  minMicroLamports?: number | bigint;
  /**
   * Never more than this (micro-lamports per CU): a cap on what one spike (or one account's
   * poisoning of the guidance) can cost. Default {@link DEFAULT_MAX_MICRO_LAMPORTS}; pass a
   * larger number to allow more.
   */
  maxMicroLamports?: number | bigint;
}

/**
 * The default cap: 1,000,000 micro-lamports per CU, i.e. at most 0.0002 SOL of priority fee on a
 * 200,000-CU transaction (1,000 µL/CU × 1,000 CU = 1 lamport). Well above what a congested
 * mainnet slot usually asks of a bot, far below the 0.211 SOL one poisoned reading once cost.
 */
export const DEFAULT_MAX_MICRO_LAMPORTS = 1_000_000n;

/**
 * The compute-unit price to set, in micro-lamports per CU: the chosen percentile of what landed
 * through Landfall in the window, within `[minMicroLamports, maxMicroLamports]` (the cap is
 * {@link DEFAULT_MAX_MICRO_LAMPORTS} unless given).
 *
 * @example
 * const price = await priorityFee({ client, percentile: 75, window: '1m', maxMicroLamports: 200_000 });
 */
export async function priorityFee(o: PriorityFeeChoice): Promise<bigint> {
  const percentile = o.percentile ?? 75;
  if (!TIP_PERCENTILES.includes(percentile)) throw new TypeError(`priorityFee: percentile must be one of ${TIP_PERCENTILES.join(', ')}, got ${percentile}`);
  if (o.window !== undefined && !Object.hasOwn(TIP_WINDOWS, o.window)) {
    throw new TypeError(`priorityFee: window must be one of ${Object.keys(TIP_WINDOWS).join(', ')}, got ${o.window}`);
  }
  const floor = await o.client.tipFloor();
  const names = o.window !== undefined ? [o.window] : (Object.keys(TIP_WINDOWS) as TipWindowName[]);
  const seen = names.map((n) => floor.priority_fee[n].micro_lamports_per_cu).find((p) => p !== null);
  const min = BigInt(o.minMicroLamports ?? 0);
  let price = seen ? BigInt(seen[`p${percentile}`]) : 0n;
  if (price < min) price = min;
  const max = BigInt(o.maxMicroLamports ?? DEFAULT_MAX_MICRO_LAMPORTS);
  if (price > max) price = max;
  return price;
}

/**
 * A `SetComputeUnitPrice` instruction of {@link priorityFee}: put it in the transaction (once)
 * before signing, next to a `SetComputeUnitLimit` of what the transaction needs.
 *
 * @example
 * const tx = new Transaction({ feePayer, blockhash, lastValidBlockHeight })
 *   .add(await computeUnitPriceInstruction({ client, percentile: 75, maxMicroLamports: 200_000 }), swapIx);
 */
export async function computeUnitPriceInstruction(o: PriorityFeeChoice): Promise<TransactionInstruction> {
  return ComputeBudgetProgram.setComputeUnitPrice({ microLamports: await priorityFee(o) });
}

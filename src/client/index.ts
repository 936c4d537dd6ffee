/**
 * `landfall-client` (`packages/client`; in this repository also `landfall/client`): a typed
 * client of the Landfall API for Node.js bots.
 *
 * ```ts
 * import { LandfallClient, addTip } from 'landfall-client';
 * import { addTip as addTipKit } from 'landfall-client/kit';   // the @solana/kit flavour
 * ```
 *
 * It imports nothing of the server (no native addon, no LMDB; `test/unit/client-package.test.ts`
 * checks): `ws`, and `@solana/web3.js` as a peer dependency, the bot's own copy.
 */
export { LandfallClient, type LandfallClientOptions, type TipInfo, type TransactionInput, type WaitOptions } from './client.js';
export { StatusStream } from './stream.js';
export { addTip, type AddTipOptions } from './tip.js';
export { computeUnitPriceInstruction, DEFAULT_MAX_MICRO_LAMPORTS, priorityFee, type PriorityFeeChoice } from './priority-fee.js';
export type { TipChoice } from './tip-amount.js';
export type { KitTransaction } from './wire-tx.js';
export {
  isFinal,
  LandfallApiError,
  LandfallStreamError,
  LandfallTimeoutError,
  type AccountRecord,
  type BatchItem,
  type DeliveryAttempt,
  type DeliveryTrace,
  type LandingAnalytics,
  type LandingRow,
  type PostMortem,
  type PlanName,
  type SendOptions,
  type SendResult,
  type StatusRecord,
  type Percentiles,
  type TipFloorRecord,
  type PriorityFeeWindow,
  type TipFloorWindow,
  type TipPercentile,
  type TipWindowName,
  type TransactionPage,
} from './types.js';

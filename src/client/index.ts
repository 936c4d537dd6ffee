/**
 * `landfall/client`: a typed client of the Landfall API for Node.js bots.
 *
 * ```ts
 * import { LandfallClient, addTip } from 'landfall/client';
 * ```
 *
 * It loads nothing of the server (no native addon, no LMDB): `@solana/web3.js`, `ws` and the
 * plan defaults.
 */
export { LandfallClient, type LandfallClientOptions, type TipInfo, type TransactionInput, type WaitOptions } from './client.js';
export { StatusStream } from './stream.js';
export { addTip, type AddTipOptions } from './tip.js';
export {
  isFinal,
  LandfallApiError,
  LandfallStreamError,
  LandfallTimeoutError,
  type AccountRecord,
  type BatchItem,
  type DeliveryAttempt,
  type DeliveryTrace,
  type PlanName,
  type SendOptions,
  type SendResult,
  type StatusRecord,
  type Percentiles,
  type TipFloorRecord,
  type TipFloorWindow,
  type TipPercentile,
  type TipWindowName,
} from './types.js';

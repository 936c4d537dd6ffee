/**
 * `landfall/client`: a typed client of the Landfall API for Node.js bots.
 *
 * ```ts
 * import { LandfallClient, addTip } from 'landfall/client';
 * ```
 *
 * It imports nothing of the server (no native addon): only `@solana/web3.js` and `ws`.
 */
export { DEFAULT_LAMPORTS_PER_POINT, LandfallClient, type LandfallClientOptions, type TipInfo, type TransactionInput, type WaitOptions } from './client.js';
export { StatusStream } from './stream.js';
export { addTip, type AddTipOptions } from './tip.js';
export {
  isFinal,
  LandfallApiError,
  LandfallStreamError,
  LandfallTimeoutError,
  type AccountRecord,
  type BatchItem,
  type PlanName,
  type SendOptions,
  type SendResult,
  type StatusRecord,
} from './types.js';

/**
 * `@solana/kit` flavour of the tip (`landfall-client/kit`): the same choice of amount as the
 * web3.js `addTip`, as a kit instruction appended to a kit transaction message. Send the signed
 * transaction with `client.send(tx)` (it takes kit's `Transaction` as it is).
 *
 * ```ts
 * import { addTip } from 'landfall-client/kit';
 * const message = await addTip(pipe(createTransactionMessage({ version: 0 }), ...), { client });
 * const tx = await signTransactionMessageWithSigners(message);
 * await client.send(tx);
 * ```
 */
import {
  AccountRole,
  address,
  appendTransactionMessageInstruction,
  isTransactionSigner,
  type Address,
  type Instruction,
  type TransactionMessage,
  type TransactionMessageWithFeePayer,
  type TransactionSigner,
} from '@solana/kit';
import type { LandfallClient } from './client.js';
import { priorityFee, type PriorityFeeChoice } from './priority-fee.js';
import { tipAmount, type TipChoice } from './tip-amount.js';

const SYSTEM_PROGRAM = address('11111111111111111111111111111111');
const COMPUTE_BUDGET_PROGRAM = address('ComputeBudget111111111111111111111111111111');
/** The Compute Budget program's `SetComputeUnitPrice` instruction tag. */
const SET_COMPUTE_UNIT_PRICE = 3;
/** The System program's `Transfer` instruction index (u32 little-endian in its data). */
const SYSTEM_TRANSFER = 2;

export interface AddTipKitOptions extends TipChoice {
  /** Who pays the tip: a signer, or the address of one. Default: the message's fee payer. */
  payer?: TransactionSigner | Address;
}

/** A System transfer of `lamports` from `from` to `to`, as a kit instruction (the signer attached when given). */
function transferInstruction(from: TransactionSigner | Address, to: Address, lamports: bigint): Instruction {
  const data = new Uint8Array(12);
  const view = new DataView(data.buffer);
  view.setUint32(0, SYSTEM_TRANSFER, true);
  view.setBigUint64(4, lamports, true);
  const source = typeof from === 'string' ? { address: from, role: AccountRole.WRITABLE_SIGNER } : { address: from.address, role: AccountRole.WRITABLE_SIGNER, signer: from };
  return { programAddress: SYSTEM_PROGRAM, accounts: [source, { address: to, role: AccountRole.WRITABLE }], data };
}

/** Landfall's tip (the plan minimum, `lamports`, or a `percentile` of what landed) as a kit instruction from `payer`. */
export async function tipInstruction(client: LandfallClient, payer: TransactionSigner | Address, choice: Omit<TipChoice, 'client'> = {}): Promise<Instruction> {
  const lamports = await tipAmount({ client, ...choice });
  const { to, lamports: amount } = await client.tipTransfer({ ...(lamports !== undefined && { lamports }) });
  return transferInstruction(payer, address(to), amount);
}

/**
 * Append Landfall's tip to a kit transaction message (one with a fee payer), before it is
 * signed; returns the new message (kit messages are immutable). Paid by `payer`, or by the fee
 * payer (its signer travels with the message when it was set with `setTransactionMessageFeePayerSigner`).
 */
export async function addTip<T extends TransactionMessage & TransactionMessageWithFeePayer>(message: T, options: AddTipKitOptions) {
  const { client, payer, ...choice } = options;
  const feePayer = message.feePayer as { address: Address };
  const from = payer ?? (isTransactionSigner(feePayer) ? feePayer : message.feePayer.address);
  return appendTransactionMessageInstruction(await tipInstruction(client, from, choice), message);
}

/** A `SetComputeUnitPrice` instruction of Landfall's priority-fee guidance (see `priorityFee`), as a kit instruction. */
export async function computeUnitPriceInstruction(o: PriorityFeeChoice): Promise<Instruction> {
  const data = new Uint8Array(9);
  data[0] = SET_COMPUTE_UNIT_PRICE;
  new DataView(data.buffer).setBigUint64(1, await priorityFee(o), true);
  return { programAddress: COMPUTE_BUDGET_PROGRAM, data };
}

/**
 * `addTip`: append Landfall's tip to a web3.js transaction before it is signed.
 */
import {
  TransactionMessage,
  VersionedTransaction,
  type AddressLookupTableAccount,
  type PublicKey,
  type Transaction,
} from '@solana/web3.js';
import { tipAmount, type TipChoice } from './tip-amount.js';

export interface AddTipOptions extends TipChoice {
  /** Who pays the tip (a signer). Default: the transaction's fee payer. */
  payer?: PublicKey;
  /** The tables a v0 message loads addresses from; needed to rebuild it. */
  addressLookupTableAccounts?: AddressLookupTableAccount[];
}

/**
 * Add a tip transfer (see {@link LandfallClient.tipInstruction}) to `tx` and return the
 * transaction to sign. Sign **after** adding the tip: a new instruction changes the message,
 * so any earlier signature no longer verifies.
 *
 * - `Transaction` (legacy): the instruction is appended in place; the same object is returned.
 * - `VersionedTransaction`: a message cannot be edited, so it is decompiled, the instruction
 *   appended, and a new message of the same version compiled (with the same lookup tables for
 *   v0); a new, unsigned `VersionedTransaction` is returned. Landfall only counts a tip whose
 *   destination is a static account key, so a tip address that the tables would supply is an
 *   error here rather than a 402 later.
 *
 * @example
 * ```ts
 * const tx = new Transaction({ feePayer: payer.publicKey, blockhash, lastValidBlockHeight }).add(swapIx);
 * await addTip(tx, { client });
 * tx.sign(payer);
 * await client.send(tx);
 *
 * await addTip(tx, { client, percentile: 75 });   // what 75 % of recent landings tipped, at least the minimum
 *
 * const v0 = await addTip(new VersionedTransaction(messageV0), { client, addressLookupTableAccounts: [table] });
 * v0.sign([payer]);
 * await client.send(v0);
 * ```
 */
export async function addTip<T extends Transaction | VersionedTransaction>(tx: T, options: AddTipOptions): Promise<T> {
  const { client, addressLookupTableAccounts } = options;
  const lamports = await tipAmount(options);
  if (isLegacy(tx)) {
    const payer = options.payer ?? tx.feePayer;
    if (!payer) throw new TypeError('addTip: the transaction has no feePayer; set it or pass { payer }');
    return tx.add(await client.tipInstruction(payer, { lamports })) as T;
  }
  if (tx.message.addressTableLookups.length > 0 && !addressLookupTableAccounts) {
    throw new TypeError('addTip: this message loads addresses from lookup tables; pass { addressLookupTableAccounts } to rebuild it');
  }
  const tables = addressLookupTableAccounts ?? [];
  const message = TransactionMessage.decompile(tx.message, { addressLookupTableAccounts: tables });
  const ix = await client.tipInstruction(options.payer ?? message.payerKey, { lamports });
  message.instructions.push(ix);
  const compiled = tx.version === 'legacy' ? message.compileToLegacyMessage() : message.compileToV0Message(tables);
  const tip = ix.keys[1]!.pubkey;
  if (!compiled.staticAccountKeys.some((k) => k.equals(tip))) {
    throw new Error(`addTip: tip address ${tip.toBase58()} is in an address lookup table; Landfall only counts tips to static account keys`);
  }
  return new VersionedTransaction(compiled) as T;
}

/**
 * A legacy `Transaction` (it has no `version`; a `VersionedTransaction` always has one). Not
 * `instanceof`: the bot's transaction may come from another copy of web3.js than this module's.
 */
function isLegacy(tx: Transaction | VersionedTransaction): tx is Transaction {
  return !('version' in tx);
}

/**
 * `addTip`: append Landfall's tip to a web3.js transaction before it is signed.
 */
import {
  Transaction,
  TransactionMessage,
  VersionedTransaction,
  type AddressLookupTableAccount,
  type PublicKey,
} from '@solana/web3.js';
import { TIP_PERCENTILES, TIP_WINDOWS, type TipPercentile, type TipWindowName } from '../tracker/tip-floor.js';
import type { LandfallClient } from './client.js';

export interface AddTipOptions {
  client: LandfallClient;
  /** Who pays the tip (a signer). Default: the transaction's fee payer. */
  payer?: PublicKey;
  /** Tip more than the account's minimum. */
  lamports?: number | bigint;
  /**
   * Tip this percentile (25, 50, 75, 95, 99) of the tips that landed through Landfall
   * (`client.tipFloor()`), never less than the plan minimum; instead of `lamports`.
   */
  percentile?: TipPercentile;
  /**
   * Whose landings `percentile` reads: `1m`, `10m` or `1h`. Default: the shortest window in which
   * anything landed (the plan minimum when nothing did in the last hour).
   */
  window?: TipWindowName;
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
  if (tx instanceof Transaction) {
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
 * The tip `addTip` adds: `lamports` if given; for a `percentile`, that percentile of the chosen
 * window's landed tips, raised to the plan minimum; otherwise undefined (the plan minimum).
 */
async function tipAmount(o: AddTipOptions): Promise<number | bigint | undefined> {
  if (o.percentile === undefined) {
    if (o.window !== undefined) throw new TypeError('addTip: window needs a percentile');
    return o.lamports;
  }
  if (o.lamports !== undefined) throw new TypeError('addTip: give lamports or percentile, not both');
  if (!TIP_PERCENTILES.includes(o.percentile)) throw new TypeError(`addTip: percentile must be one of ${TIP_PERCENTILES.join(', ')}, got ${o.percentile}`);
  if (o.window !== undefined && !Object.hasOwn(TIP_WINDOWS, o.window)) {
    throw new TypeError(`addTip: window must be one of ${Object.keys(TIP_WINDOWS).join(', ')}, got ${o.window}`);
  }
  const [floor, info] = await Promise.all([o.client.tipFloor(), o.client.tipInfo()]);
  const names = o.window !== undefined ? [o.window] : (Object.keys(TIP_WINDOWS) as TipWindowName[]);
  const seen = names.map((n) => floor.windows[n].lamports).find((l) => l !== null);
  const observed = seen ? BigInt(seen[`p${o.percentile}`]) : 0n;
  // Never below the minimum: the service's (fresh, in the answer) nor the cached one
  // `tipInstruction` checks against (it only falls, so the cached one is the higher).
  const minimum = BigInt(floor.plan_minimum?.min_tip_lamports ?? 0);
  const floorMin = minimum > info.minTipLamports ? minimum : info.minTipLamports;
  return observed > floorMin ? observed : floorMin;
}

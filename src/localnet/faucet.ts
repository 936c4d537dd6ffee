/**
 * The cluster's faucet: airdrops are real System transfers signed by the faucet keypair, so they
 * land in a slot, carry a signature, show up in `getTransaction` and notify subscribers like any
 * other transaction — the way `solana-test-validator`'s faucet works.
 */
import {
  getCompiledTransactionMessageEncoder,
  getTransactionEncoder,
  type Address,
  type Blockhash,
  type Transaction,
} from '@solana/kit';
import type { Keypair } from './keys.js';

const SYSTEM_PROGRAM = '11111111111111111111111111111111' as Address;
const COMPUTE_BUDGET_PROGRAM = 'ComputeBudget111111111111111111111111111111' as Address;

/** SystemInstruction::Transfer and ComputeBudgetInstruction::SetComputeUnitLimit tags. */
const SYSTEM_TRANSFER = 2;
const SET_COMPUTE_UNIT_LIMIT = 2;

/** Compute units an airdrop asks for: a System transfer needs 150; the rest is headroom. */
const AIRDROP_CU_BASE = 10_000;

const messageEncoder = getCompiledTransactionMessageEncoder();
const txEncoder = getTransactionEncoder();

/**
 * Wire bytes of a transfer of `lamports` from the faucet to `to`, valid with `blockhash`.
 *
 * `sequence` sets the compute-unit limit to `AIRDROP_CU_BASE + sequence`: two airdrops of the
 * same amount to the same address in one slot would otherwise be the same transaction (same
 * signature), and the second would be dropped as a duplicate. The limit does not change the fee
 * (no compute-unit price is set).
 */
export function airdropTransaction(
  faucet: Keypair,
  to: string,
  lamports: bigint,
  blockhash: string,
  sequence: number,
): Uint8Array {
  const transfer = new Uint8Array(12);
  const transferView = new DataView(transfer.buffer);
  transferView.setUint32(0, SYSTEM_TRANSFER, true);
  transferView.setBigUint64(4, lamports, true);
  const limit = new Uint8Array(5);
  limit[0] = SET_COMPUTE_UNIT_LIMIT;
  new DataView(limit.buffer).setUint32(1, AIRDROP_CU_BASE + (sequence % 1_000_000), true);
  const messageBytes = messageEncoder.encode({
    version: 'legacy',
    header: { numSignerAccounts: 1, numReadonlySignerAccounts: 0, numReadonlyNonSignerAccounts: 2 },
    staticAccounts: [faucet.address as Address, to as Address, SYSTEM_PROGRAM, COMPUTE_BUDGET_PROGRAM],
    lifetimeToken: blockhash as Blockhash,
    instructions: [
      { programAddressIndex: 3, data: limit },
      { programAddressIndex: 2, accountIndices: [0, 1], data: transfer },
    ],
  });
  const signature = faucet.sign(Uint8Array.from(messageBytes));
  // kit brands message bytes and signatures; these are exactly what the brands stand for.
  return Uint8Array.from(txEncoder.encode({ messageBytes, signatures: { [faucet.address]: signature } } as unknown as Transaction));
}

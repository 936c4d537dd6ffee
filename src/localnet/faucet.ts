/**
 * The cluster's faucet: airdrops are real System transfers signed by the faucet keypair, so they
 * land in a slot, carry a signature, show up in `getTransaction` and notify subscribers like any
 * other transaction — the way `solana-test-validator`'s faucet works.
 */
import { base58Decode } from '../native.js';
import type { Keypair } from './keys.js';

const SYSTEM_PROGRAM = base58Decode('11111111111111111111111111111111');
const COMPUTE_BUDGET_PROGRAM = base58Decode('ComputeBudget111111111111111111111111111111');

/** SystemInstruction::Transfer and ComputeBudgetInstruction::SetComputeUnitLimit tags. */
const SYSTEM_TRANSFER = 2;
const SET_COMPUTE_UNIT_LIMIT = 2;

/** Compute units an airdrop asks for: a System transfer needs 150; the rest is headroom. */
const AIRDROP_CU_BASE = 10_000;

/**
 * Wire bytes of a transfer of `lamports` from the faucet to `to` (32 bytes), valid with
 * `blockhash` (32 bytes): a legacy message with keys [faucet, to, System, ComputeBudget].
 *
 * `sequence` sets the compute-unit limit to `AIRDROP_CU_BASE + sequence`: two airdrops of the
 * same amount to the same address in one slot would otherwise be the same transaction (same
 * signature), and the second would be dropped as a duplicate. The limit does not change the fee
 * (no compute-unit price is set).
 */
export function airdropTransaction(faucet: Keypair, to: Uint8Array, lamports: bigint, blockhash: Uint8Array, sequence: number): Uint8Array {
  const message = Buffer.alloc(3 + 1 + 4 * 32 + 32 + 1 + (1 + 1 + 1 + 5) + (1 + 1 + 2 + 1 + 12));
  let o = 0;
  o = message.writeUInt8(1, o); // required signatures
  o = message.writeUInt8(0, o); // read-only signed
  o = message.writeUInt8(2, o); // read-only unsigned: the two programs
  o = message.writeUInt8(4, o); // account keys
  for (const key of [faucet.publicKey, to, SYSTEM_PROGRAM, COMPUTE_BUDGET_PROGRAM]) o += Buffer.from(key).copy(message, o);
  o += Buffer.from(blockhash).copy(message, o);
  o = message.writeUInt8(2, o); // instructions
  // SetComputeUnitLimit: program 3, no accounts, [2, u32 limit].
  o = message.writeUInt8(3, o);
  o = message.writeUInt8(0, o);
  o = message.writeUInt8(5, o);
  o = message.writeUInt8(SET_COMPUTE_UNIT_LIMIT, o);
  o = message.writeUInt32LE(AIRDROP_CU_BASE + (sequence % 1_000_000), o);
  // Transfer: program 2, accounts [faucet, to], [u32 2, u64 lamports].
  return signedWithTransfer(message, o, lamports, faucet);
}

/** ComputeBudgetInstruction::SetComputeUnitPrice. */
const SET_COMPUTE_UNIT_PRICE = 3;

/**
 * Wire bytes of one competing transaction of the background load (`block-space.ts`): a transfer
 * of `lamports` (made distinct per transaction by the caller) from `payer` to `to`, asking for
 * `computeUnits` at `microLamports` per CU — the shape of a bot's transaction, priced to compete.
 */
export function competingTransaction(
  payer: Keypair,
  to: Uint8Array,
  lamports: bigint,
  blockhash: Uint8Array,
  computeUnits: number,
  microLamports: number,
): Uint8Array {
  const message = Buffer.alloc(3 + 1 + 4 * 32 + 32 + 1 + (1 + 1 + 1 + 5) + (1 + 1 + 1 + 9) + (1 + 1 + 2 + 1 + 12));
  let o = 0;
  o = message.writeUInt8(1, o);
  o = message.writeUInt8(0, o);
  o = message.writeUInt8(2, o);
  o = message.writeUInt8(4, o);
  for (const key of [payer.publicKey, to, SYSTEM_PROGRAM, COMPUTE_BUDGET_PROGRAM]) o += Buffer.from(key).copy(message, o);
  o += Buffer.from(blockhash).copy(message, o);
  o = message.writeUInt8(3, o);
  o = message.writeUInt8(3, o);
  o = message.writeUInt8(0, o);
  o = message.writeUInt8(5, o);
  o = message.writeUInt8(SET_COMPUTE_UNIT_LIMIT, o);
  o = message.writeUInt32LE(computeUnits, o);
  o = message.writeUInt8(3, o);
  o = message.writeUInt8(0, o);
  o = message.writeUInt8(9, o);
  o = message.writeUInt8(SET_COMPUTE_UNIT_PRICE, o);
  o = message.writeBigUInt64LE(BigInt(microLamports), o);
  return signedWithTransfer(message, o, lamports, payer);
}

/**
 * The message's last instruction, a system transfer (program index 2, accounts [0, 1], data
 * [u32 2, u64 lamports]) written at `o`, then the transaction: one signature by `signer`.
 */
function signedWithTransfer(message: Buffer, o: number, lamports: bigint, signer: Keypair): Buffer {
  o = message.writeUInt8(2, o);
  o = message.writeUInt8(2, o);
  o = message.writeUInt8(0, o);
  o = message.writeUInt8(1, o);
  o = message.writeUInt8(12, o);
  o = message.writeUInt32LE(SYSTEM_TRANSFER, o);
  message.writeBigUInt64LE(lamports, o);
  return Buffer.concat([Buffer.from([1]), signer.sign(message), message]);
}

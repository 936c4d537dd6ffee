/**
 * Can a durable-nonce transaction still land? The validator accepts one only while its nonce
 * account (the first instruction's account 0) is an initialized, current-version nonce account
 * owned by the System program whose stored nonce equals the message's blockhash (Agave
 * `verify_nonce_account` / `nonce::state::Versions::verify_recent_blockhash`). `nonceRefusal`
 * reads that from the account as `getMultipleAccounts` returns it, for the tracker's checks off
 * the hot path; a failure comes back as a reason for the log.
 *
 * Layout of a nonce account, `Versions` (bincode, little-endian; 80 bytes as the System program
 * creates it): u32 version (0 Legacy, 1 Current; a Legacy nonce cannot verify a transaction),
 * u32 state (0 Uninitialized, 1 Initialized), then `Data`: authority (32), durable nonce (32),
 * fee calculator's lamports per signature (u64).
 */
import type { AccountInfo } from '../chain/rpc.js';
import { base58Encode } from '../native.js';

export const SYSTEM_PROGRAM = '11111111111111111111111111111111';

/** `NONCE_ACCOUNT_LENGTH`: the size of `Versions` as the System program allocates it. */
export const NONCE_ACCOUNT_LENGTH = 80;
const NONCE_VERSION_LEGACY = 0;
const NONCE_VERSION_CURRENT = 1;
const NONCE_STATE_INITIALIZED = 1;
const NONCE_VALUE_OFFSET = 40;

function dataOf(info: AccountInfo): Buffer {
  return Buffer.from(info.data[0], 'base64');
}

/**
 * Why `blockhash` cannot be used with the nonce account `address` as `info` shows it, or null if
 * it can (the account holds exactly that nonce).
 */
export function nonceRefusal(address: string, info: AccountInfo | null, blockhash: string): string | null {
  if (info === null) return `nonce account ${address} does not exist`;
  if (info.owner !== SYSTEM_PROGRAM) return `nonce account ${address} is owned by ${info.owner}, not the System program`;
  const data = dataOf(info);
  // bincode reads the state from the front and ignores what follows, as the validator does.
  if (data.length < NONCE_ACCOUNT_LENGTH) return `account ${address} holds ${data.length} bytes, not a nonce account (${NONCE_ACCOUNT_LENGTH})`;
  const version = data.readUInt32LE(0);
  if (version === NONCE_VERSION_LEGACY) return `nonce account ${address} is a legacy nonce, which cannot verify a transaction until advanced`;
  if (version !== NONCE_VERSION_CURRENT) return `account ${address} is not a nonce account (version ${version})`;
  const state = data.readUInt32LE(4);
  if (state !== NONCE_STATE_INITIALIZED) return `nonce account ${address} is not initialized (state ${state})`;
  const stored = base58Encode(data.subarray(NONCE_VALUE_OFFSET, NONCE_VALUE_OFFSET + 32));
  if (stored !== blockhash) return `nonce account ${address} holds nonce ${stored}, not the transaction's ${blockhash}`;
  return null;
}

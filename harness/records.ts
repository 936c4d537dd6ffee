/** Status records for store and codec tests: random, well-formed signatures and blockhashes. */
import { randomBytes } from 'node:crypto';
import { base58Encode } from '../src/native.js';
import { sentRecord, type StatusRecord } from '../src/store/records.js';

export const randomSignature = (): string => base58Encode(randomBytes(64));
export const randomBlockhash = (): string => base58Encode(randomBytes(32));

/** A fresh `sent` record with a random signature and blockhash, and `over` on top. */
export function statusRecord(over: Partial<StatusRecord> = {}): StatusRecord {
  return {
    ...sentRecord({
      signature: randomSignature(),
      accountId: 'acc_7YzZ5xkWQ3rPm2hT9vLn',
      keyName: 'default',
      tipLamports: 1_000_000n,
      recentBlockhash: randomBlockhash(),
      durableNonce: false,
      submittedAt: 1_795_000_000_000,
      submitSlot: 301_234_567,
      lastValidBlockHeight: 280_000_150,
    }),
    ...over,
  };
}

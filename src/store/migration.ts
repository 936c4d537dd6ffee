/**
 * Migration from the old layout (`status`: base58 string → msgpack record, `pending`: signature →
 * resume record, `status_by_time`: time index) into the compact `status_records` table, run once
 * by the first writer that opens an old store.
 */
import type { Database, RootDatabase } from 'lmdb';
import type { StatusRecord } from './records.js';
import { encodeStatus, statusKey } from './status-codec.js';

/** Records moved per write transaction when migrating an old layout. */
const MIGRATION_SLICE = 10_000;

/**
 * Move the old layout's status records into `status`, in write transactions of
 * `MIGRATION_SLICE` records, then drop the old tables. Each slice reads what is left inside its
 * own write transaction, so two openers (threads or processes) never move a record twice.
 * Returns how many records were moved (0 for a store without the old tables).
 * @param assertWritable throws if the disk has no room (`DiskGuard.assertWritable`)
 */
export function migrateOldLayout(root: RootDatabase, status: Database<Buffer, Buffer>, assertWritable: (what: string) => void): number {
  const old = openOld<OldStatusRecord>(root, 'status');
  if (!old) return 0;
  assertWritable('migration of the old layout');
  const pending = openOld<OldPendingRecord>(root, 'pending');
  const byTime = openOld<null>(root, 'status_by_time');
  let migrated = 0;
  let skipped = 0;
  for (;;) {
    const moved = root.transactionSync(() => {
      const slice = [...old.getRange({ limit: MIGRATION_SLICE })];
      for (const { key: signature, value } of slice) {
        old.removeSync(signature);
        const key = statusKey(signature);
        let encoded: Buffer | undefined;
        try {
          encoded = key && encodeStatus(fromOldRecord(signature, value, pending?.get(signature)));
        } catch {
          encoded = undefined;
        }
        if (!key || !encoded) {
          skipped++;
          continue;
        }
        // A record already in the new table was written after the old one: it wins.
        if (status.getBinaryFast(key) === undefined) status.putSync(key, encoded);
        migrated++;
      }
      return slice.length;
    });
    if (moved < MIGRATION_SLICE) break;
  }
  old.dropSync();
  pending?.dropSync();
  byTime?.dropSync();
  process.stderr.write(
    `landfall: migrated ${migrated} status records to the compact layout` + (skipped > 0 ? ` (${skipped} unreadable, dropped)` : '') + '\n',
  );
  return migrated;
}

/**
 * A table of the old layout, opened exactly as the old code did, or undefined if absent. (The
 * root database lists the named ones: `openDB` with `create: false` does not throw for a
 * missing name in lmdb-js 3.5.6.)
 */
function openOld<V>(root: RootDatabase, name: string): Database<V, string> | undefined {
  for (const k of root.getKeys()) if (k === name) return root.openDB<V, string>({ name });
  return undefined;
}

/** The old layout's status record (`tipLamports` a decimal string). */
interface OldStatusRecord {
  signature: string;
  accountId: string;
  keyName: string;
  status: StatusRecord['status'];
  submittedAt: number;
  confirmedAt: number | null;
  latencyMs: number | null;
  slot: number | null;
  submitSlot: number;
  expired: boolean;
  tipLamports: string;
  recentBlockhash: string;
  durableNonce: boolean;
}

/** The old layout's pending entry: the only place it kept `lastValidBlockHeight`. */
interface OldPendingRecord {
  lastValidBlockHeight: number | null;
}

function fromOldRecord(signature: string, r: OldStatusRecord, p: OldPendingRecord | undefined): StatusRecord {
  return {
    signature,
    accountId: r.accountId,
    keyName: r.keyName,
    tipLamports: BigInt(r.tipLamports),
    recentBlockhash: r.recentBlockhash,
    durableNonce: r.durableNonce,
    submittedAt: r.submittedAt,
    submitSlot: r.submitSlot,
    lastValidBlockHeight: p?.lastValidBlockHeight ?? null,
    status: r.status,
    confirmedAt: r.confirmedAt,
    latencyMs: r.latencyMs,
    slot: r.slot,
    expired: r.expired,
  };
}

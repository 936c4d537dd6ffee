/**
 * After a chain rollback every pending transaction this node tracks goes out again
 * (`Engine.rearm`). "Pending" is what the tracker watches, each read by signature as `getStatus`
 * reads it: a scan of the store (`pendingEntries`) sees committed records only, so the sends
 * accepted in the last commit window before the rollback (up to a window's worth; longer on a
 * machine whose commits lag) were not sent again — and if they had landed in a slot the
 * rollback lost, nothing rebroadcast them while their blockhash was still good.
 */
import type { PendingRecord } from '../store/records.js';

export interface RearmParts {
  tracker: { watchedSignatures(): string[] };
  store: { pendingRecord(signature: string): PendingRecord | undefined };
  engine: { rearm(rec: PendingRecord): boolean };
}

/** Re-arm every watched, still pending transaction; returns how many were pending and how many will be sent. */
export function rearmWatched({ tracker, store, engine }: RearmParts): { pending: number; rearmed: number } {
  let pending = 0;
  let rearmed = 0;
  for (const signature of tracker.watchedSignatures()) {
    const rec = store.pendingRecord(signature);
    if (rec === undefined) continue; // settled since (its status written, the tracker not told yet)
    pending++;
    if (engine.rearm(rec)) rearmed++;
  }
  return { pending, rearmed };
}

/**
 * The start-up load of the process's filter of known signatures (`native/src/known.rs`): every
 * status key already in LMDB, read in batches on this thread and added to the filter one native
 * call a batch, yielding to the event loop between batches.
 *
 * Why asynchronous, and not before readiness: a store of 100 million records takes lmdb-js a
 * minute or more to list, and the service must answer long before that. The filter answers
 * "maybe known" for every signature from `knownBeginLoad` (called here, synchronously, before
 * anything serves) until the load ends, so the send path asks the store exactly as it did
 * without the filter meanwhile; nothing is wrong while it loads, only slower.
 *
 * Why nothing is missed: the load starts after the store's migration and the replay of the
 * acknowledgement logs (the two writers that put status records into LMDB without the overlay),
 * and every later write of a status record goes through the overlay, whose put tells the filter
 * first. A key committed during the load behind where the load already read was told by its put;
 * one ahead of it is read. Each batch starts after the last key of the one before, so a key
 * present throughout is read once whatever commits in between. Deletions (retention) only leave
 * false positives. One service per data directory (`dir-lock.ts`), and the admin CLI never
 * writes a status record (it writes accounts and keys), so no other process adds keys behind
 * the service's back.
 */
import type { Database } from 'lmdb';
import { knownAddBatch, knownBeginLoad, knownEndLoad } from '../native.js';

/** Keys read and added per batch: 128 KiB of keys, about 4 ms of this thread (lmdb-js lists a key in about 2 µs). */
export const KNOWN_LOAD_BATCH = 2048;

const KEY_BYTES = 64;

export interface KnownLoad {
  /** Resolves to the keys added once the filter answers, or to -1 if stopped or failed first. */
  readonly done: Promise<number>;
  /** Stop at the next batch (the store is closing): the load ends, its store's keys no longer matter. */
  stop(): void;
}

/**
 * Begin the load of `status`'s keys at once (the filter answers "maybe known" from now until it
 * ends) and run it in the background.
 * @param onError told a read that failed: the filter then stays "maybe known" for every
 *   signature (correct, the old path's speed) rather than answer without this store's keys
 */
export function loadKnownSignatures(status: Database<Buffer, Buffer>, onError: (e: unknown) => void, batch = KNOWN_LOAD_BATCH): KnownLoad {
  let stopped = false;
  let expected = 0;
  try {
    expected = (status.getStats() as { entryCount?: number }).entryCount ?? 0;
  } catch {
    // a count only sizes the first layer
  }
  knownBeginLoad(expected);
  const run = async (): Promise<number> => {
    const buf = Buffer.allocUnsafe(batch * KEY_BYTES);
    let start: Buffer | undefined;
    let added = 0;
    for (;;) {
      if (stopped) {
        knownEndLoad();
        return -1;
      }
      let read = 0;
      let n = 0;
      let last: Buffer | undefined;
      try {
        for (const key of status.getKeys({ start, limit: batch })) {
          read++;
          last = key;
          if (key.length === KEY_BYTES) key.copy(buf, KEY_BYTES * n++);
        }
      } catch (e) {
        if (stopped) {
          knownEndLoad();
          return -1;
        }
        onError(e);
        return -1; // never ended: "maybe known" for every signature, for the life of the process
      }
      added += knownAddBatch(buf.subarray(0, KEY_BYTES * n));
      if (read < batch) {
        knownEndLoad();
        return added;
      }
      // The smallest key after `last`: LMDB orders keys bytewise, a longer key after its prefix.
      start = Buffer.concat([last!, Buffer.alloc(1)]);
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  };
  return {
    done: run(),
    stop: () => {
      stopped = true;
    },
  };
}

/**
 * The data directory's key and account generations, in its `generations` file (mode 0600,
 * created by whichever process opens the store first, mapped by the addon in every process:
 * `native/src/generations.rs`). A per-thread key cache (`KeyCache`) trusts what it holds only
 * while the generations it read it under are current and no write is in progress, and reads
 * them with no crossing into LMDB (they were in LMDB's `meta` table, read on a fresh snapshot on
 * every request: three lmdb-js crossings).
 *
 * Every write that changes a key's liveness or an account record goes through `writeSync` or
 * `write` (or `begin`/`end` around a transaction, as the commit window does): marked begun before
 * its LMDB transaction commits, its generations bumped after the commit is durable, then the
 * mark released; so a reader that sees the new generation reads the committed data on a fresh
 * snapshot, and one that reads while the write is in progress does not cache what it read. A
 * writer killed between the two leaves its mark under its pid; the next reader that finds the
 * pid gone bumps both generations and releases it (docs/store.md, "The generation file").
 */
import { GenerationFile } from '../native.js';

/** What a write may change: the key generation (a key revoked), the account one (an account record written). */
export interface Changes {
  keys?: boolean;
  accounts?: boolean;
}

/**
 * Test-only: a process with this variable set kills itself (SIGKILL) after a write's LMDB commit
 * and before its generations are bumped, so a test can leave a dead writer's mark for real.
 */
const KILL_AFTER_COMMIT = 'LANDFALL_TEST_KILL_AFTER_COMMIT';

export class Generations {
  private constructor(readonly file: GenerationFile) {}

  /**
   * Open `dir`'s generation file, creating it if `create` (a writable store: any failure throws).
   * A read-only store (inspection tools, which never cache keys nor write) opens it if it can
   * (it needs write access to the file: a read-only filesystem or another owner's file gives
   * undefined, as does a missing one).
   */
  static open(dir: string, create: boolean): Generations | undefined {
    try {
      return new Generations(new GenerationFile(dir, create));
    } catch (e) {
      if (!create) return undefined;
      throw e;
    }
  }

  /** A write begun (before its transaction commits); the mark for `end`. */
  begin(): number {
    return this.file.begin();
  }

  /** A write ended, after its commit is durable or failed: bump what it may have changed, release its mark. */
  end(mark: number, changes: Changes): void {
    this.file.end(mark, changes.keys === true, changes.accounts === true);
  }

  /** A synchronous write transaction (`transactionSync`), marked. */
  writeSync<T>(changes: Changes, txn: () => T): T {
    const mark = this.begin();
    try {
      const out = txn();
      if (process.env[KILL_AFTER_COMMIT] === '1') process.kill(process.pid, 'SIGKILL');
      return out;
    } finally {
      this.end(mark, changes);
    }
  }

  /** An asynchronous write transaction (`transaction`), marked until it settles. */
  async write<T>(changes: Changes, txn: () => Promise<T>): Promise<T> {
    const mark = this.begin();
    try {
      return await txn();
    } finally {
      this.end(mark, changes);
    }
  }

  /** The key generation now (it changes whenever a key is revoked, or a writer died mid-write). */
  keys(): number {
    return this.file.read()[1]!;
  }

  /** The account generation now. */
  accounts(): number {
    return this.file.read()[2]!;
  }

  /** Writes in progress now (dead writers' marks released first). */
  active(): number {
    return this.file.read()[0]!;
  }
}

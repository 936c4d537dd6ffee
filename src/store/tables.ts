/**
 * The LMDB environment and its databases: the only code that knows key layouts.
 *
 * | db               | key                          | value                               |
 * |------------------|------------------------------|-------------------------------------|
 * | accounts         | account id (string)          | AccountRecord                       |
 * | usage            | account id                   | UsageRecord                         |
 * | api_keys         | sha256(api key), 32 bytes    | KeyRecord                           |
 * | key_names        | [account id, key name]       | sha256 (bytes)                      |
 * | status_records   | signature, 64 raw bytes      | StatusRecord, `status-codec.ts`     |
 * | status_traces    | signature, 64 raw bytes      | delivery Trace, `trace-codec.ts`    |
 * | account_txs      | account id, 0, submittedAt u64 BE, signature | empty (an index)     |
 * | meta             | string                       | any                                 |
 *
 * Beside them, the `generations` file: the key and account generations a key cache checks
 * (`generations.ts`).
 *
 * There is no pending table and no time index: a record is pending while `status === 'sent' &&
 * !expired` (one flags byte, read without decoding the rest). Sizes and the reasons behind the
 * layout: docs/store.md.
 */
import { chmodSync, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { open, type Database, type DatabaseOptions, type RootDatabase, type RootDatabaseOptionsWithPath } from 'lmdb';
import { Generations } from './generations.js';
import type { AccountRecord, KeyRecord, UsageRecord } from './records.js';

export const DIR_MODE = 0o700;
const FILE_MODE = 0o600;
const LMDB_FILES = ['data.mdb', 'lock.mdb'];

/**
 * Write an account record; must run inside a write transaction marked in the generation file
 * as changing accounts (`Generations.writeSync`/`write`, or the commit window's own mark), so
 * every key cache (`KeyCache`) re-reads it once the commit is durable. (The generations were
 * `meta` entries written here until the generation file replaced them: nothing reads those.)
 */
export function putAccount(t: Pick<Tables, 'accounts'>, a: AccountRecord): void {
  t.accounts.putSync(a.id, a);
}

/**
 * A pass-through lmdb-js encoder whose `decode` returns the bytes it is given. Without
 * `needsStableBuffer`, lmdb-js passes its shared read buffer, uncopied (`decoderCopies`).
 */
const BORROW = { encode: (v: Buffer): Buffer => v, decode: (b: Buffer): Buffer => b };

export interface Tables {
  readonly root: RootDatabase;
  readonly accounts: Database<AccountRecord, string>;
  readonly usage: Database<UsageRecord, string>;
  readonly apiKeys: Database<KeyRecord, Buffer>;
  readonly keyNames: Database<Buffer, [string, string]>;
  /** Status records: signature bytes → `status-codec.ts` value. */
  readonly status: Database<Buffer, Buffer>;
  /**
   * The same table for scans, its values borrowed: lmdb-js hands the decoder its shared read
   * buffer, valid only until the iterator moves on (read it at once, keep nothing). A copied
   * value costs ~1.5 µs (a new ArrayBuffer each); borrowed, a scan reads ~0.5 µs per record.
   */
  readonly statusScan: Database<Buffer, Buffer>;
  /** Delivery traces (`trace-codec.ts`), keyed like `status`, pruned with it. */
  readonly traces: Database<Buffer, Buffer>;
  /**
   * Each account's transactions by time (`accountTxKey`): written with a record new to LMDB,
   * removed with it by retention. Keys only, so `GET /v1/transactions` reads one account's page
   * with one bounded range read (~100 B a record on disk).
   */
  readonly accountTxs: Database<Buffer, Buffer>;
  readonly meta: Database<unknown, string>;
  /** The generation file (`generations.ts`); undefined only for a read-only store without one. */
  readonly generations: Generations | undefined;
}

/** The value of every `account_txs` entry: the key says it all. */
export const INDEX_VALUE = Buffer.alloc(0);

/**
 * The `account_txs` key of an account's transaction: the account id (UTF-8), a 0 byte, the time it
 * was submitted (u64 ms, big-endian) and the signature's 64 bytes; so one account's keys are
 * contiguous and in time order (the signature breaks ties). Account ids never contain a 0 byte.
 */
export function accountTxKey(accountId: string, submittedAt: number, signature: Uint8Array): Buffer {
  const id = Buffer.from(accountId, 'utf8');
  const key = Buffer.allocUnsafe(id.length + 1 + 8 + signature.length);
  id.copy(key, 0);
  key[id.length] = 0;
  key.writeUInt32BE(Math.floor(submittedAt / 2 ** 32), id.length + 1);
  key.writeUInt32BE(submittedAt >>> 0, id.length + 5);
  key.set(signature, id.length + 9);
  return key;
}

/** Whether the directory already holds an LMDB environment (else opening creates one). */
export function hasEnvironment(path: string): boolean {
  return LMDB_FILES.every((f) => existsSync(join(path, f)));
}

/** Open the environment in directory `path` and its databases. */
export function openTables(path: string, readOnly: boolean): Tables {
  const options: RootDatabaseOptionsWithPath & { permissionsMode: number; eventTurnBatching: boolean } = {
    path,
    // noSubdir: false — lmdb-js would otherwise treat a directory name containing a dot as a file.
    noSubdir: false,
    maxDbs: 16,
    readOnly,
    // Undocumented lmdb-js option, passed to mdb_env_open as the files' mode (default 0664).
    permissionsMode: FILE_MODE,
    // With event-turn batching, a failed commit also rejects a promise lmdb-js keeps to itself
    // (nobody can catch it: Node exits on the unhandled rejection). Without it, lmdb-js starts
    // a commit from a setImmediate and may split one turn's puts over several commits, so a
    // status window is one explicit transaction (`CommitWindow`).
    eventTurnBatching: false,
  };
  const root = open(options);
  if (!readOnly) restrictFiles(path);
  // After the LMDB files: a directory the store cannot be created in fails there first, clearly.
  const generations = Generations.open(path, !readOnly);
  const scanOptions: DatabaseOptions & { name: string; encoder: typeof BORROW } = { name: 'status_records', keyEncoding: 'binary', encoder: BORROW };
  return {
    root,
    accounts: root.openDB({ name: 'accounts' }),
    usage: root.openDB({ name: 'usage' }),
    apiKeys: root.openDB({ name: 'api_keys', keyEncoding: 'binary' }),
    keyNames: root.openDB({ name: 'key_names', encoding: 'binary' }),
    status: root.openDB({ name: 'status_records', keyEncoding: 'binary', encoding: 'binary' }),
    statusScan: root.openDB(scanOptions),
    traces: root.openDB({ name: 'status_traces', keyEncoding: 'binary', encoding: 'binary' }),
    accountTxs: root.openDB({ name: 'account_txs', keyEncoding: 'binary', encoding: 'binary' }),
    meta: root.openDB({ name: 'meta' }),
    generations,
  };
}

/** LMDB files 0600 (also those an older version created 0644). */
function restrictFiles(dir: string): void {
  // The directory too: one created by hand (or by an older version) at 0755 lets every local user
  // list the store and read what is not itself restricted (the ack log's segments, backups).
  const mode = statSync(dir).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    try {
      chmodSync(dir, DIR_MODE);
    } catch (e) {
      throw new Error(
        `data directory ${dir} is open to other users (mode 0${mode.toString(8)}) and cannot be restricted (${(e as Error).message}): run \`chmod 700 ${dir}\` as its owner`,
      );
    }
  }
  for (const f of LMDB_FILES) {
    const p = join(dir, f);
    if (existsSync(p) && (statSync(p).mode & 0o777) !== FILE_MODE) chmodSync(p, FILE_MODE);
  }
}

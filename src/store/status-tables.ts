/**
 * Status records and delivery traces. Every status write goes through the commit window
 * (`commit-window.ts`) and the overlay, so a write is readable at once from any thread; an
 * acceptance is first appended to this thread's acknowledgement log (`ack-log.ts`), so a process
 * crash cannot lose what a client was answered.
 */
import { join } from 'node:path';
import { knownCertainlyNew, overlay, recordAccepted } from '../native.js';
import { FRAME_HEADER_BYTES, readDeadLogs, type AckLog, type Segment } from './ack-log.js';
import { accountOverlayKey, type AccountTables } from './account-tables.js';
import { ACKS_DIR, TRACE_WRITE, type CommitWindow, type Held } from './commit-window.js';
import { describeWriteError, StoreUnavailableError, type DiskGuard } from './disk-guard.js';
import type { Credit, PendingRecord, Resend, StatusRecord, Trace } from './records.js';
import { acceptedValueBytes, decodeStatus, encodeStatus, isPendingValue, resendOf, signatureOfKey, statusKey, submittedAtOf, type RecordBytes } from './status-codec.js';
import { accountTxKey, INDEX_VALUE, type Tables } from './tables.js';
import { decodeTrace, encodeTrace } from './trace-codec.js';
import { UsageDelta } from './usage-delta.js';

/** No hand-off tail (no queue: the main thread's own sends). */
const NO_TAIL = new Uint8Array(0);

/** An ingress thread's native hand-off queue, as the record call sees it (`src/delivery/handoff-queue.ts`). */
export interface HandoffTarget {
  readonly id: number;
  /** The number of the entry just pushed (one a successful record call). */
  next(): number;
}

/** Where a page of `listAccountTransactions` ends: its last record's submission time and signature bytes. */
export interface TxCursor {
  submittedAt: number;
  signature: Buffer;
}

/** One slice of the retention scan (`pruneStatusSlice`). */
export interface PruneSlice {
  /** Records read. */
  scanned: number;
  /** Records deleted (submitted before the cutoff). */
  deleted: number;
  /** Where the next slice starts, or undefined when the scan reached the end. */
  next: Buffer | undefined;
}

export class StatusTables {
  constructor(
    private readonly t: Tables,
    private readonly guard: DiskGuard,
    private readonly window: CommitWindow,
    private readonly accounts: AccountTables,
    private readonly path: string,
  ) {}

  /**
   * The record of `signature`, from any thread's writes, committed or not; undefined if there is
   * none (or `signature` is not the base58 of 64 bytes).
   */
  getStatus(signature: string): StatusRecord | undefined {
    const key = statusKey(signature);
    const value = key && this.statusValue(key);
    return value ? decodeStatus(signature, value) : undefined;
  }

  /**
   * Whether there is a record of the signature whose 64 bytes are `key`, from any thread's
   * writes, committed or not: `getStatus` without decoding the key's base58 or the value.
   */
  hasStatus(key: Buffer): boolean {
    // The process's filter of known signatures (`native/src/known.rs`: every overlay put is added
    // before it is made, and LMDB's keys at start) answers "certainly not" for a new signature
    // without the overlay and LMDB reads: the duplicate check of the paths that do not take
    // `inspectAdmit`'s answer (the main thread's sends, the batch, JSON-RPC's base58). Until its
    // load has ended it is not ready, and the store is asked.
    if (knownCertainlyNew(key)) return false;
    return this.statusValue(key) !== undefined;
  }

  /** The value under a status key, read as `getStatus` reads it. */
  private statusValue(key: Buffer): Uint8Array | undefined {
    // Fast path: a write not yet released from the overlay (recent, any thread).
    const held = overlay.get(key);
    if (held) return held;
    const value = this.t.status.getBinaryFast(key);
    if (value !== undefined) return value;
    // Slow path (a miss): our read snapshot may predate a commit whose overlay entry was
    // released since; a fresh snapshot sees it.
    this.t.root.resetReadTxn();
    return this.t.status.getBinaryFast(key);
  }

  /**
   * Record an accepted transaction (state `sent`): appended to this thread's acknowledgement log
   * before this returns (so the caller may acknowledge it: a process crash cannot lose it), and
   * committed to LMDB within a window, where it is written only if no record of the signature is
   * there yet (a settlement committed first by another thread wins) and counted in its account's
   * usage in the same transaction. Throws `StoreUnavailableError` if it could not be logged (the
   * store becomes unavailable: nothing is accepted that cannot be kept).
   * @param resend the wire bytes and options, kept in the value while the record is pending so a
   *   restarted service can send it again (`status-codec.ts`)
   * @param bytes the signature and blockhash bytes, where the caller holds them (not decoded again)
   */
  insertStatus(rec: StatusRecord, resend?: Resend, bytes?: RecordBytes): void {
    if (this.guard.closed) throw new StoreUnavailableError(`status record ${rec.signature} not written: store is closed`);
    const { key, value } = encodeOrThrow(rec, resend, bytes);
    let logged: Segment;
    try {
      logged = this.window.logAcceptance(key, value);
    } catch (e) {
      const reason = `acknowledgement log: ${describeWriteError(e)}`;
      this.guard.unavailable(reason);
      throw new StoreUnavailableError(`status record ${rec.signature} not written: ${reason}`);
    }
    void this.window.queue({ key, value, token: overlay.put(key, value), logged, owner: rec });
  }

  /**
   * `insertStatus` of a fresh acceptance from the send path, in one native call
   * (`recordAccepted`): its value encoded (with the resend tail), framed and appended to this
   * thread's acknowledgement log, put in the overlay, and one send counted in the account's live
   * usage (what `Accounts.countSubmissions` did) — then queued for the commit window as
   * `insertStatus` queues it. Throws `StoreUnavailableError` if it could not be logged (the
   * segment is cut back to its last whole frame and the store becomes unavailable, as
   * `insertStatus`), `RangeError` for a field that cannot be stored.
   * @param rec the `sent` record (`sentRecord`), whose fields are stored
   * @param key the signature's 64 bytes (a view into `wire`)
   * @param wire the transaction's bytes: the resend tail, and the blockhash at `blockhashOffset`
   * @param names `acceptedNames(rec.accountId, rec.keyName)`, kept by the caller
   * @param resendOptions `resendOptionsByte(…)` of the send's options
   * @param usageIndex the account's process-wide usage index (`Accounts.usageIndex`), `day` the UTC day to count it on
   * @param handoff an ingress thread's hand-off queue, onto which the value and `handoffTail` are
   *   pushed once everything else is done (`src/delivery/handoff-queue.ts`); `next` numbers the push
   * @returns the pushed entry's number (0: no queue)
   */
  insertAccepted(
    rec: StatusRecord,
    key: Buffer,
    wire: Buffer,
    blockhashOffset: number,
    names: Buffer,
    resendOptions: number,
    usageIndex: number,
    day: number,
    handoff: HandoffTarget | null = null,
    handoffTail: Uint8Array = NO_TAIL,
  ): number {
    if (this.guard.closed) throw new StoreUnavailableError(`status record ${rec.signature} not written: store is closed`);
    const value = Buffer.allocUnsafe(acceptedValueBytes(names, wire.length, rec.deadlineSlot !== undefined));
    let log: AckLog | undefined;
    let seg: Segment | undefined;
    let token: number;
    let seq = 0;
    try {
      log = this.window.ackLog();
      seg = log.writer();
      token = recordAccepted(
        seg.fd,
        key,
        wire,
        blockhashOffset,
        names,
        rec.tipLamports,
        rec.submittedAt,
        rec.submitSlot,
        rec.lastValidBlockHeight ?? -1,
        rec.durableNonce,
        rec.deadlineSlot ?? -1,
        resendOptions,
        usageIndex,
        day,
        log.syncEach,
        value,
        handoff?.id ?? 0,
        handoffTail,
      );
      // Numbered at once: a return of the call is exactly one push.
      if (handoff !== null) seq = handoff.next();
    } catch (e) {
      if ((e as { code?: unknown }).code === RECORD_INVALID) throw new RangeError(`status record ${rec.signature}: ${(e as Error).message}`);
      if (seg) log!.failed(seg);
      const reason = `acknowledgement log: ${describeWriteError(e)}`;
      this.guard.unavailable(reason);
      throw new StoreUnavailableError(`status record ${rec.signature} not written: ${reason}`);
    }
    log.appended(seg, FRAME_HEADER_BYTES + key.length + value.length);
    void this.window.queue({ key, value, token, logged: seg, owner: rec });
    return seq;
  }

  /**
   * Replace a status record. Resolves true once it is committed, false if the store dropped it
   * (closed, or too many writes held while unavailable; logged). Rejects only for a record that
   * cannot be encoded.
   * @param resend the resend tail, for a pending record written whole (a cluster node applying
   *   another node's acceptance: a takeover can then send it again)
   * @param credit what a confirmation earns its account: applied in the transaction that commits
   *   this write, and only if the committed record is not confirmed already, so a confirmation is
   *   credited exactly once whoever writes it and however often (a restart, another node's event)
   */
  updateStatus(rec: StatusRecord, resend?: Resend | null, credit?: Credit): Promise<boolean> {
    if (this.guard.closed) {
      this.guard.log.error({ sig: rec.signature }, 'status record not written: store is closed');
      return Promise.resolve(false);
    }
    let encoded: { key: Buffer; value: Buffer };
    try {
      encoded = encodeOrThrow(rec, resend ?? undefined);
    } catch (e) {
      return Promise.reject(e as Error);
    }
    const { key, value } = encoded;
    // The points show with the status, from the overlay, unless this confirmation is shown already.
    let account: Held | undefined;
    if (credit && this.getStatus(rec.signature)?.status !== 'confirmed') {
      const a = this.accounts.getAccount(rec.accountId);
      if (a) {
        const k = accountOverlayKey(a.id);
        account = [k, overlay.put(k, Buffer.from(JSON.stringify(credit(a)), 'utf8'))];
      }
    }
    return this.window.queue({ key, value, token: overlay.put(key, value), owner: rec, ...(credit && { credit }), ...(account && { account }) });
  }

  /**
   * Replay the acknowledgement logs of processes that died (`ack-log.ts`): every record LMDB
   * does not have is written, and counted in its account's usage, in one transaction; then the
   * logs are deleted. Call once at start, before anything reads what is pending. Returns the
   * records written (acknowledged, never committed before the crash).
   */
  recoverAcknowledged(): StatusRecord[] {
    const found = readDeadLogs(join(this.path, ACKS_DIR));
    if (found.segments === 0) return [];
    this.guard.assertWritable('recovery of acknowledged sends');
    const { root, status } = this.t;
    const recovered = root.transactionSync(() => {
      const out: StatusRecord[] = [];
      const usage = new UsageDelta();
      for (const { key, value } of found.records) {
        if (status.getBinaryFast(key) !== undefined) continue;
        const rec = decodeStatus(signatureOfKey(key), value);
        status.putSync(key, value);
        this.t.accountTxs.putSync(accountTxKey(rec.accountId, rec.submittedAt, key), INDEX_VALUE);
        usage.add(rec.accountId, rec.submittedAt);
        out.push(rec);
      }
      usage.apply(this.t.usage);
      return out;
    });
    found.done();
    this.guard.log.info({ segments: found.segments, logged: found.records.length, recovered: recovered.length, damaged: found.damaged }, 'acknowledgement logs replayed');
    return recovered;
  }

  /**
   * Write a transaction's delivery trace, in the status records' commit window (no transaction
   * of its own). Resolves as `updateStatus` does. Read back by `getTrace` once committed: the
   * delivery engine keeps serving it from memory until then.
   * @param known the signature's 64 bytes where the caller holds them (not decoded again)
   */
  putTrace(signature: string, trace: Trace, known?: Buffer): Promise<boolean> {
    if (this.guard.closed) {
      this.guard.log.error({ sig: signature }, 'trace not written: store is closed');
      return Promise.resolve(false);
    }
    const key = known ?? statusKey(signature);
    if (!key) return Promise.reject(new RangeError(`trace: ${JSON.stringify(signature)} is not a 64-byte base58 signature`));
    return this.window.queue({ key, value: encodeTrace(trace), token: TRACE_WRITE });
  }

  /** The committed delivery trace of `signature`, or undefined. Throws `TraceDecodeError` for a value it cannot read. */
  getTrace(signature: string): Trace | undefined {
    const key = statusKey(signature);
    if (!key) return undefined;
    let value = this.t.traces.getBinaryFast(key);
    if (value === undefined) {
      // As in `getStatus`: our read snapshot may predate the commit that wrote it.
      this.t.root.resetReadTxn();
      value = this.t.traces.getBinaryFast(key);
    }
    return value === undefined ? undefined : decodeTrace(value);
  }

  /**
   * A page of `accountId`'s transactions, newest first: up to `limit` records submitted before
   * `before` (the `TxCursor` of the last record of the previous page; from the newest if
   * undefined), each as `getStatus` reads it (an update not yet committed shows). One range read
   * of the account's index entries (`accountTxKey`): another account's are never read, and the
   * cost is the page, not the account's history. A record is listed once its acceptance is
   * committed (a commit window: milliseconds); records written before the index existed are not.
   * `next` is the cursor of the page's last record when there may be more.
   */
  listAccountTransactions(accountId: string, limit: number, before?: TxCursor): { records: StatusRecord[]; next: TxCursor | undefined } {
    const prefix = Buffer.concat([Buffer.from(accountId, 'utf8'), Buffer.from([0])]);
    const end = Buffer.concat([Buffer.from(accountId, 'utf8'), Buffer.from([1])]);
    // Reverse ranges start at `start` (inclusive) and run down to `end` (exclusive).
    const start = before ? accountTxKey(accountId, before.submittedAt, before.signature) : end;
    const records: StatusRecord[] = [];
    let last: TxCursor | undefined;
    this.t.root.resetReadTxn(); // a fresh snapshot: what was committed a moment ago is listed
    for (const key of this.t.accountTxs.getKeys({ start, end: prefix, reverse: true, limit: limit + 2 })) {
      if (key.equals(start)) continue; // the cursor's own record (or `end`), on the previous page
      if (records.length === limit) return { records, next: last };
      const signature = key.subarray(prefix.length + 8);
      const rec = this.getStatus(signatureOfKey(signature));
      // Pruned between the index read and now, or not this account's (never: the key says so).
      if (!rec || rec.accountId !== accountId) continue;
      records.push(rec);
      last = { submittedAt: key.readUInt32BE(prefix.length) * 2 ** 32 + key.readUInt32BE(prefix.length + 4), signature: Buffer.from(signature) };
    }
    return { records, next: undefined };
  }

  /**
   * The record of `signature` if it is pending, read as `getStatus` reads it: a write not
   * committed yet shows (`pendingEntries` scans what is committed). A takeover resumes by
   * signature through this: a record another node's event wrote a moment ago is still only in
   * the overlay until its commit window closes, and a scan would miss it for good.
   */
  pendingRecord(signature: string): PendingRecord | undefined {
    const key = statusKey(signature);
    const value = key && this.statusValue(key);
    if (!value || !isPendingValue(value)) return undefined;
    return { ...decodeStatus(signature, value), resend: resendOf(value) };
  }

  /**
   * Pending records (`status === 'sent' && !expired`), for the tracker to resume and the engine
   * to send again, each with its resend tail (wire bytes and options) when it has one. Scans the
   * table reading each value's flags byte only; a record with a newer write in the overlay is
   * judged by that write. A record inserted but not yet committed is not seen (at startup,
   * when the tracker resumes, there is none).
   * @param submittedSince also yield every record submitted at or after this time (ms), whatever
   *   its state (a restarted cluster node publishes those again: their events may not have left)
   */
  *pendingEntries(submittedSince = Infinity): Generator<PendingRecord> {
    for (const { key, value } of this.t.statusScan.getRange()) {
      const recent = submittedAtOf(value) >= submittedSince;
      if (!recent && !isPendingValue(value)) continue;
      const held = overlay.get(key);
      if (held && !recent && !isPendingValue(held)) continue;
      const v = held ?? value;
      yield { ...decodeStatus(signatureOfKey(key), v), resend: resendOf(v) };
    }
  }

  /**
   * One slice of the retention scan: reads up to `scan` records in key order after `after`
   * (from the start if undefined) and deletes, in one write transaction, those submitted before
   * `cutoffMs`. Callers loop on `next`, yielding to the event loop between slices.
   */
  async pruneStatusSlice(cutoffMs: number, after: Buffer | undefined, scan: number): Promise<PruneSlice> {
    const { root, status, statusScan, traces, accountTxs } = this.t;
    // The smallest key above `after`: LMDB orders keys bytewise, a longer key after its prefix.
    const start = after ? Buffer.concat([after, Buffer.alloc(1)]) : undefined;
    const victims: Buffer[] = [];
    let scanned = 0;
    let last: Buffer | undefined;
    for (const { key, value } of statusScan.getRange({ start, limit: scan })) {
      scanned++;
      last = key;
      if (submittedAtOf(value) < cutoffMs) victims.push(key);
    }
    if (victims.length > 0) {
      await this.guard.guarded('retention prune', () =>
        root.transaction(() => {
          for (const k of victims) {
            // Checked again inside the write transaction: a record rewritten since is kept.
            const v = status.getBinaryFast(k);
            if (v !== undefined && submittedAtOf(v) < cutoffMs) {
              const rec = decodeStatus(signatureOfKey(k), v);
              status.removeSync(k);
              traces.removeSync(k); // the record's trace goes with it, and its index entry
              accountTxs.removeSync(accountTxKey(rec.accountId, rec.submittedAt, k));
            }
          }
        }),
      );
    }
    return { scanned, deleted: victims.length, next: scanned < scan ? undefined : last };
  }
}

/** The native record's code for a field that does not fit (a bug upstream: nothing was written). */
const RECORD_INVALID = 'RECORD_INVALID';

/** The key and value of a status record; throws for one that cannot be stored. */
function encodeOrThrow(rec: StatusRecord, resend?: Resend, bytes?: RecordBytes): { key: Buffer; value: Buffer } {
  if (bytes) return { key: bytes.signature, value: encodeStatus(rec, resend, bytes.blockhash) };
  const key = statusKey(rec.signature);
  if (!key) throw new RangeError(`status record: ${JSON.stringify(rec.signature)} is not a 64-byte base58 signature`);
  return { key, value: encodeStatus(rec, resend) };
}

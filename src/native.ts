/**
 * Typed access to the native core (`native/`, built by `npm install`). Everything the service
 * needs from Rust goes through here, so the rest of the code sees TypeScript types, `LandfallError`
 * and `bigint` lamports, never raw napi shapes.
 */
import * as addon from '../native/index.js';
import type { Inspection } from '../native/index.js';
import { LandfallError, type TransactionErrorCode } from './errors.js';

export { TipSet, AdmissionView } from '../native/index.js';
export type { Inspection } from '../native/index.js';
// The QUIC endpoint's classes go through as they are: their shapes are already the service's
// (results are plain objects, errors carry the stable `code`), and a wrapper would add a call on
// the hot path for nothing. They are re-exported here so this stays the one module that loads
// the addon (`test/unit/imports.test.ts` holds that).
export { QuicClient, QuicServer, TpuTargets, sendOutcomeReasons, firstAttemptOutcomes, RebroadcastFlights, rebroadcastRoundOffset, REBROADCAST_LANDED_PAUSE_SLOTS, REBROADCAST_UNTIL_EXPIRY_GAP } from '../native/index.js';
export type { QuicFaults, ReceivedTransaction, ServerStats } from '../native/index.js';
// The data directory's generation file and a thread's key table (`store/generations.ts`, `accounts/key-cache.ts`).
export { GenerationFile, KeyTable } from '../native/index.js';

/**
 * A transaction that passed framing, sanitize and signature verification: the addon's own object,
 * handed on as it is. Its fields are defined once, in `native/src/node.rs` (`VerifiedTransaction`),
 * and this type is the one napi-rs generates from it (`native/index.d.ts`).
 */
export type VerifiedTransaction = addon.VerifiedTransaction;

export type InspectResult =
  | { ok: true; tx: VerifiedTransaction }
  | { ok: false; error: LandfallError };

/**
 * Map the native verdict to the TypeScript shape: the single place this happens. An accepted
 * transaction's `tx` goes through untouched (no copy); a refusal becomes a `LandfallError` with
 * the native code.
 */
export function toResult(i: Inspection): InspectResult {
  if (i.ok) return { ok: true, tx: i.tx ?? staleAddon() };
  const e = i.error!;
  return {
    ok: false,
    error: new LandfallError(e.code as TransactionErrorCode, e.message, {
      ...(e.offset !== undefined && { offset: e.offset }),
      ...(e.index !== undefined && { index: e.index }),
    }),
  };
}

/** An addon built from an older `native/src/node.rs` (its verdict without `tx`): say how to fix it. */
function staleAddon(): never {
  throw new Error('the native addon is older than src/native.ts (its inspection has no `tx`): rebuild it with `npm run build:native`');
}

/**
 * Decode, frame, verify and scan one base64 transaction.
 *
 * @example
 * const tips = new TipSet(config.tipAddresses);
 * const r = inspectTransaction(body.transaction, tips);
 * if (!r.ok) return reply(400, r.error.message);
 */
export function inspectTransaction(base64: string, tips: addon.TipSet): InspectResult {
  return toResult(addon.inspect(base64, tips));
}

/** Like `inspectTransaction`, for wire bytes (read in place, not copied). */
export function inspectWire(bytes: Uint8Array, tips: addon.TipSet): InspectResult {
  return toResult(addon.inspectBytes(bytes, tips));
}

/** Inspect many transactions with one ed25519 batch; one result per input, in order. */
export function inspectTransactions(base64: string[], tips: addon.TipSet): InspectResult[] {
  return addon.inspectBatch(base64, tips).map(toResult);
}

/** How many numbers `inspectAdmit` writes into its `out` (a `Float64Array` at least this long). */
export const ADMIT_OUT_LEN: number = addon.ADMIT_OUT_LEN;

/**
 * The verdicts `inspectAdmit` writes into `out[0]`, in the order admission decides them
 * (`admission::Verdict` in `native/src/admission.rs`; `test/unit/inspect-admit.test.ts` holds the two together).
 */
export const Admit = {
  /** The inspection refused the transaction (its result says why). */
  INVALID: -1,
  ADMITTED: 0,
  BLOCKHASH_EXPIRED: 1,
  TIP_REQUIRED: 2,
  TIP_INSUFFICIENT: 3,
  STALE: 4,
  RATE_LIMITED: 5,
} as const;

/**
 * Inspect one base64 transaction and, if it is valid, admit it on `view` and take one token of
 * bucket `sendSlot`: one call into the addon for what `inspectTransaction`, the chain facts' reads
 * and `bucketTakeDetailed` did. Writes the verdict (`Admit`) and the numbers a refusal or the
 * rate headers need into `out` (see `inspectAdmit` in `native/src/node_admission.rs`).
 */
export function inspectAdmit(base64: string, tips: addon.TipSet, view: addon.AdmissionView, minTipLamports: number, sendSlot: number, out: Float64Array): InspectResult {
  return toResult(addon.inspectAdmit(base64, tips, view, minTipLamports, sendSlot, out));
}

/** How many numbers `inspectAdmitKey` writes into its `out`: `inspectAdmit`'s, then the key's slot. */
export const ADMIT_KEY_OUT_LEN: number = addon.ADMIT_KEY_OUT_LEN;

/**
 * `POST /v1/send`'s one call on an ingress thread: `apiKey` looked up in `table` (the thread's key
 * table) and, only on a current hit whose entry holds its account's plan facts (the minimum tip
 * and the send bucket the key cache wrote with the account), `inspectAdmit` on those facts, with
 * the entry's slot in `out[8]`. Null for anything else, having done nothing: the caller resolves
 * the key its own way and calls `inspectAdmit` (see `native/src/node_admit_key.rs`).
 */
export function inspectAdmitKey(apiKey: string, base64: string, tips: addon.TipSet, view: addon.AdmissionView, table: addon.KeyTable, out: Float64Array): InspectResult | null {
  const i = addon.inspectAdmitKey(apiKey, base64, tips, view, table, out);
  return i == null ? null : toResult(i);
}

/** The send's one call that also wrote the first send (`inspectAdmitKeySend`): its inspection, and the send when it made one. */
export interface AdmittedKeySend {
  r: InspectResult;
  /** `sendFirstRoute`'s promise, when the call sent (it took the account's place in flight too); undefined: nothing sent. */
  sent: Promise<Float64Array | string> | undefined;
}

/**
 * `inspectAdmitKey`, and in the same call the first send of a transaction admitted, certainly
 * new and within `deadlineSlot` (-1: none), once a place in flight is taken from `inFlight` (the
 * process's `AccountCounters.counts`) under the cap the key's entry holds: both rounds to
 * `ready`'s route, as `sendFirstRoute` with `round1Ms` and `budgetMs` sends them. Null (having
 * done nothing): ask JavaScript, as `inspectAdmitKey`'s null. See `native/src/node_admit_key.rs`.
 */
export function inspectAdmitKeySend(
  apiKey: string,
  base64: string,
  tips: addon.TipSet,
  view: addon.AdmissionView,
  table: addon.KeyTable,
  out: Float64Array,
  inFlight: Int32Array,
  ready: { client: addon.QuicClient; first: { handle: addon.TpuTargets }; next: { handle: addon.TpuTargets } },
  round1Ms: number,
  budgetMs: number,
  deadlineSlot: number,
  sinceUs: number,
): AdmittedKeySend | null {
  const i = addon.inspectAdmitKeySend(apiKey, base64, tips, view, table, out, inFlight, ready.client, ready.first.handle, ready.next.handle, round1Ms, budgetMs, deadlineSlot, sinceUs);
  return i == null ? null : { r: toResult(i), sent: i.sent };
}

/** `inspectTransactions` on a libuv pool thread: the caller's event loop stays free. */
export async function inspectTransactionsAsync(base64: string[], tips: addon.TipSet): Promise<InspectResult[]> {
  return (await addon.inspectBatchAsync(base64, tips)).map(toResult);
}

/**
 * Threads of the process-wide native QUIC runtime (`quicThreads`), before it starts: before the
 * process's first QUIC client or server (the embedded cluster's validators count). Once it runs,
 * only the count it runs with is accepted: anything else is `CONFIG_INVALID`, naming it.
 */
export function setQuicThreads(threads: number): void {
  try {
    addon.setQuicThreads(threads);
  } catch (e) {
    throw new LandfallError('CONFIG_INVALID', (e as Error).message);
  }
}

/**
 * Set the calling thread's niceness (`ingressNice`: each ingress thread sets its own as it
 * starts) and say what it got: `{ nice }`, or `{ error }` naming `thread` when the OS refused
 * (lowering it needs `CAP_SYS_NICE`; the thread keeps its priority) or `nice` is not -20..19.
 */
export function setThreadNice(nice: number, thread: string): ThreadPriority {
  return priorityOf(addon.setThreadNice(nice, thread));
}

/** What a thread got when its niceness was set: the niceness it runs at, or why not. */
export type ThreadPriority = { nice: number; error?: undefined } | { nice?: undefined; error: string };

function priorityOf(got: addon.ThreadPriority): ThreadPriority {
  return got.error != null ? { error: got.error } : { nice: got.nice ?? 0 };
}

/**
 * Start the first sends' own QUIC thread at niceness `nice` (`quicFirstSendNice`) and say what
 * it got: `{ nice }`, or `{ error }` when the OS refused (lowering it needs `CAP_SYS_NICE`; the
 * thread then runs at the process's priority). Before the process's first QUIC send; afterwards
 * only the value it started with is accepted, anything else is `CONFIG_INVALID`.
 */
export function setQuicFirstSendNice(nice: number): ThreadPriority {
  try {
    return priorityOf(addon.setQuicFirstSendNice(nice));
  } catch (e) {
    throw new LandfallError('CONFIG_INVALID', (e as Error).message);
  }
}

/**
 * Hand the C allocator's free pages back to the OS (glibc's `malloc_trim(0)`; elsewhere it does
 * nothing): true when some went back. Off any request's path: `src/memory/give-back.ts`.
 */
export const trimFreeMemory: () => boolean =
  // An addon built before this call existed gives nothing back rather than failing in the
  // service's timer (`npm run build:native` brings it).
  (addon as Partial<typeof addon>).trimFreeMemory ?? (() => false);

export const base58Encode = addon.base58Encode;
export function base58Decode(text: string): Buffer {
  try {
    return addon.base58Decode(text);
  } catch (e) {
    throw new LandfallError('BASE58_INVALID', (e as Error).message);
  }
}

/** Decoded base58 strings kept by `base58DecodeShared`, per thread. */
const SHARED_DECODES = 4096;
const sharedDecodes = new Map<string, Buffer>();

/**
 * `base58Decode` for hot paths that decode the same strings again and again — a send decodes its
 * signature for the idempotence lookup and again for the status key, and every transaction of a
 * slot carries the same blockhash — from a small per-thread memo (the bs58 decode costs ~5 µs; a
 * hit costs a Map lookup). The Buffer returned is shared: callers must not modify it.
 */
export function base58DecodeShared(text: string): Buffer {
  const hit = sharedDecodes.get(text);
  if (hit !== undefined) return hit;
  const bytes = base58Decode(text);
  if (sharedDecodes.size >= SHARED_DECODES) sharedDecodes.clear(); // bounded; refills in a few requests
  sharedDecodes.set(text, bytes);
  return bytes;
}
export const ed25519Verify = addon.ed25519Verify;

/** The process-wide lock-free token buckets (shared by every thread of the process). */
export const buckets = {
  slots: addon.BUCKET_SLOTS,
  configure(slot: number, rate: number, capacity: number): void {
    try {
      addon.bucketConfigure(slot, rate, capacity);
    } catch (e) {
      throw new LandfallError('BUCKET_INVALID', (e as Error).message, { slot, rate, capacity });
    }
  },
  reset: addon.bucketReset,
  /** Fast path: ≥ 0 remaining tokens when granted, < 0 (−seconds to wait) when refused. */
  take: addon.bucketTake,
  takeDetailed: addon.bucketTakeDetailed,
  available: addon.bucketAvailable,
};

// ---- process-wide shared state --------------------------------------------------------------
// Native statics shared by every worker thread of the process: what one thread writes, the
// others read at once, with no message between them. Errors thrown here carry a stable `code`
// of native/src/error.rs (`NATIVE_STATE_ERROR_CODES` in src/errors.ts); they are bugs of the
// caller, not refusals.

/**
 * The process-wide status overlay: read-your-writes across worker threads before LMDB commits.
 * A record put here by one thread is visible to `get` in every thread at once; the writer
 * releases it with the put's token once its LMDB commit is durable (a newer put of the same key
 * is kept). Keys ≤ 128 bytes, values ≤ 4096 bytes.
 *
 * @example
 * const token = overlay.put(key, record); // every thread's overlay.get(key) sees it now
 * // … once the grouped LMDB commit holding it is durable:
 * overlay.release(key, token);
 */
export const overlay: {
  /** Put `value` under `key` (replacing any entry); returns the entry's token. */
  put(key: Uint8Array, value: Uint8Array): number;
  /** A copy of the value under `key`, or null. */
  get(key: Uint8Array): Buffer | null;
  /** Remove the entry under `key` if its token is still `token`; true if removed. */
  release(key: Uint8Array, token: number): boolean;
  /** Entries held (all threads' puts not yet released). */
  size(): number;
} = {
  put: addon.overlayPut,
  get: addon.overlayGet,
  release: addon.overlayRelease,
  size: addon.overlaySize,
};

/**
 * The process-wide filter of signatures that have a status record (`native/src/known.rs`): fed
 * by every `overlay.put` of a 64-byte key (before the put) and, at start, by
 * `store/known-load.ts`; read by `inspectAdmit` (`out[7]`: certainly new) and the store's
 * `hasStatus` (`knownCertainlyNew`). Until a load has
 * ended, and while any runs, it answers "maybe known" for every signature.
 */
/** A load begins (the store's record count sizes the first layer if nothing was added yet). */
export const knownBeginLoad: (expected: number) => void = addon.knownBeginLoad;
/** Add 64-byte keys back to back; returns how many. */
export const knownAddBatch: (keys: Uint8Array) => number = addon.knownAddBatch;
/** The load begun last has added every key (or was stopped with its store). */
export const knownEndLoad: () => void = addon.knownEndLoad;
/** Whether the filter answers: a load has ended and none runs. */
export const knownReady: () => boolean = addon.knownReady;
/** Whether the filter has `key` (false before a load has ended does not mean no record). */
export const knownContains: (key: Uint8Array) => boolean = addon.knownContains;
/** True only if no status record of `key` can exist: the filter is ready and never had it. */
export const knownCertainlyNew: (key: Uint8Array) => boolean = addon.knownCertainlyNew;
/** `[layers, keys added, bytes held]`. */
export const knownStats: () => number[] = addon.knownStats;

/** Distinct keys `accountSlot` accepts (half the bucket table: `2 * index + 1` is a bucket slot). */
export const ACCOUNT_SLOTS: number = addon.ACCOUNT_SLOTS;

/**
 * The process-wide index of an account id: the same in every thread for the life of the
 * process (the first caller allocates 0, 1, 2, …). It indexes `usage` and, doubled, `buckets`.
 * Keep it: the lookup takes a shared lock. Throws `ACCOUNT_SLOTS_FULL` past `ACCOUNT_SLOTS` ids.
 */
export const accountSlot: (key: string) => number = addon.accountSlot;
/** The account id registered at `index`, or null. */
export const accountSlotKey: (index: number) => string | null = addon.accountSlotKey;
/** Indexes `accountSlot` has handed out so far. */
export const accountSlotCount: () => number = addon.accountSlotCount;

/** UTC day number (days since the Unix epoch) of `ms`: the `day` every `usage` call takes. */
export function utcDay(ms: number = Date.now()): number {
  return Math.floor(ms / 86_400_000);
}

/**
 * Process-wide per-account usage counters, lock-free, indexed by `accountSlot`: the all-time
 * total and the count of the current UTC day (restarted by the first add of a newer day).
 *
 * They are the live view only: LMDB's counts are derived from the status records in the records'
 * own commits (`Store`), and the first thread to see an account loads those and calls `init`
 * (only one call per index succeeds). An `add` before that still counts and is added to the
 * loaded counts when `init` comes, but `get` answers null and `takeDirty` skips the index until
 * then. (`takeDirty`, the changed indexes, served the periodic persist the store's derived counts
 * replaced; the service no longer calls it.)
 *
 * @example
 * const i = accountSlot(accountId);
 * if (usage.get(i, utcDay()) === null) usage.init(i, committed.total, committed.day, committed.today);
 * usage.add(i, 1, utcDay());
 */
export const usage: {
  /** Load the persisted counts of `index` once; true if this call did it. */
  init(index: number, total: number, day: number, today: number): boolean;
  /** Count `n` sends on `day`; returns whether `index` was initialized (the add counts either way). */
  add(index: number, n: number, day: number): boolean;
  /** Counts as seen on `day` (`today` is 0 for another day), or null until `init`. */
  get(index: number, day: number): { total: number; today: number } | null;
  /** Initialized indexes changed since the last call (any thread's), ascending; clears them. */
  takeDirty(): number[];
} = {
  init: addon.usageInit,
  add: addon.usageAdd,
  get: addon.usageGet,
  takeDirty: addon.usageTakeDirty,
};

/**
 * An accepted send's record in one native call (`native/src/node_record.rs`): its `sent` status
 * value encoded into `value` (byte for byte `encodeStatus`'s, with the resend tail), the
 * acknowledgement log's frame around it written to the segment `fd` with one `writev(2)`
 * (`fdatasync`ed first with `sync`), the value put in the overlay, one send counted in usage.
 * With `handoffQueue` (not 0), the value and `handoffTail` are pushed onto that hand-off queue
 * as the last step (`src/delivery/handoff-queue.ts`). Returns the overlay token. Throws `RECORD_INVALID` (nothing done) for a field that does not
 * fit, or the errno's name (`ENOSPC`, `EIO`, …) for a failed or short write or sync (the caller
 * cuts the segment back; the overlay and the usage are untouched). Called by
 * `StatusTables.insertAccepted` only.
 */
export const recordAccepted: (
  fd: number,
  key: Uint8Array,
  wire: Uint8Array,
  blockhashOffset: number,
  names: Uint8Array,
  tipLamports: bigint,
  submittedAt: number,
  submitSlot: number,
  lastValidBlockHeight: number,
  durableNonce: boolean,
  deadlineSlot: number,
  resendOptions: number,
  usageIndex: number,
  day: number,
  sync: boolean,
  value: Buffer,
  handoffQueue: number,
  handoffTail: Uint8Array,
) => number = addon.recordAccepted;

/**
 * The hand-off queues (`native/src/handoff.rs`, `src/delivery/handoff-queue.ts`): the main thread
 * opens one per ingress thread (`handoffOpen`, an id, never 0), whose `recordAccepted` pushes its
 * accepted sends onto it; `handoffDrain` takes the entries a batch message names (ascending
 * sequence numbers; an earlier entry never named is dropped) as one buffer; `handoffClose` drops
 * the queue when its thread exits.
 */
export const handoffOpen: () => number = addon.handoffOpen;
export const handoffClose: (queue: number) => boolean = addon.handoffClose;
export const handoffDrain: (queue: number, seqs: number[]) => Buffer = addon.handoffDrain;

/** Results of the QUIC client's sends (`QuicClient` from native/index.js). */
export type { FirstSend, OutcomeCount, SendResult } from '../native/index.js';

//! The napi layer: converts JS input to Rust data once, at the boundary, calls the pure-Rust
//! modules, and maps their results and errors to JS in exactly one place each
//! (`to_inspection`, `error::to_js`).

use crate::bucket;
use crate::error::{Code, TxError};
use crate::inspect::{decode_base64, inspect_bytes, inspect_many, Report};
use crate::parse::{Version, PACKET_DATA_SIZE};
use crate::tip;
use crate::{overlay, registry, usage};
use napi::bindgen_prelude::*;
use napi_derive::napi;
use std::sync::Arc;

use crate::error::to_js;
pub use crate::error::JsCode;

/// Why a transaction was refused: a stable `code` and the precise, human-readable `message`.
#[napi(object)]
pub struct InspectError {
    /// Stable code: one of the transaction codes of `error::Code` (`Code::as_str`, the one table
    /// of them; `test/unit/native-codes.test.ts` holds `src/errors.ts` to it).
    pub code: String,
    pub message: String,
    /// Byte offset in the decoded transaction, where it applies.
    pub offset: Option<u32>,
    /// Signature, instruction, lookup or base64 character index, where it applies.
    pub index: Option<u32>,
}

/// The verdict on one transaction: `tx` when `ok`, `error` when not (never both).
///
/// This is the one definition of what an inspection tells JavaScript: `src/native.ts` hands
/// `tx` on as it is (its TypeScript type is the generated `VerifiedTransaction`), so a field is
/// added here and nowhere else.
#[napi(object)]
pub struct Inspection {
    pub ok: bool,
    pub error: Option<InspectError>,
    pub tx: Option<VerifiedTransaction>,
}

/// A transaction that passed framing, sanitize and signature verification, and what the
/// service needs of it.
#[napi(object)]
pub struct VerifiedTransaction {
    /// First signature, base58: the transaction's id.
    pub signature: String,
    pub num_signatures: u32,
    /// Fee payer (first static key), base58.
    pub fee_payer: String,
    /// Recent blockhash (or durable nonce value), base58.
    pub recent_blockhash: String,
    /// Byte offsets of the first signature (64 bytes) and of the recent blockhash (32 bytes) in
    /// the wire: the status record's key and value take those bytes in place (no base58 again).
    pub signature_offset: u32,
    pub blockhash_offset: u32,
    #[napi(ts_type = "'legacy' | 'v0'")]
    pub version: String,
    /// Sum of System transfers to tip addresses, in lamports.
    pub tip_lamports: BigInt,
    /// Number of tip transfers found.
    pub tip_transfers: u32,
    /// The first tip address paid, base58.
    pub tip_account: Option<String>,
    /// System transfers whose destination comes from an address lookup table (not counted).
    pub transfers_via_lookup: u32,
    /// First instruction is AdvanceNonceAccount: the transaction does not expire by blockhash.
    pub durable_nonce: bool,
    /// The durable nonce account, base58: the first instruction's account 0, as the validator
    /// reads it (a static key; SIMD-0242: one loaded from a lookup table does not make a
    /// durable-nonce transaction). Set only when `durable_nonce` is.
    pub nonce_account: Option<String>,
    pub compute_unit_limit: Option<u32>,
    /// Micro-lamports per compute unit.
    pub compute_unit_price: Option<BigInt>,
    /// Decoded length in bytes.
    pub size: u32,
    /// The decoded wire bytes (set when the input was base64 text).
    pub wire: Option<Buffer>,
}

fn b58(bytes: &[u8]) -> String {
    crate::base58::encode(bytes)
}

/// The one mapping from an inspection result to its JS shape.
pub(crate) fn to_inspection(
    r: std::result::Result<Report, TxError>,
    tips: &tip::TipSet,
    wire: Option<&[u8]>,
) -> Inspection {
    match r {
        Ok(rep) => Inspection {
            ok: true,
            error: None,
            tx: Some(VerifiedTransaction {
                signature: b58(&rep.signature),
                num_signatures: rep.num_signatures.into(),
                fee_payer: b58(&rep.fee_payer),
                recent_blockhash: b58(&rep.recent_blockhash),
                signature_offset: rep.signature_offset as u32,
                blockhash_offset: rep.blockhash_offset as u32,
                version: match rep.version {
                    Version::Legacy => "legacy".into(),
                    Version::V0 => "v0".into(),
                },
                tip_lamports: BigInt::from(rep.scan.tip_lamports),
                tip_transfers: rep.scan.tip_transfers,
                tip_account: rep
                    .scan
                    .first_tip_account
                    .and_then(|i| tips.keys().get(i as usize))
                    .map(|k| b58(k)),
                transfers_via_lookup: rep.scan.transfers_via_lookup,
                durable_nonce: rep.scan.durable_nonce,
                nonce_account: rep.scan.nonce_account.map(|k| b58(&k)),
                compute_unit_limit: rep.scan.compute_unit_limit,
                compute_unit_price: rep.scan.compute_unit_price.map(BigInt::from),
                size: rep.len as u32,
                wire: wire.map(|w| Buffer::from(w.to_vec())),
            }),
        },
        Err(e) => Inspection {
            ok: false,
            error: Some(InspectError {
                code: e.code.as_str().into(),
                message: e.message(),
                offset: e.offset,
                index: e.index,
            }),
            tx: None,
        },
    }
}

/// The service's tip addresses, decoded once. Pass it to every `inspect*` call.
#[napi]
pub struct TipSet {
    pub(crate) inner: Arc<tip::TipSet>,
}

#[napi]
impl TipSet {
    /// @param addresses base58 public keys (32 bytes each).
    #[napi(constructor)]
    pub fn new(addresses: Vec<String>) -> Result<Self, JsCode> {
        let mut keys = Vec::with_capacity(addresses.len());
        for a in &addresses {
            keys.push(decode_key(a)?);
        }
        Ok(TipSet {
            inner: Arc::new(tip::TipSet::new(keys)),
        })
    }

    /// The addresses, base58, in the order given.
    #[napi(getter)]
    pub fn addresses(&self) -> Vec<String> {
        self.inner.keys().iter().map(|k| b58(k)).collect()
    }
}

fn decode_key(a: &str) -> Result<[u8; 32], JsCode> {
    let mut out = [0u8; 32];
    match crate::base58::decode_into(a, &mut out) {
        Some(32) => Ok(out),
        _ => Err(to_js(&TxError::new(
            Code::Base58Invalid,
            "not a base58 32-byte address",
        ))),
    }
}

fn inspect_text(text: &[u8], tips: &tip::TipSet) -> Inspection {
    let mut buf = [0u8; PACKET_DATA_SIZE];
    match decode_base64(text, &mut buf) {
        Ok(n) => to_inspection(inspect_bytes(&buf[..n], tips), tips, Some(&buf[..n])),
        Err(e) => to_inspection(Err(e), tips, None),
    }
}

/// Decode (standard base64), frame, verify every signature and find the tips of one
/// transaction. Never throws for bad input: the verdict is in `ok` / `error`.
#[napi(catch_unwind)]
pub fn inspect(transaction: String, tips: &TipSet) -> Inspection {
    inspect_text(transaction.as_bytes(), &tips.inner)
}

/// Like `inspect`, for wire bytes (zero-copy: the bytes are read in place).
#[napi(catch_unwind, js_name = "inspectBytes")]
pub fn inspect_bytes_js(transaction: &[u8], tips: &TipSet) -> Inspection {
    to_inspection(inspect_bytes(transaction, &tips.inner), &tips.inner, None)
}

fn inspect_texts(texts: &[String], tips: &tip::TipSet) -> Vec<Inspection> {
    let mut bufs: Vec<[u8; PACKET_DATA_SIZE]> = vec![[0u8; PACKET_DATA_SIZE]; texts.len()];
    let decoded: Vec<std::result::Result<usize, TxError>> = texts
        .iter()
        .zip(bufs.iter_mut())
        .map(|(t, b)| decode_base64(t.as_bytes(), b))
        .collect();
    let slices: Vec<&[u8]> = decoded
        .iter()
        .zip(bufs.iter())
        .filter_map(|(d, b)| d.as_ref().ok().map(|&n| &b[..n]))
        .collect();
    let mut results = inspect_many(&slices, tips).into_iter().zip(slices.iter());
    decoded
        .iter()
        .map(|d| match d {
            Err(e) => to_inspection(Err(*e), tips, None),
            Ok(_) => match results.next() {
                Some((r, wire)) => to_inspection(r, tips, Some(wire)),
                None => to_inspection(Err(TxError::new(Code::Malformed, "internal")), tips, None),
            },
        })
        .collect()
}

/// Inspect many base64 transactions, verifying all their signatures as one ed25519 batch.
/// Each verdict equals what `inspect` gives for that transaction alone.
#[napi(catch_unwind)]
pub fn inspect_batch(transactions: Vec<String>, tips: &TipSet) -> Vec<Inspection> {
    inspect_texts(&transactions, &tips.inner)
}

pub struct InspectTask {
    texts: Vec<String>,
    tips: Arc<tip::TipSet>,
}

impl Task for InspectTask {
    type Output = Vec<Inspection>;
    type JsValue = Vec<Inspection>;
    fn compute(&mut self) -> napi::Result<Self::Output> {
        // Runs on a libuv pool thread: the event loop stays free while signatures verify.
        Ok(inspect_texts(&self.texts, &self.tips))
    }
    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(output)
    }
}

/// `inspectBatch` on a libuv pool thread, so the calling thread stays responsive.
#[napi(ts_return_type = "Promise<Array<Inspection>>")]
pub fn inspect_batch_async(transactions: Vec<String>, tips: &TipSet) -> AsyncTask<InspectTask> {
    AsyncTask::new(InspectTask {
        texts: transactions,
        tips: tips.inner.clone(),
    })
}

/// A bare ed25519 `verify_strict` of one signature: the benchmark baseline for `inspect`.
#[napi(catch_unwind)]
pub fn ed25519_verify(message: &[u8], signature: &[u8], public_key: &[u8]) -> bool {
    let (Ok(sig), Ok(key)) = (
        <[u8; 64]>::try_from(signature),
        <[u8; 32]>::try_from(public_key),
    ) else {
        return false;
    };
    ed25519_dalek::VerifyingKey::from_bytes(&key)
        .and_then(|k| k.verify_strict(message, &ed25519_dalek::Signature::from_bytes(&sig)))
        .is_ok()
}

/// base58-encode bytes (signatures, addresses).
#[napi]
pub fn base58_encode(bytes: &[u8]) -> String {
    b58(bytes)
}

/// base58-decode text; throws `BASE58_INVALID` on a bad character.
#[napi]
pub fn base58_decode(text: String) -> Result<Buffer, JsCode> {
    bs58::decode(&text)
        .into_vec()
        .map(Buffer::from)
        .map_err(|_| to_js(&TxError::new(Code::Base58Invalid, "invalid base58 text")))
}

// ---- token buckets ---------------------------------------------------------------------

/// Number of bucket slots in the process-wide table.
#[napi]
pub const BUCKET_SLOTS: u32 = bucket::SLOTS as u32;

/// A JS number as an exact u32, or None (NaN, fractions, negatives and values ≥ 2^32 are
/// refused here rather than wrapped by the number conversion).
fn exact_u32(v: f64) -> Option<u32> {
    (v.is_finite() && v.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&v))
        .then_some(v as u32)
}

fn slot_of(v: f64) -> Result<u32, JsCode> {
    exact_u32(v).ok_or_else(|| to_js(&bucket::BucketError::SlotOutOfRange))
}

/// Configure bucket `slot`: `rate` tokens per second, burst `capacity`. Live: takes after this
/// call see the new limits; tokens already in use stay in use (capped at the new capacity).
#[napi]
pub fn bucket_configure(slot: f64, rate: f64, capacity: f64) -> Result<(), JsCode> {
    let cap = exact_u32(capacity).ok_or_else(|| to_js(&bucket::BucketError::InvalidCapacity))?;
    bucket::configure(slot_of(slot)?, rate, cap).map_err(|e| to_js(&e))
}

/// Refill bucket `slot` to capacity.
#[napi]
pub fn bucket_reset(slot: f64) -> Result<(), JsCode> {
    bucket::reset(slot_of(slot)?).map_err(|e| to_js(&e))
}

/// Take `n` tokens, all or nothing. Fast path: returns the whole tokens remaining (≥ 0) when
/// granted, or, when refused, minus the seconds until `n` tokens are available
/// (`-Infinity` if never). Shared by every thread of the process; lock-free.
#[napi]
pub fn bucket_take(slot: f64, n: f64) -> f64 {
    let (Some(slot), Some(n)) = (exact_u32(slot), exact_u32(n)) else {
        return f64::NEG_INFINITY;
    };
    let t = bucket::take(slot, n);
    if t.granted {
        f64::from(t.remaining)
    } else if t.retry_after_ns == u64::MAX {
        f64::NEG_INFINITY
    } else {
        // Never -0: a refusal is always strictly negative.
        -((t.retry_after_ns as f64 / 1e9).max(1e-9))
    }
}

/// Result of `bucketTakeDetailed`.
#[napi(object)]
pub struct BucketTake {
    pub granted: bool,
    pub remaining: u32,
    /// Milliseconds until `n` tokens are available (0 when granted; Infinity if never).
    pub retry_after_ms: f64,
    /// Milliseconds until the bucket is full again.
    pub reset_ms: f64,
}

/// Take `n` tokens, all or nothing, with everything a 429 response needs.
#[napi]
pub fn bucket_take_detailed(slot: f64, n: f64) -> BucketTake {
    let t = match (exact_u32(slot), exact_u32(n)) {
        (Some(slot), Some(n)) => bucket::take(slot, n),
        _ => bucket::Take {
            granted: false,
            remaining: 0,
            retry_after_ns: u64::MAX,
            reset_ns: 0,
        },
    };
    BucketTake {
        granted: t.granted,
        remaining: t.remaining,
        retry_after_ms: if t.retry_after_ns == u64::MAX {
            f64::INFINITY
        } else {
            t.retry_after_ns as f64 / 1e6
        },
        reset_ms: t.reset_ns as f64 / 1e6,
    }
}

/// Whole tokens available in `slot` now.
#[napi]
pub fn bucket_available(slot: f64) -> u32 {
    exact_u32(slot).map_or(0, bucket::available)
}

/// Measurement hook for the benchmark suite: performs `iterations` takes of one token on
/// `slot` inside Rust and returns the mean nanoseconds per take, so the cost of the lock-free
/// take itself can be reported apart from the cost of one N-API call.
#[napi]
pub fn bucket_take_cost_ns(slot: f64, iterations: u32) -> f64 {
    let Some(slot) = exact_u32(slot) else {
        return f64::NAN;
    };
    let n = iterations.max(1);
    let start = std::time::Instant::now();
    let mut granted = 0u32;
    for _ in 0..n {
        granted += u32::from(std::hint::black_box(bucket::take(slot, 1)).granted);
    }
    std::hint::black_box(granted);
    start.elapsed().as_nanos() as f64 / f64::from(n)
}

// ---- process-wide shared state: status overlay, account slots, usage counters --------------

/// 2^53: every whole JS number below it is exact.
const MAX_SAFE: f64 = 9_007_199_254_740_992.0;

/// A JS number as an exact integer below 2^53, or None.
fn exact_u53(v: f64) -> Option<u64> {
    (v.is_finite() && v.fract() == 0.0 && (0.0..MAX_SAFE).contains(&v)).then_some(v as u64)
}

/// Put a status record in the process-wide overlay, where every thread's `overlayGet` sees it
/// at once (before the LMDB commit that makes it durable). Replaces any entry of the key.
/// Returns the entry's token (from one process-wide increasing counter, exact as a number) for
/// `overlayRelease`. Throws `OVERLAY_KEY_TOO_LARGE` (key over 128 bytes) or
/// `OVERLAY_VALUE_TOO_LARGE` (value over 4096 bytes).
#[napi]
pub fn overlay_put(key: &[u8], value: &[u8]) -> Result<f64, JsCode> {
    // Tokens stay below 2^53 for centuries of puts, so the conversion is exact.
    overlay::global()
        .put(key, value)
        .map(|t| t as f64)
        .map_err(|e| to_js(&e))
}

/// A copy of the overlay's value under `key`, or null.
#[napi]
pub fn overlay_get(key: &[u8]) -> Option<Buffer> {
    overlay::global().get(key).map(Buffer::from)
}

/// Remove the overlay entry under `key` if its token is still `token` (a newer put of the key
/// is kept). True if removed. Call it once the put's LMDB commit is durable.
#[napi]
pub fn overlay_release(key: &[u8], token: f64) -> bool {
    exact_u53(token).is_some_and(|t| overlay::global().release(key, t))
}

/// Entries in the overlay (all threads' puts not yet released).
#[napi]
pub fn overlay_size() -> u32 {
    u32::try_from(overlay::global().len()).unwrap_or(u32::MAX)
}

/// Distinct keys `accountSlot` accepts: half the bucket table, so `2 * index + 1` is a bucket slot.
#[napi]
pub const ACCOUNT_SLOTS: u32 = registry::CAPACITY as u32;

/// The process-wide index of `key` (an account id): the same in every thread for the life of
/// the process, allocated 0, 1, 2, … by the first caller of each key. Keep it (the lookup takes a
/// shared lock). Throws `ACCOUNT_SLOTS_FULL` once `ACCOUNT_SLOTS` keys are registered.
#[napi]
pub fn account_slot(key: String) -> Result<u32, JsCode> {
    registry::global().slot(&key).map_err(|e| to_js(&e))
}

/// The key registered at `index`, or null (so a persister that gets indexes can name them).
#[napi]
pub fn account_slot_key(index: f64) -> Option<String> {
    exact_u32(index)
        .and_then(|i| registry::global().key(i))
        .map(|k| k.to_string())
}

/// Indexes `accountSlot` has handed out so far.
#[napi]
pub fn account_slot_count() -> u32 {
    u32::try_from(registry::global().len()).unwrap_or(u32::MAX)
}

/// One account's usage as `usageGet` reads it.
#[napi(object)]
pub struct UsageCounts {
    /// All-time sends (persisted base + this process's adds).
    pub total: f64,
    /// Sends on the day asked for (0 if the counts are of another day).
    pub today: u32,
}

fn usage_index(v: f64) -> Result<u32, JsCode> {
    exact_u32(v)
        .filter(|&i| (i as usize) < usage::CAPACITY)
        .ok_or_else(|| {
            to_js(&TxError::new(
                Code::UsageIndexOutOfRange,
                "usage index must be an accountSlot index (a whole number below 32768)",
            ))
        })
}

fn usage_u32(what: &'static str, v: f64) -> Result<u32, JsCode> {
    exact_u32(v).ok_or_else(|| to_js(&TxError::new(Code::UsageInvalidValue, what)))
}

/// Load the persisted usage of account `index` (`total`; `today` sends on UTC day `day`, days
/// since the Unix epoch), once per process: true if this call did it, false if it was already
/// done (by any thread). Adds made before it are kept on top of these counts. Throws
/// `USAGE_INDEX_OUT_OF_RANGE` or `USAGE_INVALID_VALUE`.
#[napi]
pub fn usage_init(index: f64, total: f64, day: f64, today: f64) -> Result<bool, JsCode> {
    let index = usage_index(index)?;
    let total = exact_u53(total).ok_or_else(|| {
        to_js(&TxError::new(
            Code::UsageInvalidValue,
            "total must be a whole number below 2^53",
        ))
    })?;
    let day = usage_u32("day must be a whole number of days since the epoch", day)?;
    let today = usage_u32("today must be a whole number below 2^32", today)?;
    usage::TABLE
        .init(index, total, day, today)
        .map_err(|e| to_js(&e))
}

/// Count `n` sends of account `index` on UTC day `day`, lock-free: total += n; today += n on
/// the stored day, restarts at n on a newer day, unchanged for an older one. Marks the index
/// for `usageTakeDirty`. Returns whether the index was initialized (`usageInit`): the add is
/// kept either way and added to the persisted counts when `usageInit` comes, but `usageGet`
/// answers null and the persister skips the index until then, so callers init first.
/// Throws `USAGE_INDEX_OUT_OF_RANGE` or `USAGE_INVALID_VALUE`.
#[napi]
pub fn usage_add(index: f64, n: f64, day: f64) -> Result<bool, JsCode> {
    let index = usage_index(index)?;
    let n = usage_u32("n must be a whole number below 2^32", n)?;
    let day = usage_u32("day must be a whole number of days since the epoch", day)?;
    usage::TABLE.add(index, n, day).map_err(|e| to_js(&e))
}

/// The usage of account `index` as seen on UTC day `day`, or null until `usageInit`.
#[napi]
pub fn usage_get(index: f64, day: f64) -> Result<Option<UsageCounts>, JsCode> {
    let index = usage_index(index)?;
    let day = usage_u32("day must be a whole number of days since the epoch", day)?;
    Ok(usage::TABLE
        .get(index, day)
        .map_err(|e| to_js(&e))?
        .map(|c| UsageCounts {
            total: c.total as f64,
            today: c.today,
        }))
}

/// Initialized account indexes whose usage changed since the last call (any thread's), in
/// ascending order; clears their marks. For the one timer that persists usage.
#[napi]
pub fn usage_take_dirty() -> Vec<u32> {
    usage::TABLE.take_dirty()
}

/// What a thread got when its niceness was set: `{ nice }` it runs at, or `{ error }` saying why
/// it could not have the niceness asked for (it then keeps the priority it had).
#[napi(object)]
pub struct ThreadPriority {
    pub nice: Option<i32>,
    pub error: Option<String>,
}

pub(crate) fn priority_of(r: std::result::Result<i32, String>) -> ThreadPriority {
    match r {
        Ok(nice) => ThreadPriority {
            nice: Some(nice),
            error: None,
        },
        Err(error) => ThreadPriority {
            nice: None,
            error: Some(error),
        },
    }
}

/// Hand the C allocator's free pages back to the OS (glibc's `malloc_trim(0)`): true when some
/// went back; false when none could, or off glibc, where it does nothing. Called by the service
/// once it has gone quiet after a load (`src/memory/give-back.ts`), never on a request's path.
#[napi]
pub fn trim_free_memory() -> bool {
    crate::memory::trim_free_memory()
}

/// Set the calling thread's niceness (-20..=19; 0 leaves it): each ingress thread sets its own
/// as it starts (`ingressNice`), so requests run ahead of the slot's rebroadcast burst and the
/// tracker. Never throws: a value out of range, or one the OS refused (lowering it needs
/// `CAP_SYS_NICE`), comes back as `{ error }`, naming `thread`.
#[napi]
pub fn set_thread_nice(nice: i32, thread: String) -> ThreadPriority {
    if !(-20..=19).contains(&nice) {
        return priority_of(Err(format!(
            "{thread}: nice must be an integer -20..19, got {nice}"
        )));
    }
    priority_of(crate::priority::set_current_thread_nice(nice, &thread))
}

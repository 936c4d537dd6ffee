//! napi: the process-wide filter of known signatures (`known.rs`): its start-up load from
//! LMDB's keys, in batches, and its state. The overlay feeds it on every put; `inspectAdmit`
//! (`node_admission.rs`) and the store's duplicate check (`knownCertainlyNew`) read it.

use crate::known;
use napi_derive::napi;

/// A load of the store's status keys begins: until it (and any other load) ends, the filter
/// answers "maybe known" for every signature. `expected`, the store's count of records, sizes
/// the first layer if nothing was added yet.
#[napi]
pub fn known_begin_load(expected: f64) {
    let n = if expected.is_finite() && expected > 0.0 {
        expected as u64
    } else {
        0
    };
    known::global().begin_load(n);
}

/// Add a batch of status keys (64-byte signatures back to back); returns how many were read.
#[napi]
pub fn known_add_batch(keys: &[u8]) -> u32 {
    u32::try_from(known::global().add_batch(keys)).unwrap_or(u32::MAX)
}

/// The load begun with `knownBeginLoad` has added every key (or was abandoned with its store).
#[napi]
pub fn known_end_load() {
    known::global().end_load();
}

/// Whether the filter answers: a load has ended and none is running.
#[napi]
pub fn known_ready() -> bool {
    known::global().ready()
}

/// Whether the filter has `key` (false before a load has ended does not mean no record: use
/// `knownCertainlyNew` for that).
#[napi]
pub fn known_contains(key: &[u8]) -> bool {
    known::global().contains(key)
}

/// True only if no status record of `key` can exist: the filter is ready and never had it (the
/// answer `inspectAdmit` gives in its `out[7]`, for a key the caller holds).
#[napi]
pub fn known_certainly_new(key: &[u8]) -> bool {
    known::global().certainly_new(key)
}

/// `[layers, keys added, bytes held]`, for tests and the docs' numbers.
#[napi]
pub fn known_stats() -> Vec<f64> {
    let (layers, keys, bytes) = known::global().stats();
    vec![layers as f64, keys as f64, bytes as f64]
}

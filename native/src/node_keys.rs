//! napi: the data directory's generation file (`generations.rs`) and a thread's key table
//! (`keys.rs`), for `src/store/generations.ts` and `src/accounts/key-cache.ts`.

use crate::generations::{Generations, Mark, SLOTS};
use crate::in_flight::Place;
use crate::keys::{KeyTable as Table, PlanFacts};
use crate::overlay;
use napi::bindgen_prelude::Buffer;
use napi_derive::napi;
use std::path::Path;
use std::sync::Arc;

/// The generation file of one data directory, mapped by this handle.
#[napi]
pub struct GenerationFile {
    inner: Arc<Generations>,
}

#[napi]
impl GenerationFile {
    /// Map `<dir>/generations`, creating it (mode 0600) if `create` and absent. Throws (a plain
    /// error naming the file) if it cannot be opened or is not a generation file.
    #[napi(constructor)]
    pub fn new(dir: String, create: bool) -> napi::Result<Self> {
        Generations::open(Path::new(&dir), create)
            .map(|g| GenerationFile { inner: Arc::new(g) })
            .map_err(|e| napi::Error::from_reason(format!("{e} ({dir})")))
    }

    /// Mark a write as begun, before its LMDB transaction commits; the mark for `end`.
    #[napi]
    pub fn begin(&self) -> u32 {
        self.inner.begin().0 as u32
    }

    /// After the write's commit is durable (or failed): bump what it may have changed, release
    /// the mark.
    #[napi]
    pub fn end(&self, mark: u32, keys: bool, accounts: bool) {
        self.inner
            .end(Mark((mark as usize).min(SLOTS)), keys, accounts);
    }

    /// `[writes in progress, keys generation, accounts generation]` now (dead writers' marks
    /// released first). Generations stay far below 2^53.
    #[napi]
    pub fn read(&self) -> Vec<f64> {
        let s = self.inner.read();
        vec![s.active as f64, s.keys as f64, s.accounts as f64]
    }

    /// A new, empty key table reading this file's generations (one per thread's key cache).
    #[napi]
    pub fn key_table(&self) -> KeyTable {
        KeyTable {
            gens: Arc::clone(&self.inner),
            table: Table::new(),
            lookups: 0,
        }
    }
}

/// A thread's key table (`keys.rs`): presented key → slot of the caller's resolved pairs.
#[napi]
pub struct KeyTable {
    gens: Arc<Generations>,
    table: Table,
    /// Calls of `lookup` (for tests: the send's one call, `inspectAdmitKey`, is not one).
    lookups: u32,
}

/// Whether the overlay holds a value under `k` (a confirmation's credit not committed yet).
fn held(k: &[u8]) -> bool {
    overlay::global().get(k).is_some()
}

/// The plan facts JavaScript gives with an account: none if `send_slot` is not a bucket slot
/// (negative, fractional, NaN: the caller has none) or the minimum is not a whole number. The
/// in-flight place only when both its numbers are whole (`inFlightSlot` -1: the service counts
/// no transactions in flight).
fn facts(
    min_tip_lamports: f64,
    send_slot: f64,
    in_flight_slot: f64,
    in_flight_cap: f64,
) -> Option<PlanFacts> {
    let whole = |v: f64| v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= f64::from(u32::MAX);
    let ok = whole(min_tip_lamports) && whole(send_slot);
    ok.then_some(PlanFacts {
        min_tip_lamports: min_tip_lamports as u64,
        send_slot: send_slot as u32,
        in_flight: (whole(in_flight_slot) && whole(in_flight_cap)).then_some(Place {
            slot: in_flight_slot as u32,
            cap: in_flight_cap as u32,
        }),
    })
}

impl KeyTable {
    /// The send's lookup (`node_admit_key.rs`): the slot and its plan facts on a current hit
    /// that has them, else None (`keys::KeyTable::current`).
    pub(crate) fn current(&self, key: &str) -> Option<(u32, PlanFacts)> {
        self.table.current(key.as_bytes(), &self.gens, held)
    }
}

#[napi]
impl KeyTable {
    /// SHA-256 of `key` (its UTF-8), looked up with the generations read now and the overlay:
    /// `slot * 4 + kind` (0 hit, 1 credit held in the overlay, 2 account to read again) or -1
    /// (miss: the slow path, then `insert` or `forget`).
    #[napi]
    pub fn lookup(&mut self, key: String) -> f64 {
        self.lookups = self.lookups.wrapping_add(1);
        self.table.lookup(key.as_bytes(), &self.gens, held).code()
    }

    /// After a miss whose slow path found the key live: the slot for its pair, or -1 (not
    /// entered: a write was in progress during the lookup). With the plan facts of the account
    /// read (its plan's minimum tip in lamports, its send bucket's slot; a `sendSlot` of -1: none,
    /// and the send's one call answers "ask JavaScript" for this key; the account's counter of
    /// transactions in flight and its plan's cap, -1 and -1 when none are counted).
    #[napi]
    pub fn insert(
        &mut self,
        overlay_key: Buffer,
        min_tip_lamports: f64,
        send_slot: f64,
        in_flight_slot: f64,
        in_flight_cap: f64,
    ) -> i32 {
        let facts = facts(min_tip_lamports, send_slot, in_flight_slot, in_flight_cap);
        self.table
            .insert(&overlay_key, facts)
            .and_then(|s| i32::try_from(s).ok())
            .unwrap_or(-1)
    }

    /// After an answer of kind 2: the account was read again (with its plan facts, as
    /// `insert`'s); whether the entry now holds it.
    #[napi]
    pub fn account_read(
        &mut self,
        min_tip_lamports: f64,
        send_slot: f64,
        in_flight_slot: f64,
        in_flight_cap: f64,
    ) -> bool {
        let facts = facts(min_tip_lamports, send_slot, in_flight_slot, in_flight_cap);
        self.table.account_read(facts)
    }

    /// After a miss whose slow path found no live key: drop any entry of its hash.
    #[napi]
    pub fn forget(&mut self) {
        self.table.forget()
    }

    /// Entries held.
    #[napi(getter)]
    pub fn size(&self) -> u32 {
        self.table.len() as u32
    }

    /// Calls of `lookup` so far (tests count the crossings with it).
    #[napi(getter)]
    pub fn lookups(&self) -> u32 {
        self.lookups
    }
}

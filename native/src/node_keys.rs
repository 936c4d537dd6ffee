//! napi: the data directory's generation file (`generations.rs`) and a thread's key table
//! (`keys.rs`), for `src/store/generations.ts` and `src/accounts/key-cache.ts`.

use crate::generations::{Generations, Mark, SLOTS};
use crate::keys::KeyTable as Table;
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
        }
    }
}

/// A thread's key table (`keys.rs`): presented key → slot of the caller's resolved pairs.
#[napi]
pub struct KeyTable {
    gens: Arc<Generations>,
    table: Table,
}

#[napi]
impl KeyTable {
    /// SHA-256 of `key` (its UTF-8), looked up with the generations read now and the overlay:
    /// `slot * 4 + kind` (0 hit, 1 credit held in the overlay, 2 account to read again) or -1
    /// (miss: the slow path, then `insert` or `forget`).
    #[napi]
    pub fn lookup(&mut self, key: String) -> f64 {
        self.table
            .lookup(key.as_bytes(), &self.gens, |k| {
                overlay::global().get(k).is_some()
            })
            .code()
    }

    /// After a miss whose slow path found the key live: the slot for its pair, or -1 (not
    /// entered: a write was in progress during the lookup).
    #[napi]
    pub fn insert(&mut self, overlay_key: Buffer) -> i32 {
        self.table
            .insert(&overlay_key)
            .and_then(|s| i32::try_from(s).ok())
            .unwrap_or(-1)
    }

    /// After an answer of kind 2: the account was read again; whether the entry now holds it.
    #[napi]
    pub fn account_read(&mut self) -> bool {
        self.table.account_read()
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
}

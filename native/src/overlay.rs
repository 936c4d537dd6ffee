//! Process-wide status overlay: read-your-writes across threads before LMDB commits.
//!
//! Why it exists: N ingress threads each write status records into LMDB, and LMDB commits are
//! grouped by a timer, so for a few milliseconds a record written by thread A is invisible to a
//! read transaction in thread B. A bot that sends on one connection and asks for the status on
//! another would see "not found". The writer therefore also puts the record here, in native
//! memory every thread of the process shares, and releases it once its LMDB commit is durable;
//! readers look here first, then in LMDB.
//!
//! Why a token: between a put and its release another put of the same key can replace the
//! record (a later status). Each put gets a fresh token from one process-wide counter, and a
//! release removes the entry only if it still holds that token, so the commit of an older
//! version never hides a newer one that is not committed yet.
//!
//! Why this shape: 16 shards, each a `Mutex<HashMap>`. A critical section is one hash lookup and
//! at most one copy of ≤ 4 KiB (allocations happen before the lock is taken, frees after it is
//! released), so with N threads spread over 16 locks a thread practically never waits; a
//! lock-free map would buy nothing measurable here and cost a dependency.

use crate::error::{Code, TxError};
use crate::known::{self, Known};
use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

/// Longest key, bytes (a signature is 64, a signature plus a prefix fits).
pub const MAX_KEY: usize = 128;
/// Longest value, bytes (a compact status record is far smaller).
pub const MAX_VALUE: usize = 4096;
/// Number of independently locked shards.
pub const SHARDS: usize = 16;

type Entries = HashMap<Box<[u8]>, (u64, Box<[u8]>), RandomState>;

/// A sharded map from key to (token, value). [`global`] is the process's one instance; separate
/// instances exist for tests.
pub struct Overlay {
    hasher: RandomState,
    shards: [Mutex<Entries>; SHARDS],
    /// The next token. Starts at 1, so 0 never names an entry.
    next_token: AtomicU64,
    /// The process's filter of known signatures (`known.rs`), told every 64-byte key before
    /// its put; none for the tests' own instances.
    known: Option<&'static Known>,
}

impl Default for Overlay {
    fn default() -> Self {
        Self::new()
    }
}

fn lock(m: &Mutex<Entries>) -> MutexGuard<'_, Entries> {
    // A critical section here never panics part-way through a change (insert, get, remove are
    // each one HashMap call), so a poisoned lock still guards consistent data.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Overlay {
    pub fn new() -> Self {
        // Keys may come from clients (signatures), so the hash is keyed per process.
        let hasher = RandomState::new();
        Overlay {
            shards: std::array::from_fn(|_| Mutex::new(HashMap::with_hasher(hasher.clone()))),
            hasher,
            next_token: AtomicU64::new(1),
            known: None,
        }
    }

    fn shard(&self, key: &[u8]) -> &Mutex<Entries> {
        // The maps hash with the same hasher: they use the low bits for the bucket and the top
        // 7 for the tag, so the shard comes from bits in between, or each shard's keys would
        // share their low bits and crowd one sixteenth of its buckets.
        let h = self.hasher.hash_one(key);
        &self.shards[(h >> 40) as usize % SHARDS]
    }

    /// Put `value` under `key`, replacing any entry of the key, and return the entry's token.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<u64, TxError> {
        check(key, value)?;
        // Before the entry exists: whoever can read the record can read that it is known.
        if let Some(k) = self.known.filter(|_| key.len() == known::KEY_BYTES) {
            k.add(key);
        }
        let (key, value): (Box<[u8]>, Box<[u8]>) = (key.into(), value.into());
        let mut map = lock(self.shard(&key));
        // Taken under the shard lock, so for any one key, a later entry has a larger token.
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        let old = map.insert(key, (token, value));
        drop(map);
        drop(old); // freed outside the lock
        Ok(token)
    }

    /// A copy of the value under `key`, if there is one.
    pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        lock(self.shard(key)).get(key).map(|(_, v)| v.to_vec())
    }

    /// The token of the entry under `key`, if there is one.
    pub fn token(&self, key: &[u8]) -> Option<u64> {
        lock(self.shard(key)).get(key).map(|(t, _)| *t)
    }

    /// Remove the entry under `key` if its token is `token` (a newer put of the key is kept).
    /// True if removed.
    pub fn release(&self, key: &[u8], token: u64) -> bool {
        let mut map = lock(self.shard(key));
        if map.get(key).is_some_and(|(t, _)| *t == token) {
            let removed = map.remove_entry(key);
            drop(map);
            drop(removed);
            true
        } else {
            false
        }
    }

    /// Entries held, over all shards (each shard counted under its lock; not a snapshot).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| lock(s).len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn check(key: &[u8], value: &[u8]) -> Result<(), TxError> {
    if key.len() > MAX_KEY {
        return Err(TxError::new(
            Code::OverlayKeyTooLarge,
            "overlay key longer than 128 bytes",
        )
        .value(key.len()));
    }
    if value.len() > MAX_VALUE {
        return Err(TxError::new(
            Code::OverlayValueTooLarge,
            "overlay value longer than 4096 bytes",
        )
        .value(value.len()));
    }
    Ok(())
}

/// The process's overlay, shared by every thread.
pub fn global() -> &'static Overlay {
    static OVERLAY: OnceLock<Overlay> = OnceLock::new();
    OVERLAY.get_or_init(|| Overlay {
        known: Some(known::global()),
        ..Overlay::new()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn put_get_replace_release() {
        let o = Overlay::new();
        assert!(o.is_empty());
        assert_eq!(o.get(b"sig"), None);
        let t1 = o.put(b"sig", b"sent").unwrap();
        assert_eq!(o.get(b"sig").as_deref(), Some(&b"sent"[..]));
        let t2 = o.put(b"sig", b"confirmed").unwrap();
        assert!(t2 > t1);
        assert_eq!(o.get(b"sig").as_deref(), Some(&b"confirmed"[..]));
        assert_eq!(o.len(), 1);
        // The older version's commit does not hide the newer one.
        assert!(!o.release(b"sig", t1));
        assert_eq!(o.get(b"sig").as_deref(), Some(&b"confirmed"[..]));
        assert!(o.release(b"sig", t2));
        assert_eq!(o.get(b"sig"), None);
        assert!(!o.release(b"sig", t2), "releasing twice removes nothing");
        assert!(o.is_empty());
    }

    #[test]
    fn tokens_increase_across_keys_and_never_are_zero() {
        let o = Overlay::new();
        let tokens: Vec<u64> = (0..100u32)
            .map(|i| o.put(&i.to_le_bytes(), b"v").unwrap())
            .collect();
        assert!(tokens[0] >= 1);
        assert!(tokens.windows(2).all(|w| w[1] > w[0]));
        assert!(!o.release(&0u32.to_le_bytes(), 0));
        assert_eq!(o.len(), 100);
    }

    #[test]
    fn size_limits_are_coded_errors_and_store_nothing() {
        let o = Overlay::new();
        let key = [7u8; MAX_KEY];
        let value = vec![9u8; MAX_VALUE];
        assert!(o.put(&key, &value).is_ok());
        assert!(o.put(b"", b"").is_ok(), "empty key and value are valid");
        let e = o.put(&[1u8; MAX_KEY + 1], b"v").unwrap_err();
        assert_eq!((e.code, e.value), (Code::OverlayKeyTooLarge, Some(129)));
        let e = o.put(b"k", &vec![0u8; MAX_VALUE + 1]).unwrap_err();
        assert_eq!((e.code, e.value), (Code::OverlayValueTooLarge, Some(4097)));
        assert_eq!(o.get(b"k"), None);
        assert_eq!(o.len(), 2);
    }

    #[test]
    fn keys_spread_over_the_shards() {
        let o = Overlay::new();
        for i in 0..1600u32 {
            o.put(&i.to_be_bytes(), b"v").unwrap();
        }
        // 100 per shard on average; a broken shard choice puts them all in one or a few.
        assert!(
            o.shards.iter().all(|s| lock(s).len() > 40),
            "{:?}",
            o.shards.iter().map(|s| lock(s).len()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_put_in_one_thread_is_read_in_another() {
        let o = Arc::new(Overlay::new());
        let token = {
            let o = o.clone();
            std::thread::spawn(move || o.put(b"cross", b"from writer").unwrap())
                .join()
                .unwrap()
        };
        let o2 = o.clone();
        let seen = std::thread::spawn(move || o2.get(b"cross")).join().unwrap();
        assert_eq!(seen.as_deref(), Some(&b"from writer"[..]));
        assert!(o.release(b"cross", token));
    }

    #[test]
    fn threads_putting_and_releasing_one_key_leave_nothing_behind() {
        // Each thread puts its own version of a shared key and releases its own token. Whatever
        // the interleaving, the last put's release finds its own token, so the map ends empty,
        // and a reader in between always sees some thread's whole value.
        let o = Arc::new(Overlay::new());
        let handles: Vec<_> = (0..8u8)
            .map(|t| {
                let o = o.clone();
                std::thread::spawn(move || {
                    let value = [t; 300];
                    let mut removed = 0;
                    for _ in 0..5000 {
                        let token = o.put(b"shared", &value).unwrap();
                        let seen = o.get(b"shared");
                        if let Some(v) = seen {
                            assert_eq!(v.len(), 300);
                            assert!(v.iter().all(|&b| b == v[0]), "a torn value");
                        }
                        removed += usize::from(o.release(b"shared", token));
                    }
                    removed
                })
            })
            .collect();
        let removed: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert!((1..=8 * 5000).contains(&removed));
        assert!(o.is_empty());
    }
}

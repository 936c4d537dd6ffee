//! Process-wide account slot registry: one small, stable index per distinct key (an account id)
//! for the life of the process, the same in every thread.
//!
//! Why: the other process-wide tables (token buckets in `bucket`, usage counters in `usage`) are
//! flat arrays indexed by number, so every thread needs the same number for the same account
//! without a message to the others. The first caller of a key allocates the next index (0, 1,
//! 2, …); every later caller, on any thread, gets that index back. Indexes are never reused.
//!
//! Capacity: `2 · index` must stay a valid bucket slot (an account may own two buckets, at
//! `2·index` and `2·index + 1`), so [`CAPACITY`] is half of [`bucket::SLOTS`](crate::bucket::SLOTS).
//!
//! Shape: one `RwLock` around the map. The lookup of a known key takes the read lock only;
//! callers keep the index they got (a thread-local cache on the JS side), so the write lock is
//! taken once per account per process.

use crate::error::{Code, TxError};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

/// Distinct keys the process-wide registry accepts.
pub const CAPACITY: usize = crate::bucket::SLOTS / 2;
const _: () = assert!(
    2 * CAPACITY <= crate::bucket::SLOTS,
    "2·index must be a bucket slot"
);

#[derive(Default)]
struct Slots {
    index: HashMap<Arc<str>, u32>,
    /// `keys[i]` is the key of index `i`.
    keys: Vec<Arc<str>>,
}

/// A registry of at most `capacity` keys. [`global`] is the process's one instance; separate
/// instances exist for tests.
pub struct Registry {
    capacity: usize,
    slots: RwLock<Slots>,
}

impl Registry {
    pub fn new(capacity: usize) -> Self {
        Registry {
            capacity,
            slots: RwLock::new(Slots::default()),
        }
    }

    /// The index of `key`, allocating the next one on first sight. Refuses with
    /// `ACCOUNT_SLOTS_FULL` once `capacity` keys are registered.
    pub fn slot(&self, key: &str) -> Result<u32, TxError> {
        // Fast path: a known key, read lock only. No critical section here can panic part-way
        // through a change, so a poisoned lock still guards consistent data.
        if let Some(&i) = self
            .slots
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .index
            .get(key)
        {
            return Ok(i);
        }
        // Slow path: look again under the write lock (another thread may have just added it).
        let mut slots = self.slots.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(&i) = slots.index.get(key) {
            return Ok(i);
        }
        let i = slots.keys.len();
        if i >= self.capacity {
            return Err(
                TxError::new(Code::AccountSlotsFull, "every account slot is taken")
                    .value(self.capacity),
            );
        }
        let key: Arc<str> = key.into();
        slots.keys.push(key.clone());
        slots.index.insert(key, i as u32);
        Ok(i as u32)
    }

    /// The key of index `i`, if allocated (so a thread that persists by index can name it).
    pub fn key(&self, i: u32) -> Option<Arc<str>> {
        self.slots
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .keys
            .get(i as usize)
            .cloned()
    }

    /// Indexes allocated so far (the next index to be handed out).
    pub fn len(&self) -> usize {
        self.slots
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .keys
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

/// The process's registry, shared by every thread, of [`CAPACITY`] keys.
pub fn global() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| Registry::new(CAPACITY))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn indexes_are_dense_stable_and_reversible() {
        let r = Registry::new(10);
        assert!(r.is_empty());
        assert_eq!(r.slot("acc_a").unwrap(), 0);
        assert_eq!(r.slot("acc_b").unwrap(), 1);
        assert_eq!(r.slot("acc_a").unwrap(), 0);
        assert_eq!(
            r.slot("").unwrap(),
            2,
            "the empty string is a key like any other"
        );
        assert_eq!(r.len(), 3);
        assert_eq!(r.key(1).as_deref(), Some("acc_b"));
        assert_eq!(r.key(3), None);
    }

    #[test]
    fn a_full_registry_refuses_new_keys_and_still_answers_known_ones() {
        let r = Registry::new(3);
        for k in ["a", "b", "c"] {
            r.slot(k).unwrap();
        }
        let e = r.slot("d").unwrap_err();
        assert_eq!((e.code, e.value), (Code::AccountSlotsFull, Some(3)));
        assert_eq!(r.slot("c").unwrap(), 2);
        assert_eq!(r.len(), 3);
    }

    #[test]
    fn the_global_capacity_keeps_two_slots_per_account_inside_the_bucket_table() {
        assert_eq!(CAPACITY, 32768);
        assert_eq!(global().capacity(), CAPACITY);
        // The last index's second bucket is a valid slot.
        assert!(crate::bucket::configure(2 * (CAPACITY as u32 - 1) + 1, 1.0, 1).is_ok());
    }

    #[test]
    fn threads_racing_on_the_same_keys_agree_on_every_index() {
        let r = std::sync::Arc::new(Registry::new(1000));
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let r = r.clone();
                std::thread::spawn(move || {
                    // Each thread walks the same 500 keys in a different order.
                    (0..500u32)
                        .map(|i| (i * 7 + t * 131) % 500)
                        .map(|k| (k, r.slot(&format!("acc_{k}")).unwrap()))
                        .collect::<HashMap<u32, u32>>()
                })
            })
            .collect();
        let maps: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(maps.iter().all(|m| *m == maps[0]), "threads disagree");
        let mut indexes: Vec<u32> = maps[0].values().copied().collect();
        indexes.sort_unstable();
        assert_eq!(
            indexes,
            (0..500).collect::<Vec<_>>(),
            "dense, no index handed out twice"
        );
        assert_eq!(r.len(), 500);
    }
}

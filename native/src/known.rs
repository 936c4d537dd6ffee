//! Process-wide filter of the signatures that have a status record: "maybe known" or
//! "certainly new", answered lock-free by every thread.
//!
//! Why it exists: the send path's duplicate check (is there a record of this signature?) asked
//! the overlay and then LMDB twice (a second time on a fresh snapshot), four crossings out of
//! JavaScript for an answer that is "no" for almost every send. A filter fed with every
//! signature that gets a record answers "certainly new" in one native read, inside the call
//! that inspects and admits the send (`node_admission.rs`); only "maybe known" takes the old
//! path, which stays the one that decides.
//!
//! What feeds it: every put of a 64-byte key into the process's overlay (`overlay.rs`: the
//! accepted record, every status change, a cluster node's replicated records — every status
//! write of this process goes through it), before the put; and at start, the keys already in
//! LMDB, in batches (`add_batch`), between [`Known::begin_load`] and [`Known::end_load`]. Until a
//! load has ended (and while any other is running) it answers "maybe known" for everything.
//! Nothing is ever removed: a record deleted by retention leaves a false positive, which the old
//! path answers.
//!
//! Why an add before the put is enough: the bits are set (release) before the overlay entry
//! exists, so a reader that could have seen the record anywhere (the overlay, then LMDB) reads
//! the bits set. Two identical sends at the same instant may both read "new", exactly as both
//! could miss in the overlay before: the commit window keeps the first record.
//!
//! The shape: a scalable Bloom filter. Layer `i` holds `FIRST_CAPACITY << i` keys (or more:
//! `begin_load`) at a false-positive rate of `FIRST_FP / 2^i` when full (so the rate over all
//! layers stays below `2 * FIRST_FP`), each a fixed array of `AtomicU64` (bits set with `fetch_or`,
//! read with plain loads); a full top layer gets a new one, under a mutex only growth takes. Layers
//! are published through a fixed array of pointers and a count, so readers never lock and never see
//! a layer being built. The key's bits come from one keyed SipHash of it (clients choose their
//! signatures, so the hash is keyed per process) and double hashing.

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

/// The keys the filter holds: a transaction's signature (the status table's key).
pub const KEY_BYTES: usize = 64;
/// Keys the first layer holds at its false-positive rate, unless a load reserved more (the
/// store's count at start, rounded up to a power of two); each next layer holds twice as many.
pub const FIRST_CAPACITY: u64 = 1 << 20;
/// The largest first layer a reservation makes (2^33 keys: 10 GB of bits; more is not a store).
const MAX_FIRST: u64 = 1 << 33;
/// The first layer's false-positive rate when full; each next layer's is half the one before.
pub const FIRST_FP: f64 = 0.01;
/// Layers at most (the last keeps taking keys past its capacity, its rate rising).
pub const MAX_LAYERS: usize = 32;

struct Layer {
    bits: Box<[AtomicU64]>,
    /// Bits in `bits` (a multiple of 64).
    m: u64,
    /// Bits set per key.
    k: u32,
    capacity: u64,
    /// Keys added (an estimate under races: two adders of one key may both count it).
    count: AtomicU64,
}

/// Zeroed words, allocated zeroed (the pages of a large layer are touched only when set).
fn zeroed_words(n: usize) -> Box<[AtomicU64]> {
    let words: Box<[u64]> = vec![0u64; n].into_boxed_slice();
    // Safety: AtomicU64 has the size, alignment and bit validity of u64 (asserted below), so a
    // boxed slice of one is a boxed slice of the other.
    const _: () = assert!(
        std::mem::size_of::<AtomicU64>() == std::mem::size_of::<u64>()
            && std::mem::align_of::<AtomicU64>() == std::mem::align_of::<u64>()
    );
    unsafe { Box::from_raw(Box::into_raw(words) as *mut [AtomicU64]) }
}

impl Layer {
    fn new(first: u64, index: usize) -> Layer {
        let capacity = first << index.min(20);
        let p = FIRST_FP / 2f64.powi(index as i32);
        let ln2 = std::f64::consts::LN_2;
        let k = (-p.log2()).ceil().max(1.0) as u32;
        let bits = (capacity as f64 * -p.ln() / (ln2 * ln2)).ceil() as u64;
        let words = bits.div_ceil(64).max(1);
        Layer {
            bits: zeroed_words(words as usize),
            m: words * 64,
            k,
            capacity,
            count: AtomicU64::new(0),
        }
    }

    /// The `i`-th bit of a key hashed to `(a, b)`: double hashing, reduced by multiply-shift.
    #[inline]
    fn bit(&self, a: u64, b: u64, i: u32) -> u64 {
        let h = a.wrapping_add(b.wrapping_mul(u64::from(i)));
        ((u128::from(h) * u128::from(self.m)) >> 64) as u64
    }

    #[inline]
    fn contains(&self, a: u64, b: u64) -> bool {
        (0..self.k).all(|i| {
            let bit = self.bit(a, b, i);
            self.bits[(bit / 64) as usize].load(Ordering::Acquire) & (1 << (bit % 64)) != 0
        })
    }

    #[inline]
    fn set(&self, a: u64, b: u64) {
        for i in 0..self.k {
            let bit = self.bit(a, b, i);
            self.bits[(bit / 64) as usize].fetch_or(1 << (bit % 64), Ordering::Release);
        }
    }
}

/// The filter. [`global`] is the process's one instance; separate instances exist for tests.
pub struct Known {
    hasher: RandomState,
    layers: [AtomicPtr<Layer>; MAX_LAYERS],
    /// Layers published (`layers[..count]` are set and never change).
    count: AtomicUsize,
    grow: Mutex<()>,
    /// Loads begun and not ended.
    loading: AtomicU32,
    /// Some load has ended.
    loaded: AtomicBool,
    /// The first layer's capacity (`reserve`), read when it is made.
    first: AtomicU64,
}

impl Default for Known {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Known {
    fn drop(&mut self) {
        for p in &self.layers[..*self.count.get_mut()] {
            // Safety: each published pointer came from Box::into_raw and is freed once, here.
            drop(unsafe { Box::from_raw(p.load(Ordering::Relaxed)) });
        }
    }
}

/// A second, independent-enough hash from the first (splitmix64's finaliser), odd so every
/// step of the double hashing moves.
#[inline]
fn second(a: u64) -> u64 {
    let mut z = a ^ 0x9e37_79b9_7f4a_7c15;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) | 1
}

impl Known {
    pub fn new() -> Self {
        Known {
            hasher: RandomState::new(),
            layers: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
            count: AtomicUsize::new(0),
            grow: Mutex::new(()),
            loading: AtomicU32::new(0),
            loaded: AtomicBool::new(false),
            first: AtomicU64::new(FIRST_CAPACITY),
        }
    }

    #[inline]
    fn hashes(&self, key: &[u8]) -> (u64, u64) {
        let a = self.hasher.hash_one(key);
        (a, second(a))
    }

    #[inline]
    fn published(&self) -> &[AtomicPtr<Layer>] {
        &self.layers[..self.count.load(Ordering::Acquire)]
    }

    #[inline]
    fn layer(p: &AtomicPtr<Layer>) -> &Layer {
        // Safety: a published pointer is set before `count` covers it (release/acquire), points
        // to a Layer never moved or freed while `self` lives, and is only read through `&`.
        unsafe { &*p.load(Ordering::Acquire) }
    }

    fn contains_hashed(&self, a: u64, b: u64) -> bool {
        self.published()
            .iter()
            .any(|p| Self::layer(p).contains(a, b))
    }

    /// Whether `key` may have been added (false: it certainly was not), whatever the load's state.
    pub fn contains(&self, key: &[u8]) -> bool {
        let (a, b) = self.hashes(key);
        self.contains_hashed(a, b)
    }

    /// Add `key`. Every thread's `contains` sees it once this returns. Keys of another length
    /// than `KEY_BYTES` are added too (they only cost room); the overlay adds only 64-byte ones.
    pub fn add(&self, key: &[u8]) {
        let (a, b) = self.hashes(key);
        if self.contains_hashed(a, b) {
            return; // present (or a false positive: then it is answered "maybe" anyway)
        }
        loop {
            let n = self.count.load(Ordering::Acquire);
            if n > 0 {
                let top = Self::layer(&self.layers[n - 1]);
                if n == MAX_LAYERS || top.count.load(Ordering::Relaxed) < top.capacity {
                    top.set(a, b);
                    top.count.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
            self.grow_from(n);
        }
    }

    /// Publish layer `n` if `n` layers are still all there are.
    #[cold]
    fn grow_from(&self, n: usize) {
        let _g = self.grow.lock().unwrap_or_else(PoisonError::into_inner);
        if self.count.load(Ordering::Acquire) != n {
            return; // another adder grew it
        }
        let first = self.first.load(Ordering::Relaxed);
        let layer = Box::into_raw(Box::new(Layer::new(first, n)));
        self.layers[n].store(layer, Ordering::Release);
        self.count.store(n + 1, Ordering::Release);
    }

    /// Add every `KEY_BYTES`-long key of `keys` (back to back); returns how many. A trailing
    /// part shorter than a key is ignored (the caller passes whole keys).
    pub fn add_batch(&self, keys: &[u8]) -> usize {
        let mut n = 0;
        for key in keys.chunks_exact(KEY_BYTES) {
            self.add(key);
            n += 1;
        }
        n
    }

    /// A load of LMDB's keys starts: "maybe known" for everything until it (and every other)
    /// ends. `expected` is the store's count of records: if no key was added yet, the first
    /// layer is made to hold them all (a power of two at least that large), so a large store
    /// takes one layer at the first layer's rate instead of a stack of growing ones.
    pub fn begin_load(&self, expected: u64) {
        self.loading.fetch_add(1, Ordering::SeqCst);
        let _g = self.grow.lock().unwrap_or_else(PoisonError::into_inner);
        if self.count.load(Ordering::Acquire) == 0 {
            let first = expected
                .saturating_add(expected / 8)
                .clamp(FIRST_CAPACITY, MAX_FIRST)
                .next_power_of_two();
            self.first.store(first, Ordering::Relaxed);
        }
    }

    /// A load begun with `begin_load` has added every key (or was abandoned with its store).
    pub fn end_load(&self) {
        self.loaded.store(true, Ordering::SeqCst);
        // Saturating: an end without a begin must not wrap into "loading forever".
        let _ = self
            .loading
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |l| l.checked_sub(1));
    }

    /// Whether the filter answers at all: a load has ended and none is running.
    pub fn ready(&self) -> bool {
        self.loaded.load(Ordering::Acquire) && self.loading.load(Ordering::Acquire) == 0
    }

    /// True only if no status record of `key` can exist: the filter is ready and never had it.
    pub fn certainly_new(&self, key: &[u8]) -> bool {
        self.ready() && !self.contains(key)
    }

    /// Layers, keys added (estimated) and bytes of bits held: for tests and the docs' numbers.
    pub fn stats(&self) -> (usize, u64, u64) {
        let layers = self.published();
        let (keys, bytes) = layers.iter().fold((0, 0), |(k, b), p| {
            let l = Self::layer(p);
            (k + l.count.load(Ordering::Relaxed), b + l.m / 8)
        });
        (layers.len(), keys, bytes)
    }
}

/// The process's filter, shared by every thread.
pub fn global() -> &'static Known {
    static KNOWN: OnceLock<Known> = OnceLock::new();
    KNOWN.get_or_init(Known::new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A distinct 64-byte key per number (the number spread over the key, as a signature is).
    fn key(n: u64, salt: u64) -> [u8; KEY_BYTES] {
        let mut k = [0u8; KEY_BYTES];
        for (i, c) in k.chunks_exact_mut(8).enumerate() {
            c.copy_from_slice(
                &second(n ^ salt.rotate_left(i as u32 * 7) ^ (i as u64)).to_le_bytes(),
            );
        }
        k[..8].copy_from_slice(&n.to_le_bytes());
        k
    }

    #[test]
    fn not_ready_until_a_load_ends_and_while_one_runs() {
        let f = Known::new();
        f.add(&key(1, 0));
        assert!(!f.certainly_new(&key(2, 0)), "never loaded: maybe");
        f.begin_load(0);
        assert!(!f.certainly_new(&key(2, 0)));
        f.end_load();
        assert!(f.certainly_new(&key(2, 0)));
        assert!(!f.certainly_new(&key(1, 0)));
        f.begin_load(0); // a second store's load
        assert!(!f.certainly_new(&key(2, 0)));
        f.end_load();
        f.end_load(); // unmatched: no wrap
        assert!(f.ready());
    }

    #[test]
    fn no_false_negative_across_layers_and_rate_bounded() {
        let f = Known::new();
        f.begin_load(0);
        f.end_load();
        // Three and a half layers' worth (1 + 2 + 4 Mi, then half of 8).
        let n = FIRST_CAPACITY * 11;
        let mut batch = Vec::with_capacity(KEY_BYTES * 4096);
        let mut i = 0;
        while i < n {
            batch.clear();
            for j in i..(i + 4096).min(n) {
                batch.extend_from_slice(&key(j, 1));
            }
            i += f.add_batch(&batch) as u64;
        }
        let (layers, keys, bytes) = f.stats();
        assert_eq!(layers, 4);
        // A key that reads as a false positive when added is not added again (nor counted).
        assert!(keys <= n && keys > n - n / 25, "{keys} counted");
        for j in 0..n {
            assert!(!f.certainly_new(&key(j, 1)), "false negative at {j}");
        }
        let probes = 1_000_000u64;
        let fp = (0..probes).filter(|&j| f.contains(&key(j, 2))).count() as f64 / probes as f64;
        assert!(fp < 2.0 * FIRST_FP, "false-positive rate {fp}");
        // 9.6 to 14 bits a key at these layers.
        assert!(bytes * 8 < n * 16 * 15 / 10, "{bytes} bytes");
    }

    #[test]
    fn concurrent_adders_and_readers_lose_nothing() {
        let f = Arc::new(Known::new());
        f.begin_load(0);
        f.end_load();
        let threads = 4u64;
        let per = FIRST_CAPACITY; // together past the first layer: growth under contention
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let f = Arc::clone(&f);
                std::thread::spawn(move || {
                    for j in 0..per {
                        let k = key(t * per + j, 3);
                        f.add(&k);
                        // Visible to this thread at once, and to the others below.
                        assert!(!f.certainly_new(&k));
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert!(f.stats().0 >= 2);
        for j in 0..threads * per {
            assert!(f.contains(&key(j, 3)), "lost {j}");
        }
    }

    #[test]
    fn a_load_reserves_the_first_layer_only_before_any_key() {
        let f = Known::new();
        f.begin_load(3_000_000);
        f.add(&key(1, 4));
        f.end_load();
        assert_eq!(Known::layer(&f.layers[0]).capacity, 4 << 20);
        let g = Known::new();
        g.add(&key(1, 4));
        g.begin_load(3_000_000); // too late: the first layer is made
        g.end_load();
        assert_eq!(Known::layer(&g.layers[0]).capacity, FIRST_CAPACITY);
    }

    #[test]
    fn layer_sizes() {
        // Layer 0: 1 Mi keys at 1 %: 7 bits a key set, about 9.6 bits a key held.
        let l = Layer::new(FIRST_CAPACITY, 0);
        assert_eq!(l.k, 7);
        assert_eq!(l.capacity, FIRST_CAPACITY);
        let bpk = l.m as f64 / l.capacity as f64;
        assert!((9.5..9.7).contains(&bpk), "{bpk}");
    }
}

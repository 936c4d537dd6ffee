//! Process-wide per-account usage counters (all-time total and today's count), lock-free,
//! indexed by the account's [`registry`](crate::registry) index.
//!
//! Each index has four atomics:
//!
//! ```text
//!   total   AtomicU64   sends since the account began (persisted base + what this process added)
//!   packed  AtomicU64   utc_day << 32 | today       one word, so day and count never tear
//!   state   AtomicU8    NEW → LOADING → READY       whether the persisted counts are in
//!   dirty   AtomicBool  changed since the persister last took it
//! ```
//!
//! Why day and count share one word: at midnight UTC the first add of the new day must restart
//! the count, and a thread adding with the old day must not restart it again; with two atomics
//! a reader (or a second writer) could see the new day with yesterday's count. One CAS on the
//! packed word makes "same day → add, newer day → restart, older day → leave today alone" atomic.
//!
//! Why adds before `init` are kept, not refused: the first thread to see an account loads its
//! persisted counts from LMDB and calls `init`; meanwhile other threads may already be adding
//! for that account. Refusing those adds loses sends, and treating the index as initialized from
//! zero would make the real `init` fail and its persisted counts be overwritten by the first
//! persist — both undercount. So an add always counts, and `init` *adds* the persisted base
//! (once: the NEW → LOADING transition is a CAS only one caller wins). Until `init` has finished,
//! `get` answers `None` and `take_dirty` skips the index, so nothing partial is ever read or
//! persisted. `add` reports whether the index was READY, so a caller learns that it must `init`.
//!
//! A reader can see `total` already raised and `today` not yet (two words, not one snapshot);
//! each is exact on its own, and both are once the adds in flight are done.
//!
//! Cells are cache-line aligned so two busy accounts never false-share a line.

use crate::error::{Code, TxError};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};

pub use crate::registry::CAPACITY;

const NEW: u8 = 0;
const LOADING: u8 = 1;
const READY: u8 = 2;

#[repr(align(64))]
struct Cell {
    total: AtomicU64,
    /// `utc_day << 32 | today`.
    packed: AtomicU64,
    state: AtomicU8,
    dirty: AtomicBool,
}

// A `const` only so `[EMPTY; N]` can build the static array (atomics are not `Copy`); it is
// never used as a value of its own, so no mutation through it is lost (what the lint warns of).
#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Cell = Cell {
    total: AtomicU64::new(0),
    packed: AtomicU64::new(0),
    state: AtomicU8::new(NEW),
    dirty: AtomicBool::new(false),
};

const fn pack(day: u32, today: u32) -> u64 {
    (day as u64) << 32 | today as u64
}

const fn unpack(word: u64) -> (u32, u32) {
    ((word >> 32) as u32, word as u32)
}

/// One account's counts as [`Table::get`] reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub total: u64,
    /// Count of the day asked for: 0 when the stored day is another one.
    pub today: u32,
}

/// A table of `N` usage cells. [`TABLE`] is the process's one instance (zeroed static memory:
/// pages are only touched for indexes in use); separate instances exist for tests.
pub struct Table<const N: usize> {
    cells: [Cell; N],
    /// One past the highest index ever initialized or added to: `take_dirty` scans only below.
    high: AtomicU32,
}

/// The process's usage counters, shared by every thread, one per registry index.
pub static TABLE: Table<CAPACITY> = Table::new();

impl<const N: usize> Default for Table<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Table<N> {
    pub const fn new() -> Self {
        Table {
            cells: [EMPTY; N],
            high: AtomicU32::new(0),
        }
    }

    fn cell(&self, index: u32) -> Result<&Cell, TxError> {
        let cell = self.cells.get(index as usize).ok_or_else(|| {
            TxError::new(
                Code::UsageIndexOutOfRange,
                "usage index past the account slot capacity",
            )
            .value(index as usize)
        })?;
        // Read-mostly: the shared line is only written when the table grows.
        if self.high.load(Ordering::Relaxed) <= index {
            self.high.fetch_max(index + 1, Ordering::Relaxed);
        }
        Ok(cell)
    }

    /// Load the persisted counts of `index` (`total`; `today` counted on `day`), once: true if
    /// this call did it, false if another call already had. Adds made before it are kept on top.
    pub fn init(&self, index: u32, total: u64, day: u32, today: u32) -> Result<bool, TxError> {
        let c = self.cell(index)?;
        if c.state
            .compare_exchange(NEW, LOADING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Ok(false);
        }
        c.total.fetch_add(total, Ordering::AcqRel);
        // Merge with what adds have counted since: the newer day wins, equal days add up.
        let mut cur = c.packed.load(Ordering::Acquire);
        loop {
            let (d, t) = unpack(cur);
            let merged = if day > d {
                pack(day, today)
            } else if day == d {
                pack(d, t.saturating_add(today))
            } else {
                break;
            };
            match c
                .packed
                .compare_exchange_weak(cur, merged, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break,
                Err(actual) => cur = actual,
            }
        }
        c.state.store(READY, Ordering::Release);
        Ok(true)
    }

    /// Count `n` sends on `day` for `index`: the total grows by `n`; today's count grows by `n`
    /// on the stored day, restarts at `n` on a newer day, and is left alone for an older day
    /// (a late add from before midnight must not turn the day back). Marks the index dirty.
    /// Returns whether the index was initialized; the add counts either way (see the module doc).
    pub fn add(&self, index: u32, n: u32, day: u32) -> Result<bool, TxError> {
        let c = self.cell(index)?;
        if n > 0 {
            c.total.fetch_add(u64::from(n), Ordering::AcqRel);
            let mut cur = c.packed.load(Ordering::Acquire);
            loop {
                let (d, t) = unpack(cur);
                let next = if day > d {
                    pack(day, n)
                } else if day == d {
                    pack(d, t.saturating_add(n))
                } else {
                    break;
                };
                // A failed CAS means another thread changed the word: re-read and retry (the
                // loop is wait-free in practice, as in `bucket::take_at`).
                match c
                    .packed
                    .compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Acquire)
                {
                    Ok(_) => break,
                    Err(actual) => cur = actual,
                }
            }
            // After the counts, so a persister that takes the flag then reads sees them.
            c.dirty.store(true, Ordering::Release);
        }
        Ok(c.state.load(Ordering::Acquire) == READY)
    }

    /// The counts of `index` as seen on `day`, or `None` until it is initialized.
    pub fn get(&self, index: u32, day: u32) -> Result<Option<Counts>, TxError> {
        let c = self.cells.get(index as usize).ok_or_else(|| {
            TxError::new(
                Code::UsageIndexOutOfRange,
                "usage index past the account slot capacity",
            )
            .value(index as usize)
        })?;
        if c.state.load(Ordering::Acquire) != READY {
            return Ok(None);
        }
        let total = c.total.load(Ordering::Acquire);
        let (d, t) = unpack(c.packed.load(Ordering::Acquire));
        Ok(Some(Counts {
            total,
            today: if d == day { t } else { 0 },
        }))
    }

    /// The initialized indexes changed since the last call, ascending; clears their dirty flag.
    /// An index changed while uninitialized stays dirty until it is initialized.
    pub fn take_dirty(&self) -> Vec<u32> {
        let high = (self.high.load(Ordering::Acquire) as usize).min(N);
        let mut out = Vec::new();
        for (i, c) in self.cells[..high].iter().enumerate() {
            if c.dirty.load(Ordering::Relaxed)
                && c.state.load(Ordering::Acquire) == READY
                && c.dirty.swap(false, Ordering::AcqRel)
            {
                out.push(i as u32);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};

    const DAY: u32 = 20_415;

    fn table() -> Arc<Table<64>> {
        Arc::new(Table::new())
    }

    #[test]
    fn init_once_then_add_get() {
        let t = table();
        assert_eq!(t.get(3, DAY).unwrap(), None, "uninitialized");
        assert!(t.init(3, 1000, DAY, 40).unwrap());
        assert!(
            !t.init(3, 5, DAY, 5).unwrap(),
            "a second init changes nothing"
        );
        assert_eq!(
            t.get(3, DAY).unwrap(),
            Some(Counts {
                total: 1000,
                today: 40
            })
        );
        assert!(t.add(3, 2, DAY).unwrap());
        assert_eq!(
            t.get(3, DAY).unwrap(),
            Some(Counts {
                total: 1002,
                today: 42
            })
        );
        // Asked about another day, today's count is 0.
        assert_eq!(
            t.get(3, DAY + 1).unwrap(),
            Some(Counts {
                total: 1002,
                today: 0
            })
        );
    }

    #[test]
    fn day_rollover_restarts_today_and_a_late_add_does_not_turn_the_day_back() {
        let t = table();
        t.init(0, 10, DAY, 10).unwrap();
        t.add(0, 3, DAY).unwrap();
        assert_eq!(
            t.get(0, DAY).unwrap(),
            Some(Counts {
                total: 13,
                today: 13
            })
        );
        t.add(0, 4, DAY + 1).unwrap();
        assert_eq!(
            t.get(0, DAY + 1).unwrap(),
            Some(Counts {
                total: 17,
                today: 4
            })
        );
        // An add stamped with yesterday (computed before midnight) counts in the total only.
        t.add(0, 5, DAY).unwrap();
        assert_eq!(
            t.get(0, DAY + 1).unwrap(),
            Some(Counts {
                total: 22,
                today: 4
            })
        );
        assert_eq!(
            t.get(0, DAY).unwrap(),
            Some(Counts {
                total: 22,
                today: 0
            })
        );
        // Persisted counts of an older day than now: today starts from 0.
        t.init(1, 50, DAY - 1, 9).unwrap();
        assert_eq!(
            t.get(1, DAY).unwrap(),
            Some(Counts {
                total: 50,
                today: 0
            })
        );
        t.add(1, 1, DAY).unwrap();
        assert_eq!(
            t.get(1, DAY).unwrap(),
            Some(Counts {
                total: 51,
                today: 1
            })
        );
    }

    #[test]
    fn adds_before_init_are_kept_and_merged_with_the_persisted_counts() {
        let t = table();
        assert!(
            !t.add(5, 3, DAY).unwrap(),
            "reports the index was not initialized"
        );
        assert!(!t.add(5, 4, DAY).unwrap());
        assert_eq!(t.get(5, DAY).unwrap(), None);
        assert!(
            t.take_dirty().is_empty(),
            "nothing partial is handed to the persister"
        );
        assert!(t.init(5, 100, DAY, 20).unwrap());
        assert_eq!(
            t.get(5, DAY).unwrap(),
            Some(Counts {
                total: 107,
                today: 27
            })
        );
        assert_eq!(
            t.take_dirty(),
            vec![5],
            "the adds made before init are persisted after it"
        );
        // Persisted on an older day than the early adds: today is the adds' alone.
        t.add(6, 2, DAY).unwrap();
        t.init(6, 100, DAY - 1, 20).unwrap();
        assert_eq!(
            t.get(6, DAY).unwrap(),
            Some(Counts {
                total: 102,
                today: 2
            })
        );
    }

    #[test]
    fn take_dirty_reports_each_changed_index_once() {
        let t = table();
        for i in [2, 9, 4] {
            t.init(i, 0, DAY, 0).unwrap();
        }
        assert!(
            t.take_dirty().is_empty(),
            "init alone changes nothing to persist"
        );
        t.add(9, 1, DAY).unwrap();
        t.add(2, 1, DAY).unwrap();
        t.add(9, 1, DAY).unwrap();
        t.add(4, 0, DAY).unwrap();
        assert_eq!(t.take_dirty(), vec![2, 9]);
        assert!(t.take_dirty().is_empty());
        t.add(4, 1, DAY).unwrap();
        assert_eq!(t.take_dirty(), vec![4]);
    }

    #[test]
    fn out_of_range_indexes_are_coded_errors() {
        let t = table();
        assert_eq!(
            t.add(64, 1, DAY).unwrap_err().code,
            Code::UsageIndexOutOfRange
        );
        assert_eq!(
            t.init(u32::MAX, 1, DAY, 1).unwrap_err().code,
            Code::UsageIndexOutOfRange
        );
        assert_eq!(t.get(64, DAY).unwrap_err().code, Code::UsageIndexOutOfRange);
        assert!(t.take_dirty().is_empty());
        assert!(TABLE.add(CAPACITY as u32, 1, DAY).is_err());
    }

    #[test]
    fn today_saturates_instead_of_wrapping() {
        let t = table();
        t.init(7, 0, DAY, u32::MAX - 1).unwrap();
        t.add(7, 5, DAY).unwrap();
        assert_eq!(
            t.get(7, DAY).unwrap(),
            Some(Counts {
                total: 5,
                today: u32::MAX
            })
        );
    }

    #[test]
    fn threads_hammering_one_index_lose_nothing() {
        let t = table();
        t.init(1, 1_000_000, DAY, 7).unwrap();
        let threads = 8u32;
        let per = 20_000u32;
        let go = Arc::new(Barrier::new(threads as usize));
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (t, go) = (t.clone(), go.clone());
                std::thread::spawn(move || {
                    go.wait();
                    for i in 0..per {
                        t.add(1, 1 + i % 3, DAY).unwrap();
                    }
                })
            })
            .collect();
        handles.into_iter().for_each(|h| h.join().unwrap());
        let each: u64 = (0..per).map(|i| u64::from(1 + i % 3)).sum();
        let added = each * u64::from(threads);
        let c = t.get(1, DAY).unwrap().unwrap();
        assert_eq!(c.total, 1_000_000 + added);
        assert_eq!(u64::from(c.today), 7 + added);
    }

    #[test]
    fn threads_crossing_midnight_together_restart_the_day_once() {
        // Every thread adds 1000 on DAY, then 1000 on DAY + 1; half of them wait for all the
        // others in between, half do not, so some DAY adds land after the day rolled over.
        // Whatever the order, the new day's count is exactly its own adds.
        let t = table();
        t.init(2, 0, DAY, 0).unwrap();
        let threads = 6;
        let go = Arc::new(Barrier::new(threads));
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                let (t, go) = (t.clone(), go.clone());
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        t.add(2, 1, DAY).unwrap();
                    }
                    if k % 2 == 0 {
                        go.wait();
                    }
                    for _ in 0..1000 {
                        t.add(2, 1, DAY + 1).unwrap();
                    }
                    if k % 2 == 1 {
                        go.wait();
                    }
                })
            })
            .collect();
        handles.into_iter().for_each(|h| h.join().unwrap());
        let c = t.get(2, DAY + 1).unwrap().unwrap();
        assert_eq!(c.total, 12_000);
        // A late DAY add never restarts the newer day, so all 6000 DAY + 1 adds are there.
        assert_eq!(c.today, 6000);
    }

    #[test]
    fn concurrent_inits_load_the_base_exactly_once_under_concurrent_adds() {
        for _ in 0..50 {
            let t = table();
            let go = Arc::new(Barrier::new(8));
            let handles: Vec<_> = (0..8)
                .map(|k| {
                    let (t, go) = (t.clone(), go.clone());
                    std::thread::spawn(move || {
                        go.wait();
                        let won = if k % 2 == 0 {
                            t.init(9, 500, DAY, 50).unwrap()
                        } else {
                            false
                        };
                        for _ in 0..100 {
                            t.add(9, 1, DAY).unwrap();
                        }
                        won
                    })
                })
                .collect();
            let winners = handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .filter(|&w| w)
                .count();
            assert_eq!(winners, 1);
            assert_eq!(
                t.get(9, DAY).unwrap(),
                Some(Counts {
                    total: 1300,
                    today: 850
                })
            );
        }
    }
}

//! Process-wide lock-free token buckets.
//!
//! Why this shape: every server thread and every worker thread of the process must draw from
//! the same per-account budget, and the take path must never block. A token bucket has two
//! pieces of state (tokens, last refill) that must change together; two atomics can tear, and a
//! mutex is what we are avoiding. So each bucket is stored as its *theoretical arrival time*
//! (GCRA, the generic cell rate algorithm): one `AtomicU64` of nanoseconds that encodes both
//! at once —
//!
//! ```text
//!   tokens(now) = (capacity·T − max(0, tat − now)) / T        T = 1 s / rate
//! ```
//!
//! `take(n)` moves `tat` forward by `n·T` if that keeps `tat − now ≤ capacity·T`, with a single
//! compare-and-swap; on contention it re-reads and retries (the loop is wait-free in practice:
//! a failed CAS means another thread made progress). Refill is continuous and implicit in time.
//!
//! The configuration (interval, capacity) is packed into one more `AtomicU64`, so a live
//! reconfiguration (a plan upgrade) is also a single store that no reader can see half of.
//!
//! Cells are cache-line aligned so two hot accounts never false-share a line.

use crate::error::Coded;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// Number of buckets in the process-wide table.
pub const SLOTS: usize = 1 << 16;
const NANOS_PER_SEC: u64 = 1_000_000_000;

#[repr(align(64))]
struct Cell {
    /// `interval_ns << 24 | capacity` (capacity < 2^24, interval < 2^40 ns ≈ 18 min).
    config: AtomicU64,
    /// Theoretical arrival time, ns since `epoch()`. 0 = full bucket.
    tat: AtomicU64,
}

// A `const` only so `[EMPTY; N]` can build the static array (atomics are not `Copy`); it is
// never used as a value of its own, so no mutation through it is lost (what the lint warns of).
#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Cell = Cell {
    config: AtomicU64::new(0),
    tat: AtomicU64::new(0),
};
static CELLS: [Cell; SLOTS] = [EMPTY; SLOTS];

const CAP_BITS: u32 = 24;
const CAP_MASK: u64 = (1 << CAP_BITS) - 1;
pub const MAX_CAPACITY: u32 = (1 << CAP_BITS) - 1;

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Monotonic nanoseconds since the process's bucket epoch (never 0 after the first call).
#[inline]
pub fn now_ns() -> u64 {
    epoch().elapsed().as_nanos() as u64 + 1
}

/// Errors of bucket configuration (takes never fail: they answer granted or not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BucketError {
    SlotOutOfRange,
    InvalidRate,
    InvalidCapacity,
}

/// Outcome of a take.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Take {
    pub granted: bool,
    /// Whole tokens left after this take (or now, if refused).
    pub remaining: u32,
    /// If refused: nanoseconds until `n` tokens will be available (`u64::MAX` if never:
    /// `n` exceeds the capacity or the slot is unconfigured). 0 when granted.
    pub retry_after_ns: u64,
    /// Nanoseconds until the bucket is full again.
    pub reset_ns: u64,
}

#[inline]
fn cell(slot: u32) -> Result<&'static Cell, BucketError> {
    CELLS.get(slot as usize).ok_or(BucketError::SlotOutOfRange)
}

/// Configure `slot` with `rate` tokens per second and a burst `capacity`. Keeps the current
/// fill level where possible (a live upgrade does not hand out a fresh burst).
pub fn configure(slot: u32, rate: f64, capacity: u32) -> Result<(), BucketError> {
    let c = cell(slot)?;
    if !(rate.is_finite() && rate > 0.0) {
        return Err(BucketError::InvalidRate);
    }
    let interval = (NANOS_PER_SEC as f64 / rate).round() as u64;
    if interval == 0 || interval >= (1 << (64 - CAP_BITS)) {
        return Err(BucketError::InvalidRate);
    }
    if capacity == 0 || capacity > MAX_CAPACITY {
        return Err(BucketError::InvalidCapacity);
    }
    let old = c
        .config
        .swap(interval << CAP_BITS | u64::from(capacity), Ordering::AcqRel);
    let old_interval = old >> CAP_BITS;
    if old_interval != 0 {
        // Keep the number of tokens in use, not the time debt: 8 tokens used at 8/s are 8
        // tokens used at 150/s, so an upgrade takes effect on the very next take. Usage is
        // capped at the new capacity, so a smaller bucket is at most empty, never overdrawn.
        let now = now_ns();
        let mut tat = c.tat.load(Ordering::Acquire);
        while tat > now {
            let used = (tat - now) as u128 * u128::from(interval) / u128::from(old_interval);
            let new_tat = now + used.min(u128::from(capacity) * u128::from(interval)) as u64;
            match c
                .tat
                .compare_exchange_weak(tat, new_tat, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break,
                Err(actual) => tat = actual,
            }
        }
    }
    Ok(())
}

/// Refill `slot` to capacity.
pub fn reset(slot: u32) -> Result<(), BucketError> {
    cell(slot)?.tat.store(0, Ordering::Release);
    Ok(())
}

/// Take `n` tokens from `slot` at time `now` (ns, from `now_ns`), all or nothing.
#[inline]
pub fn take_at(slot: u32, n: u32, now: u64) -> Take {
    let Ok(c) = cell(slot) else {
        return Take {
            granted: false,
            remaining: 0,
            retry_after_ns: u64::MAX,
            reset_ns: 0,
        };
    };
    let config = c.config.load(Ordering::Acquire);
    let interval = config >> CAP_BITS;
    let capacity = config & CAP_MASK;
    if interval == 0 {
        return Take {
            granted: false,
            remaining: 0,
            retry_after_ns: u64::MAX,
            reset_ns: 0,
        };
    }
    let tolerance = capacity * interval; // burst window, ns (< 2^64 by the config packing)
    if u64::from(n) > capacity {
        // More than the bucket can ever hold: never grantable (and n·interval could overflow).
        let in_use = c.tat.load(Ordering::Acquire).saturating_sub(now);
        let remaining = (tolerance.saturating_sub(in_use) / interval) as u32;
        return Take {
            granted: false,
            remaining,
            retry_after_ns: u64::MAX,
            reset_ns: in_use,
        };
    }
    let cost = u64::from(n) * interval;
    let mut tat = c.tat.load(Ordering::Acquire);
    loop {
        let base = tat.max(now);
        let new_tat = base + cost;
        let debt = new_tat - now; // ns of budget in use after the take
        if debt > tolerance {
            let in_use = base - now;
            let remaining = (tolerance.saturating_sub(in_use) / interval) as u32;
            let retry = if cost > tolerance {
                u64::MAX
            } else {
                debt - tolerance
            };
            return Take {
                granted: false,
                remaining,
                retry_after_ns: retry,
                reset_ns: in_use,
            };
        }
        match c
            .tat
            .compare_exchange_weak(tat, new_tat, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => {
                return Take {
                    granted: true,
                    remaining: ((tolerance - debt) / interval) as u32,
                    retry_after_ns: 0,
                    reset_ns: debt,
                }
            }
            Err(actual) => tat = actual,
        }
    }
}

/// Take `n` tokens from `slot` now.
#[inline]
pub fn take(slot: u32, n: u32) -> Take {
    take_at(slot, n, now_ns())
}

/// Whole tokens available in `slot` now, without taking any.
pub fn available(slot: u32) -> u32 {
    let r = take_at(slot, 0, now_ns());
    r.remaining
}

impl Coded for BucketError {
    fn code(&self) -> &'static str {
        use BucketError::*;
        match self {
            SlotOutOfRange => "BUCKET_SLOT_OUT_OF_RANGE",
            InvalidRate => "BUCKET_INVALID_RATE",
            InvalidCapacity => "BUCKET_INVALID_CAPACITY",
        }
    }
    fn message(&self) -> String {
        use BucketError::*;
        match self {
            SlotOutOfRange => "bucket slot out of range",
            InvalidRate => "rate must be a positive finite number",
            InvalidCapacity => "capacity must be 1..16777215",
        }
        .to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;
    use std::sync::Arc;

    // Each test uses its own slots: the table is process-wide and tests run in parallel.

    #[test]
    fn burst_then_refill() {
        let s = 10;
        configure(s, 10.0, 5).unwrap();
        reset(s).unwrap();
        let t0 = 1_000_000_000;
        for i in 0..5 {
            let r = take_at(s, 1, t0);
            assert!(r.granted, "take {i}");
            assert_eq!(r.remaining, 4 - i);
        }
        let r = take_at(s, 1, t0);
        assert!(!r.granted);
        assert_eq!(r.retry_after_ns, 100_000_000); // one token per 100 ms
                                                   // 100 ms later exactly one token is back.
        assert!(take_at(s, 1, t0 + 100_000_000).granted);
        assert!(!take_at(s, 1, t0 + 100_000_000).granted);
    }

    #[test]
    fn all_or_nothing_and_impossible_requests() {
        let s = 11;
        configure(s, 100.0, 100).unwrap();
        reset(s).unwrap();
        let t0 = 5_000_000_000;
        assert!(take_at(s, 60, t0).granted);
        let r = take_at(s, 60, t0);
        assert!(!r.granted);
        assert_eq!(r.remaining, 40, "a refused take takes nothing");
        assert_eq!(r.retry_after_ns, 200_000_000);
        assert!(take_at(s, 40, t0).granted);
        let r = take_at(s, 101, t0 + 10 * NANOS_PER_SEC);
        assert!(!r.granted);
        assert_eq!(r.retry_after_ns, u64::MAX);
    }

    #[test]
    fn unconfigured_and_out_of_range_slots_refuse() {
        assert!(!take(12, 1).granted);
        assert!(!take(SLOTS as u32, 1).granted);
        assert_eq!(
            configure(SLOTS as u32, 1.0, 1),
            Err(BucketError::SlotOutOfRange)
        );
        assert_eq!(configure(13, 0.0, 1), Err(BucketError::InvalidRate));
        assert_eq!(configure(13, f64::NAN, 1), Err(BucketError::InvalidRate));
        assert_eq!(configure(13, 1.0, 0), Err(BucketError::InvalidCapacity));
    }

    #[test]
    fn live_reconfiguration_applies_to_the_next_take() {
        let s = 14;
        configure(s, 8.0, 8).unwrap();
        reset(s).unwrap();
        for _ in 0..8 {
            assert!(take(s, 1).granted);
        }
        assert!(!take(s, 1).granted);
        // Upgrade to 150/s: the 8 tokens in use stay in use, the other 142 are there at once.
        configure(s, 150.0, 150).unwrap();
        let r = take(s, 1);
        assert!(r.granted);
        assert!(
            (140..=142).contains(&r.remaining),
            "remaining {}",
            r.remaining
        );
        // Downgrade back: usage is capped at the new capacity, never negative.
        configure(s, 8.0, 8).unwrap();
        assert!(!take(s, 1).granted);
    }

    #[test]
    fn huge_takes_and_capacity_cuts_never_overdraw() {
        let s = 16;
        configure(s, 0.01, 10).unwrap();
        reset(s).unwrap();
        // n·interval would overflow u64 here: refused as never grantable.
        let r = take(s, 184_467_441);
        assert!(!r.granted);
        assert_eq!(r.retry_after_ns, u64::MAX);
        assert!(take(s, 8).granted);
        // Same rate, smaller bucket: at most empty, refilled within the new capacity's time.
        configure(s, 0.01, 4).unwrap();
        let r = take(s, 1);
        assert!(!r.granted);
        assert!(
            r.retry_after_ns <= 100 * NANOS_PER_SEC,
            "{}",
            r.retry_after_ns
        );
        assert!(r.reset_ns <= 400 * NANOS_PER_SEC, "{}", r.reset_ns);
    }

    #[test]
    fn threads_never_exceed_capacity_plus_rate_times_elapsed() {
        let s = 15;
        let (rate, cap) = (2000.0, 100u32);
        configure(s, rate, cap).unwrap();
        reset(s).unwrap();
        let granted = Arc::new(AtomicU32::new(0));
        let start = Instant::now();
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let g = granted.clone();
                std::thread::spawn(move || {
                    let until = Instant::now() + std::time::Duration::from_millis(300);
                    while Instant::now() < until {
                        if take(s, 1).granted {
                            g.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let elapsed = start.elapsed().as_secs_f64();
        let total = granted.load(Ordering::Relaxed) as f64;
        let bound = f64::from(cap) + rate * elapsed;
        assert!(total <= bound, "granted {total} > bound {bound}");
        // And the limiter is not starving anyone: at least the burst plus most of the refill.
        assert!(
            total >= f64::from(cap) + rate * 0.3 * 0.5,
            "granted only {total}"
        );
    }
}

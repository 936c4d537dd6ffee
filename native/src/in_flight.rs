//! Transactions in flight per account, counted once for the whole process: one `i32` per
//! account slot (the registry's index, the same on every thread) in memory every thread shares
//! (a `SharedArrayBuffer` JavaScript creates: `src/accounts/account-counters.ts`, whose
//! `tryIncrement` and `decrement` are these same compare-and-swap loops, so JavaScript and the
//! addon can take and give back places in the same counters at once).
//!
//! The send's one call (`node_quic/admit_send.rs`) takes a place here just before it sends, so
//! a send over the cap is never written (the caller's own path then refuses it with its 429).

use std::sync::atomic::{AtomicI32, Ordering};

/// An account's counter and the most its plan may have in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    pub slot: u32,
    pub cap: u32,
}

/// Add one to `place`'s counter unless it already holds `cap` (every thread together); false
/// then, or if the slot is outside `counts`.
pub fn try_take(counts: &[AtomicI32], place: Place) -> bool {
    let Some(c) = counts.get(place.slot as usize) else {
        return false;
    };
    let cap = i32::try_from(place.cap).unwrap_or(i32::MAX);
    c.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
        (n < cap).then_some(n + 1)
    })
    .is_ok()
}

/// Give back one place taken by `try_take` (never below zero), for a send that was not
/// accepted after all.
pub fn give_back(counts: &[AtomicI32], place: Place) {
    if let Some(c) = counts.get(place.slot as usize) {
        let _ = c.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n > 0).then_some(n - 1)
        });
    }
}

/// `counts` (a typed array's elements, which other threads change at the same time) as atomics.
///
/// # Safety
/// The memory must stay valid for the returned borrow, and every other access to it must be
/// atomic (JavaScript's `Atomics`, this module).
pub unsafe fn as_atomics(counts: &mut [i32]) -> &[AtomicI32] {
    // `AtomicI32` has the size and alignment of `i32`.
    unsafe { &*(counts as *mut [i32] as *const [AtomicI32]) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn counters(n: usize) -> Vec<AtomicI32> {
        (0..n).map(|_| AtomicI32::new(0)).collect()
    }

    #[test]
    fn takes_up_to_the_cap_and_gives_back_never_below_zero() {
        let c = counters(4);
        let p = Place { slot: 2, cap: 3 };
        assert!(try_take(&c, p) && try_take(&c, p) && try_take(&c, p));
        assert!(!try_take(&c, p), "a fourth place past a cap of 3");
        assert_eq!(c[2].load(Ordering::SeqCst), 3);
        assert_eq!(
            c[1].load(Ordering::SeqCst),
            0,
            "another account's counter is untouched"
        );
        give_back(&c, p);
        assert!(try_take(&c, p), "room again after one was given back");
        for _ in 0..5 {
            give_back(&c, p);
        }
        assert_eq!(c[2].load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_slot_outside_the_counters_is_never_taken() {
        let c = counters(2);
        assert!(!try_take(&c, Place { slot: 2, cap: 10 }));
        give_back(&c, Place { slot: 9, cap: 10 });
    }

    #[test]
    fn threads_together_never_pass_the_cap() {
        let c = Arc::new(counters(1));
        let p = Place { slot: 0, cap: 1000 };
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let c = Arc::clone(&c);
                std::thread::spawn(move || (0..600).filter(|_| try_take(&c, p)).count())
            })
            .collect();
        let taken: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(taken, 1000);
        assert_eq!(c[0].load(Ordering::SeqCst), 1000);
    }

    #[test]
    fn typed_array_memory_reads_as_atomics() {
        let mut raw = vec![0i32, 5, 0];
        let a = unsafe { as_atomics(&mut raw) };
        assert!(try_take(a, Place { slot: 1, cap: 6 }));
        assert!(!try_take(a, Place { slot: 1, cap: 6 }));
        assert_eq!(raw, vec![0, 6, 0]);
    }
}

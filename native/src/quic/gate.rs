//! The deadline of one transaction sent with `dispatch_by`, shared by its sends to every peer
//! and by its waiter (see `client.rs`, "Deadlines").

use super::outcome::{FailReason, Failure};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The deadline of one transaction sent with [`QuicClient::dispatch_by`](super::QuicClient::dispatch_by), shared by its sends
/// to every peer and by its waiter: whether the transaction may still be written is decided
/// here, once (see the module doc).
pub struct Gate {
    pub(super) at: Instant,
    /// The budget the deadline was set with, for messages.
    budget: Duration,
    /// `GATE_CLOSED` once the waiter gave up, plus the number of writes that claimed the gate.
    state: AtomicU32,
}

/// Set in `state` once the waiter gave up.
const GATE_CLOSED: u32 = 1 << 31;

impl Gate {
    pub(super) fn new(budget: Duration) -> Self {
        Gate {
            at: Instant::now() + budget,
            budget,
            state: AtomicU32::new(0),
        }
    }

    /// Claim the right to finish one stream; false once the waiter has given up (the stream
    /// must then be reset, never finished).
    pub(super) fn claim(&self) -> bool {
        if Instant::now() >= self.at {
            return false;
        }
        self.state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                (s & GATE_CLOSED == 0).then_some(s + 1)
            })
            .is_ok()
    }

    /// A claimed stream could not be finished after all (its connection broke): not written.
    pub(super) fn release(&self) {
        self.state.fetch_sub(1, Ordering::AcqRel);
    }

    /// The waiter gives up: no write may claim the gate from now on. True if one already had
    /// (its outcome is then on its way).
    pub(super) fn close(&self) -> bool {
        self.claims_in(self.state.fetch_or(GATE_CLOSED, Ordering::AcqRel)) > 0
    }

    /// Writes that claimed the gate and were not released.
    pub(super) fn claims(&self) -> u32 {
        self.claims_in(self.state.load(Ordering::Acquire))
    }

    fn claims_in(&self, state: u32) -> u32 {
        state & !GATE_CLOSED
    }

    /// Past the deadline, or given up: not worth starting a write.
    pub(super) fn passed(&self) -> bool {
        self.state.load(Ordering::Acquire) & GATE_CLOSED != 0 || Instant::now() >= self.at
    }

    pub(super) fn missed(&self) -> Failure {
        Failure::new(
            FailReason::Deadline,
            format!(
                "not written within the {} ms deadline",
                self.budget.as_millis()
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_lets_writes_claim_it_until_it_is_closed_or_its_deadline_passes() {
        // Closed with nothing claimed: no write may claim it afterwards.
        let gate = Gate::new(Duration::from_secs(60));
        assert!(!gate.close());
        assert!(!gate.claim());
        assert!(gate.passed());
        // A claim made in time is what a close then reports; a released claim is not.
        let gate = Gate::new(Duration::from_secs(60));
        assert!(gate.claim() && gate.claim());
        gate.release();
        assert_eq!(gate.claims(), 1);
        assert!(gate.close());
        assert_eq!(gate.claims(), 1);
        assert!(!gate.claim());
        // Past its deadline, a gate nobody closed refuses claims too.
        let gate = Gate::new(Duration::ZERO);
        assert!(gate.passed());
        assert!(!gate.claim());
        assert_eq!(gate.missed().reason, FailReason::Deadline);
    }
}

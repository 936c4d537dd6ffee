//! The first send of a transaction as the hot path makes it: two rounds in one call. Round 1
//! goes to the current route (the slot's leader and the next), with part of the budget; only if
//! it wrote to nobody, round 2 goes to the leaders after those with the rest of the budget.
//! Each round is a [`QuicClient::dispatch_by`] settled by [`Dispatched::first_written`], so the
//! whole send settles within the budget whatever the leaders do, and "not written" is final.
//!
//! Round 1 is queued by the caller's thread (napi: the JavaScript thread that took the request,
//! so the writes start without waiting for a runtime task); round 2, when there is one, by the
//! task that saw round 1 write nothing — no hop back to JavaScript between the rounds.

use super::client::QuicClient;
use super::dispatched::Dispatched;
use super::outcome::FirstSend;
use bytes::Bytes;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One round that was sent.
#[derive(Debug)]
pub struct Round {
    /// 0 for the first route, 1 for the next.
    pub route: usize,
    /// µs from the rounds' start to this round's dispatch (0 for a first round).
    pub offset_us: u64,
    /// What it settled with (its `elapsed_us` counts from its own dispatch).
    pub sent: FirstSend,
}

/// What the rounds came to: the rounds sent, in order (none when neither route had a target or
/// the budget was gone). Written iff the last one has a written target.
#[derive(Debug, Default)]
pub struct FirstRounds {
    pub rounds: Vec<Round>,
}

impl FirstRounds {
    /// The round that wrote, if one did.
    pub fn written(&self) -> Option<&Round> {
        self.rounds.last().filter(|r| r.sent.written.is_some())
    }
}

/// The two rounds of one transaction, round 1 queued: [`settle`](FirstRoutes::settle) awaits it
/// and sends round 2 if needed.
pub struct FirstRoutes {
    client: Arc<QuicClient>,
    started: Instant,
    round1: Option<Dispatched>,
    next: Arc<[SocketAddr]>,
    tx: Bytes,
    total: Duration,
}

/// A round's budget in whole milliseconds (the deadline's unit), or None when under 1 ms is
/// left: `total` minus what the rounds have used, `cap` at most.
pub fn round_budget(total: Duration, used: Duration, cap: Duration) -> Option<Duration> {
    let ms = total.saturating_sub(used).min(cap).as_millis();
    (ms >= 1).then(|| Duration::from_millis(ms as u64))
}

impl FirstRoutes {
    /// Queue round 1 of `tx` to `first` now (with `round1` of the `total` budget); `next` is
    /// round 2's route, sent with what is left of `total` if round 1 writes to nobody.
    pub fn dispatch(
        client: &Arc<QuicClient>,
        first: &[SocketAddr],
        next: Arc<[SocketAddr]>,
        tx: Bytes,
        round1: Duration,
        total: Duration,
    ) -> FirstRoutes {
        let started = Instant::now();
        let round1 = match round_budget(total, Duration::ZERO, round1) {
            Some(budget) if !first.is_empty() => {
                Some(client.dispatch_by(first, tx.clone(), budget))
            }
            _ => None,
        };
        FirstRoutes {
            client: client.clone(),
            started,
            round1,
            next,
            tx,
            total,
        }
    }

    /// Round 1's outcome, then round 2's if round 1 wrote to nobody and any budget is left.
    pub async fn settle(self) -> FirstRounds {
        let mut out = FirstRounds::default();
        if let Some(round1) = self.round1 {
            let sent = round1.first_written().await;
            let written = sent.written.is_some();
            out.rounds.push(Round {
                route: 0,
                offset_us: 0,
                sent,
            });
            if written {
                return out;
            }
        }
        if self.next.is_empty() {
            return out;
        }
        let Some(budget) = round_budget(self.total, self.started.elapsed(), self.total) else {
            return out;
        };
        let round2 = self.client.dispatch_by(&self.next, self.tx, budget);
        let offset_us = round2
            .started
            .saturating_duration_since(self.started)
            .as_micros() as u64;
        out.rounds.push(Round {
            route: 1,
            offset_us,
            sent: round2.first_written().await,
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn round_one_gets_its_share_and_round_two_the_rest_in_whole_milliseconds() {
        // Round 1: its cap out of the whole budget.
        assert_eq!(
            round_budget(MS(500), Duration::ZERO, MS(300)),
            Some(MS(300))
        );
        // A budget smaller than the cap is all round 1 gets.
        assert_eq!(
            round_budget(MS(200), Duration::ZERO, MS(300)),
            Some(MS(200))
        );
        // Round 2: what is left, floored to whole milliseconds.
        assert_eq!(
            round_budget(MS(500), Duration::from_micros(300_400), MS(500)),
            Some(MS(199))
        );
        // Under a millisecond left, or none: no round.
        assert_eq!(
            round_budget(MS(500), Duration::from_micros(499_100), MS(500)),
            None
        );
        assert_eq!(round_budget(MS(500), MS(800), MS(500)), None);
    }
}

//! A peer's connection life as one state machine: which state it is in, and each transition
//! written once, as a method. The back-off and reconnect policy read straight off the state.
//!
//! ```text
//!   Idle ──start_dial──▶ Dialing ──connected──▶ Live ──lost──▶ Backoff
//!    ▲                     │  └──dial_failed (peer's doing)──────▲   │
//!    ├──dial_failed (ours)─┘                                        │
//!    ├──dropped (we closed it: unused)── Live                       │
//!    └──────────── the back-off runs out: the next send dials ──────┘
//!   any state ──shut (client closed)──▶ Shut   (a handshake completing then is closed)
//! ```
//!
//! Generic over the connection (`C`) and the handle of a handshake under way (`D`) so the
//! transitions are unit-tested without sockets; the client uses quinn's `Connection` and a watch
//! receiver (`worker.rs`). Every method takes `now` for the same reason. Nothing here locks:
//! the caller holds the peer's mutex around each call.

use super::config::ClientConfig;
use super::outcome::{Close, FailReason, Failure};
use std::time::{Duration, Instant};

/// A connection that stayed up this long before closing was healthy: its close does not add to
/// the previous failures' back-off.
pub(super) const HEALTHY_LIFETIME: Duration = Duration::from_secs(10);

/// Where a peer's connection is.
pub(super) enum Phase<C, D> {
    /// No connection and nothing in the way: the next send (or prewarm) dials. A new peer,
    /// and one whose connection we closed ourselves.
    Idle,
    /// A handshake is under way; sends and prewarms join it instead of dialling again.
    Dialing(D),
    /// The open connection, up since `since`.
    Live { conn: C, since: Instant },
    /// The last connection or handshake failed by the peer's doing: sends fail fast with
    /// `backoff` until `until`, then the next one dials.
    Backoff { until: Instant },
    /// The peer's task has ended (client closed): nothing dials any more.
    Shut,
}

/// What a send to the peer does now, read off the state.
pub(super) enum Next<'a, C, D> {
    /// Write on this connection (whether it is still alive is the caller's check).
    Use(&'a C),
    /// Wait for the handshake under way.
    Join(&'a D),
    /// Start a handshake (then [`Link::start_dial`]).
    Dial,
    /// Fail at once: back-off in force, or the client closed.
    Refuse(Failure),
}

/// A peer's state and the history the back-off policy needs.
pub(super) struct Link<C, D> {
    phase: Phase<C, D>,
    /// Failures since the last healthy connection: the back-off's exponent.
    failures: u32,
    /// The last failure (the peer's close, a handshake that failed, a stale connection): the
    /// back-off's message and the peer stats.
    last_close: Option<Close>,
}

impl<C, D> Default for Link<C, D> {
    fn default() -> Self {
        Link {
            phase: Phase::Idle,
            failures: 0,
            last_close: None,
        }
    }
}

impl<C, D> Link<C, D> {
    /// What a send does now (see [`Next`]). A back-off that has run out reads as idle.
    pub(super) fn next(&self, now: Instant) -> Next<'_, C, D> {
        match &self.phase {
            Phase::Live { conn, .. } => Next::Use(conn),
            Phase::Dialing(d) => Next::Join(d),
            Phase::Backoff { until } if *until > now => {
                Next::Refuse(self.backoff_failure(*until - now))
            }
            Phase::Idle | Phase::Backoff { .. } => Next::Dial,
            Phase::Shut => Next::Refuse(Failure::new(FailReason::ClientClosed, "client closed")),
        }
    }

    /// Idle (or back-off over) → Dialing.
    pub(super) fn start_dial(&mut self, dialing: D) {
        debug_assert!(
            matches!(self.phase, Phase::Idle | Phase::Backoff { .. }),
            "dial started while connected or dialing"
        );
        self.phase = Phase::Dialing(dialing);
    }

    /// Dialing → Live. Once shut, the connection is handed back to be closed.
    pub(super) fn connected(&mut self, conn: C, now: Instant) -> Result<(), C> {
        if matches!(self.phase, Phase::Shut) {
            return Err(conn);
        }
        self.phase = Phase::Live { conn, since: now };
        Ok(())
    }

    /// Dialing → Backoff when the handshake failed by the peer's doing (`close`), → Idle when
    /// it was ours (the endpoint closing). Shut stays shut.
    pub(super) fn dial_failed(&mut self, close: Option<Close>, now: Instant, cfg: &ClientConfig) {
        if matches!(self.phase, Phase::Shut) {
            return;
        }
        match close {
            Some(close) => self.back_off(close, None, now, cfg),
            None => self.phase = Phase::Idle,
        }
    }

    /// Live → Backoff: the peer closed the connection (any of Agave's close codes), it broke,
    /// or it went stale. Hands back the connection (to close, where it is still open). A
    /// connection that had lived [`HEALTHY_LIFETIME`] starts the failure count again.
    pub(super) fn lost(&mut self, close: Close, now: Instant, cfg: &ClientConfig) -> Option<C> {
        let Phase::Live { .. } = self.phase else {
            return None;
        };
        let Phase::Live { conn, since } = std::mem::replace(&mut self.phase, Phase::Idle) else {
            unreachable!()
        };
        self.back_off(close, Some(now.saturating_duration_since(since)), now, cfg);
        Some(conn)
    }

    /// Live → Idle: we closed the connection ourselves (unused), no failure.
    pub(super) fn dropped(&mut self) -> Option<C> {
        let Phase::Live { .. } = self.phase else {
            return None;
        };
        match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Live { conn, .. } => Some(conn),
            _ => unreachable!(),
        }
    }

    /// Any state → Shut. Hands back the open connection, if any, to close once what was
    /// written on it is acknowledged.
    pub(super) fn shut(&mut self) -> Option<C> {
        match std::mem::replace(&mut self.phase, Phase::Shut) {
            Phase::Live { conn, .. } => Some(conn),
            _ => None,
        }
    }

    /// The open connection, if any.
    pub(super) fn live(&self) -> Option<&C> {
        match &self.phase {
            Phase::Live { conn, .. } => Some(conn),
            _ => None,
        }
    }

    pub(super) fn failures(&self) -> u32 {
        self.failures
    }

    pub(super) fn last_close(&self) -> Option<&Close> {
        self.last_close.as_ref()
    }

    /// Back-off left (zero when none).
    pub(super) fn backoff_left(&self, now: Instant) -> Duration {
        match self.phase {
            Phase::Backoff { until } => until.saturating_duration_since(now),
            _ => Duration::ZERO,
        }
    }

    /// Record a failure and enter its back-off: `backoff_base · 2^(failures-1)`, at most
    /// `backoff_max`.
    fn back_off(
        &mut self,
        close: Close,
        lived: Option<Duration>,
        now: Instant,
        cfg: &ClientConfig,
    ) {
        if lived.is_some_and(|d| d >= HEALTHY_LIFETIME) {
            self.failures = 0;
        }
        self.failures = self.failures.saturating_add(1);
        let factor = 1u32.checked_shl(self.failures - 1).unwrap_or(u32::MAX);
        let backoff = cfg.backoff_base.saturating_mul(factor).min(cfg.backoff_max);
        self.phase = Phase::Backoff {
            until: now + backoff,
        };
        self.last_close = Some(close);
    }

    /// The back-off in force, as the failure a send gets during it.
    fn backoff_failure(&self, left: Duration) -> Failure {
        let last = self.last_close.as_ref();
        Failure {
            reason: FailReason::Backoff,
            code: last.and_then(|c| c.code),
            detail: format!(
                "backing off for {} ms after: {}",
                left.as_millis(),
                last.map_or("a failure", |c| c.reason.as_str())
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection is a number, a handshake under way a name: no sockets needed.
    type TestLink = Link<u32, &'static str>;

    fn cfg() -> ClientConfig {
        ClientConfig {
            backoff_base: Duration::from_millis(200),
            backoff_max: Duration::from_millis(1000),
            ..ClientConfig::default()
        }
    }

    fn peer_close(code: u64) -> Close {
        Close {
            code: Some(code),
            reason: format!("closed by peer: code {code}"),
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Idle → Dialing → Live, the way a first send goes.
    fn live_link(conn: u32, now: Instant) -> TestLink {
        let mut link = TestLink::default();
        assert!(matches!(link.next(now), Next::Dial));
        link.start_dial("handshake");
        assert!(matches!(link.next(now), Next::Join(&"handshake")));
        assert!(link.connected(conn, now).is_ok());
        assert!(matches!(link.next(now), Next::Use(&c) if c == conn));
        link
    }

    fn refused(link: &TestLink, now: Instant) -> Failure {
        match link.next(now) {
            Next::Refuse(f) => f,
            _ => panic!("expected a refusal"),
        }
    }

    #[test]
    fn a_new_peer_dials_joins_its_handshake_and_uses_the_connection() {
        let now = Instant::now();
        let link = live_link(7, now);
        assert_eq!(link.live(), Some(&7));
        assert_eq!(link.failures(), 0);
        assert_eq!(link.backoff_left(now), Duration::ZERO);
    }

    #[test]
    fn every_agave_close_code_puts_a_live_peer_in_back_off_with_that_code() {
        for code in [1, 2, 4, 5] {
            let now = Instant::now();
            let mut link = live_link(1, now);
            assert_eq!(link.lost(peer_close(code), now + ms(10), &cfg()), Some(1));
            assert!(link.live().is_none());
            assert_eq!(link.backoff_left(now + ms(10)), ms(200));
            let f = refused(&link, now + ms(110));
            assert_eq!((f.reason, f.code), (FailReason::Backoff, Some(code)));
            assert!(f.detail.contains(&format!("code {code}")), "{}", f.detail);
            assert_eq!(link.last_close().and_then(|c| c.code), Some(code));
            // Once the back-off has run out, the next send dials again.
            assert!(matches!(link.next(now + ms(210)), Next::Dial));
        }
    }

    #[test]
    fn back_off_doubles_per_consecutive_failure_up_to_the_maximum() {
        let cfg = cfg();
        let mut now = Instant::now();
        let mut link = TestLink::default();
        for expected in [200, 400, 800, 1000, 1000] {
            assert!(matches!(link.next(now), Next::Dial));
            link.start_dial("handshake");
            link.dial_failed(
                Some(Close {
                    code: None,
                    reason: "no handshake".into(),
                }),
                now,
                &cfg,
            );
            assert_eq!(link.backoff_left(now), ms(expected));
            assert_eq!(refused(&link, now).code, None);
            now += ms(expected);
        }
        assert_eq!(link.failures(), 5);
        // A connection that comes up does not forget the failures; only a healthy lifetime does.
        link.start_dial("handshake");
        link.connected(3, now).unwrap();
        link.lost(peer_close(4), now + ms(1), &cfg);
        assert_eq!(
            (link.failures(), link.backoff_left(now + ms(1))),
            (6, ms(1000))
        );
    }

    #[test]
    fn a_connection_that_lived_a_healthy_lifetime_starts_the_count_again() {
        let cfg = cfg();
        let now = Instant::now();
        let mut link = live_link(1, now);
        link.lost(peer_close(1), now, &cfg);
        let later = now + ms(200);
        link.start_dial("handshake");
        link.connected(2, later).unwrap();
        assert_eq!(link.failures(), 1);
        let closed_at = later + HEALTHY_LIFETIME;
        link.lost(peer_close(1), closed_at, &cfg);
        assert_eq!(
            (link.failures(), link.backoff_left(closed_at)),
            (1, ms(200))
        );
    }

    #[test]
    fn a_handshake_that_fails_by_our_doing_returns_to_idle_without_back_off() {
        let now = Instant::now();
        let mut link = TestLink::default();
        link.start_dial("handshake");
        link.dial_failed(None, now, &cfg());
        assert!(matches!(link.next(now), Next::Dial));
        assert_eq!((link.failures(), link.last_close().is_none()), (0, true));
    }

    #[test]
    fn a_stale_connection_is_lost_without_a_code() {
        let now = Instant::now();
        let mut link = live_link(9, now);
        let stale = Close {
            code: None,
            reason: "nothing heard from the peer".into(),
        };
        assert_eq!(link.lost(stale, now, &cfg()), Some(9));
        let f = refused(&link, now);
        assert_eq!((f.reason, f.code), (FailReason::Backoff, None));
        assert!(f.detail.contains("nothing heard"), "{}", f.detail);
    }

    #[test]
    fn closing_an_unused_connection_is_no_failure() {
        let now = Instant::now();
        let mut link = live_link(5, now);
        assert_eq!(link.dropped(), Some(5));
        assert!(matches!(link.next(now), Next::Dial));
        assert_eq!(link.failures(), 0);
        // Nothing to drop or lose once it is gone.
        assert_eq!(link.dropped(), None);
        assert_eq!(link.lost(peer_close(1), now, &cfg()), None);
        assert!(matches!(link.next(now), Next::Dial));
    }

    #[test]
    fn shutting_down_hands_back_the_live_connection_and_refuses_everything_after() {
        let now = Instant::now();
        let mut link = live_link(4, now);
        assert_eq!(link.shut(), Some(4));
        assert_eq!(refused(&link, now).reason, FailReason::ClientClosed);
        // A failure reported after the shutdown does not revive the peer.
        link.dial_failed(Some(peer_close(2)), now, &cfg());
        assert_eq!(refused(&link, now).reason, FailReason::ClientClosed);
    }

    #[test]
    fn a_handshake_that_completes_after_shutdown_is_handed_back_to_be_closed() {
        let now = Instant::now();
        let mut link = TestLink::default();
        link.start_dial("handshake");
        assert_eq!(link.shut(), None);
        assert_eq!(link.connected(8, now), Err(8));
        assert!(link.live().is_none());
        assert_eq!(refused(&link, now).reason, FailReason::ClientClosed);
    }

    #[test]
    fn a_peer_shut_before_it_ever_dialled_never_dials() {
        let now = Instant::now();
        let mut link = TestLink::default();
        assert_eq!(link.shut(), None);
        assert_eq!(refused(&link, now).reason, FailReason::ClientClosed);
        assert_eq!(link.dropped(), None);
    }

    #[test]
    fn shutting_down_in_back_off_ends_the_back_off() {
        let now = Instant::now();
        let mut link = live_link(1, now);
        link.lost(peer_close(5), now, &cfg());
        assert_eq!(link.shut(), None);
        assert_eq!(link.backoff_left(now), Duration::ZERO);
        assert_eq!(refused(&link, now).reason, FailReason::ClientClosed);
    }
}

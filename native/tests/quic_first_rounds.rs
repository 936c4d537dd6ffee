//! The hot path's first send in one call (`FirstRoutes`): round 1 to the current route with its
//! share of the budget, round 2 to the next route with the rest only when round 1 wrote to
//! nobody — over real UDP on loopback. A dead leader is a socket that never answers (its
//! handshake outlives any deadline here), an undialable one fails at once.

use landfall_native::quic::{ClientConfig, FailReason, FirstRounds, FirstRoutes};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

mod quic_common;
use quic_common::*;

/// First byte of this crate's identity seeds (`quic_common::seed`).
const SEED_PREFIX: u8 = 0xe5;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A client whose handshakes outlive every deadline here (a silent leader stays "not heard back").
fn patient(n: u8) -> Arc<landfall_native::quic::QuicClient> {
    client(
        n,
        ClientConfig {
            handshake_timeout: Duration::from_secs(10),
            ..ClientConfig::default()
        },
    )
}

async fn rounds(
    c: &Arc<landfall_native::quic::QuicClient>,
    first: &[SocketAddr],
    next: &[SocketAddr],
    round1: Duration,
    total: Duration,
) -> FirstRounds {
    let sending = FirstRoutes::dispatch(c, first, next.into(), payload(1, 200), round1, total);
    tokio::time::timeout(WAIT, sending.settle())
        .await
        .expect("the rounds settle")
}

/// The budget a round's deadline failures say it had, ms.
fn deadline_ms(detail: &str) -> u64 {
    detail
        .strip_prefix("not written within the ")
        .and_then(|d| d.strip_suffix(" ms deadline"))
        .and_then(|d| d.parse().ok())
        .unwrap_or_else(|| panic!("a deadline failure's detail: {detail}"))
}

#[tokio::test]
async fn round_one_written_sends_no_round_two() {
    let (srv, mut rx) = server(1);
    let (after, _after_rx) = server(2);
    let c = patient(3);
    let r = rounds(
        &c,
        &[srv.local_addr()],
        &[after.local_addr()],
        ms(300),
        ms(500),
    )
    .await;
    assert_eq!(r.rounds.len(), 1);
    let w = r.written().expect("round 1 wrote");
    assert_eq!((w.route, w.offset_us), (0, 0));
    assert_eq!(w.sent.written.as_ref().unwrap().addr, srv.local_addr());
    recv(&mut rx).await;
    assert_eq!(after.stats().connections_accepted, 0);
}

#[tokio::test]
async fn round_two_is_sent_only_when_round_one_wrote_to_nobody() {
    let (srv, mut rx) = server(4);
    let c = patient(5);
    let r = rounds(&c, &[undialable()], &[srv.local_addr()], ms(300), ms(500)).await;
    assert_eq!(r.rounds.len(), 2);
    let one = &r.rounds[0];
    assert_eq!(one.route, 0);
    assert!(one.sent.written.is_none());
    assert_eq!(one.sent.failures.len(), 1);
    assert_eq!(one.sent.failures[0].reason, Some(FailReason::ConnectFailed));
    let two = r.written().expect("round 2 wrote");
    assert_eq!(two.route, 1);
    // Round 2 is queued after round 1 settled.
    assert!(two.offset_us >= one.sent.elapsed_us);
    assert_eq!(two.sent.written.as_ref().unwrap().addr, srv.local_addr());
    recv(&mut rx).await;
}

#[tokio::test]
async fn round_one_gets_its_share_and_round_two_what_is_left() {
    let (_s1, dead1) = silent();
    let (_s2, dead2) = silent();
    let c = patient(6);
    let r = rounds(&c, &[dead1], &[dead2], ms(100), ms(300)).await;
    assert_eq!(r.rounds.len(), 2);
    assert!(r.written().is_none());
    let one = &r.rounds[0].sent.failures;
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].reason, Some(FailReason::Deadline));
    assert_eq!(deadline_ms(one[0].detail.as_deref().unwrap()), 100);
    // Round 2 starts after round 1's deadline, with the rest of the whole budget (whole ms).
    let two = &r.rounds[1];
    assert!(two.offset_us >= 100_000, "offset {} µs", two.offset_us);
    let f = &two.sent.failures;
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].reason, Some(FailReason::Deadline));
    let budget = deadline_ms(f[0].detail.as_deref().unwrap());
    let left = 300 - (two.offset_us / 1000).min(300);
    assert!(
        budget <= 200 && budget + 1 >= left,
        "round 2 had {budget} ms of the {left} left"
    );
}

#[tokio::test]
async fn no_round_two_without_budget_left_or_targets() {
    let (_s1, dead1) = silent();
    let (srv, _rx) = server(7);
    let c = patient(8);
    // Round 1 may use the whole budget: nothing is left for round 2.
    let r = rounds(&c, &[dead1], &[srv.local_addr()], ms(100), ms(100)).await;
    assert_eq!(r.rounds.len(), 1);
    assert!(r.written().is_none());
    assert_eq!(srv.stats().connections_accepted, 0);
    // No targets in either route: no round at all.
    let r = rounds(&c, &[], &[], ms(300), ms(500)).await;
    assert!(r.rounds.is_empty());
    // No target in round 1's route: round 2 at once, with the budget's rest, not round 1's share.
    let (_s2, dead2) = silent();
    // (A whole second of budget: only a stall of most of it could make the rest look small.)
    let r = rounds(&c, &[], &[dead2], ms(50), ms(1000)).await;
    assert_eq!(r.rounds.len(), 1);
    assert_eq!(r.rounds[0].route, 1);
    let f = &r.rounds[0].sent.failures;
    assert!(deadline_ms(f[0].detail.as_deref().unwrap()) > 50);
}

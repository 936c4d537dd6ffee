//! What the QUIC TPU client counts as written, when a peer vanishes without closing and when a
//! caller has a deadline, over real UDP on loopback. A vanished peer is produced for real: the
//! server's socket drops every datagram both ways (`packet_loss_pct: 100`), so its connection
//! stays open on the client's side and simply never hears back — what a killed validator, a
//! pulled cable or a firewall look like from here. Every test uses its own identity seeds
//! (clients are shared per identity across the process, and tests run in parallel).

use landfall_native::quic::{
    ClientConfig, FailReason, Faults, QuicClient, QuicServer, ServerConfig,
};
use std::time::Duration;

mod quic_common;
use quic_common::*;

/// First byte of this crate's identity seeds (`quic_common::seed`).
const SEED_PREFIX: u8 = 0xa3;

/// Keep-alive 100 ms and a 300 ms alive window: the rule of the defaults (1 s, 1.5 s), ten times
/// faster.
fn quick() -> ClientConfig {
    ClientConfig {
        keep_alive: Duration::from_millis(100),
        alive_window: Duration::from_millis(300),
        ..ClientConfig::default()
    }
}

fn black_hole(srv: &QuicServer) {
    srv.set_faults(Faults {
        packet_loss_pct: 100.0,
        ..Faults::default()
    });
}

#[tokio::test]
async fn a_peer_gone_silent_is_not_written_to_its_connection_is_dropped_and_it_backs_off() {
    let (srv, mut rx) = server(1);
    let to = srv.local_addr();
    let c = client(2, quick());
    let first = c.send(to, payload(1, 200)).await;
    assert!(first.ok(), "{first:?}");
    recv(&mut rx).await;

    // The validator vanishes without closing anything: the connection stays open here.
    black_hole(&srv);
    wait_until("the peer to be quiet past the alive window", || {
        c.peer_stats()[0].quiet_ms.is_some_and(|q| q > 300)
    })
    .await;
    let peer = &c.peer_stats()[0];
    assert!(peer.connected, "still open as far as QUIC knows: {peer:?}");

    // Its send buffer would take the stream; the client refuses to call that written.
    let o = c.send(to, payload(2, 200)).await;
    assert_eq!(o.reason, Some(FailReason::ConnectionStale), "{o:?}");
    assert!(
        o.detail
            .as_deref()
            .is_some_and(|d| d.contains("nothing heard from the peer")),
        "{o:?}"
    );
    let peer = &c.peer_stats()[0];
    assert!(!peer.connected, "the stale connection is dropped: {peer:?}");
    assert!(peer.backoff_remaining_ms > 0, "{peer:?}");
    // Back-off: the next send fails at once, naming why.
    let again = c.send(to, payload(3, 200)).await;
    assert_eq!(again.reason, Some(FailReason::Backoff), "{again:?}");

    // The validator comes back: once the back-off is over, a new handshake, and the first send
    // on it counts as alive (the handshake is a round trip).
    srv.set_faults(Faults::default());
    // On a loaded machine a reconnection's handshake can miss its bound and back off once more:
    // what must hold is that the validator is reached again on a new connection, and that the
    // send which reaches it is the one written.
    let mut back = None;
    for _ in 0..5 {
        wait_until("the back-off to end", || {
            c.peer_stats()[0].backoff_remaining_ms == 0
        })
        .await;
        let o = c.send(to, payload(4, 200)).await;
        if o.ok() {
            back = Some(o);
            break;
        }
    }
    let back =
        back.expect("the validator was not reached again within 5 attempts after it came back");
    assert!(!back.reused);
    assert_eq!(recv(&mut rx).await.bytes, payload(4, 200));
    assert!(c.peer_stats()[0].connects >= 2);
    srv.close().await;
}

#[tokio::test]
async fn an_idle_connection_to_a_live_peer_stays_alive_on_its_keep_alives() {
    let (srv, mut rx) = server(3);
    let to = srv.local_addr();
    let c = client(4, quick());
    assert!(c.send(to, payload(1, 100)).await.ok());
    recv(&mut rx).await;
    // Nothing sent for more than three alive windows: only the keep-alive PINGs and their ACKs.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let o = c.send(to, payload(2, 100)).await;
    assert!(o.ok(), "{o:?}");
    assert!(o.reused, "the same connection, still alive");
    recv(&mut rx).await;
    assert_eq!(srv.stats().connections_accepted, 1);
    srv.close().await;
}

#[tokio::test]
async fn a_deadline_send_settles_by_its_deadline_and_is_never_written_later() {
    let (srv, mut rx) = server(5);
    let to = srv.local_addr();
    // Unreachable while the first send is made: its handshake gets no answer.
    black_hole(&srv);
    let cfg = ClientConfig {
        handshake_timeout: Duration::from_secs(10),
        ..ClientConfig::default()
    };
    let c = client(6, cfg);
    let budget = Duration::from_millis(200);
    let first = tokio::time::timeout(
        WAIT,
        c.dispatch_by(&[to], payload(1, 100), budget)
            .first_written(),
    )
    .await
    .expect("a deadline send must settle");
    assert!(first.written.is_none());
    let reasons: Vec<_> = first.failures.iter().map(|o| (o.addr, o.reason)).collect();
    assert_eq!(reasons, vec![(to, Some(FailReason::Deadline))]);
    // Ordering, not speed: it settled because the deadline passed, not because the handshake
    // (10 s) gave up.
    assert!(first.elapsed_us >= 200_000, "{first:?}");
    assert!(first.elapsed_us < 10_000_000, "{first:?}");

    // The handshake the send started goes on without it: once the path is back, it completes,
    // and the next send uses that connection.
    srv.set_faults(Faults::default());
    wait_until("the handshake to complete", || c.peer_stats()[0].connected).await;
    let next = c
        .dispatch_by(&[to], payload(2, 100), Duration::from_secs(5))
        .first_written()
        .await;
    assert!(next.written.as_ref().is_some_and(|o| o.reused), "{next:?}");
    // The same lane and connection, so one writer in queue order: had the first transaction
    // been written, it would have arrived before this one.
    assert_eq!(recv(&mut rx).await.bytes, payload(2, 100));
    assert_eq!(
        srv.stats().accepted_txs,
        1,
        "the transaction answered as not written never arrives"
    );
    let counts = c.drain_outcomes();
    let deadline = counts
        .iter()
        .find(|o| o.reason == Some(FailReason::Deadline))
        .map(|o| o.count);
    assert_eq!(deadline, Some(1), "{counts:?}");
    srv.close().await;
}

#[tokio::test]
async fn a_deadline_send_with_a_silent_and_a_live_target_is_written_to_the_live_one_at_once() {
    let (silent, _silent_rx) = server(7);
    let (live, mut rx) = server(8);
    let c = client(9, quick());
    // Both connected (the first sends' lane); then one goes silent past the alive window.
    for srv in [&silent, &live] {
        let first = c
            .dispatch_by(&[srv.local_addr()], payload(0, 50), Duration::from_secs(5))
            .first_written()
            .await;
        assert!(first.written.is_some(), "{first:?}");
    }
    recv(&mut rx).await;
    black_hole(&silent);
    wait_until("the silent peer to be quiet past the window", || {
        c.peer_stats()
            .iter()
            .any(|p| p.addr == silent.local_addr() && p.quiet_ms.is_some_and(|q| q > 300))
    })
    .await;
    let first = c
        .dispatch_by(
            &[silent.local_addr(), live.local_addr()],
            payload(1, 100),
            Duration::from_secs(5),
        )
        .first_written()
        .await;
    assert_eq!(
        first.written.as_ref().map(|o| o.addr),
        Some(live.local_addr())
    );
    assert_eq!(recv(&mut rx).await.bytes, payload(1, 100));
    // The silent one is refused for what it is (its outcome may come just after the live
    // one's, from its own task).
    let mut outcomes = Vec::new();
    wait_until("the silent peer's outcome", || {
        outcomes.extend(c.drain_outcomes());
        outcomes
            .iter()
            .any(|o| o.addr == silent.local_addr() && o.reason == Some(FailReason::ConnectionStale))
    })
    .await;
    silent.close().await;
    live.close().await;
}

#[test]
fn the_alive_window_must_lie_between_the_keep_alive_and_the_idle_timeout() {
    let at_keep_alive = ClientConfig {
        alive_window: Duration::from_secs(1),
        ..ClientConfig::default()
    };
    assert_eq!(
        QuicClient::new(&seed(10), at_keep_alive)
            .err()
            .map(|e| e.code()),
        Some("QUIC_INVALID_OPTION")
    );
    let past_idle = ClientConfig {
        alive_window: Duration::from_secs(11),
        ..ClientConfig::default()
    };
    assert_eq!(
        QuicClient::new(&seed(10), past_idle)
            .err()
            .map(|e| e.code()),
        Some("QUIC_INVALID_OPTION")
    );
}

#[tokio::test]
async fn a_peer_back_from_a_silent_restart_gets_fresh_connections_on_both_lanes() {
    // The defaults (keep-alive 1 s, alive window 1.5 s): the dead connections' own keep-alives
    // are slow to bring back the restarted server's reset, as with a real validator.
    let (srv, _old_rx) = server(11);
    let to = srv.local_addr();
    let c = client(12, ClientConfig::default());
    both_lanes_up(&c, to).await;
    // The server dies without a word, stays away past the alive window, and a new one comes up
    // on the same port: it knows neither connection.
    black_hole(&srv);
    wait_until("the peer to be quiet past the window", || {
        c.peer_stats()[0].quiet_ms.is_some_and(|q| q > 1_600)
    })
    .await;
    srv.close().await;
    let (again, mut rx) = QuicServer::bind(
        &seed(11),
        ServerConfig {
            bind: to,
            max_streams_per_100ms: 0,
            ..ServerConfig::default()
        },
    )
    .expect("rebind");

    // A first send finds its lane's connection stale; once the back-off is over the next one
    // connects to the new server, and the peer is heard from again.
    let stale = c
        .dispatch_by(&[to], payload(1, 100), Duration::from_secs(2))
        .first_written()
        .await;
    assert_eq!(
        stale.failures.iter().map(|o| o.reason).collect::<Vec<_>>(),
        vec![Some(FailReason::ConnectionStale)]
    );
    wait_until("the back-off to pass", || {
        c.peer_stats()[0].backoff_remaining_ms == 0
    })
    .await;
    let first = c
        .dispatch_by(&[to], payload(2, 100), Duration::from_secs(2))
        .first_written()
        .await;
    assert!(first.written.is_some(), "{first:?}");
    assert_eq!(recv(&mut rx).await.bytes, payload(2, 100));

    // The other lane's connection went quiet with the first's: it was dropped with it, so a
    // plain send connects afresh and reaches the new server. (Kept, it looked alive again — the
    // peer is heard from — and the send was "written" into a connection nobody reads.)
    let o = c.send(to, payload(3, 100)).await;
    assert!(o.ok() && !o.reused, "{o:?}");
    assert_eq!(recv(&mut rx).await.bytes, payload(3, 100));
    again.close().await;
}

//! Rebroadcast rounds and first sends sharing a peer, over real UDP on loopback, against the
//! real server throttling us as an Agave validator throttles an unstaked sender (it reads a
//! handful of our streams per 100 ms, so the connection's stream credit runs out and every
//! further stream waits for the server to read one).
//!
//! The defect this pins down (a CI run of `chain-restart.test.ts`): after a chain rollback the
//! service replays every pending transaction each slot; the throttled validators read slowly,
//! each round write waited its turn for stream credit, the peers' queues filled with them, and a
//! first send queued behind them missed its 500 ms deadline on all four leaders, three times in
//! a row. First sends now have a lane of their own, with a connection of its own (and so stream
//! credit the rounds cannot use up).

use landfall_native::quic::{runtime, ClientConfig, Faults, ServerConfig};
use std::time::Duration;

mod quic_common;
use quic_common::*;

/// First byte of this crate's identity seeds (`quic_common::seed`).
const SEED_PREFIX: u8 = 0xb9;

/// The hot path's first-send budget (`FIRST_SEND_BUDGET_MS`).
const FIRST_SEND_BUDGET: Duration = Duration::from_millis(500);

#[tokio::test]
async fn a_first_send_is_written_within_its_deadline_while_a_round_floods_a_throttled_peer() {
    // 4 streams per 100 ms: a round of 600 is ~12 s of the server's reading.
    let (srv, mut rx) = server_with(
        1,
        ServerConfig {
            max_streams_per_100ms: 4,
            ..ServerConfig::default()
        },
    );
    let to = srv.local_addr();
    let c = client(2, ClientConfig::default());
    assert!(c.send(to, payload(0, 200)).await.ok(), "connected");
    recv(&mut rx).await;

    let txs: Vec<_> = (0..600u32).map(|i| payload(1_000 + i, 200)).collect();
    let round = c.dispatch_batch(&[to], &txs);
    let first = c
        .dispatch_by(&[to], payload(7, 200), FIRST_SEND_BUDGET)
        .first_written()
        .await;
    assert!(
        first.written.is_some(),
        "the first send must be written within its deadline: {:?}",
        first.failures
    );
    // The round goes on beside it, on its own connection: the peer reads it at its own pace.
    let stats = c.peer_stats();
    assert!(stats[0].queued > 0, "the round is still queued: {stats:?}");
    drop(round);
    srv.close().await;
}

#[tokio::test]
async fn a_first_send_does_not_wait_for_stream_credit_a_round_holds() {
    let (srv, mut rx) = server(3);
    let to = srv.local_addr();
    // Long enough that no round write waiting for credit times out in this test.
    let c = client(
        4,
        ClientConfig {
            send_timeout: Duration::from_secs(10),
            ..ClientConfig::default()
        },
    );
    // Both lanes' connections up, as the service's prewarm has them before a leader's slot.
    both_lanes_up(&c, to).await;
    // The client counts a connection when its handshake completes, the server when its accept
    // loop has taken it: a moment later on a loaded machine.
    wait_until("the server to hold both connections", || {
        srv.stats().connections_open == 2
    })
    .await;
    // The path goes dark: the streams the round's connection has credit for are taken into its
    // buffers, and its next write waits for credit that cannot come back.
    srv.set_faults(Faults {
        packet_loss_pct: 100.0,
        ..Faults::default()
    });
    let txs: Vec<_> = (0..300u32).map(|i| payload(2_000 + i, 200)).collect();
    let round = c.dispatch_batch(&[to], &txs);
    wait_until("the round's writer to wait for stream credit", || {
        c.peer_stats()[0].credit_wait_ms.is_some()
    })
    .await;
    assert!(c.peer_stats()[0].sent > 1, "the credit it had was used");

    // A first send arrives: its lane's connection has the credit the round could not take, so
    // it is written at once. (On one connection it waited for the round's credit and, the path
    // being dark, missed its deadline.)
    let first = c
        .dispatch_by(&[to], payload(9, 200), FIRST_SEND_BUDGET)
        .first_written()
        .await;
    assert!(
        first.written.is_some(),
        "the first send must not wait for the round's credit: {:?}",
        first.failures
    );
    // The path comes back: the peer gets the first send, and every write of the round, none
    // lost to the first send.
    srv.set_faults(Faults::default());
    let outcomes = round.outcomes().await;
    assert!(
        outcomes.iter().all(|o| o.ok()),
        "{:?}",
        outcomes
            .iter()
            .filter(|o| !o.ok())
            .map(|o| o.reason)
            .collect::<Vec<_>>()
    );
    let mut got = std::collections::HashSet::new();
    while got.len() < txs.len() + 1 {
        got.insert(recv(&mut rx).await.bytes);
    }
    assert!(got.contains(&payload(9, 200)));
    srv.close().await;
}

#[tokio::test]
async fn a_first_send_is_written_while_the_shared_runtime_thread_is_held() {
    let (srv, mut rx) = server(5);
    let to = srv.local_addr();
    let c = client(6, ClientConfig::default());
    both_lanes_up(&c, to).await;
    // The shared runtime's only thread is held until the first send is written, as a slot's
    // rebroadcast burst holds it, or as the OS does when it gives that thread no CPU.
    let (release, held) = std::sync::mpsc::channel::<()>();
    let (holding, started) = std::sync::mpsc::channel::<()>();
    runtime().spawn(async move {
        holding.send(()).expect("test waiting");
        let _ = held.recv_timeout(WAIT);
    });
    started
        .recv_timeout(WAIT)
        .expect("the shared runtime's thread is held");
    // First sends have a thread of their own (`landfall-first`): written all the same. (On the
    // shared runtime it waited for the thread and missed its deadline.)
    let first = c
        .dispatch_by(&[to], payload(11, 200), FIRST_SEND_BUDGET)
        .first_written()
        .await;
    release.send(()).expect("holder waiting");
    assert!(first.written.is_some(), "{:?}", first.failures);
    assert_eq!(recv(&mut rx).await.bytes, payload(11, 200));
    srv.close().await;
}

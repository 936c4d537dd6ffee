//! Rebroadcast rounds and first sends sharing a peer, over real UDP on loopback, against the
//! real server throttling us as an Agave validator throttles an unstaked sender (it reads a
//! handful of our streams per 100 ms, so the connection's stream credit runs out and every
//! further stream waits for the server to read one).
//!
//! The defect this pins down (a CI run of `chain-restart.test.ts`): after a chain rollback the
//! service replays every pending transaction each slot; the throttled validators read slowly,
//! each round write waited its turn for stream credit, the peers' queues filled with them, and a
//! first send queued behind them missed its 500 ms deadline on all four leaders, three times in
//! a row. First sends now have a lane of their own, served before anything else queued.

use landfall_native::quic::{ClientConfig, FailReason, Faults, ServerConfig};
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
    let (srv, mut rx) = server_with(1, ServerConfig { max_streams_per_100ms: 4, ..ServerConfig::default() });
    let to = srv.local_addr();
    let c = client(2, ClientConfig::default());
    assert!(c.send(to, payload(0, 200)).await.ok(), "connected");
    recv(&mut rx).await;

    let txs: Vec<_> = (0..600u32).map(|i| payload(1_000 + i, 200)).collect();
    let round = c.dispatch_batch(&[to], &txs);
    let first = c.dispatch_by(&[to], payload(7, 200), FIRST_SEND_BUDGET).first_written().await;
    assert!(first.written.is_some(), "the first send must be written within its deadline: {:?}", first.failures);
    // The round goes on behind it: the peer reads it at its own pace, and nothing of it is lost
    // to the first send but a write that gave way (`busy`), if one was waiting for credit.
    let stats = c.peer_stats();
    assert!(stats[0].queued > 0, "the round is still queued: {stats:?}");
    drop(round);
    srv.close().await;
}

#[tokio::test]
async fn a_round_write_waiting_for_stream_credit_gives_way_to_a_first_send() {
    let (srv, mut rx) = server(3);
    let to = srv.local_addr();
    let c = client(4, ClientConfig::default());
    assert!(c.send(to, payload(0, 200)).await.ok(), "connected");
    recv(&mut rx).await;
    // The path goes dark: the streams the connection's credit allows are taken into its
    // buffers, and the next write waits for credit that cannot come back.
    srv.set_faults(Faults { packet_loss_pct: 100.0, ..Faults::default() });
    let txs: Vec<_> = (0..300u32).map(|i| payload(2_000 + i, 200)).collect();
    let round = c.dispatch_batch(&[to], &txs);
    wait_until("the round's writer to wait for stream credit", || c.peer_stats()[0].credit_wait_ms.is_some()).await;
    assert!(c.peer_stats()[0].sent > 1, "the credit it had was used");

    // A first send arrives: the waiting round write gives way at once (`busy`, nothing opened),
    // and the first send is the one waiting for credit now. (It cannot get any on a dark path:
    // it ends at its deadline.)
    let first = c.dispatch_by(&[to], payload(9, 200), FIRST_SEND_BUDGET).first_written().await;
    assert_eq!(first.failures.iter().map(|o| o.reason).collect::<Vec<_>>(), vec![Some(FailReason::Deadline)]);
    let outcomes = round.outcomes().await;
    let busy: Vec<_> = outcomes.iter().enumerate().filter(|(_, o)| o.reason == Some(FailReason::Busy)).map(|(i, _)| i).collect();
    let written = outcomes.iter().filter(|o| o.ok()).count();
    // Exactly one gave way: the write that was waiting, the one right after those the credit took.
    assert_eq!(busy, vec![written], "{:?}", outcomes.iter().map(|o| o.reason).collect::<Vec<_>>());
    srv.close().await;
}

//! Rebroadcast rounds and first sends sharing a peer, over real UDP on loopback, against the
//! real server throttling us as an Agave validator throttles an unstaked sender (it stops
//! reading our streams for the rest of each 100 ms once we have started its quota, so the
//! connection's stream credit runs out).
//!
//! The defect this pins down (a CI run of `chain-restart.test.ts`): after a chain rollback the
//! service replays every pending transaction each slot; the throttled validators stopped
//! reading, every round's write waited up to `send_timeout` for stream credit, the peers'
//! queues filled with them, and a first send queued behind them missed its 500 ms deadline on
//! all four leaders, three times in a row. A round now writes what the peer takes at once and
//! leaves the rest to the next round (`busy`); it never holds the peer's writer.

use landfall_native::quic::{ClientConfig, FailReason, ServerConfig};
use std::time::Duration;

mod quic_common;
use quic_common::*;

/// First byte of this crate's identity seeds (`quic_common::seed`).
const SEED_PREFIX: u8 = 0xb9;

/// The hot path's first-send budget (`FIRST_SEND_BUDGET_MS`).
const FIRST_SEND_BUDGET: Duration = Duration::from_millis(500);

#[tokio::test]
async fn a_first_send_is_written_within_its_deadline_while_rounds_flood_a_throttled_peer() {
    // 4 streams per 100 ms: rounds of 600 transactions are far past what it reads.
    let (srv, mut rx) = server_with(1, ServerConfig { max_streams_per_100ms: 4, ..ServerConfig::default() });
    let to = srv.local_addr();
    let c = client(2, ClientConfig::default());
    assert!(c.send(to, payload(0, 200)).await.ok(), "connected");
    recv(&mut rx).await;

    // Three rounds queued back to back, as three slots of a replay would.
    let rounds: Vec<_> = (0..3u32)
        .map(|r| {
            let txs: Vec<_> = (0..300u32).map(|i| payload(1_000 * (r + 1) + i, 200)).collect();
            c.dispatch_round(&[to], &txs)
        })
        .collect();
    let first = c.dispatch_by(&[to], payload(7, 200), FIRST_SEND_BUDGET).first_written().await;
    assert!(first.written.is_some(), "the first send must be written within its deadline: {:?}", first.failures);

    // Every round settled: what the peer took was written, the rest is `busy` (never a wait for
    // credit that ends in `send_timeout`, never a full queue).
    let mut written = 0;
    let mut busy = 0;
    for round in rounds {
        for o in round.outcomes().await {
            match o.reason {
                None => written += 1,
                Some(FailReason::Busy) => busy += 1,
                other => panic!("a round's outcome must be written or busy, got {other:?}: {o:?}"),
            }
        }
    }
    assert!(written > 0 && busy > 0, "written {written}, busy {busy}");
    // What was answered written arrives, the first send among it.
    let mut seen = 0;
    let mut first_arrived = false;
    while seen < written + 1 {
        first_arrived |= recv(&mut rx).await.bytes == payload(7, 200);
        seen += 1;
    }
    assert!(first_arrived);
    srv.close().await;
}

#[tokio::test]
async fn a_round_to_a_peer_not_yet_connected_waits_for_the_handshake_and_writes() {
    let (srv, mut rx) = server(3);
    let to = srv.local_addr();
    let c = client(4, ClientConfig::default());
    let first = c.dispatch_round(&[to], &[payload(1, 100), payload(2, 100)]).outcomes().await;
    assert!(first.iter().all(|o| o.ok()), "{first:?}");
    assert!(!first[0].reused && first[1].reused, "{first:?}");
    assert_eq!(recv(&mut rx).await.bytes, payload(1, 100));
    assert_eq!(recv(&mut rx).await.bytes, payload(2, 100));
    srv.close().await;
}

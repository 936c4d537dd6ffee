//! The hot path's sends on the QUIC TPU client, over real UDP on loopback: `send_first`
//! (settles on the first written target), `dispatch_batch` / `send_batch` (many transactions to
//! many targets in one call) and `drain_outcomes` (every outcome counted per target and reason,
//! including those nobody awaits any more). Every test uses its own identity seeds (clients are
//! shared per identity across the process, and tests run in parallel) and its own servers.

use bytes::Bytes;
use landfall_native::quic::{
    ClientConfig, FailReason, OutcomeCount, SendOutcome, WORD_FAILED_BASE, WORD_WRITTEN,
};
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

mod quic_common;
use quic_common::*;

/// First byte of this crate's identity seeds (`quic_common::seed`).
const SEED_PREFIX: u8 = 0xd7;

/// Drained counts, summed per (target, reason) into `into`.
fn add_counts(
    into: &mut HashMap<(SocketAddr, Option<FailReason>), u64>,
    drained: Vec<OutcomeCount>,
) {
    for c in drained {
        *into.entry((c.addr, c.reason)).or_default() += c.count;
    }
}

#[test]
fn the_tally_order_is_the_declaration_order() {
    for (i, r) in FailReason::ALL.iter().enumerate() {
        assert_eq!(*r as usize, i, "{r:?}");
    }
}

#[tokio::test]
async fn send_first_settles_on_the_live_target_without_waiting_for_a_dead_one() {
    let (srv, mut rx) = server(1);
    let (_dead_socket, dead) = silent();
    let live = srv.local_addr();
    let cfg = ClientConfig {
        handshake_timeout: Duration::from_secs(3),
        ..ClientConfig::default()
    };
    let c = client(2, cfg);
    let tx = payload(1, 300);

    // The dead target first: its handshake is still pending when the live one is written.
    let first = tokio::time::timeout(WAIT, c.send_first(&[dead, live], tx.clone()))
        .await
        .expect("send_first must settle");
    let written = first.written.as_ref().expect("the live target is written");
    assert_eq!(written.addr, live);
    assert!(written.ok());
    assert_eq!(first.elapsed_us, written.elapsed_us);
    assert!(
        first.failures.is_empty(),
        "the dead target's outcome is not known yet: {:?}",
        first.failures
    );
    // Ordering, not wall clock: the dead target had not failed when send_first settled.
    let stats: HashMap<SocketAddr, _> = c.peer_stats().into_iter().map(|p| (p.addr, p)).collect();
    assert_eq!((stats[&dead].sent, stats[&dead].failed), (0, 0));
    assert_eq!(stats[&live].sent, 1);
    assert_eq!(recv(&mut rx).await.bytes, tx);

    // The dead target's outcome arrives later, awaited by nobody, and is still counted.
    let mut counts = HashMap::new();
    let deadline = Instant::now() + WAIT;
    while !counts.contains_key(&(dead, Some(FailReason::HandshakeTimeout))) {
        assert!(
            Instant::now() < deadline,
            "the late outcome was never counted: {counts:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        add_counts(&mut counts, c.drain_outcomes());
    }
    assert_eq!(counts.len(), 2, "{counts:?}");
    assert_eq!(counts[&(live, None)], 1);
    assert_eq!(counts[&(dead, Some(FailReason::HandshakeTimeout))], 1);
    srv.close().await;
}

#[tokio::test]
async fn send_first_reports_the_failures_known_before_the_first_write() {
    let (srv, mut rx) = server(3);
    let live = srv.local_addr();
    let (_dead_socket, dead) = silent();
    let cfg = ClientConfig {
        max_queue_per_peer: 1,
        handshake_timeout: Duration::from_secs(5),
        ..ClientConfig::default()
    };
    let c = client(4, cfg);
    // Make the dead target's queue full, and keep it full: its task takes one transaction and
    // waits on the handshake (5 s); one more then fills the queue until that times out.
    let _held = c.dispatch(&[dead], payload(90, 50));
    let deadline = Instant::now() + WAIT;
    while c
        .peer_stats()
        .iter()
        .any(|p| p.addr == dead && p.queued > 0)
    {
        assert!(
            Instant::now() < deadline,
            "the task never took its first transaction"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let _queued = c.dispatch(&[dead], payload(91, 50));
    assert_eq!(c.peer_stats()[0].queued, 1);

    let first = c.send_first(&[dead, live], payload(2, 100)).await;
    assert_eq!(first.written.as_ref().map(|o| o.addr), Some(live));
    // Refused at once by the full queue: known before the live target was written.
    let failures: Vec<_> = first.failures.iter().map(|o| (o.addr, o.reason)).collect();
    assert_eq!(failures, vec![(dead, Some(FailReason::QueueFull))]);
    recv(&mut rx).await;
    srv.close().await;
}

#[tokio::test]
async fn send_first_settles_with_every_failure_when_no_target_is_written() {
    let (_dead_socket, dead) = silent();
    let cfg = ClientConfig {
        handshake_timeout: Duration::from_millis(300),
        ..ClientConfig::default()
    };
    let c = client(5, cfg);
    let first = tokio::time::timeout(WAIT, c.send_first(&[dead, undialable()], payload(3, 100)))
        .await
        .expect("must settle");
    assert!(first.written.is_none());
    // In the order they became known: the undialable one at once, the silent one at its timeout.
    let reasons: Vec<_> = first.failures.iter().map(|o| (o.addr, o.reason)).collect();
    assert_eq!(
        reasons,
        vec![
            (undialable(), Some(FailReason::ConnectFailed)),
            (dead, Some(FailReason::HandshakeTimeout))
        ]
    );
    assert!(first.elapsed_us >= first.failures[1].elapsed_us);
    // No targets: settles at once, with nothing.
    let none = c.send_first(&[], payload(4, 100)).await;
    assert!(none.written.is_none() && none.failures.is_empty());
}

#[test]
fn an_outcome_word_carries_written_or_the_reason_and_the_close_code() {
    let addr: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let o = |reason: Option<FailReason>, code: Option<u64>| SendOutcome {
        addr,
        reason,
        code,
        detail: None,
        elapsed_us: 0,
        reused: false,
    };
    assert_eq!(o(None, None).word(), WORD_WRITTEN);
    for (i, r) in FailReason::ALL.iter().enumerate() {
        assert_eq!(
            o(Some(*r), None).word(),
            WORD_FAILED_BASE + i as u16,
            "{r:?}"
        );
    }
    // The close code + 1 in the high byte (0 stays distinct from none), capped.
    let refused = o(Some(FailReason::ConnectionLost), Some(2)).word();
    assert_eq!(
        (refused & 0xff, refused >> 8),
        (WORD_FAILED_BASE + FailReason::ConnectionLost as u16, 3)
    );
    assert_eq!(o(Some(FailReason::Backoff), Some(0)).word() >> 8, 1);
    assert_eq!(
        o(Some(FailReason::StreamStopped), Some(70_000)).word() >> 8,
        255
    );
}

#[tokio::test]
async fn a_batch_reaches_every_live_target_with_a_flag_per_transaction_and_target() {
    let (s1, mut rx1) = server(6);
    let (s2, mut rx2) = server(7);
    let addrs = [s1.local_addr(), undialable(), s2.local_addr()];
    let c = client(8, ClientConfig::default());
    let txs: Vec<Bytes> = (0..5)
        .map(|i| payload(100 + i, 200 + 100 * i as usize))
        .collect();

    let outcomes = tokio::time::timeout(WAIT, c.send_batch(&addrs, &txs))
        .await
        .expect("batch must settle");
    assert_eq!(outcomes.len(), txs.len() * addrs.len());
    for (i, _) in txs.iter().enumerate() {
        for (t, &addr) in addrs.iter().enumerate() {
            let o = &outcomes[i * addrs.len() + t];
            assert_eq!(o.addr, addr, "outcome {i}×{t} is in its place");
            assert_eq!(o.ok(), t != 1, "tx {i} to {addr}: {o:?}");
        }
    }
    // Each live server got every transaction, intact.
    let sent: HashSet<Bytes> = txs.iter().cloned().collect();
    for rx in [&mut rx1, &mut rx2] {
        let mut got = HashSet::new();
        while got.len() < txs.len() {
            got.insert(recv(rx).await.bytes);
        }
        assert_eq!(got, sent);
    }
    // The dead target: the first fails to connect, the rest meet its back-off; all counted.
    let mut counts = HashMap::new();
    add_counts(&mut counts, c.drain_outcomes());
    assert_eq!(counts[&(addrs[0], None)], 5);
    assert_eq!(counts[&(addrs[2], None)], 5);
    assert_eq!(counts[&(addrs[1], Some(FailReason::ConnectFailed))], 1);
    assert_eq!(counts[&(addrs[1], Some(FailReason::Backoff))], 4);
    assert_eq!(counts.len(), 4, "{counts:?}");
    s1.close().await;
    s2.close().await;
}

#[tokio::test]
async fn drain_counts_every_send_path_once_and_resets() {
    let (srv, mut rx) = server(9);
    let to = srv.local_addr();
    let (_dead_socket, dead) = silent();
    let cfg = ClientConfig {
        max_queue_per_peer: 1,
        handshake_timeout: Duration::from_millis(500),
        ..ClientConfig::default()
    };
    let c = client(10, cfg);
    assert!(c.drain_outcomes().is_empty());

    assert!(c.send(to, payload(1, 50)).await.ok());
    assert!(c.send_first(&[to], payload(2, 50)).await.written.is_some());
    let batch = c.send_batch(&[to], &[payload(3, 50)]).await;
    assert!(batch[0].ok());
    // Refused before a peer exists: counted, and no peer is started.
    let other: SocketAddr = "127.0.0.1:9".parse().unwrap();
    assert_eq!(
        c.send(other, Bytes::new()).await.reason,
        Some(FailReason::Empty)
    );
    assert_eq!(
        c.send(other, payload(0, 1233)).await.reason,
        Some(FailReason::TooLarge)
    );
    assert!(c.peer_stats().iter().all(|p| p.addr != other));
    // A full queue refuses at once: counted too.
    let burst = c.send_many(&[dead, dead, dead, dead], payload(4, 50)).await;
    let full = burst
        .iter()
        .filter(|o| o.reason == Some(FailReason::QueueFull))
        .count() as u64;
    assert!(full >= 2, "{burst:?}");

    let mut counts = HashMap::new();
    add_counts(&mut counts, c.drain_outcomes());
    assert_eq!(counts[&(to, None)], 3);
    assert_eq!(counts[&(other, Some(FailReason::Empty))], 1);
    assert_eq!(counts[&(other, Some(FailReason::TooLarge))], 1);
    assert_eq!(counts[&(dead, Some(FailReason::QueueFull))], full);
    let dead_total: u64 = counts
        .iter()
        .filter(|((a, _), _)| *a == dead)
        .map(|(_, n)| n)
        .sum();
    assert_eq!(
        dead_total, 4,
        "every one of the four is counted once: {counts:?}"
    );
    // Reset: nothing new, nothing drained.
    assert!(c.drain_outcomes().is_empty());
    for _ in 0..3 {
        recv(&mut rx).await;
    }
    srv.close().await;
}

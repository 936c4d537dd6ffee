//! The QUIC TPU client and server against each other, and against raw quinn connections, over
//! real UDP on loopback. Every test uses its own identity seeds (clients are shared per identity
//! across the process, and tests run in parallel) and its own server.

use bytes::Bytes;
use landfall_native::quic::{
    close, identity_pubkey, server_name, tpu_client_config, ClientConfig, FailReason, Faults,
    QuicClient, QuicServer, SendOutcome, ServerConfig, MAX_TX_SIZE,
};
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod quic_common;
use quic_common::*;

/// First byte of this crate's identity seeds (`quic_common::seed`).
const SEED_PREFIX: u8 = 0xc1;

fn assert_written(o: &SendOutcome) {
    assert!(
        o.ok(),
        "send failed: {:?} {:?} {:?}",
        o.reason,
        o.code,
        o.detail
    );
}

/// A raw quinn connection speaking the TPU protocol, for what `QuicClient` refuses to do.
async fn raw_connection(n: u8, to: SocketAddr) -> (quinn::Endpoint, quinn::Connection) {
    let endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let cfg = tpu_client_config(&seed(n), &ClientConfig::default()).unwrap();
    let conn = endpoint
        .connect_with(cfg, to, &server_name(to))
        .unwrap()
        .await
        .expect("raw handshake");
    (endpoint, conn)
}

/// The application close code a connection ended with.
async fn close_code(conn: &quinn::Connection) -> Option<u64> {
    app_code(
        tokio::time::timeout(WAIT, conn.closed())
            .await
            .expect("connection never closed"),
    )
}

fn app_code(e: quinn::ConnectionError) -> Option<u64> {
    match e {
        quinn::ConnectionError::ApplicationClosed(c) => Some(c.error_code.into_inner()),
        _ => None,
    }
}

/// The close code of a raw connection the server refuses: its refusal may arrive while the
/// handshake is still completing on our side (on a loaded machine) or just after it.
async fn refused_with(n: u8, to: SocketAddr) -> Option<u64> {
    let endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let cfg = tpu_client_config(&seed(n), &ClientConfig::default()).unwrap();
    let connecting = endpoint.connect_with(cfg, to, &server_name(to)).unwrap();
    match tokio::time::timeout(WAIT, connecting)
        .await
        .expect("no handshake outcome within the wait bound")
    {
        Ok(conn) => close_code(&conn).await,
        Err(e) => app_code(e),
    }
}

#[tokio::test]
async fn delivers_transactions_intact_with_the_sender_identity() {
    let (srv, mut rx) = server_with(1, ServerConfig::default());
    let c = client(2, ClientConfig::default());
    for (i, len) in [1usize, 176, 700, MAX_TX_SIZE].into_iter().enumerate() {
        let tx = payload(i as u32, len);
        let before = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
            * 1e3;
        assert_written(&c.send(srv.local_addr(), tx.clone()).await);
        let got = recv(&mut rx).await;
        let after = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
            * 1e3;
        assert_eq!(got.bytes, tx);
        assert_eq!(got.peer, Some(identity_pubkey(&seed(2))));
        assert_eq!(
            Some(got.remote_addr.port()),
            c.local_addr().map(|a| a.port())
        );
        assert!(
            before <= got.arrival_ms && got.arrival_ms <= after,
            "{before} {} {after}",
            got.arrival_ms
        );
    }
    assert_eq!(srv.stats().accepted_txs, 4);
    srv.close().await;
}

#[tokio::test]
async fn a_second_send_reuses_the_connection() {
    let (srv, mut rx) = server_with(3, ServerConfig::default());
    let c = client(4, ClientConfig::default());
    let first = c.send(srv.local_addr(), payload(1, 100)).await;
    let second = c.send(srv.local_addr(), payload(2, 100)).await;
    assert_written(&first);
    assert_written(&second);
    assert!(!first.reused);
    assert!(second.reused);
    recv(&mut rx).await;
    recv(&mut rx).await;
    assert_eq!(srv.stats().connections_accepted, 1);
    let stats = c.peer_stats();
    assert_eq!(stats.len(), 1);
    assert_eq!(
        (stats[0].connects, stats[0].sent, stats[0].failed),
        (1, 2, 0)
    );
    srv.close().await;
}

#[tokio::test]
async fn the_client_refuses_oversize_and_empty_transactions_without_connecting() {
    let (srv, _rx) = server_with(5, ServerConfig::default());
    let c = client(6, ClientConfig::default());
    let big = c.send(srv.local_addr(), payload(0, MAX_TX_SIZE + 1)).await;
    assert_eq!(big.reason, Some(FailReason::TooLarge));
    let empty = c.send(srv.local_addr(), Bytes::new()).await;
    assert_eq!(empty.reason, Some(FailReason::Empty));
    assert!(c.peer_stats().is_empty());
    assert_eq!(srv.stats().connections_accepted, 0);
    srv.close().await;
}

#[tokio::test]
async fn the_server_closes_the_connection_on_an_oversize_stream_with_code_5() {
    let (srv, mut rx) = server_with(7, ServerConfig::default());
    let (_ep, conn) = raw_connection(8, srv.local_addr()).await;
    let mut stream = conn.open_uni().await.unwrap();
    // The write may fail part-way (the server closes while flow control holds the rest back).
    let _ = stream.write_all(&vec![7u8; MAX_TX_SIZE + 100]).await;
    let _ = stream.finish();
    assert_eq!(
        close_code(&conn).await,
        Some(u64::from(close::INVALID_STREAM))
    );
    assert_eq!(srv.stats().rejected_oversize, 1);
    assert!(rx.try_recv().is_err(), "nothing may be delivered");
    srv.close().await;
}

#[tokio::test]
async fn the_server_closes_the_connection_on_an_empty_stream_with_code_5() {
    let (srv, mut rx) = server_with(9, ServerConfig::default());
    let (_ep, conn) = raw_connection(10, srv.local_addr()).await;
    let mut stream = conn.open_uni().await.unwrap();
    stream.finish().unwrap();
    assert_eq!(
        close_code(&conn).await,
        Some(u64::from(close::INVALID_STREAM))
    );
    assert_eq!(srv.stats().rejected_empty, 1);
    assert!(rx.try_recv().is_err());
    srv.close().await;
}

#[tokio::test]
async fn the_server_grants_no_bidirectional_streams() {
    let (srv, _rx) = server_with(11, ServerConfig::default());
    let (_ep, conn) = raw_connection(12, srv.local_addr()).await;
    // With no bidi stream credit, opening one waits forever; a uni stream still works.
    assert!(
        tokio::time::timeout(Duration::from_millis(500), conn.open_bi())
            .await
            .is_err()
    );
    assert!(conn.open_uni().await.is_ok());
    srv.close().await;
}

#[tokio::test]
async fn a_refusing_server_gets_its_close_code_back_and_a_backing_off_client() {
    let (srv, _rx) = server_with(13, ServerConfig::default());
    srv.set_faults(Faults {
        refuse_code: Some(close::TOO_MANY),
        ..Faults::default()
    });
    let c = client(14, ClientConfig::default());
    let to = srv.local_addr();
    // The first transaction may be written before the close arrives (the server accepts the
    // handshake first); the close then reaches the sender with the server's code.
    let mut failure = None;
    for i in 0..50 {
        let o = c.send(to, payload(i, 64)).await;
        if !o.ok() {
            failure = Some(o);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let failure = failure.expect("a refusing server must make sends fail");
    assert_eq!(
        failure.code,
        Some(u64::from(close::TOO_MANY)),
        "{failure:?}"
    );
    // While backing off, sends fail at once, carrying the last close code, without a new
    // connection attempt.
    let accepted = srv.stats().connections_accepted;
    let o = c.send(to, payload(99, 64)).await;
    assert_eq!(o.reason, Some(FailReason::Backoff), "{o:?}");
    assert_eq!(o.code, Some(u64::from(close::TOO_MANY)));
    assert_eq!(srv.stats().connections_accepted, accepted);
    let peer = &c.peer_stats()[0];
    assert_eq!(peer.last_close_code, Some(u64::from(close::TOO_MANY)));
    assert!(peer.backoff_remaining_ms > 0);
    // Keep sending for a while: back-off doubles, so only a handful of connection attempts
    // reach the server (one per send without it: 60 here).
    for i in 0..60 {
        let _ = c.send(to, payload(i, 64)).await;
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let stats = srv.stats();
    assert!(
        stats.connections_accepted <= 8,
        "reconnect storm: {stats:?}"
    );
    assert_eq!(stats.refused, stats.connections_accepted);
    assert!(c.peer_stats()[0].consecutive_failures >= 2);
    srv.close().await;
}

#[tokio::test]
async fn transactions_survive_30_percent_packet_loss() {
    let (srv, mut rx) = server_with(
        15,
        ServerConfig {
            max_streams_per_100ms: 0,
            ..ServerConfig::default()
        },
    );
    let c = client(
        16,
        ClientConfig {
            send_timeout: Duration::from_secs(15),
            ..ClientConfig::default()
        },
    );
    let to = srv.local_addr();
    // Connect on a clean path (a lossy handshake can outlast any sane handshake timeout), then
    // lose 30 % of the datagrams both ways.
    assert_written(&c.send(to, payload(1000, 100)).await);
    recv(&mut rx).await;
    srv.set_faults(Faults {
        packet_loss_pct: 30.0,
        ..Faults::default()
    });
    let sent: HashSet<Bytes> = (0..30).map(|i| payload(i, 300 + i as usize * 20)).collect();
    let outcomes = futures_join(sent.iter().map(|tx| {
        let c = c.clone();
        let tx = tx.clone();
        async move { c.send(to, tx).await }
    }))
    .await;
    outcomes.iter().for_each(assert_written);
    let mut got = HashSet::new();
    while got.len() < sent.len() {
        got.insert(recv(&mut rx).await.bytes);
    }
    assert_eq!(got, sent);
    assert!(srv.stats().datagrams_dropped > 0);
    srv.set_faults(Faults::default());
    srv.close().await;
}

/// Run futures concurrently on the current runtime and collect their outputs in order.
async fn futures_join<F>(futs: impl IntoIterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futs.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(h.await.expect("task panicked"));
    }
    out
}

#[tokio::test]
async fn streams_beyond_the_per_100ms_limit_are_throttled_not_lost() {
    let (srv, mut rx) = server_with(
        17,
        ServerConfig {
            max_streams_per_100ms: 5,
            ..ServerConfig::default()
        },
    );
    let c = client(18, ClientConfig::default());
    let to = srv.local_addr();
    let outcomes = futures_join((0..40).map(|i| {
        let c = c.clone();
        async move { c.send(to, payload(i, 200)).await }
    }))
    .await;
    outcomes.iter().for_each(assert_written);
    let mut got = HashSet::new();
    while got.len() < 40 {
        got.insert(recv(&mut rx).await.bytes);
    }
    let stats = srv.stats();
    assert!(stats.throttled > 0, "{stats:?}");
    assert_eq!(stats.accepted_txs, 40);
    srv.close().await;
}

#[tokio::test]
async fn prewarm_opens_both_lanes_connections_before_the_first_send() {
    let (srv, mut rx) = server_with(19, ServerConfig::default());
    let c = client(20, ClientConfig::default());
    let to = srv.local_addr();
    c.prewarm(&[to]);
    // One connection for first sends, one for everything else (`client.rs`, "Lanes").
    wait_until("the prewarmed connections", || {
        srv.stats().connections_open == 2
    })
    .await;
    wait_until("the client to see them", || {
        c.peer_stats().first().is_some_and(|p| p.connects == 2)
    })
    .await;
    let o = c.send(to, payload(1, 100)).await;
    assert_written(&o);
    assert!(
        o.reused,
        "a plain send must use its lane's prewarmed connection"
    );
    let first = c
        .dispatch_by(&[to], payload(2, 100), Duration::from_millis(500))
        .first_written()
        .await;
    let written = first.written.expect("the first send is written");
    assert!(
        written.reused,
        "a first send must use its lane's prewarmed connection"
    );
    recv(&mut rx).await;
    recv(&mut rx).await;
    assert_eq!(srv.stats().connections_accepted, 2);
    let peer = &c.peer_stats()[0];
    assert!(
        peer.connected && peer.rtt_us.is_some_and(|rtt| rtt > 0),
        "{peer:?}"
    );
    srv.close().await;
}

#[tokio::test]
async fn nothing_listening_fails_with_a_handshake_timeout_then_backs_off() {
    // A bound UDP socket that never answers: the handshake gets no reply at all.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let to = silent.local_addr().unwrap();
    let cfg = ClientConfig {
        handshake_timeout: Duration::from_millis(300),
        ..ClientConfig::default()
    };
    let c = client(21, cfg);
    let started = Instant::now();
    let o = tokio::time::timeout(WAIT, c.send(to, payload(1, 100)))
        .await
        .expect("send must not hang");
    assert_eq!(o.reason, Some(FailReason::HandshakeTimeout), "{o:?}");
    assert!(started.elapsed() >= Duration::from_millis(300));
    let again = c.send(to, payload(2, 100)).await;
    assert_eq!(again.reason, Some(FailReason::Backoff), "{again:?}");
    let peer = &c.peer_stats()[0];
    assert_eq!(
        (peer.connects, peer.sent, peer.failed, peer.connected),
        (0, 0, 2, false)
    );
}

#[test]
fn threads_constructing_the_same_identity_share_one_endpoint_and_connection() {
    let (srv, mut rx) = QuicServer::bind(
        &seed(22),
        ServerConfig {
            max_streams_per_100ms: 0,
            ..ServerConfig::default()
        },
    )
    .unwrap();
    let to = srv.local_addr();
    // Every thread holds its handle until all have sent, as worker threads of one process would.
    let barrier = Arc::new(std::sync::Barrier::new(4));
    let threads: Vec<_> = (0..4u32)
        .map(|t| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let c = QuicClient::new(&seed(23), ClientConfig::default()).unwrap();
                barrier.wait();
                let oks = rt.block_on(async {
                    let mut oks = 0;
                    for i in 0..25 {
                        oks += usize::from(c.send(to, payload(t * 100 + i, 150)).await.ok());
                    }
                    oks
                });
                barrier.wait();
                (oks, c.local_addr())
            })
        })
        .collect();
    let results: Vec<_> = threads.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(results.iter().all(|(oks, _)| *oks == 25), "{results:?}");
    let addrs: HashSet<_> = results.iter().map(|(_, a)| *a).collect();
    assert_eq!(addrs.len(), 1, "one endpoint for the identity");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut got = HashSet::new();
        while got.len() < 100 {
            got.insert(recv(&mut rx).await.bytes);
        }
        assert_eq!(srv.stats().connections_accepted, 1);
        srv.close().await;
    });
}

#[tokio::test]
async fn the_last_handle_dropped_closes_the_shared_client() {
    let (srv, mut rx) = server_with(24, ServerConfig::default());
    let a = client(25, ClientConfig::default());
    let b = client(25, ClientConfig::default());
    assert!(Arc::ptr_eq(&a, &b));
    assert_written(&a.send(srv.local_addr(), payload(1, 10)).await);
    recv(&mut rx).await;
    drop(a);
    // Still one handle: the connection stays.
    assert_written(&b.send(srv.local_addr(), payload(2, 10)).await);
    recv(&mut rx).await;
    drop(b);
    wait_until("the connection to close", || {
        srv.stats().connections_open == 0
    })
    .await;
    // A new client for the identity is a new endpoint and a new connection.
    let c = client(25, ClientConfig::default());
    let o = c.send(srv.local_addr(), payload(3, 10)).await;
    assert_written(&o);
    assert!(!o.reused);
    recv(&mut rx).await;
    assert_eq!(srv.stats().connections_accepted, 2);
    srv.close().await;
}

#[tokio::test]
async fn closing_the_client_right_after_writing_still_delivers_everything() {
    let (srv, mut rx) = server_with(
        27,
        ServerConfig {
            max_streams_per_100ms: 0,
            ..ServerConfig::default()
        },
    );
    let c = client(28, ClientConfig::default());
    let to = srv.local_addr();
    assert_written(&c.send(to, payload(1000, 100)).await);
    recv(&mut rx).await;
    // With loss, written streams are still being retransmitted when the client closes.
    srv.set_faults(Faults {
        packet_loss_pct: 30.0,
        ..Faults::default()
    });
    let sent: HashSet<Bytes> = (0..50).map(|i| payload(i, 900)).collect();
    let outcomes = futures_join(sent.iter().map(|tx| {
        let c = c.clone();
        let tx = tx.clone();
        async move { c.send(to, tx).await }
    }))
    .await;
    outcomes.iter().for_each(assert_written);
    drop(c); // the last handle: the connection closes once the peer has acknowledged the streams
    let mut got = HashSet::new();
    while got.len() < sent.len() {
        got.insert(recv(&mut rx).await.bytes);
    }
    assert_eq!(got, sent);
    srv.close().await;
}

#[tokio::test]
async fn a_full_peer_queue_refuses_with_queue_full() {
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let to = silent.local_addr().unwrap();
    let cfg = ClientConfig {
        max_queue_per_peer: 1,
        handshake_timeout: Duration::from_millis(500),
        ..ClientConfig::default()
    };
    let c = client(26, cfg);
    // The peer's task holds at most one transaction (handshaking) and its queue one more, so of
    // four sends issued together at least two are refused at once.
    let outcomes = c.send_many(&[to, to, to, to], payload(1, 50)).await;
    let full = outcomes
        .iter()
        .filter(|o| o.reason == Some(FailReason::QueueFull))
        .count();
    assert!(full >= 2, "{outcomes:?}");
    assert_eq!(c.peer_stats()[0].dropped, full as u64);
}

#[tokio::test]
async fn send_many_reaches_every_server() {
    let servers: Vec<_> = (30..33)
        .map(|n| server_with(n, ServerConfig::default()))
        .collect();
    let c = client(33, ClientConfig::default());
    let addrs: Vec<SocketAddr> = servers.iter().map(|(s, _)| s.local_addr()).collect();
    let outcomes = c.send_many(&addrs, payload(7, 222)).await;
    assert_eq!(outcomes.iter().map(|o| o.addr).collect::<Vec<_>>(), addrs);
    outcomes.iter().for_each(assert_written);
    for (srv, mut rx) in servers {
        assert_eq!(recv(&mut rx).await.bytes, payload(7, 222));
        srv.close().await;
    }
}

#[tokio::test]
async fn agave_connection_limits_close_with_too_many_and_disallowed() {
    let cfg = ServerConfig {
        max_connections_per_peer: 1,
        max_connections_per_ip_per_minute: 2,
        ..ServerConfig::default()
    };
    let (srv, _rx) = server_with(34, cfg);
    let to = srv.local_addr();
    let (_e1, first) = raw_connection(35, to).await;
    assert_eq!(refused_with(36, to).await, Some(u64::from(close::TOO_MANY)));
    assert_eq!(
        refused_with(37, to).await,
        Some(u64::from(close::DISALLOWED))
    );
    assert!(
        first.close_reason().is_none(),
        "the admitted connection stays open"
    );
    let stats = srv.stats();
    assert_eq!(
        (stats.too_many, stats.rate_limited, stats.connections_open),
        (1, 1, 1)
    );
    srv.close().await;
}

#[tokio::test]
async fn injected_delay_holds_each_transaction_back_after_it_arrived() {
    let (srv, mut rx) = server_with(38, ServerConfig::default());
    srv.set_faults(Faults {
        delay_ms: 300,
        ..Faults::default()
    });
    assert_eq!(srv.faults().delay_ms, 300);
    let c = client(39, ClientConfig::default());
    assert_written(&c.send(srv.local_addr(), payload(1, 80)).await);
    let got = recv(&mut rx).await;
    let handed_over = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1e3;
    assert!(
        handed_over - got.arrival_ms >= 299.0,
        "handed over {} ms after arrival",
        handed_over - got.arrival_ms
    );
    srv.close().await;
}

#[tokio::test]
async fn closing_the_server_ends_the_receiver_and_fails_later_sends() {
    let (srv, mut rx) = server_with(40, ServerConfig::default());
    // A back-off long enough to hold until the send below on a loaded machine (the default
    // 200 ms once ran out first, and the send then timed out reconnecting instead).
    let c = client(
        41,
        ClientConfig {
            backoff_base: Duration::from_secs(30),
            backoff_max: Duration::from_secs(60),
            ..ClientConfig::default()
        },
    );
    let to = srv.local_addr();
    assert_written(&c.send(to, payload(1, 80)).await);
    recv(&mut rx).await;
    srv.close().await;
    assert!(tokio::time::timeout(WAIT, rx.recv())
        .await
        .unwrap()
        .is_none());
    wait_until("the client to see the close", || {
        c.peer_stats()[0].last_close_code == Some(0)
    })
    .await;
    let o = c.send(to, payload(2, 80)).await;
    assert_eq!(o.reason, Some(FailReason::Backoff), "{o:?}");
    // The port is free again: a restarted server can take it.
    let (again, _rx) = QuicServer::bind(
        &seed(40),
        ServerConfig {
            bind: to,
            ..ServerConfig::default()
        },
    )
    .expect("rebind");
    again.close().await;
    srv.close().await; // closing twice is harmless
}

#[test]
fn bad_configuration_is_an_error_not_a_panic() {
    let bad = ClientConfig {
        idle_timeout: Duration::from_secs(30),
        ..ClientConfig::default()
    };
    assert_eq!(
        QuicClient::new(&seed(42), bad).err().map(|e| e.code()),
        Some("QUIC_INVALID_OPTION")
    );
    let bad = ClientConfig {
        keep_alive: Duration::from_secs(20),
        ..ClientConfig::default()
    };
    assert!(QuicClient::new(&seed(42), bad).is_err());
    let bad = ServerConfig {
        max_connections_per_peer: 0,
        ..ServerConfig::default()
    };
    assert_eq!(
        QuicServer::bind(&seed(43), bad).err().map(|e| e.code()),
        Some("QUIC_INVALID_OPTION")
    );
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let cfg = ServerConfig {
        bind: taken.local_addr().unwrap(),
        ..ServerConfig::default()
    };
    assert_eq!(
        QuicServer::bind(&seed(43), cfg).err().map(|e| e.code()),
        Some("QUIC_BIND_FAILED")
    );
}

//! What the QUIC integration tests (`quic.rs`, `quic_hot_path.rs`, `quic_liveness.rs`,
//! `quic_rounds.rs`, `quic_first_rounds.rs`) share: identities, a server and a client, peers
//! that never answer, payloads, and bounded waits. Each test crate defines
//! `SEED_PREFIX` (its identities' first byte) so its identities never collide with another's.
#![allow(dead_code)]

use bytes::Bytes;
use landfall_native::quic::{ClientConfig, QuicClient, QuicServer, Received, ServerConfig};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedReceiver;

/// Upper bound on any single wait, so a broken test fails instead of hanging.
pub const WAIT: Duration = Duration::from_secs(20);

/// Identity seed `n` of this test crate.
pub fn seed(n: u8) -> [u8; 32] {
    let mut s = [n; 32];
    s[0] = super::SEED_PREFIX;
    s
}

/// A UDP socket that never answers: a handshake to it gets no reply at all (a dead leader).
/// Keep the socket for as long as the address must stay silent.
pub fn silent() -> (std::net::UdpSocket, SocketAddr) {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let a = s.local_addr().unwrap();
    (s, a)
}

/// An address quinn refuses to dial (port 0): the send fails at once with `connect_failed`.
pub fn undialable() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

pub fn server_with(n: u8, cfg: ServerConfig) -> (QuicServer, UnboundedReceiver<Received>) {
    QuicServer::bind(&seed(n), cfg).expect("bind server")
}

/// A server that throttles no stream (the tests here are about the client).
pub fn server(n: u8) -> (QuicServer, UnboundedReceiver<Received>) {
    server_with(
        n,
        ServerConfig {
            max_streams_per_100ms: 0,
            ..ServerConfig::default()
        },
    )
}

pub fn client(n: u8, cfg: ClientConfig) -> Arc<QuicClient> {
    QuicClient::new(&seed(n), cfg).expect("client")
}

/// A distinct transaction-sized payload: `len` bytes starting with `tag`.
pub fn payload(tag: u32, len: usize) -> Bytes {
    let mut v: Vec<u8> = (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ 0x5a)
        .collect();
    let t = tag.to_le_bytes();
    let n = len.min(4);
    v[..n].copy_from_slice(&t[..n]);
    Bytes::from(v)
}

pub async fn recv(rx: &mut UnboundedReceiver<Received>) -> Received {
    tokio::time::timeout(WAIT, rx.recv())
        .await
        .expect("no transaction within the wait bound")
        .expect("server closed")
}

/// Prewarm `to` and wait until both of its lanes (first sends, the rest) are connected.
pub async fn both_lanes_up(c: &QuicClient, to: std::net::SocketAddr) {
    c.prewarm(&[to]);
    wait_until("both lanes to connect", || c.peer_stats()[0].connects == 2).await;
}

/// Poll `cond` every 10 ms until it holds; panics after `WAIT`.
pub async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

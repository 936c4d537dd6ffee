//! A TPU QUIC server that behaves, towards an unstaked sender, like an Agave validator's
//! `tpu_quic` port: the same TLS, transport limits, stream rules, close codes and unstaked
//! limits (connections per peer, new connections per minute, streams per 100 ms). The local
//! cluster runs one per simulated validator; fault injection (packet loss, delay, refusal) lets
//! tests put a sender through what real leaders do to it.
//!
//! Every sender is unstaked here (there is no stake table), so, as in Agave's `SwQos` for
//! unstaked peers, limits are keyed by the peer's IP address, not by its identity key.

use super::error::{check_range, QuicError};
use super::lossy::{Loss, LossySocket};
use super::protocol::{close, MAX_TX_SIZE};
use super::runtime::{runtime, unix_ms_now};
use super::tls;
use bytes::{Bytes, BytesMut};
use quinn::{Endpoint, EndpointConfig, IdleTimeout, TokioRuntime, TransportConfig, VarInt};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Agave's unstaked concurrent stream limit (`QUIC_MAX_UNSTAKED_CONCURRENT_STREAMS`).
const MAX_CONCURRENT_UNI_STREAMS: u32 = 128;
/// Agave's unstaked connection receive window: 128 transactions in flight.
const CONNECTION_RECEIVE_WINDOW: u32 = (MAX_TX_SIZE as u32) * 128;
/// The stream throttling interval (`STREAM_THROTTLING_INTERVAL`).
const THROTTLE_INTERVAL: Duration = Duration::from_millis(100);
/// How long `close()` waits for connections to finish closing, and then for the socket to be
/// released, before it returns anyway.
const CLOSE_DRAIN: Duration = Duration::from_secs(2);
/// The per-IP rate-limit table is pruned of fully refilled entries past this size.
const RATE_TABLE_PRUNE_AT: usize = 4096;

/// Limits and timeouts of a server. `Default` is an unstaked peer's view of an Agave validator
/// on loopback with an OS-assigned port.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// UDP address to bind; port 0 lets the OS pick (read it back with `local_addr`).
    pub bind: SocketAddr,
    /// Streams a peer (IP) may start per 100 ms before the server stops reading its streams for
    /// the rest of the interval. Agave's unstaked value is 20 (200 TPS). 0 disables throttling.
    pub max_streams_per_100ms: u64,
    /// Connections a peer (IP) may hold open at once; one more is closed with code 4
    /// `too_many`. Agave's default is 8.
    pub max_connections_per_peer: usize,
    /// New connections a peer (IP) may open per minute (burst of that many, refilled evenly);
    /// one more is closed with code 2 `disallowed`. Agave's default is 8. 0 disables the limit.
    pub max_connections_per_ip_per_minute: u64,
    /// Idle timeout the server offers (the client's, if lower, wins). Agave: 60 s.
    pub idle_timeout: Duration,
    /// Handshakes not complete within this are abandoned. Agave: 2 s.
    pub handshake_timeout: Duration,
    /// A stream that receives nothing for this long is abandoned (Agave's
    /// `DEFAULT_WAIT_FOR_CHUNK_TIMEOUT`, 2 s).
    pub stream_read_timeout: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            max_streams_per_100ms: 20,
            max_connections_per_peer: 8,
            max_connections_per_ip_per_minute: 8,
            idle_timeout: Duration::from_secs(60),
            handshake_timeout: Duration::from_secs(2),
            stream_read_timeout: Duration::from_secs(2),
        }
    }
}

impl ServerConfig {
    fn validate(&self) -> Result<(), QuicError> {
        check_range(
            "maxStreamsPer100ms",
            self.max_streams_per_100ms,
            0..=1_000_000,
        )?;
        check_range(
            "maxConnectionsPerPeer",
            self.max_connections_per_peer,
            1..=65_536,
        )?;
        check_range(
            "maxConnectionsPerIpPerMinute",
            self.max_connections_per_ip_per_minute,
            0..=1_000_000,
        )?;
        check_range("idleTimeoutMs", self.idle_timeout.as_millis(), 1..=600_000)?;
        check_range(
            "handshakeTimeoutMs",
            self.handshake_timeout.as_millis(),
            1..=600_000,
        )?;
        check_range(
            "streamReadTimeoutMs",
            self.stream_read_timeout.as_millis(),
            1..=600_000,
        )
    }
}

/// Faults to inject, changeable while the server runs. `Default` injects none.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Faults {
    /// Percentage (0–100) of UDP datagrams dropped at the socket, inbound and outbound.
    pub packet_loss_pct: f64,
    /// Delay added before each received transaction is handed to the consumer (other streams
    /// and connections are not held up by it).
    pub delay_ms: u64,
    /// When set, every new connection is accepted and then closed at once with this code and
    /// reason "refused".
    pub refuse_code: Option<u32>,
}

/// One transaction as the server received it.
#[derive(Clone, Debug)]
pub struct Received {
    /// The stream's bytes: 1..=1232 of them.
    pub bytes: Bytes,
    /// The sender's identity key from its certificate (None if it carries no ed25519 key).
    pub peer: Option<[u8; 32]>,
    pub remote_addr: SocketAddr,
    /// When the stream's end arrived: milliseconds since the Unix epoch (system clock), taken
    /// before any injected delay.
    pub arrival_ms: f64,
}

/// Counters of a server since it was bound.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Connections admitted and still open.
    pub connections_open: u64,
    /// Handshakes completed (including connections then refused or closed by a limit).
    pub connections_accepted: u64,
    /// Transactions handed to the consumer.
    pub accepted_txs: u64,
    /// Streams longer than 1232 bytes (each closed its connection with code 5).
    pub rejected_oversize: u64,
    /// Streams finished without data (each closed its connection with code 5).
    pub rejected_empty: u64,
    /// Streams whose reading was held back by the per-100 ms stream limit.
    pub throttled: u64,
    /// Connections closed by the `refuse_code` fault.
    pub refused: u64,
    /// Connections closed with code 2 by the per-minute connection limit.
    pub rate_limited: u64,
    /// Connections closed with code 4 by the per-peer connection limit.
    pub too_many: u64,
    /// Streams abandoned: reset by the sender, or silent past `stream_read_timeout`.
    pub stream_errors: u64,
    /// Datagrams dropped by the `packet_loss_pct` fault, both directions.
    pub datagrams_dropped: u64,
}

#[derive(Default)]
struct Counters {
    connections_open: AtomicU64,
    connections_accepted: AtomicU64,
    accepted_txs: AtomicU64,
    rejected_oversize: AtomicU64,
    rejected_empty: AtomicU64,
    throttled: AtomicU64,
    refused: AtomicU64,
    rate_limited: AtomicU64,
    too_many: AtomicU64,
    stream_errors: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// The streams one peer started in the current throttling interval. Shared by all of the
/// peer's connections, as Agave shares one `ConnectionStreamCounter` per connection-table key.
struct StreamWindow {
    start: Instant,
    count: u64,
}

struct PeerEntry {
    connections: usize,
    window: Arc<Mutex<StreamWindow>>,
}

/// Token bucket of new connections for one IP.
struct RateBucket {
    tokens: f64,
    refilled: Instant,
}

/// Marker for `refuse_code` = None in its atomic.
const NO_REFUSE: u64 = u64::MAX;

struct Shared {
    cfg: ServerConfig,
    counters: Counters,
    loss: Arc<Loss>,
    delay_ms: AtomicU64,
    refuse_code: AtomicU64,
    peers: Mutex<HashMap<IpAddr, PeerEntry>>,
    rates: Mutex<HashMap<IpAddr, RateBucket>>,
    /// The consumer's channel; None once the server is closed, which ends the receiver's stream.
    deliver: RwLock<Option<mpsc::UnboundedSender<Received>>>,
}

/// A running server. Dropping it closes the endpoint (without waiting: prefer `close().await`).
pub struct QuicServer {
    shared: Arc<Shared>,
    /// None once closed.
    endpoint: Mutex<Option<Endpoint>>,
    /// Gone once quinn has released the socket (and with it the port).
    socket: Weak<LossySocket>,
    local_addr: SocketAddr,
    identity: [u8; 32],
}

impl QuicServer {
    /// Bind `cfg.bind` with identity `seed` and start accepting. Received transactions arrive on
    /// the returned channel, in stream-completion order per connection.
    pub fn bind(
        seed: &[u8; 32],
        cfg: ServerConfig,
    ) -> Result<(QuicServer, mpsc::UnboundedReceiver<Received>), QuicError> {
        cfg.validate()?;
        let mut server_config =
            quinn::ServerConfig::with_crypto(Arc::new(tls::server_crypto(seed)?));
        // TPU clients do not roam; Agave disables migration too.
        server_config.migration(false);
        server_config.transport_config(Arc::new(transport(&cfg)?));

        let _enter = runtime().enter();
        let socket = std::net::UdpSocket::bind(cfg.bind).map_err(QuicError::Bind)?;
        let socket =
            quinn::Runtime::wrap_udp_socket(&TokioRuntime, socket).map_err(QuicError::Bind)?;
        let loss = Arc::new(Loss::default());
        let socket = Arc::new(LossySocket::new(socket, loss.clone()));
        let socket_alive = Arc::downgrade(&socket);
        let endpoint = Endpoint::new_with_abstract_socket(
            EndpointConfig::default(),
            Some(server_config),
            socket,
            Arc::new(TokioRuntime),
        )
        .map_err(QuicError::Bind)?;
        let local_addr = endpoint.local_addr().map_err(QuicError::Bind)?;

        let (tx, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            cfg,
            counters: Counters::default(),
            loss,
            delay_ms: AtomicU64::new(0),
            refuse_code: AtomicU64::new(NO_REFUSE),
            peers: Mutex::new(HashMap::new()),
            rates: Mutex::new(HashMap::new()),
            deliver: RwLock::new(Some(tx)),
        });
        runtime().spawn(accept_loop(endpoint.clone(), shared.clone()));
        let server = QuicServer {
            shared,
            endpoint: Mutex::new(Some(endpoint)),
            socket: socket_alive,
            local_addr,
            identity: tls::identity_pubkey(seed),
        };
        Ok((server, rx))
    }

    /// The bound address (with the OS-assigned port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The server's identity public key.
    pub fn identity(&self) -> [u8; 32] {
        self.identity
    }

    /// Replace the injected faults; applies to datagrams, streams and connections from now on.
    pub fn set_faults(&self, faults: Faults) {
        let s = &self.shared;
        s.loss.set_pct(faults.packet_loss_pct);
        s.delay_ms.store(faults.delay_ms, Ordering::Relaxed);
        s.refuse_code.store(
            faults.refuse_code.map_or(NO_REFUSE, u64::from),
            Ordering::Relaxed,
        );
    }

    /// The faults in force.
    pub fn faults(&self) -> Faults {
        let s = &self.shared;
        let refuse = s.refuse_code.load(Ordering::Relaxed);
        Faults {
            packet_loss_pct: s.loss.pct(),
            delay_ms: s.delay_ms.load(Ordering::Relaxed),
            refuse_code: (refuse != NO_REFUSE).then_some(refuse as u32),
        }
    }

    pub fn stats(&self) -> ServerStats {
        let c = &self.shared.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ServerStats {
            connections_open: get(&c.connections_open),
            connections_accepted: get(&c.connections_accepted),
            accepted_txs: get(&c.accepted_txs),
            rejected_oversize: get(&c.rejected_oversize),
            rejected_empty: get(&c.rejected_empty),
            throttled: get(&c.throttled),
            refused: get(&c.refused),
            rate_limited: get(&c.rate_limited),
            too_many: get(&c.too_many),
            stream_errors: get(&c.stream_errors),
            datagrams_dropped: self.shared.loss.dropped(),
        }
    }

    /// Close every connection (code 0, "server closed"), stop accepting, end the receiver's
    /// stream (transactions still in an injected delay are dropped), wait for the connections
    /// to finish closing and for the UDP port to be free again (each wait at most 2 s), so the
    /// same address can be bound again at once (a validator restarting on its port).
    /// Closing again does nothing.
    pub async fn close(&self) {
        let Some(endpoint) = self.shutdown() else {
            return;
        };
        let _ = tokio::time::timeout(CLOSE_DRAIN, endpoint.wait_idle()).await;
        drop(endpoint);
        // quinn's endpoint task drops the socket once every handle is gone; it runs on the
        // runtime, so watch for it rather than assume it already happened.
        let deadline = Instant::now() + CLOSE_DRAIN;
        while self.socket.strong_count() > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Close the endpoint and the consumer's channel; hands back the endpoint the first time.
    fn shutdown(&self) -> Option<Endpoint> {
        if let Ok(mut deliver) = self.shared.deliver.write() {
            deliver.take();
        }
        let endpoint = self.endpoint.lock().ok()?.take()?;
        endpoint.close(VarInt::from_u32(0), b"server closed");
        Some(endpoint)
    }
}

impl Drop for QuicServer {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// The transport an Agave validator gives an unstaked peer: 128 concurrent uni streams, one
/// transaction's worth of stream window, no bidirectional streams, no datagrams, no GSO.
fn transport(cfg: &ServerConfig) -> Result<TransportConfig, QuicError> {
    let mut t = TransportConfig::default();
    t.max_concurrent_uni_streams(VarInt::from_u32(MAX_CONCURRENT_UNI_STREAMS));
    t.max_concurrent_bidi_streams(VarInt::from_u32(0));
    t.stream_receive_window(VarInt::from_u32(MAX_TX_SIZE as u32));
    t.receive_window(VarInt::from_u32(CONNECTION_RECEIVE_WINDOW));
    t.datagram_receive_buffer_size(None);
    t.enable_segmentation_offload(false);
    let idle = IdleTimeout::try_from(cfg.idle_timeout)
        .map_err(|_| QuicError::InvalidConfig("idleTimeoutMs too large".into()))?;
    t.max_idle_timeout(Some(idle));
    Ok(t)
}

async fn accept_loop(endpoint: Endpoint, shared: Arc<Shared>) {
    // `accept` yields None once the endpoint is closed.
    while let Some(incoming) = endpoint.accept().await {
        tokio::spawn(handle_incoming(incoming, shared.clone()));
    }
}

async fn handle_incoming(incoming: quinn::Incoming, shared: Arc<Shared>) {
    let Ok(connecting) = incoming.accept() else {
        return;
    };
    let Ok(Ok(conn)) = tokio::time::timeout(shared.cfg.handshake_timeout, connecting).await else {
        return;
    };
    bump(&shared.counters.connections_accepted);
    let refuse = shared.refuse_code.load(Ordering::Relaxed);
    if refuse != NO_REFUSE {
        bump(&shared.counters.refused);
        conn.close(VarInt::from_u32(refuse as u32), b"refused");
        return;
    }
    let ip = conn.remote_address().ip();
    if !shared.rate_allows(ip) {
        bump(&shared.counters.rate_limited);
        conn.close(VarInt::from_u32(close::DISALLOWED), b"disallowed");
        return;
    }
    let Some(slot) = PeerSlot::admit(&shared, ip) else {
        bump(&shared.counters.too_many);
        conn.close(VarInt::from_u32(close::TOO_MANY), b"too_many");
        return;
    };
    let peer = tls::connection_peer(&conn);
    serve_connection(conn, peer, slot).await;
}

impl Shared {
    /// Take one new-connection token for `ip` (Agave's per-IP connection rate limiter).
    fn rate_allows(&self, ip: IpAddr) -> bool {
        let per_minute = self.cfg.max_connections_per_ip_per_minute;
        if per_minute == 0 {
            return true;
        }
        let Ok(mut rates) = self.rates.lock() else {
            return true;
        };
        let capacity = per_minute as f64;
        let now = Instant::now();
        if rates.len() >= RATE_TABLE_PRUNE_AT {
            let refill = Duration::from_secs(60);
            rates.retain(|_, b| now.duration_since(b.refilled) < refill);
        }
        let bucket = rates.entry(ip).or_insert(RateBucket {
            tokens: capacity,
            refilled: now,
        });
        let refilled = now.duration_since(bucket.refilled).as_secs_f64() * capacity / 60.0;
        bucket.tokens = (bucket.tokens + refilled).min(capacity);
        bucket.refilled = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Hand a transaction to the consumer, after the injected delay if one is set.
    fn deliver(self: &Arc<Self>, rx: Received) {
        let delay = self.delay_ms.load(Ordering::Relaxed);
        if delay == 0 {
            self.hand_over(rx);
        } else {
            let shared = self.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(delay)).await;
                shared.hand_over(rx);
            });
        }
    }

    fn hand_over(&self, rx: Received) {
        let Ok(deliver) = self.deliver.read() else {
            return;
        };
        if let Some(tx) = deliver.as_ref() {
            // Counted before the send so a consumer that has the transaction sees it counted.
            bump(&self.counters.accepted_txs);
            if tx.send(rx).is_err() {
                self.counters.accepted_txs.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

/// An admitted connection's place in the per-peer table; gives it back when dropped.
struct PeerSlot {
    shared: Arc<Shared>,
    ip: IpAddr,
    window: Arc<Mutex<StreamWindow>>,
}

impl PeerSlot {
    fn admit(shared: &Arc<Shared>, ip: IpAddr) -> Option<PeerSlot> {
        let mut peers = shared.peers.lock().ok()?;
        let entry = peers.entry(ip).or_insert_with(|| PeerEntry {
            connections: 0,
            window: Arc::new(Mutex::new(StreamWindow {
                start: Instant::now(),
                count: 0,
            })),
        });
        if entry.connections >= shared.cfg.max_connections_per_peer {
            return None;
        }
        entry.connections += 1;
        bump(&shared.counters.connections_open);
        Some(PeerSlot {
            shared: shared.clone(),
            ip,
            window: entry.window.clone(),
        })
    }

    /// Agave's stream throttle: once the peer has started `max_streams_per_100ms` streams in
    /// the current interval, stop reading its streams until the interval ends. The sender feels
    /// it as stream credit that stops coming, not as an error.
    async fn throttle(&self) {
        let limit = self.shared.cfg.max_streams_per_100ms;
        if limit == 0 {
            return;
        }
        let mut counted = false;
        loop {
            let wait = {
                let Ok(mut w) = self.window.lock() else {
                    return;
                };
                let now = Instant::now();
                if now.duration_since(w.start) >= THROTTLE_INTERVAL {
                    w.start = now;
                    w.count = 0;
                }
                if w.count < limit {
                    w.count += 1;
                    return;
                }
                THROTTLE_INTERVAL.saturating_sub(now.duration_since(w.start))
            };
            if !counted {
                bump(&self.shared.counters.throttled);
                counted = true;
            }
            tokio::time::sleep(wait).await;
        }
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        self.shared
            .counters
            .connections_open
            .fetch_sub(1, Ordering::Relaxed);
        if let Ok(mut peers) = self.shared.peers.lock() {
            if let Some(entry) = peers.get_mut(&self.ip) {
                entry.connections -= 1;
                if entry.connections == 0 {
                    peers.remove(&self.ip);
                }
            }
        }
    }
}

/// How reading one stream ended.
enum StreamEnd {
    /// A complete transaction.
    Tx(Bytes, f64),
    /// Reset by the sender or silent too long: dropped, the connection stays.
    Abandoned,
    /// Empty or oversize: the connection is closed with code 5.
    Invalid,
}

/// Read a connection's streams one at a time, as Agave's `handle_connection` does, until the
/// connection closes or breaks the stream rules.
async fn serve_connection(conn: quinn::Connection, peer: Option<[u8; 32]>, slot: PeerSlot) {
    let shared = slot.shared.clone();
    let remote_addr = conn.remote_address();
    while let Ok(stream) = conn.accept_uni().await {
        slot.throttle().await;
        match read_stream(stream, &shared).await {
            StreamEnd::Tx(bytes, arrival_ms) => shared.deliver(Received {
                bytes,
                peer,
                remote_addr,
                arrival_ms,
            }),
            StreamEnd::Abandoned => bump(&shared.counters.stream_errors),
            StreamEnd::Invalid => {
                conn.close(VarInt::from_u32(close::INVALID_STREAM), b"invalid_stream");
                break;
            }
        }
    }
}

async fn read_stream(mut stream: quinn::RecvStream, shared: &Shared) -> StreamEnd {
    // Nearly every transaction arrives as one chunk; keep it without copying.
    let mut first: Option<Bytes> = None;
    let mut joined: Option<BytesMut> = None;
    let mut len = 0usize;
    loop {
        let read = tokio::time::timeout(
            shared.cfg.stream_read_timeout,
            stream.read_chunk(MAX_TX_SIZE + 1, true),
        )
        .await;
        let chunk = match read {
            Ok(Ok(Some(chunk))) => chunk.bytes,
            Ok(Ok(None)) => break,
            Ok(Err(_)) | Err(_) => return StreamEnd::Abandoned,
        };
        len += chunk.len();
        if len > MAX_TX_SIZE {
            bump(&shared.counters.rejected_oversize);
            return StreamEnd::Invalid;
        }
        match (&mut joined, first.take()) {
            (Some(buf), _) => buf.extend_from_slice(&chunk),
            (None, None) => first = Some(chunk),
            (None, Some(head)) => {
                let mut buf = BytesMut::with_capacity(MAX_TX_SIZE);
                buf.extend_from_slice(&head);
                buf.extend_from_slice(&chunk);
                joined = Some(buf);
            }
        }
    }
    let arrival_ms = unix_ms_now();
    match (joined, first) {
        (Some(buf), _) => StreamEnd::Tx(buf.freeze(), arrival_ms),
        (None, Some(bytes)) if !bytes.is_empty() => StreamEnd::Tx(bytes, arrival_ms),
        _ => {
            bump(&shared.counters.rejected_empty);
            StreamEnd::Invalid
        }
    }
}

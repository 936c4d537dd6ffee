//! The TPU QUIC client: one endpoint per identity for the whole process, one connection per
//! validator TPU address, reused for every transaction.
//!
//! Each peer (TPU socket address) has a bounded queue and one task that owns its connection and
//! writes the queued transactions one stream at a time. One writer per connection is what
//! Agave's `tpu-client-next` does and measured best: streams written concurrently on one
//! connection interleave their frames, and a validator then waits longer for any one
//! transaction to be complete. A full queue refuses at once (`queue_full`) instead of growing.
//!
//! A peer that closes the connection (any of Agave's close codes: 1 dropped, 2 disallowed,
//! 4 too many, 5 invalid stream, or a refusal) or cannot be reached is put in back-off: sends
//! fail fast with `backoff` until it expires, then one connection attempt is made. Back-off
//! doubles per consecutive failure (from `backoff_base` up to `backoff_max`); a connection that
//! had been up for `HEALTHY_LIFETIME` before it closed starts the count again. That way a
//! validator that refuses or evicts us sees a handful of attempts, not one per transaction.
//!
//! "Written" means `finish()` was called on the stream after the whole transaction was accepted
//! by the connection's send buffer (within flow control). QUIC delivers it reliably from there
//! unless the connection dies; the client does not wait for the peer's acknowledgement, and a
//! validator can still drop it after reading (it never says). Closing the client keeps that
//! promise where it can: each connection stays up until the peer has acknowledged every written
//! stream (at most `CLOSE_LINGER`), and only then closes.
//!
//! Three ways to await what was queued ([`Dispatched`]): every outcome in order
//! ([`Dispatched::outcomes`], `send`), the first written one ([`Dispatched::first_written`],
//! the hot path's reply needs only one leader to have the transaction), and many transactions
//! to many peers in one call ([`QuicClient::dispatch_batch`], a rebroadcast round). Whichever
//! way, and whether or not anyone still awaits it, every outcome is counted per peer and reason
//! where it is decided (the peer's task, or the refusal in `submit`), and
//! [`QuicClient::drain_outcomes`] hands those counts over for metrics: a caller that stopped
//! waiting after the first write loses none of the later outcomes.

use super::{check_range, runtime, tls, QuicError, MAX_TX_SIZE};
use bytes::Bytes;
use quinn::{
    ConnectError, Connection, ConnectionError, Endpoint, EndpointConfig, IdleTimeout, SendStream, TokioRuntime, TransportConfig, VarInt,
    WriteError,
};
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// A connection that stayed up this long before closing was healthy: its close does not add to
/// the previous failures' back-off.
const HEALTHY_LIFETIME: Duration = Duration::from_secs(10);

/// On close, how long a connection waits for the peer to acknowledge the streams written on it.
const CLOSE_LINGER: Duration = Duration::from_secs(2);

/// Written streams are checked for acknowledgement (and forgotten once acknowledged) each time
/// this many are being tracked.
const UNACKED_PRUNE_AT: usize = 64;

/// Client settings. `Default` matches what `new QuicClient({ identity })` uses.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Transactions waiting per peer before sends are refused with `queue_full`.
    pub max_queue_per_peer: usize,
    /// Idle timeout offered to peers (at most 10 s).
    pub idle_timeout: Duration,
    /// Keep-alive ping interval, below the idle timeout, so warm connections stay open.
    pub keep_alive: Duration,
    /// A connection not established within this fails with `handshake_timeout`
    /// (`tpu-client-next` uses 2 s).
    pub handshake_timeout: Duration,
    /// A transaction not written within this (stream credit or flow control withheld by the
    /// peer) fails with `send_timeout`; its stream is reset, never half-sent.
    pub send_timeout: Duration,
    /// First back-off after a failure.
    pub backoff_base: Duration,
    /// Longest back-off.
    pub backoff_max: Duration,
    /// A connection with no send or prewarm for this long is closed (and reopened on demand).
    pub unused_close: Duration,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            max_queue_per_peer: 1024,
            idle_timeout: Duration::from_secs(10),
            keep_alive: Duration::from_secs(1),
            handshake_timeout: Duration::from_secs(2),
            send_timeout: Duration::from_secs(2),
            backoff_base: Duration::from_millis(200),
            backoff_max: Duration::from_secs(10),
            unused_close: Duration::from_secs(60),
        }
    }
}

impl ClientConfig {
    fn validate(&self) -> Result<(), QuicError> {
        let ms = |d: Duration| d.as_millis();
        check_range("maxQueuePerPeer", self.max_queue_per_peer, 1..=1_000_000)?;
        check_range("idleTimeoutMs", ms(self.idle_timeout), 2..=10_000)?;
        check_range("keepAliveMs", ms(self.keep_alive), 1..=ms(self.idle_timeout) - 1)?;
        check_range("handshakeTimeoutMs", ms(self.handshake_timeout), 1..=60_000)?;
        check_range("sendTimeoutMs", ms(self.send_timeout), 1..=60_000)?;
        check_range("backoffBaseMs", ms(self.backoff_base), 1..=60_000)?;
        check_range("backoffMaxMs", ms(self.backoff_max), ms(self.backoff_base)..=600_000)?;
        check_range("unusedCloseMs", ms(self.unused_close), 1..=3_600_000)
    }

    fn transport(&self) -> Result<TransportConfig, QuicError> {
        let mut t = TransportConfig::default();
        let idle = IdleTimeout::try_from(self.idle_timeout).map_err(|_| QuicError::InvalidConfig("idleTimeoutMs too large".into()))?;
        t.max_idle_timeout(Some(idle));
        t.keep_alive_interval(Some(self.keep_alive));
        // Finish one stream before starting the next rather than round-robin between them, so
        // each transaction reaches the validator whole as early as possible (Agave's
        // QUIC_SEND_FAIRNESS = false).
        t.send_fairness(false);
        // The TPU is one-way: the peer opens no streams and sends no datagrams.
        t.max_concurrent_uni_streams(VarInt::from_u32(0));
        t.max_concurrent_bidi_streams(VarInt::from_u32(0));
        t.datagram_receive_buffer_size(None);
        Ok(t)
    }
}

/// A quinn client configuration speaking the TPU protocol exactly as [`QuicClient`] does
/// (identity certificate, ALPN, transport settings of `cfg`), for tools and tests that drive
/// raw streams. Connect with the server name [`server_name`](super::server_name) gives.
pub fn tpu_client_config(seed: &[u8; 32], cfg: &ClientConfig) -> Result<quinn::ClientConfig, QuicError> {
    cfg.validate()?;
    let mut quinn = quinn::ClientConfig::new(Arc::new(tls::client_crypto(seed)?));
    quinn.transport_config(Arc::new(cfg.transport()?));
    Ok(quinn)
}

/// Why a send failed. `as_str` is the stable `reason` JavaScript sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FailReason {
    /// Empty transaction: validators close the connection on an empty stream.
    Empty,
    /// Longer than 1232 bytes: validators close the connection on it.
    TooLarge,
    /// The peer's queue is full.
    QueueFull,
    /// The peer failed recently; no attempt is made until its back-off expires.
    Backoff,
    /// No handshake within `handshake_timeout` (nothing listening, or packets lost).
    HandshakeTimeout,
    /// The handshake failed or the peer closed the connection during it.
    ConnectFailed,
    /// The connection closed or broke while the transaction was being written.
    ConnectionLost,
    /// The peer stopped the stream (STOP_SENDING) before it was written.
    StreamStopped,
    /// Not written within `send_timeout`.
    SendTimeout,
    /// The client was closed.
    ClientClosed,
}

impl FailReason {
    /// Every reason, in declaration order (the order [`QuicClient::drain_outcomes`] lists them).
    pub const ALL: [FailReason; 10] = [
        FailReason::Empty,
        FailReason::TooLarge,
        FailReason::QueueFull,
        FailReason::Backoff,
        FailReason::HandshakeTimeout,
        FailReason::ConnectFailed,
        FailReason::ConnectionLost,
        FailReason::StreamStopped,
        FailReason::SendTimeout,
        FailReason::ClientClosed,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            FailReason::Empty => "empty",
            FailReason::TooLarge => "too_large",
            FailReason::QueueFull => "queue_full",
            FailReason::Backoff => "backoff",
            FailReason::HandshakeTimeout => "handshake_timeout",
            FailReason::ConnectFailed => "connect_failed",
            FailReason::ConnectionLost => "connection_lost",
            FailReason::StreamStopped => "stream_stopped",
            FailReason::SendTimeout => "send_timeout",
            FailReason::ClientClosed => "client_closed",
        }
    }
}

/// The result of sending one transaction to one peer.
#[derive(Clone, Debug)]
pub struct SendOutcome {
    pub addr: SocketAddr,
    /// None when written (see the module doc for what that means), else why not.
    pub reason: Option<FailReason>,
    /// The QUIC application code behind a failure, where there is one: the peer's connection
    /// close code (also the last one, for `backoff`), or its STOP_SENDING code.
    pub code: Option<u64>,
    /// Human-readable detail of a failure (the peer's close reason, the transport error).
    pub detail: Option<String>,
    /// Microseconds from the call to the outcome, queueing included.
    pub elapsed_us: u64,
    /// The transaction went on a connection that existed before this send.
    pub reused: bool,
}

impl SendOutcome {
    /// True when the transaction was written.
    pub fn ok(&self) -> bool {
        self.reason.is_none()
    }
}

/// What [`Dispatched::first_written`] settles with.
#[derive(Clone, Debug)]
pub struct FirstSend {
    /// The first outcome that was written, or None when every peer failed.
    pub written: Option<SendOutcome>,
    /// Microseconds from the dispatch to the first write (to the last failure when none was
    /// written).
    pub elapsed_us: u64,
    /// The failures known by then, in the order they became known (refusals first).
    pub failures: Vec<SendOutcome>,
}

/// How many sends to one peer ended one way since the last [`QuicClient::drain_outcomes`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutcomeCount {
    pub addr: SocketAddr,
    /// None for written, else why not.
    pub reason: Option<FailReason>,
    pub count: u64,
}

/// Outcome counters of one peer: written, then one per [`FailReason::ALL`]. Lock-free: counted
/// by whichever thread decides the outcome, taken (swapped to 0) by the drain.
#[derive(Default)]
struct Tally([AtomicU64; 1 + FailReason::ALL.len()]);

impl Tally {
    fn count(&self, reason: Option<FailReason>) {
        // `ALL` lists the reasons in declaration order, so `r as usize` is the position in it.
        let i = reason.map_or(0, |r| 1 + r as usize);
        self.0[i].fetch_add(1, Ordering::Relaxed);
    }

    fn drain(&self, addr: SocketAddr, out: &mut Vec<OutcomeCount>) {
        let reasons = std::iter::once(None).chain(FailReason::ALL.iter().copied().map(Some));
        for (counter, reason) in self.0.iter().zip(reasons) {
            let count = counter.swap(0, Ordering::Relaxed);
            if count > 0 {
                out.push(OutcomeCount { addr, reason, count });
            }
        }
    }
}

/// One peer's counters and connection state.
#[derive(Clone, Debug)]
pub struct PeerStats {
    pub addr: SocketAddr,
    /// A connection is open.
    pub connected: bool,
    /// quinn's smoothed round-trip time of the open connection, in microseconds.
    pub rtt_us: Option<u64>,
    /// Transactions written.
    pub sent: u64,
    /// Transactions that failed after being queued (back-off, connect, stream failures).
    pub failed: u64,
    /// Transactions refused because the queue was full.
    pub dropped: u64,
    /// Connections established.
    pub connects: u64,
    /// Transactions waiting in the queue.
    pub queued: usize,
    /// The application close code of the last failure, if the peer sent one.
    pub last_close_code: Option<u64>,
    /// What the last failure was (the peer's close reason, or the transport error).
    pub last_close_reason: Option<String>,
    /// Failures since the last healthy connection.
    pub consecutive_failures: u32,
    /// Milliseconds of back-off left (0 when none).
    pub backoff_remaining_ms: u64,
}

/// Process-wide clients by identity public key. Weak: the registry never keeps a client alive;
/// the last `Arc` dropped closes it (its `Drop` prunes the entry).
static REGISTRY: Mutex<Vec<([u8; 32], Weak<QuicClient>)>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing here panics while holding a lock; if something ever did, the data is still
    // consistent (every critical section is a few assignments), so keep going.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A TPU client. Cheap to share (`Arc`); constructing one with the identity of a live client
/// returns that client, so every thread of the process shares one endpoint and one connection
/// per peer.
pub struct QuicClient {
    identity: [u8; 32],
    dialer: Arc<Dialer>,
    peers: Mutex<HashMap<SocketAddr, PeerHandle>>,
    /// Outcomes decided before a peer existed (an empty or oversize transaction is refused
    /// without starting the peer's task).
    unpeered: Mutex<HashMap<SocketAddr, Tally>>,
}

/// What a peer's task needs to (re)connect; shared by all of them, never referring back to the
/// client (so dropping the client ends them).
struct Dialer {
    cfg: ClientConfig,
    endpoint: Endpoint,
    quinn: quinn::ClientConfig,
}

struct PeerHandle {
    queue: mpsc::Sender<Job>,
    state: Arc<PeerState>,
}

enum Job {
    Send { tx: Bytes, queued_at: Instant, reply: oneshot::Sender<SendOutcome> },
    Prewarm,
}

impl QuicClient {
    /// The client of identity `seed`: the live one if there is one (its configuration stays;
    /// `cfg` is then ignored), else a new one bound to an ephemeral IPv4 UDP port.
    pub fn new(seed: &[u8; 32], cfg: ClientConfig) -> Result<Arc<QuicClient>, QuicError> {
        cfg.validate()?;
        let identity = tls::identity_pubkey(seed);
        let mut registry = lock(&REGISTRY);
        if let Some(live) = registry.iter().filter(|(k, _)| *k == identity).find_map(|(_, w)| w.upgrade()) {
            return Ok(live);
        }
        let quinn = tpu_client_config(seed, &cfg)?;
        let endpoint = {
            let _enter = runtime().enter();
            let socket = std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).map_err(QuicError::Bind)?;
            Endpoint::new(EndpointConfig::default(), None, socket, Arc::new(TokioRuntime)).map_err(QuicError::Bind)?
        };
        let client = Arc::new(QuicClient {
            identity,
            dialer: Arc::new(Dialer { cfg, endpoint, quinn }),
            peers: Mutex::new(HashMap::new()),
            unpeered: Mutex::new(HashMap::new()),
        });
        registry.push((identity, Arc::downgrade(&client)));
        Ok(client)
    }

    /// The identity public key this client presents.
    pub fn identity(&self) -> [u8; 32] {
        self.identity
    }

    /// The local UDP address of the shared endpoint.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.dialer.endpoint.local_addr().ok()
    }

    /// Send one transaction to one peer.
    pub async fn send(&self, addr: SocketAddr, tx: Bytes) -> SendOutcome {
        let started = Instant::now();
        outcome(addr, started, self.submit(addr, tx, started)).await
    }

    /// Send one transaction to several peers at once; outcomes in the order of `addrs`.
    pub async fn send_many(&self, addrs: &[SocketAddr], tx: Bytes) -> Vec<SendOutcome> {
        self.dispatch(addrs, tx).outcomes().await
    }

    /// Queue one transaction on every peer of `addrs` now, before returning (the peers' tasks
    /// start writing at once, in parallel); await the outcomes with [`Dispatched::outcomes`].
    /// For callers on another thread than the runtime's (napi), this saves a hop before the
    /// writes start.
    pub fn dispatch(&self, addrs: &[SocketAddr], tx: Bytes) -> Dispatched {
        let started = Instant::now();
        let pending = addrs.iter().map(|&addr| (addr, self.submit(addr, tx.clone(), started))).collect();
        Dispatched { started, pending }
    }

    /// Send one transaction to several peers at once; settles as soon as one peer has it
    /// written (without waiting for slower or dead peers), or once every peer has failed.
    pub async fn send_first(&self, addrs: &[SocketAddr], tx: Bytes) -> FirstSend {
        self.dispatch(addrs, tx).first_written().await
    }

    /// Queue every transaction of `txs` on every peer of `addrs` now, transaction by
    /// transaction (so each peer gets them in the order given); [`Dispatched::outcomes`] then
    /// yields the outcome of `txs[i]` to `addrs[t]` at `i * addrs.len() + t`.
    pub fn dispatch_batch(&self, addrs: &[SocketAddr], txs: &[Bytes]) -> Dispatched {
        let started = Instant::now();
        let pending = txs
            .iter()
            .flat_map(|tx| addrs.iter().map(move |&addr| (addr, tx)))
            .map(|(addr, tx)| (addr, self.submit(addr, tx.clone(), started)))
            .collect();
        Dispatched { started, pending }
    }

    /// Every transaction of `txs` to every peer of `addrs`; outcomes as [`dispatch_batch`]
    /// orders them.
    ///
    /// [`dispatch_batch`]: QuicClient::dispatch_batch
    pub async fn send_batch(&self, addrs: &[SocketAddr], txs: &[Bytes]) -> Vec<SendOutcome> {
        self.dispatch_batch(addrs, txs).outcomes().await
    }

    /// The outcome counts per peer and reason since the last call (of every send path,
    /// including outcomes nobody awaited any more), resetting them. Ordered by peer, then
    /// written first and the reasons in [`FailReason::ALL`] order; counts of 0 are left out.
    pub fn drain_outcomes(&self) -> Vec<OutcomeCount> {
        let mut out = Vec::new();
        for (&addr, peer) in lock(&self.peers).iter() {
            peer.state.tally.drain(addr, &mut out);
        }
        for (&addr, tally) in lock(&self.unpeered).iter() {
            tally.drain(addr, &mut out);
        }
        // A peer can appear twice (refused before and after its task started): merge.
        out.sort_by_key(|c| (c.addr, c.reason.map_or(0, |r| 1 + r as usize)));
        out.dedup_by(|later, first| {
            let same = later.addr == first.addr && later.reason == first.reason;
            if same {
                first.count += later.count;
            }
            same
        });
        out
    }

    /// Open connections to `addrs` ahead of the first send (peers in back-off are skipped
    /// until it expires). Returns at once; connections come up in the background.
    pub fn prewarm(&self, addrs: &[SocketAddr]) {
        for &addr in addrs {
            // A full queue means sends are pending, which connect anyway.
            let _ = self.peer(addr).0.try_send(Job::Prewarm);
        }
    }

    /// Counters and connection state of every peer this client has been asked to reach.
    pub fn peer_stats(&self) -> Vec<PeerStats> {
        let peers = lock(&self.peers);
        peers.values().map(|p| p.state.stats(p.queue.max_capacity() - p.queue.capacity())).collect()
    }

    /// Queue a transaction for `addr`, or refuse it at once.
    fn submit(&self, addr: SocketAddr, tx: Bytes, started: Instant) -> Result<oneshot::Receiver<SendOutcome>, SendOutcome> {
        let invalid = if tx.is_empty() {
            Some(FailReason::Empty)
        } else if tx.len() > MAX_TX_SIZE {
            Some(FailReason::TooLarge)
        } else {
            None
        };
        if let Some(reason) = invalid {
            lock(&self.unpeered).entry(addr).or_default().count(Some(reason));
            return Err(failed(addr, started, reason));
        }
        let (queue, state) = self.peer(addr);
        let (reply, pending) = oneshot::channel();
        let refused = match queue.try_send(Job::Send { tx, queued_at: started, reply }) {
            Ok(()) => return Ok(pending),
            Err(mpsc::error::TrySendError::Full(_)) => {
                state.counters.dropped.fetch_add(1, Ordering::Relaxed);
                FailReason::QueueFull
            }
            Err(mpsc::error::TrySendError::Closed(_)) => FailReason::ClientClosed,
        };
        state.tally.count(Some(refused));
        Err(failed(addr, started, refused))
    }

    /// The queue and state of `addr`, starting its task on first use.
    fn peer(&self, addr: SocketAddr) -> (mpsc::Sender<Job>, Arc<PeerState>) {
        let mut peers = lock(&self.peers);
        let handle = peers.entry(addr).or_insert_with(|| {
            let (queue, jobs) = mpsc::channel(self.dialer.cfg.max_queue_per_peer);
            let state = Arc::new(PeerState::new(addr));
            runtime().spawn(run_peer(state.clone(), jobs, self.dialer.clone()));
            PeerHandle { queue, state }
        });
        (handle.queue.clone(), handle.state.clone())
    }
}

impl Drop for QuicClient {
    fn drop(&mut self) {
        // The peers' tasks end when their queues' senders (in `self.peers`, dropped right after
        // this) are gone: each finishes what is queued, lets its written streams be
        // acknowledged, and closes its connection. The endpoint goes with the last of them.
        lock(&REGISTRY).retain(|(_, w)| w.strong_count() > 0);
    }
}

/// Transactions queued by [`QuicClient::dispatch`], on their way to their outcomes.
pub struct Dispatched {
    started: Instant,
    pending: Vec<(SocketAddr, Result<oneshot::Receiver<SendOutcome>, SendOutcome>)>,
}

impl Dispatched {
    /// The outcomes, in the order of the addresses dispatched to.
    pub async fn outcomes(self) -> Vec<SendOutcome> {
        let mut outcomes = Vec::with_capacity(self.pending.len());
        for (addr, p) in self.pending {
            outcomes.push(outcome(addr, self.started, p).await);
        }
        outcomes
    }

    /// Settle with the first outcome that was written, as soon as it is known (slower or dead
    /// peers are not waited for), or with every failure once all have failed. The outcomes not
    /// awaited any more still reach [`QuicClient::drain_outcomes`]: they are counted where they
    /// are decided, not here.
    pub async fn first_written(self) -> FirstSend {
        let mut failures = Vec::new();
        let mut waiting = Vec::with_capacity(self.pending.len());
        for (addr, p) in self.pending {
            match p {
                Ok(pending) => waiting.push((addr, pending)),
                Err(refused) => failures.push(refused),
            }
        }
        while !waiting.is_empty() {
            // Whichever reply is in first. A handful of peers, so each wake-up polls them all;
            // a ready receiver is removed at once and never polled again.
            let (i, reply) = std::future::poll_fn(|cx| {
                for (i, (_, pending)) in waiting.iter_mut().enumerate() {
                    if let Poll::Ready(reply) = Pin::new(pending).poll(cx) {
                        return Poll::Ready((i, reply));
                    }
                }
                Poll::Pending
            })
            .await;
            let (addr, _) = waiting.swap_remove(i);
            // The task only drops the reply if the runtime is shutting down.
            let o = reply.unwrap_or_else(|_| failed(addr, self.started, FailReason::ClientClosed));
            if o.ok() {
                return FirstSend { elapsed_us: o.elapsed_us, written: Some(o), failures };
            }
            failures.push(o);
        }
        FirstSend { written: None, elapsed_us: micros(self.started), failures }
    }
}

/// The outcome of one submitted transaction, once its peer's task reports it.
async fn outcome(addr: SocketAddr, started: Instant, submitted: Result<oneshot::Receiver<SendOutcome>, SendOutcome>) -> SendOutcome {
    match submitted {
        // The task only drops the reply if the runtime is shutting down.
        Ok(pending) => pending.await.unwrap_or_else(|_| failed(addr, started, FailReason::ClientClosed)),
        Err(refused) => refused,
    }
}

fn failed(addr: SocketAddr, started: Instant, reason: FailReason) -> SendOutcome {
    SendOutcome { addr, reason: Some(reason), code: None, detail: None, elapsed_us: micros(started), reused: false }
}

fn micros(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// A failure on its way to becoming a `SendOutcome`.
struct Failure {
    reason: FailReason,
    code: Option<u64>,
    detail: String,
}

impl Failure {
    fn new(reason: FailReason, detail: impl Into<String>) -> Self {
        Failure { reason, code: None, detail: detail.into() }
    }

    fn from_connection(reason: FailReason, err: &ConnectionError) -> Self {
        let close = Close::of(err);
        Failure { reason, code: close.code, detail: close.reason }
    }
}

/// How a connection ended, as the peer stats report it.
#[derive(Clone)]
struct Close {
    code: Option<u64>,
    reason: String,
}

impl Close {
    fn of(err: &ConnectionError) -> Close {
        match err {
            ConnectionError::ApplicationClosed(c) => Close {
                code: Some(c.error_code.into_inner()),
                reason: format!("closed by peer: code {} {}", c.error_code, String::from_utf8_lossy(&c.reason)),
            },
            other => Close { code: None, reason: other.to_string() },
        }
    }
}

#[derive(Default)]
struct PeerCounters {
    sent: AtomicU64,
    failed: AtomicU64,
    dropped: AtomicU64,
    connects: AtomicU64,
}

struct Live {
    conn: Connection,
    since: Instant,
}

#[derive(Default)]
struct Link {
    live: Option<Live>,
    failures: u32,
    backoff_until: Option<Instant>,
    last_close: Option<Close>,
}

struct PeerState {
    addr: SocketAddr,
    counters: PeerCounters,
    /// Outcome counts for `drain_outcomes` (apart from `counters`, which `peer_stats` reports
    /// and never resets).
    tally: Tally,
    link: Mutex<Link>,
}

impl PeerState {
    fn new(addr: SocketAddr) -> Self {
        PeerState { addr, counters: PeerCounters::default(), tally: Tally::default(), link: Mutex::new(Link::default()) }
    }

    /// The open connection, if there is one. A connection found closed is recorded here (the
    /// watcher task may not have run yet), so the caller sees the back-off at once.
    fn live(&self, cfg: &ClientConfig) -> Option<Connection> {
        let mut link = lock(&self.link);
        let conn = link.live.as_ref()?.conn.clone();
        match conn.close_reason() {
            None => Some(conn),
            Some(err) => {
                Self::closed(&mut link, &err, cfg);
                None
            }
        }
    }

    /// The watcher's report that connection `id` closed with `err`.
    fn note_closed(&self, id: usize, err: &ConnectionError, cfg: &ClientConfig) {
        let mut link = lock(&self.link);
        if link.live.as_ref().is_some_and(|l| l.conn.stable_id() == id) {
            Self::closed(&mut link, err, cfg);
        }
    }

    fn closed(link: &mut Link, err: &ConnectionError, cfg: &ClientConfig) {
        let lived = link.live.take().map(|l| l.since.elapsed());
        // Our own close (unused connection, client closing) is not the peer's doing.
        if !matches!(err, ConnectionError::LocallyClosed) {
            Self::fail(link, Close::of(err), lived, cfg);
        }
    }

    /// Record a failure and start its back-off: `backoff_base · 2^(failures-1)`, at most
    /// `backoff_max`.
    fn fail(link: &mut Link, close: Close, lived: Option<Duration>, cfg: &ClientConfig) {
        if lived.is_some_and(|d| d >= HEALTHY_LIFETIME) {
            link.failures = 0;
        }
        link.failures = link.failures.saturating_add(1);
        let factor = 1u32.checked_shl(link.failures - 1).unwrap_or(u32::MAX);
        let backoff = cfg.backoff_base.saturating_mul(factor).min(cfg.backoff_max);
        link.backoff_until = Some(Instant::now() + backoff);
        link.last_close = Some(close);
    }

    fn connect_failed(&self, close: Close, cfg: &ClientConfig) {
        Self::fail(&mut lock(&self.link), close, None, cfg);
    }

    /// The back-off in force, as the failure a send gets during it.
    fn backoff(&self) -> Option<Failure> {
        let link = lock(&self.link);
        let left = link.backoff_until?.checked_duration_since(Instant::now())?;
        let last = link.last_close.as_ref();
        Some(Failure {
            reason: FailReason::Backoff,
            code: last.and_then(|c| c.code),
            detail: format!(
                "backing off for {} ms after: {}",
                left.as_millis(),
                last.map_or("a failure", |c| c.reason.as_str())
            ),
        })
    }

    fn install(&self, conn: Connection) {
        lock(&self.link).live = Some(Live { conn, since: Instant::now() });
        self.counters.connects.fetch_add(1, Ordering::Relaxed);
    }

    /// Close the open connection once the peer has acknowledged `unacked` (or `CLOSE_LINGER`
    /// has passed), so transactions reported written are not thrown away by the close.
    async fn close_live(&self, unacked: &mut Vec<SendStream>, reason: &[u8]) {
        let deadline = tokio::time::Instant::now() + CLOSE_LINGER;
        for stream in unacked.drain(..) {
            let _ = tokio::time::timeout_at(deadline, stream.stopped()).await;
        }
        let live = lock(&self.link).live.take();
        if let Some(live) = live {
            live.conn.close(VarInt::from_u32(0), reason);
        }
    }

    /// Count and shape the outcome of one queued send.
    fn outcome(&self, queued_at: Instant, reused: bool, result: Result<(), Failure>) -> SendOutcome {
        let (reason, code, detail) = match result {
            Ok(()) => {
                self.counters.sent.fetch_add(1, Ordering::Relaxed);
                (None, None, None)
            }
            Err(f) => {
                self.counters.failed.fetch_add(1, Ordering::Relaxed);
                (Some(f.reason), f.code, Some(f.detail))
            }
        };
        self.tally.count(reason);
        SendOutcome { addr: self.addr, reason, code, detail, elapsed_us: micros(queued_at), reused }
    }

    fn stats(&self, queued: usize) -> PeerStats {
        let link = lock(&self.link);
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let live = link.live.as_ref().filter(|l| l.conn.close_reason().is_none());
        PeerStats {
            addr: self.addr,
            connected: live.is_some(),
            rtt_us: live.map(|l| u64::try_from(l.conn.rtt().as_micros()).unwrap_or(u64::MAX)),
            sent: get(&self.counters.sent),
            failed: get(&self.counters.failed),
            dropped: get(&self.counters.dropped),
            connects: get(&self.counters.connects),
            queued,
            last_close_code: link.last_close.as_ref().and_then(|c| c.code),
            last_close_reason: link.last_close.as_ref().map(|c| c.reason.clone()),
            consecutive_failures: link.failures,
            backoff_remaining_ms: link
                .backoff_until
                .and_then(|u| u.checked_duration_since(Instant::now()))
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        }
    }
}

/// A peer's task: takes its queue in order, one transaction at a time, over one connection.
async fn run_peer(state: Arc<PeerState>, mut jobs: mpsc::Receiver<Job>, dialer: Arc<Dialer>) {
    // Streams written but maybe not yet acknowledged by the peer.
    let mut unacked: Vec<SendStream> = Vec::new();
    loop {
        let job = match tokio::time::timeout(dialer.cfg.unused_close, jobs.recv()).await {
            Ok(Some(job)) => job,
            Ok(None) => break,
            Err(_) => {
                state.close_live(&mut unacked, b"unused").await;
                continue;
            }
        };
        match job {
            Job::Prewarm => {
                let _ = dialer.connection(&state).await;
            }
            Job::Send { tx, queued_at, reply } => {
                let result = match dialer.connection(&state).await {
                    Ok((conn, reused)) => {
                        let written = write_tx(&conn, tx, dialer.cfg.send_timeout).await.map(|stream| {
                            if unacked.len() >= UNACKED_PRUNE_AT {
                                unacked.retain(|s| !settled(s));
                            }
                            unacked.push(stream);
                        });
                        state.outcome(queued_at, reused, written)
                    }
                    Err(f) => state.outcome(queued_at, false, Err(f)),
                };
                // The caller may have stopped waiting; nothing to do then.
                let _ = reply.send(result);
            }
        }
    }
    state.close_live(&mut unacked, b"client closed").await;
}

/// Whether a written stream needs no more watching: acknowledged, stopped, or its connection
/// gone. One poll, never waits.
fn settled(stream: &SendStream) -> bool {
    let stopped = std::pin::pin!(stream.stopped());
    stopped.poll(&mut Context::from_waker(Waker::noop())).is_ready()
}

impl Dialer {
    /// The peer's open connection (`reused` = true), or a new one, or why there is none.
    async fn connection(&self, state: &Arc<PeerState>) -> Result<(Connection, bool), Failure> {
        if let Some(conn) = state.live(&self.cfg) {
            return Ok((conn, true));
        }
        if let Some(backoff) = state.backoff() {
            return Err(backoff);
        }
        let addr = state.addr;
        let connecting = match self.endpoint.connect_with(self.quinn.clone(), addr, &tls::server_name(addr)) {
            Ok(c) => c,
            Err(ConnectError::EndpointStopping) => return Err(Failure::new(FailReason::ClientClosed, "client closed")),
            Err(e) => {
                let detail = format!("cannot connect to {addr}: {e}");
                state.connect_failed(Close { code: None, reason: detail.clone() }, &self.cfg);
                return Err(Failure::new(FailReason::ConnectFailed, detail));
            }
        };
        match tokio::time::timeout(self.cfg.handshake_timeout, connecting).await {
            Ok(Ok(conn)) => {
                state.install(conn.clone());
                runtime().spawn(watch(conn.clone(), state.clone(), self.cfg.clone()));
                Ok((conn, false))
            }
            Ok(Err(ConnectionError::LocallyClosed)) => Err(Failure::new(FailReason::ClientClosed, "client closed")),
            Ok(Err(e)) => {
                let failure = Failure::from_connection(FailReason::ConnectFailed, &e);
                state.connect_failed(Close::of(&e), &self.cfg);
                Err(failure)
            }
            Err(_) => {
                let detail = format!("no handshake within {} ms", self.cfg.handshake_timeout.as_millis());
                state.connect_failed(Close { code: None, reason: detail.clone() }, &self.cfg);
                Err(Failure::new(FailReason::HandshakeTimeout, detail))
            }
        }
    }
}

/// Notices a peer closing the connection while nothing is being sent, so the back-off starts
/// then and not at the next send.
async fn watch(conn: Connection, state: Arc<PeerState>, cfg: ClientConfig) {
    let err = conn.closed().await;
    state.note_closed(conn.stable_id(), &err, &cfg);
}

/// One transaction on one new unidirectional stream: open, write, finish. Hands back the
/// finished stream, whose acknowledgement a graceful close waits for.
async fn write_tx(conn: &Connection, tx: Bytes, limit: Duration) -> Result<SendStream, Failure> {
    let deadline = tokio::time::Instant::now() + limit;
    let timed_out = || Failure::new(FailReason::SendTimeout, format!("not written within {} ms", limit.as_millis()));
    let mut stream = match tokio::time::timeout_at(deadline, conn.open_uni()).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => return Err(Failure::from_connection(FailReason::ConnectionLost, &e)),
        Err(_) => return Err(timed_out()),
    };
    match tokio::time::timeout_at(deadline, stream.write_chunk(tx)).await {
        Ok(Ok(())) => match stream.finish() {
            Ok(()) => Ok(stream),
            Err(e) => Err(Failure::new(FailReason::ConnectionLost, format!("stream closed before finish: {e}"))),
        },
        Ok(Err(WriteError::Stopped(code))) => Err(Failure {
            reason: FailReason::StreamStopped,
            code: Some(code.into_inner()),
            detail: format!("peer stopped the stream: code {code}"),
        }),
        Ok(Err(WriteError::ConnectionLost(e))) => Err(Failure::from_connection(FailReason::ConnectionLost, &e)),
        Ok(Err(e)) => Err(Failure::new(FailReason::ConnectionLost, e.to_string())),
        Err(_) => {
            // Dropping an unfinished stream would finish it and deliver a truncated
            // transaction; reset it instead so the peer discards what it got.
            let _ = stream.reset(VarInt::from_u32(0));
            Err(timed_out())
        }
    }
}

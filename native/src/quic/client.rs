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
//! by the connection's send buffer (within flow control), on a connection known to be alive:
//! the peer was heard from (any datagram: an ACK, the answer to a keep-alive PING) within
//! `alive_window` (1.5 s, a little over the 1 s keep-alive interval; a connection the handshake
//! just established counts, the handshake being a round trip). An open connection whose peer
//! has gone quiet for longer — a validator killed or cut off without closing anything — would
//! take the stream into its buffer all the same and never deliver it; the send fails with
//! `connection_stale` instead, the connection is dropped and the peer goes into back-off (see
//! `heard.rs` for how "heard from" is measured). QUIC delivers a written stream reliably from
//! there unless the connection dies; the client does not wait for the peer's acknowledgement,
//! and a validator can still drop it after reading (it never says). Closing the client keeps
//! that promise where it can: each connection stays up until the peer has acknowledged every
//! written stream (at most `CLOSE_LINGER`), and only then closes.
//!
//! Connections are dialled by a task of their own, never by a send: a send (or a prewarm) that
//! finds no connection starts the handshake or joins the one under way, so a caller that stops
//! waiting never cuts a handshake short, and the next send finds the connection it paid for.
//!
//! Deadlines ([`QuicClient::dispatch_by`], the hot path's first send): the transaction is
//! written by the deadline or never. Its sends to the different peers share a [`Gate`]; a
//! write claims the gate just before `finish()`, and a waiter that gives up at the deadline
//! closes it, so past that point nothing can be finished (an unfinished stream is reset: the
//! peer discards what it got). A caller answered "not written" can rely on it: the transaction
//! was not delivered, and will not be.
//!
//! Three ways to await what was queued ([`Dispatched`]): every outcome in order
//! ([`Dispatched::outcomes`], `send`), the first written one ([`Dispatched::first_written`],
//! the hot path's reply needs only one leader to have the transaction), and many transactions
//! to many peers in one call ([`QuicClient::dispatch_batch`], a rebroadcast round). Whichever
//! way, and whether or not anyone still awaits it, every outcome is counted per peer and reason
//! where it is decided (the peer's task, or the refusal in `submit`), and
//! [`QuicClient::drain_outcomes`] hands those counts over for metrics: a caller that stopped
//! waiting after the first write loses none of the later outcomes.

use super::heard::{Heard, HeardSocket, LastHeard};
use super::unacked::Unacked;
use super::{check_range, runtime, tls, QuicError, MAX_TX_SIZE};
use bytes::Bytes;
use quinn::{
    ConnectError, Connection, ConnectionError, Endpoint, EndpointConfig, IdleTimeout, SendStream, TokioRuntime, TransportConfig, VarInt,
    WriteError,
};
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::Poll;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, watch};

/// A connection that stayed up this long before closing was healthy: its close does not add to
/// the previous failures' back-off.
const HEALTHY_LIFETIME: Duration = Duration::from_secs(10);

/// On close, how long a connection waits for the peer to acknowledge the streams written on it.
const CLOSE_LINGER: Duration = Duration::from_secs(2);


/// Client settings. `Default` matches what `new QuicClient({ identity })` uses.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Transactions waiting per peer before sends are refused with `queue_full`.
    pub max_queue_per_peer: usize,
    /// Idle timeout offered to peers (at most 10 s).
    pub idle_timeout: Duration,
    /// Keep-alive ping interval, below the idle timeout, so warm connections stay open (and a
    /// live peer is heard from at least this often).
    pub keep_alive: Duration,
    /// A connection whose peer has not been heard from for longer than this is stale: a send
    /// on it fails with `connection_stale`, and it is dropped. Above `keep_alive` (a live idle
    /// peer answers its PING), at most `idle_timeout`.
    pub alive_window: Duration,
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
            alive_window: Duration::from_millis(1500),
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
        check_range("aliveWindowMs", ms(self.alive_window), ms(self.keep_alive) + 1..=ms(self.idle_timeout))?;
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
    /// The connection was open but the peer had not been heard from within `alive_window`: it
    /// is dropped, and the peer put in back-off.
    ConnectionStale,
    /// The caller's deadline passed before the transaction was written; it never will be.
    Deadline,
}

impl FailReason {
    /// Every reason, in declaration order (the order [`QuicClient::drain_outcomes`] lists them).
    pub const ALL: [FailReason; 12] = [
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
        FailReason::ConnectionStale,
        FailReason::Deadline,
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
            FailReason::ConnectionStale => "connection_stale",
            FailReason::Deadline => "deadline",
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

/// [`SendOutcome::word`]'s low byte for a written transaction.
pub const WORD_WRITTEN: u16 = 1;
/// [`SendOutcome::word`]'s low byte for a failure is this plus the reason's position in
/// [`FailReason::ALL`].
pub const WORD_FAILED_BASE: u16 = 2;
/// Close codes above this read as this in [`SendOutcome::word`] (Agave's are 1 to 5).
pub const WORD_MAX_CODE: u16 = 254;

impl SendOutcome {
    /// True when the transaction was written.
    pub fn ok(&self) -> bool {
        self.reason.is_none()
    }

    /// The outcome in one `u16`, for a batch's results (`sendMany`): a per-transaction trace
    /// needs the reason and close code of each (transaction, target), and a number per entry
    /// costs no allocation per entry on either side. Low byte: [`WORD_WRITTEN`], or
    /// [`WORD_FAILED_BASE`] + the reason's position in [`FailReason::ALL`]. High byte: the close
    /// code + 1 (capped at [`WORD_MAX_CODE`] + 1), 0 when there is none.
    pub fn word(&self) -> u16 {
        let low = self.reason.map_or(WORD_WRITTEN, |r| WORD_FAILED_BASE + r as u16);
        let high = self.code.map_or(0, |c| c.min(u64::from(WORD_MAX_CODE)) as u16 + 1);
        (high << 8) | low
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
    /// Milliseconds since the peer was last heard from (any datagram); None if never.
    pub quiet_ms: Option<u64>,
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
    /// When each peer was last heard from, stamped by the endpoint's socket.
    heard: Arc<Heard>,
}

struct PeerHandle {
    queue: mpsc::Sender<Job>,
    state: Arc<PeerState>,
}

enum Job {
    Send { tx: Bytes, queued_at: Instant, reply: oneshot::Sender<SendOutcome>, gate: Option<Arc<Gate>> },
    Prewarm,
}

/// The deadline of one transaction sent with [`QuicClient::dispatch_by`], shared by its sends
/// to every peer and by its waiter: whether the transaction may still be written is decided
/// here, once (see the module doc).
pub struct Gate {
    at: Instant,
    /// The budget the deadline was set with, for messages.
    budget: Duration,
    /// `GATE_CLOSED` once the waiter gave up, plus the number of writes that claimed the gate.
    state: AtomicU32,
}

const GATE_CLOSED: u32 = 1 << 31;

impl Gate {
    fn new(budget: Duration) -> Self {
        Gate { at: Instant::now() + budget, budget, state: AtomicU32::new(0) }
    }

    /// Claim the right to finish one stream; false once the waiter has given up (the stream
    /// must then be reset, never finished).
    fn claim(&self) -> bool {
        if Instant::now() >= self.at {
            return false;
        }
        self.state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| (s & GATE_CLOSED == 0).then_some(s + 1))
            .is_ok()
    }

    /// A claimed stream could not be finished after all (its connection broke): not written.
    fn release(&self) {
        self.state.fetch_sub(1, Ordering::AcqRel);
    }

    /// The waiter gives up: no write may claim the gate from now on. True if one already had
    /// (its outcome is then on its way).
    fn close(&self) -> bool {
        self.claims_in(self.state.fetch_or(GATE_CLOSED, Ordering::AcqRel)) > 0
    }

    /// Writes that claimed the gate and were not released.
    fn claims(&self) -> u32 {
        self.claims_in(self.state.load(Ordering::Acquire))
    }

    fn claims_in(&self, state: u32) -> u32 {
        state & !GATE_CLOSED
    }

    /// Past the deadline, or given up: not worth starting a write.
    fn passed(&self) -> bool {
        self.state.load(Ordering::Acquire) & GATE_CLOSED != 0 || Instant::now() >= self.at
    }

    fn missed(&self) -> Failure {
        Failure::new(FailReason::Deadline, format!("not written within the {} ms deadline", self.budget.as_millis()))
    }
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
        let heard = Arc::new(Heard::new());
        let endpoint = {
            let _enter = runtime().enter();
            let socket = std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).map_err(QuicError::Bind)?;
            let socket = quinn::Runtime::wrap_udp_socket(&TokioRuntime, socket).map_err(QuicError::Bind)?;
            let socket = Arc::new(HeardSocket::new(socket, heard.clone()));
            Endpoint::new_with_abstract_socket(EndpointConfig::default(), None, socket, Arc::new(TokioRuntime)).map_err(QuicError::Bind)?
        };
        let client = Arc::new(QuicClient {
            identity,
            dialer: Arc::new(Dialer { cfg, endpoint, quinn, heard }),
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
        outcome(addr, started, self.submit(addr, tx, started, None)).await
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
        let pending = addrs.iter().map(|&addr| (addr, self.submit(addr, tx.clone(), started, None))).collect();
        Dispatched { started, pending, gate: None }
    }

    /// [`dispatch`](QuicClient::dispatch) with a deadline `budget` from now: the transaction is
    /// written to a peer by then or never (a send still queued, connecting or writing then
    /// fails with `deadline`). [`Dispatched::first_written`] settles by the deadline at the
    /// latest; once it has settled with nothing written, nothing will be.
    pub fn dispatch_by(&self, addrs: &[SocketAddr], tx: Bytes, budget: Duration) -> Dispatched {
        let started = Instant::now();
        let gate = Arc::new(Gate::new(budget));
        let pending = addrs.iter().map(|&addr| (addr, self.submit(addr, tx.clone(), started, Some(gate.clone())))).collect();
        Dispatched { started, pending, gate: Some(gate) }
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
            .map(|(addr, tx)| (addr, self.submit(addr, tx.clone(), started, None)))
            .collect();
        Dispatched { started, pending, gate: None }
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
        peers.values().map(|p| p.state.stats(p.queue.max_capacity() - p.queue.capacity(), &self.dialer.heard)).collect()
    }

    /// Queue a transaction for `addr`, or refuse it at once.
    fn submit(
        &self,
        addr: SocketAddr,
        tx: Bytes,
        started: Instant,
        gate: Option<Arc<Gate>>,
    ) -> Result<oneshot::Receiver<SendOutcome>, SendOutcome> {
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
        let refused = match queue.try_send(Job::Send { tx, queued_at: started, reply, gate }) {
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
            let state = Arc::new(PeerState::new(addr, self.dialer.heard.register(addr)));
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
    /// The deadline of [`QuicClient::dispatch_by`].
    gate: Option<Arc<Gate>>,
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
    ///
    /// With a deadline ([`QuicClient::dispatch_by`]), settles by then at the latest: if nothing
    /// was written by the deadline, the gate is closed (nothing can be written any more) and
    /// the peers not heard back from are listed as failed with `deadline` (their tasks count
    /// them when they get to them).
    pub async fn first_written(self) -> FirstSend {
        let Dispatched { started, pending, gate } = self;
        let mut failures = Vec::new();
        let mut waiting = Vec::with_capacity(pending.len());
        for (addr, p) in pending {
            match p {
                Ok(pending) => waiting.push((addr, pending)),
                Err(refused) => failures.push(refused),
            }
        }
        // Cleared once the gate is closed with a write already claimed: its reply is imminent.
        let mut deadline = gate.as_ref().map(|g| tokio::time::Instant::from_std(g.at));
        let mut closed = false;
        // Nothing written by the deadline: those not heard back from are failed with `deadline`.
        let missed = |waiting: Vec<(SocketAddr, oneshot::Receiver<SendOutcome>)>, mut failures: Vec<SendOutcome>, gate: &Gate| {
            for (addr, _) in waiting {
                let f = gate.missed();
                failures.push(SendOutcome {
                    addr,
                    reason: Some(f.reason),
                    code: None,
                    detail: Some(f.detail),
                    elapsed_us: micros(started),
                    reused: false,
                });
            }
            FirstSend { written: None, elapsed_us: micros(started), failures }
        };
        while !waiting.is_empty() {
            // Whichever reply is in first. A handful of peers, so each wake-up polls them all;
            // a ready receiver is removed at once and never polled again.
            let next = std::future::poll_fn(|cx| {
                for (i, (_, pending)) in waiting.iter_mut().enumerate() {
                    if let Poll::Ready(reply) = Pin::new(pending).poll(cx) {
                        return Poll::Ready((i, reply));
                    }
                }
                Poll::Pending
            });
            let (i, reply) = match deadline {
                None => next.await,
                Some(at) => match tokio::time::timeout_at(at, next).await {
                    Ok(r) => r,
                    Err(_) => {
                        let gate = gate.as_deref().expect("a deadline comes with its gate");
                        closed = true;
                        if !gate.close() {
                            return missed(waiting, failures, gate);
                        }
                        // A write claimed the gate just in time: its outcome is imminent.
                        deadline = None;
                        continue;
                    }
                },
            };
            let (addr, _) = waiting.swap_remove(i);
            // The task only drops the reply if the runtime is shutting down.
            let o = reply.unwrap_or_else(|_| failed(addr, started, FailReason::ClientClosed));
            if o.ok() {
                return FirstSend { elapsed_us: o.elapsed_us, written: Some(o), failures };
            }
            failures.push(o);
            if let Some(gate) = gate.as_deref().filter(|g| closed && g.claims() == 0) {
                // The claimed write failed after all, and no other can claim any more.
                return missed(waiting, failures, gate);
            }
        }
        FirstSend { written: None, elapsed_us: micros(started), failures }
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
#[derive(Clone)]
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

/// How a handshake ended, as the sends waiting for it see it.
type Dialed = Result<Connection, Failure>;

#[derive(Default)]
struct Link {
    live: Option<Live>,
    failures: u32,
    backoff_until: Option<Instant>,
    last_close: Option<Close>,
    /// The handshake under way, if any: sends and prewarms join it instead of dialling again.
    dialing: Option<watch::Receiver<Option<Dialed>>>,
    /// The peer's task has ended (client closed): a handshake that completes now is closed.
    shut: bool,
}

/// What a send (or prewarm) to a peer can use right now.
enum Acquired {
    /// The open connection, and the peer was heard from within `alive_window`.
    Live(Connection),
    /// None, and why: back-off, or the connection just found stale.
    Failed(Failure),
    /// The handshake under way (joined, or started by this call).
    Dialing(watch::Receiver<Option<Dialed>>),
}

struct PeerState {
    addr: SocketAddr,
    counters: PeerCounters,
    /// Outcome counts for `drain_outcomes` (apart from `counters`, which `peer_stats` reports
    /// and never resets).
    tally: Tally,
    /// When the peer was last heard from (stamped by the endpoint's socket).
    heard: Arc<LastHeard>,
    link: Mutex<Link>,
}

impl PeerState {
    fn new(addr: SocketAddr, heard: Arc<LastHeard>) -> Self {
        PeerState { addr, counters: PeerCounters::default(), tally: Tally::default(), heard, link: Mutex::new(Link::default()) }
    }

    /// The connection a send can use (see [`Acquired`]), deciding on the way:
    /// - a connection found closed is recorded here (the watcher task may not have run yet), so
    ///   the caller sees the back-off at once;
    /// - an open connection whose peer has not been heard from within `alive_window` is stale:
    ///   closed, recorded as a failure (back-off), and the caller gets `connection_stale`;
    /// - with no connection and no back-off, a handshake is started (in a task of its own) if
    ///   none is under way.
    fn acquire(self: &Arc<Self>, dialer: &Arc<Dialer>) -> Acquired {
        let cfg = &dialer.cfg;
        let mut link = lock(&self.link);
        if let Some(live) = &link.live {
            let conn = live.conn.clone();
            match conn.close_reason() {
                Some(err) => Self::closed(&mut link, &err, cfg),
                None => {
                    // Fast path: one atomic load and a clock read per send.
                    let quiet = dialer.heard.quiet_for(&self.heard, Instant::now());
                    if quiet.is_some_and(|q| q <= cfg.alive_window) {
                        return Acquired::Live(conn);
                    }
                    let lived = link.live.take().map(|l| l.since.elapsed());
                    let detail = format!(
                        "nothing heard from the peer for {} ms (alive window {} ms): connection dropped",
                        quiet.map_or_else(|| "ever".to_owned(), |q| q.as_millis().to_string()),
                        cfg.alive_window.as_millis()
                    );
                    Self::fail(&mut link, Close { code: None, reason: detail.clone() }, lived, cfg);
                    drop(link);
                    conn.close(VarInt::from_u32(0), b"stale");
                    return Acquired::Failed(Failure::new(FailReason::ConnectionStale, detail));
                }
            }
        }
        if let Some(backoff) = Self::backoff_of(&link) {
            return Acquired::Failed(backoff);
        }
        if let Some(dialing) = &link.dialing {
            return Acquired::Dialing(dialing.clone());
        }
        if link.shut {
            return Acquired::Failed(Failure::new(FailReason::ClientClosed, "client closed"));
        }
        let (done, dialing) = watch::channel(None);
        link.dialing = Some(dialing.clone());
        drop(link);
        runtime().spawn(dial(dialer.clone(), self.clone(), done));
        Acquired::Dialing(dialing)
    }

    /// A handshake's end, recorded under the lock together with the end of `dialing`, so a
    /// send sees either the handshake under way or its result, never neither.
    fn dialed(&self, result: Result<Connection, (Failure, Option<Close>)>, dialer: &Dialer) -> Dialed {
        let mut link = lock(&self.link);
        link.dialing = None;
        match result {
            Ok(conn) if link.shut => {
                drop(link);
                conn.close(VarInt::from_u32(0), b"client closed");
                Err(Failure::new(FailReason::ClientClosed, "client closed"))
            }
            Ok(conn) => {
                let now = Instant::now();
                // The handshake is a round trip: the peer is alive as of now.
                dialer.heard.touch(&self.heard, now);
                link.live = Some(Live { conn: conn.clone(), since: now });
                self.counters.connects.fetch_add(1, Ordering::Relaxed);
                Ok(conn)
            }
            Err((failure, close)) => {
                if let Some(close) = close {
                    Self::fail(&mut link, close, None, &dialer.cfg);
                }
                Err(failure)
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

    /// The back-off in force, as the failure a send gets during it.
    fn backoff_of(link: &Link) -> Option<Failure> {
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

    /// Close the open connection once the peer has acknowledged `unacked` (or `CLOSE_LINGER`
    /// has passed), so transactions reported written are not thrown away by the close.
    async fn close_live(&self, unacked: &mut Unacked, reason: &[u8]) {
        let deadline = tokio::time::Instant::now() + CLOSE_LINGER;
        for stream in unacked.take() {
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

    fn stats(&self, queued: usize, heard: &Heard) -> PeerStats {
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
            // Rounded up: 0 only once the back-off is over (rounded down, a caller waiting for 0
            // could send while up to a millisecond of it was left, and be refused `backoff`).
            backoff_remaining_ms: link
                .backoff_until
                .and_then(|u| u.checked_duration_since(Instant::now()))
                .map_or(0, |d| u64::try_from(d.as_micros().div_ceil(1000)).unwrap_or(u64::MAX)),
            quiet_ms: heard.quiet_for(&self.heard, Instant::now()).map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        }
    }
}

/// A peer's task: takes its queue in order, one transaction at a time, over one connection.
async fn run_peer(state: Arc<PeerState>, mut jobs: mpsc::Receiver<Job>, dialer: Arc<Dialer>) {
    // Streams written but maybe not yet acknowledged by the peer.
    let mut unacked = Unacked::default();
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
                // Starts the handshake if there is no connection (or drops a stale one: every
                // slot's prewarm sweeps the next leaders' connections); never waits for it.
                let _ = state.acquire(&dialer);
            }
            Job::Send { tx, queued_at, reply, gate } => {
                let (reused, written) = send_one(&dialer, &state, tx, gate.as_deref(), &mut unacked).await;
                // The caller may have stopped waiting; nothing to do then.
                let _ = reply.send(state.outcome(queued_at, reused, written));
            }
        }
    }
    lock(&state.link).shut = true;
    state.close_live(&mut unacked, b"client closed").await;
}

/// One queued transaction to this peer: a live connection (or the handshake's), then the
/// write. With a gate, nothing is started past its deadline and no wait outlasts it.
async fn send_one(
    dialer: &Arc<Dialer>,
    state: &Arc<PeerState>,
    tx: Bytes,
    gate: Option<&Gate>,
    unacked: &mut Unacked,
) -> (bool, Result<(), Failure>) {
    if let Some(g) = gate.filter(|g| g.passed()) {
        return (false, Err(g.missed()));
    }
    let (conn, reused) = match dialer.connection(state, gate).await {
        Ok(c) => c,
        Err(f) => return (false, Err(f)),
    };
    let written = write_tx(&conn, tx, dialer.cfg.send_timeout, gate).await.map(|stream| unacked.push(stream));
    (reused, written)
}

impl Dialer {
    /// The peer's live connection (`reused` = true), or the one the handshake this send started
    /// or joined established, or why there is none. With a gate, waits for a handshake no
    /// longer than its deadline; the handshake itself goes on, for the next send.
    async fn connection(self: &Arc<Self>, state: &Arc<PeerState>, gate: Option<&Gate>) -> Result<(Connection, bool), Failure> {
        let mut dialing = match state.acquire(self) {
            Acquired::Live(conn) => return Ok((conn, true)),
            Acquired::Failed(f) => return Err(f),
            Acquired::Dialing(dialing) => dialing,
        };
        let done = async move { dialing.wait_for(Option::is_some).await.ok().and_then(|d| d.clone()) };
        let dialed = match gate {
            None => done.await,
            Some(g) => tokio::time::timeout_at(tokio::time::Instant::from_std(g.at), done).await.map_err(|_| g.missed())?,
        };
        // The dial task only ends without a result if the runtime is shutting down.
        dialed.unwrap_or_else(|| Err(Failure::new(FailReason::ClientClosed, "client closed"))).map(|conn| (conn, false))
    }

    /// One handshake with `addr`; a failure comes with the close to record (and back off on)
    /// when it is the peer's doing.
    async fn handshake(&self, addr: SocketAddr) -> Result<Connection, (Failure, Option<Close>)> {
        let closed = || (Failure::new(FailReason::ClientClosed, "client closed"), None);
        let connecting = match self.endpoint.connect_with(self.quinn.clone(), addr, &tls::server_name(addr)) {
            Ok(c) => c,
            Err(ConnectError::EndpointStopping) => return Err(closed()),
            Err(e) => {
                let detail = format!("cannot connect to {addr}: {e}");
                return Err((Failure::new(FailReason::ConnectFailed, detail.clone()), Some(Close { code: None, reason: detail })));
            }
        };
        match tokio::time::timeout(self.cfg.handshake_timeout, connecting).await {
            Ok(Ok(conn)) => Ok(conn),
            Ok(Err(ConnectionError::LocallyClosed)) => Err(closed()),
            Ok(Err(e)) => Err((Failure::from_connection(FailReason::ConnectFailed, &e), Some(Close::of(&e)))),
            Err(_) => {
                let detail = format!("no handshake within {} ms", self.cfg.handshake_timeout.as_millis());
                Err((Failure::new(FailReason::HandshakeTimeout, detail.clone()), Some(Close { code: None, reason: detail })))
            }
        }
    }
}

/// A peer's handshake, in a task of its own (see the module doc): its end is recorded in the
/// peer's state and handed to every send waiting for it.
async fn dial(dialer: Arc<Dialer>, state: Arc<PeerState>, done: watch::Sender<Option<Dialed>>) {
    let result = dialer.handshake(state.addr).await;
    let dialed = state.dialed(result, &dialer);
    if let Ok(conn) = &dialed {
        runtime().spawn(watch_close(conn.clone(), state.clone(), dialer.cfg.clone()));
    }
    done.send_replace(Some(dialed));
}

/// Notices a peer closing the connection while nothing is being sent, so the back-off starts
/// then and not at the next send.
async fn watch_close(conn: Connection, state: Arc<PeerState>, cfg: ClientConfig) {
    let err = conn.closed().await;
    state.note_closed(conn.stable_id(), &err, &cfg);
}

/// One transaction on one new unidirectional stream: open, write, finish. Hands back the
/// finished stream, whose acknowledgement a graceful close waits for. A gate's deadline, when
/// it comes before `limit`, cuts the write short the same way, and the gate must be claimed
/// before the stream is finished.
async fn write_tx(conn: &Connection, tx: Bytes, limit: Duration, gate: Option<&Gate>) -> Result<SendStream, Failure> {
    let own = Instant::now() + limit;
    let by_gate = gate.filter(|g| g.at < own);
    let deadline = tokio::time::Instant::from_std(by_gate.map_or(own, |g| g.at));
    let timed_out =
        || by_gate.map_or_else(|| Failure::new(FailReason::SendTimeout, format!("not written within {} ms", limit.as_millis())), Gate::missed);
    let mut stream = match tokio::time::timeout_at(deadline, conn.open_uni()).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => return Err(Failure::from_connection(FailReason::ConnectionLost, &e)),
        Err(_) => return Err(timed_out()),
    };
    match tokio::time::timeout_at(deadline, stream.write_chunk(tx)).await {
        Ok(Ok(())) => {
            // The point of no return: a finished stream is delivered. Past the deadline, or once
            // the waiter has given up, it must not be: reset, so the peer discards what it got.
            if let Some(g) = gate.filter(|g| !g.claim()) {
                let _ = stream.reset(VarInt::from_u32(0));
                return Err(g.missed());
            }
            match stream.finish() {
                Ok(()) => Ok(stream),
                Err(e) => {
                    if let Some(g) = gate {
                        g.release();
                    }
                    Err(Failure::new(FailReason::ConnectionLost, format!("stream closed before finish: {e}")))
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_lets_writes_claim_it_until_it_is_closed_or_its_deadline_passes() {
        // Closed with nothing claimed: no write may claim it afterwards.
        let gate = Gate::new(Duration::from_secs(60));
        assert!(!gate.close());
        assert!(!gate.claim());
        assert!(gate.passed());
        // A claim made in time is what a close then reports; a released claim is not.
        let gate = Gate::new(Duration::from_secs(60));
        assert!(gate.claim() && gate.claim());
        gate.release();
        assert_eq!(gate.claims(), 1);
        assert!(gate.close());
        assert_eq!(gate.claims(), 1);
        assert!(!gate.claim());
        // Past its deadline, a gate nobody closed refuses claims too.
        let gate = Gate::new(Duration::ZERO);
        assert!(gate.passed());
        assert!(!gate.claim());
        assert_eq!(gate.missed().reason, FailReason::Deadline);
    }
}

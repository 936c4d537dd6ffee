//! Native QUIC TPU endpoint: the client Landfall delivers transactions with, and the server the
//! local cluster stands in for validators with. Both speak the protocol current Agave validators
//! speak on their `tpu_quic` port:
//!
//! - ALPN `solana-tpu`, TLS 1.3 only, X25519 key exchange only (Agave's `crypto_provider`);
//! - each side presents one self-signed ed25519 certificate made from its identity key; the
//!   server requests the client's and reads the peer's ed25519 key from it, neither side checks
//!   the other's certificate against a CA (the TLS CertificateVerify signature is still checked,
//!   so a peer proves it holds the key it claims);
//! - one transaction per unidirectional stream, at most 1232 bytes (`PACKET_DATA_SIZE`); no
//!   bidirectional streams, no datagrams;
//! - application close codes 1 `dropped`, 2 `disallowed`, 3 `exceed_max_stream_count`,
//!   4 `too_many`, 5 `invalid_stream` (Agave `streamer/src/nonblocking/quic.rs`).
//!
//! Everything runs on one process-wide tokio runtime ([`runtime`]): every Node worker thread and
//! every Rust caller shares its worker threads (one by default: [`DEFAULT_RUNTIME_THREADS`]),
//! its sockets and its connection caches. A
//! dedicated runtime rather than napi's `tokio_rt` one because (1) the Rust tests and the
//! conformance crate run without napi and need the same code paths, and (2) its lifetime is the
//! process's, not a Node environment's: a worker thread that exits does not take the endpoint
//! other threads are using with it.

// The client's layers, each calling only the ones below it (so there are no cycles):
//   client      QuicClient: the registry per identity, a queue and a worker per peer
//   dispatched  awaiting what was queued: every outcome, or the first written one
//   worker      a peer's task and shared state: acquire a connection, write, count
//   dialer      handshakes, each in a task of its own; the close watcher
//   peer        a peer's state machine (Idle, Dialing, Live, Backoff, Shut), pure
//   unacked, gate, outcome, config   leaves: written-stream window, deadline, results, settings
mod client;
mod config;
mod dialer;
mod dispatched;
mod gate;
mod heard;
mod lossy;
mod outcome;
mod peer;
mod server;
mod tls;
mod unacked;
mod worker;

pub use client::QuicClient;
pub use config::{tpu_client_config, ClientConfig};
pub use dispatched::Dispatched;
pub use outcome::{
    FailReason, FirstSend, OutcomeCount, PeerStats, SendOutcome, WORD_FAILED_BASE, WORD_MAX_CODE,
    WORD_WRITTEN,
};
pub use server::{Faults, QuicServer, Received, ServerConfig, ServerStats};
pub use tls::{identity_pubkey, peer_pubkey_from_cert, self_signed_identity, server_name};

use std::fmt;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

/// ALPN protocol id of the Solana TPU.
pub const ALPN_TPU: &[u8] = b"solana-tpu";

/// Largest transaction a stream may carry (`PACKET_DATA_SIZE`).
pub const MAX_TX_SIZE: usize = crate::parse::PACKET_DATA_SIZE;

/// Agave's connection close codes (`streamer/src/nonblocking/quic.rs`), with their reasons.
pub mod close {
    /// The server evicted the connection from its connection table.
    pub const DROPPED: u32 = 1;
    /// Refused by a connection rate limit, or unstaked connections are not allowed.
    pub const DISALLOWED: u32 = 2;
    /// The stream limit for the peer could not be set.
    pub const EXCEED_MAX_STREAM_COUNT: u32 = 3;
    /// The peer already has the maximum number of connections open.
    pub const TOO_MANY: u32 = 4;
    /// A stream was empty or longer than 1232 bytes.
    pub const INVALID_STREAM: u32 = 5;
}

/// Why building a client or server failed. `code()` is the stable code JavaScript sees.
#[derive(Debug)]
pub enum QuicError {
    /// A configuration value is out of range; the text names it.
    InvalidConfig(String),
    /// The UDP socket could not be bound or wrapped.
    Bind(std::io::Error),
    /// rustls refused the generated certificate or configuration (a bug, never bad input).
    Tls(String),
}

impl QuicError {
    pub const fn code(&self) -> &'static str {
        match self {
            QuicError::InvalidConfig(_) => "QUIC_INVALID_OPTION",
            QuicError::Bind(_) => "QUIC_BIND_FAILED",
            QuicError::Tls(_) => "QUIC_TLS",
        }
    }
}

impl fmt::Display for QuicError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QuicError::InvalidConfig(m) => write!(f, "invalid option: {m}"),
            QuicError::Bind(e) => write!(f, "cannot bind UDP socket: {e}"),
            QuicError::Tls(m) => write!(f, "TLS configuration failed: {m}"),
        }
    }
}

impl std::error::Error for QuicError {}

/// Worker threads of the shared runtime, unless [`set_runtime_threads`] says otherwise before
/// it starts. One: QUIC work for a few dozen leader connections is a fraction of a core (about
/// 40 µs per send at the service's maximum on this project's 2-core bench machine, 0.2 core),
/// and a second worker mostly wakes to find nothing — tokio wakes a sibling to steal whenever
/// it finds work. A/B in one run (bench/ingress-ab.ts, 3 rounds): one thread instead of two took
/// the QUIC threads from 44–48 to 39–43 µs per send at max and from 147–156 to 119–134 µs at
/// 400 req/s, their wake-ups from 1.8 to 0.9 and 4.8 to 3.0 per send, throughput unchanged.
pub const DEFAULT_RUNTIME_THREADS: usize = 1;

static RUNTIME_THREADS: AtomicUsize = AtomicUsize::new(DEFAULT_RUNTIME_THREADS);
static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();

/// Set the runtime's worker threads (1..=64) before it starts (the first client, server or
/// send starts it). Once it runs, only its own count is accepted again.
pub fn set_runtime_threads(threads: usize) -> Result<(), QuicError> {
    check_range("quicThreads", threads, 1..=64)?;
    match RUNTIME.get() {
        Some(_) if RUNTIME_THREADS.load(Ordering::Acquire) != threads => Err(QuicError::InvalidConfig(format!(
            "quicThreads: the QUIC runtime already runs with {} threads (set it before the first client starts)",
            RUNTIME_THREADS.load(Ordering::Acquire)
        ))),
        Some(_) => Ok(()),
        None => {
            RUNTIME_THREADS.store(threads, Ordering::Release);
            Ok(())
        }
    }
}

/// The process-wide tokio runtime every endpoint, connection and task of this module runs on.
/// Built on first use and never shut down (it lives as long as the process, like the addon).
pub fn runtime() -> &'static tokio::runtime::Runtime {
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(RUNTIME_THREADS.load(Ordering::Acquire))
            .thread_name("landfall-quic")
            .enable_all()
            .build()
            // Only fails if the OS refuses threads or an epoll fd at startup: nothing to recover.
            .expect("cannot start the QUIC runtime")
    })
}

/// Niceness asked for the first sends' thread ([`set_first_send_nice`]); 0 leaves it as the
/// process's.
pub const DEFAULT_FIRST_SEND_NICE: i32 = -10;

static FIRST_SEND_NICE: AtomicI32 = AtomicI32::new(DEFAULT_FIRST_SEND_NICE);
static FIRST_RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
/// What the first sends' thread got when it started: the niceness it runs at, or why it could
/// not have the one asked for.
static FIRST_SEND_PRIORITY: OnceLock<Result<i32, String>> = OnceLock::new();

/// The first sends' own runtime: one thread (`landfall-first`) that runs only the first sends'
/// lane of every peer — its writes, its handshakes and the drivers of its connections (quinn
/// spawns a connection's driver where the handshake runs), so a first send's packets leave from
/// this thread too. It does the first sends' share of the QUIC work (40–70 µs a send on the
/// 2-core bench machine, two leaders each: a small share of a core at any realistic rate), and
/// gets a higher priority than the rest of the process where the OS allows
/// ([`set_first_send_nice`]).
///
/// Why: on a busy machine the shared runtime's thread, woken for a first send, waited for a CPU
/// (in one bench it waited about as long as it ran): the service-added latency's whole tail.
/// Raising that thread's priority instead cut the tail, but let it run each slot's rebroadcast
/// burst (tens of ms) ahead of the request threads, and the clients' p99 tripled.
pub(crate) fn first_runtime() -> &'static tokio::runtime::Runtime {
    FIRST_RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("landfall-first")
            .on_thread_start(|| {
                let _ = FIRST_SEND_PRIORITY.set(crate::priority::set_current_thread_nice(
                    FIRST_SEND_NICE.load(Ordering::Acquire),
                    "the first sends' thread",
                ));
            })
            .enable_all()
            .build()
            .expect("cannot start the first sends' runtime")
    })
}

/// Niceness for the first sends' thread (-20..=19; default [`DEFAULT_FIRST_SEND_NICE`]; 0
/// leaves it as the process's), set before that thread starts (a client's first send to a peer
/// starts it). Once it runs, only its own value is accepted again.
pub fn set_first_send_nice(nice: i32) -> Result<(), QuicError> {
    check_range("quicFirstSendNice", nice, -20..=19)?;
    match FIRST_RUNTIME.get() {
        Some(_) if FIRST_SEND_NICE.load(Ordering::Acquire) != nice => Err(QuicError::InvalidConfig(format!(
            "quicFirstSendNice: the first sends' thread already runs with {} asked for (set it before the first client starts)",
            FIRST_SEND_NICE.load(Ordering::Acquire)
        ))),
        Some(_) => Ok(()),
        None => {
            FIRST_SEND_NICE.store(nice, Ordering::Release);
            Ok(())
        }
    }
}

/// The niceness the first sends' thread runs at, or why it could not have the one asked for;
/// None before it starts.
pub fn first_send_priority() -> Option<Result<i32, String>> {
    FIRST_SEND_PRIORITY.get().cloned()
}

/// [`set_first_send_nice`], then start the first sends' thread (if it is not running yet) and
/// wait for it to say what priority it got (see [`first_send_priority`]). Not from within a
/// runtime's task: it blocks the calling thread (for a thread's start, well under a millisecond).
pub fn start_first_sends(nice: i32) -> Result<Result<i32, String>, QuicError> {
    set_first_send_nice(nice)?;
    // A task runs on the thread only once it has set its priority (`on_thread_start`): its
    // answer is what the thread got.
    let (told, answer) = std::sync::mpsc::channel();
    first_runtime().spawn(async move {
        let _ = told.send(first_send_priority());
    });
    Ok(
        match answer.recv_timeout(std::time::Duration::from_secs(5)) {
            Ok(Some(got)) => got,
            _ => Err("the first sends' thread did not start within 5 s".into()),
        },
    )
}

/// A check of one numeric option: `Err(InvalidConfig)` naming it when outside `range`.
fn check_range<T: PartialOrd + fmt::Display + Copy>(
    name: &str,
    value: T,
    range: std::ops::RangeInclusive<T>,
) -> Result<(), QuicError> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(QuicError::InvalidConfig(format!(
            "{name} must be in {}..={} (got {value})",
            range.start(),
            range.end()
        )))
    }
}

/// Milliseconds since the Unix epoch, as JavaScript's `Date.now()` counts them (with fractions).
fn unix_ms_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

/// A mutex's guard, poisoned or not: nothing here panics while holding a lock, and if something
/// ever did, the data is still consistent (every critical section is a few assignments).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

//! What a send comes to: the failure reasons (stable strings JavaScript sees), one outcome per
//! (transaction, peer), its one-`u16` form for batches, and the per-peer tallies
//! `drain_outcomes` hands over.

use quinn::ConnectionError;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

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
        let low = self
            .reason
            .map_or(WORD_WRITTEN, |r| WORD_FAILED_BASE + r as u16);
        let high = self
            .code
            .map_or(0, |c| c.min(u64::from(WORD_MAX_CODE)) as u16 + 1);
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
pub(super) struct Tally([AtomicU64; 1 + FailReason::ALL.len()]);

impl Tally {
    pub(super) fn count(&self, reason: Option<FailReason>) {
        // `ALL` lists the reasons in declaration order, so `r as usize` is the position in it.
        let i = reason.map_or(0, |r| 1 + r as usize);
        self.0[i].fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn drain(&self, addr: SocketAddr, out: &mut Vec<OutcomeCount>) {
        let reasons = std::iter::once(None).chain(FailReason::ALL.iter().copied().map(Some));
        for (counter, reason) in self.0.iter().zip(reasons) {
            let count = counter.swap(0, Ordering::Relaxed);
            if count > 0 {
                out.push(OutcomeCount {
                    addr,
                    reason,
                    count,
                });
            }
        }
    }
}

pub(super) fn failed(addr: SocketAddr, started: Instant, reason: FailReason) -> SendOutcome {
    SendOutcome {
        addr,
        reason: Some(reason),
        code: None,
        detail: None,
        elapsed_us: micros(started),
        reused: false,
    }
}

pub(super) fn micros(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// A failure on its way to becoming a `SendOutcome`.
#[derive(Clone)]
pub(super) struct Failure {
    pub(super) reason: FailReason,
    pub(super) code: Option<u64>,
    pub(super) detail: String,
}

impl Failure {
    pub(super) fn new(reason: FailReason, detail: impl Into<String>) -> Self {
        Failure {
            reason,
            code: None,
            detail: detail.into(),
        }
    }

    pub(super) fn from_connection(reason: FailReason, err: &ConnectionError) -> Self {
        let close = Close::of(err);
        Failure {
            reason,
            code: close.code,
            detail: close.reason,
        }
    }
}

/// How a connection ended, as the peer stats report it.
#[derive(Clone)]
pub(super) struct Close {
    pub(super) code: Option<u64>,
    pub(super) reason: String,
}

impl Close {
    pub(super) fn of(err: &ConnectionError) -> Close {
        match err {
            ConnectionError::ApplicationClosed(c) => Close {
                code: Some(c.error_code.into_inner()),
                reason: format!(
                    "closed by peer: code {} {}",
                    c.error_code,
                    String::from_utf8_lossy(&c.reason)
                ),
            },
            other => Close {
                code: None,
                reason: other.to_string(),
            },
        }
    }
}

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
    /// Milliseconds the peer's writer has been waiting for stream credit (the peer reads our
    /// streams slower than we write them: a throttling validator); None when not waiting.
    pub credit_wait_ms: Option<u64>,
}

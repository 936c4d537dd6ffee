//! What the QUIC client's calls resolve with, as JavaScript objects, and their conversion from
//! the QUIC layer's own outcomes.

use crate::quic;
use napi::bindgen_prelude::*;
use napi_derive::napi;

/// The outcome of one transaction to one validator.
#[napi(object)]
pub struct SendResult {
    /// The target as given ("ip:port").
    pub target: String,
    /// Written: `finish()` was called on the stream after the whole transaction was accepted by
    /// a connection whose validator was heard from within the alive window (QUIC then delivers
    /// it unless the connection dies; no peer ack awaited).
    pub ok: bool,
    /// Why not: `queue_full`, `backoff`, `handshake_timeout`, `connect_failed`,
    /// `connection_lost`, `stream_stopped`, `send_timeout`, `client_closed`,
    /// `connection_stale` (the validator went quiet: connection dropped), `deadline` (the
    /// `sendFirst` deadline passed first; it will never be written).
    pub reason: Option<String>,
    /// The validator's QUIC close code (or stream stop code) behind the failure, if any
    /// (1 dropped, 2 disallowed, 4 too many, 5 invalid stream, ...).
    pub code: Option<f64>,
    /// Human-readable detail of the failure.
    pub detail: Option<String>,
    /// Microseconds from the call to the outcome, queueing included.
    pub elapsed_us: f64,
    /// Went on a connection that existed before this send.
    pub reused: bool,
}

/// What `sendFirst` resolves with.
#[napi(object)]
pub struct FirstSend {
    /// The first target ("ip:port", as given) the transaction was written to; null when every
    /// target failed.
    #[napi(ts_type = "string | null")]
    pub target: Either<String, Null>,
    /// Microseconds from the call to that first write (to the last failure when none was
    /// written).
    pub elapsed_us: f64,
    /// The targets known to have failed by then, in the order they became known. Later
    /// outcomes are not reported here; `drainOutcomes` counts them.
    pub failures: Vec<SendResult>,
}

/// Sends to one target that ended one way, since the last `drainOutcomes`.
#[napi(object)]
pub struct OutcomeCount {
    /// "ip:port".
    pub target: String,
    /// `ok`, or the failure reason (`queue_full`, `backoff`, `handshake_timeout`, …).
    pub reason: String,
    pub count: f64,
}

/// One validator's connection state and counters, as this process's client sees it.
#[napi(object)]
pub struct PeerStats {
    pub target: String,
    pub connected: bool,
    /// Smoothed round-trip time of the open connection, µs.
    pub rtt_us: Option<f64>,
    /// Transactions written.
    pub sent: f64,
    /// Transactions failed after being queued.
    pub failed: f64,
    /// Transactions refused with `queue_full`.
    pub dropped: f64,
    /// Connections established.
    pub connects: f64,
    /// Transactions waiting in the queue.
    pub queued: f64,
    /// The validator's close code of the last failure, if it sent one.
    pub last_close_code: Option<f64>,
    /// What the last failure was.
    pub last_close_reason: Option<String>,
    /// Failures since the last healthy connection.
    pub consecutive_failures: u32,
    /// Back-off left, ms (0 when none).
    pub backoff_remaining_ms: f64,
    /// Milliseconds since the validator was last heard from (any packet); null if never.
    pub quiet_ms: Option<f64>,
    /// Milliseconds the writer to this validator has been waiting for stream credit (it reads
    /// our streams slower than we write them); null when not waiting.
    pub credit_wait_ms: Option<f64>,
}

pub(super) fn to_send_result((target, o): (String, quic::SendOutcome)) -> SendResult {
    SendResult {
        target,
        ok: o.ok(),
        reason: o.reason.map(|r| r.as_str().to_owned()),
        code: o.code.map(|c| c as f64),
        detail: o.detail,
        elapsed_us: o.elapsed_us as f64,
        reused: o.reused,
    }
}

pub(super) fn to_peer_stats(p: quic::PeerStats) -> PeerStats {
    PeerStats {
        target: p.addr.to_string(),
        connected: p.connected,
        rtt_us: p.rtt_us.map(|r| r as f64),
        sent: p.sent as f64,
        failed: p.failed as f64,
        dropped: p.dropped as f64,
        connects: p.connects as f64,
        queued: p.queued as f64,
        last_close_code: p.last_close_code.map(|c| c as f64),
        last_close_reason: p.last_close_reason,
        consecutive_failures: p.consecutive_failures,
        backoff_remaining_ms: p.backoff_remaining_ms as f64,
        quiet_ms: p.quiet_ms.map(|q| q as f64),
        credit_wait_ms: p.credit_wait_ms.map(|q| q as f64),
    }
}

/// The failure reasons of `sendMany`'s outcome words, by index (its low byte minus 2): the
/// same strings `SendResult.reason` and `drainOutcomes` use.
#[napi]
pub fn send_outcome_reasons() -> Vec<&'static str> {
    quic::FailReason::ALL.iter().map(|r| r.as_str()).collect()
}

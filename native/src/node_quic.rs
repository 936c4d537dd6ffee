//! The napi layer of the QUIC TPU client (`crate::quic::QuicClient`) for JavaScript, and the
//! argument checks the server's layer (`node_quic_server`) shares. Every argument is checked and converted to owned Rust data here, before anything
//! crosses to the QUIC runtime's threads; bad input throws an error with a stable `code`
//! (`QUIC_INVALID_ADDRESS`, `QUIC_INVALID_IDENTITY`, `QUIC_INVALID_OPTION`, `QUIC_TX_EMPTY`,
//! `QUIC_TX_TOO_LARGE`, `QUIC_CLOSED`, `QUIC_BIND_FAILED`, `QUIC_TLS`, `QUIC_INTERNAL`).
//!
//! Promises are settled from the runtime's threads through napi deferreds, so the QUIC runtime
//! never waits on the event loop. Targets are "ip:port" strings, parsed on every call, or a
//! [`TpuTargets`] handle parsed once (the hot path's: see its doc).

use crate::base58;
use crate::error::{internal, to_js, JsCode, Refusal};
use crate::node::{priority_of, ThreadPriority};
use crate::quic::{self, runtime, QuicError, MAX_TX_SIZE};
use bytes::Bytes;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// A refusal of the QUIC layer's napi boundary, thrown.
fn fail(code: &'static str, message: impl Into<String>) -> napi::Error<JsCode> {
    to_js(&Refusal::new(code, message))
}

pub(crate) fn parse_addr(text: &str) -> Result<SocketAddr, JsCode> {
    text.parse().map_err(|_| {
        fail(
            "QUIC_INVALID_ADDRESS",
            format!("`{text}` is not an \"ip:port\" socket address"),
        )
    })
}

/// TPU addresses parsed once. The hot path sends each transaction to the same few leaders
/// for a whole slot, so the JS side builds one handle per leader set (a slot's route) and
/// passes it to `sendFirst` / `sendMany` / `prewarm` instead of the strings: a call then
/// neither copies the strings out of V8 nor parses them again (measured in `docs/native.md`,
/// "Targets").
#[napi]
pub struct TpuTargets {
    parsed: Parsed,
}

/// Targets as the sends use them: the addresses and the text each was given as (results name
/// a target by its text, so two spellings of one address stay apart).
#[derive(Clone)]
struct Parsed {
    addrs: Arc<[SocketAddr]>,
    texts: Arc<[String]>,
}

impl Parsed {
    fn new(texts: Vec<String>) -> Result<Self, JsCode> {
        let addrs = texts
            .iter()
            .map(|t| parse_addr(t))
            .collect::<Result<Arc<[_]>, _>>()?;
        Ok(Parsed {
            addrs,
            texts: texts.into(),
        })
    }

    /// The text `addr` was given as.
    fn name(&self, addr: SocketAddr) -> String {
        self.addrs
            .iter()
            .position(|a| *a == addr)
            .map_or_else(|| addr.to_string(), |i| self.texts[i].clone())
    }
}

#[napi]
impl TpuTargets {
    /// Parse "ip:port" targets once; throws `QUIC_INVALID_ADDRESS` naming the first bad one.
    #[napi(constructor)]
    pub fn new(targets: Vec<String>) -> Result<Self, JsCode> {
        Ok(TpuTargets {
            parsed: Parsed::new(targets)?,
        })
    }

    /// How many targets.
    #[napi(getter)]
    pub fn length(&self) -> u32 {
        self.parsed.addrs.len() as u32
    }

    /// The targets, as given.
    #[napi]
    pub fn targets(&self) -> Vec<String> {
        self.parsed.texts.to_vec()
    }
}

/// What the send calls take as targets: "ip:port" strings, or a [`TpuTargets`] handle.
type Targets<'a> = Either<Vec<String>, ClassInstance<'a, TpuTargets>>;

fn parse_targets(targets: Targets<'_>) -> Result<Parsed, JsCode> {
    match targets {
        Either::A(texts) => Parsed::new(texts),
        Either::B(handle) => Ok(handle.parsed.clone()),
    }
}

/// The one check of a transaction's size before it is queued; `index` names it in a batch.
fn check_tx(tx: &[u8], index: Option<usize>) -> Result<(), JsCode> {
    let which = index.map_or_else(|| "transaction".to_owned(), |i| format!("transaction {i}"));
    if tx.is_empty() {
        return Err(fail("QUIC_TX_EMPTY", format!("{which} is empty")));
    }
    if tx.len() > MAX_TX_SIZE {
        return Err(fail(
            "QUIC_TX_TOO_LARGE",
            format!("{which} is {} bytes, more than {MAX_TX_SIZE}", tx.len()),
        ));
    }
    Ok(())
}

pub(crate) fn parse_seed(identity: &[u8]) -> Result<[u8; 32], JsCode> {
    identity.try_into().map_err(|_| {
        fail(
            "QUIC_INVALID_IDENTITY",
            format!(
                "identity must be the 32-byte ed25519 secret seed (got {} bytes)",
                identity.len()
            ),
        )
    })
}

/// An optional JS number as a whole number in `0..=max`, or `default` when absent.
pub(crate) fn whole(name: &str, value: Option<f64>, default: u64, max: u64) -> Result<u64, JsCode> {
    let Some(v) = value else { return Ok(default) };
    if v.is_finite() && v.fract() == 0.0 && (0.0..=max as f64).contains(&v) {
        Ok(v as u64)
    } else {
        Err(to_js(&QuicError::InvalidConfig(format!(
            "{name} must be a whole number in 0..={max} (got {v})"
        ))))
    }
}

/// An optional millisecond option as a Duration (range checks are the config's own).
pub(crate) fn millis(
    name: &str,
    value: Option<f64>,
    default: Duration,
) -> Result<Duration, JsCode> {
    let ms = whole(
        name,
        value,
        u64::try_from(default.as_millis()).unwrap_or(u64::MAX),
        3_600_000,
    )?;
    Ok(Duration::from_millis(ms))
}

// ---- client ------------------------------------------------------------------------------

/// Options of `new QuicClient(...)`. Clients are shared per identity across the whole process
/// (all worker threads): constructing one for an identity that already has a live client
/// returns a handle to it, and these options are then ignored.
#[napi(object)]
pub struct QuicClientOptions {
    /// The identity's 32-byte ed25519 secret seed; its certificate is what validators see.
    pub identity: Uint8Array,
    /// Transactions waiting per validator before sends fail with `queue_full` (default 1024).
    pub max_queue_per_peer: Option<f64>,
    /// Idle timeout, ms (default 10 000, at most 10 000).
    pub idle_timeout_ms: Option<f64>,
    /// Keep-alive interval, ms, below the idle timeout (default 1000).
    pub keep_alive_ms: Option<f64>,
    /// A connection whose validator has not been heard from (any packet) for longer than this
    /// is stale: sends on it fail with `connection_stale` and it is dropped, ms (default 1.5 ×
    /// the keep-alive interval; above it, at most the idle timeout).
    pub alive_window_ms: Option<f64>,
    /// Handshake timeout, ms (default 2000).
    pub handshake_timeout_ms: Option<f64>,
    /// A transaction not written within this fails with `send_timeout`, ms (default 2000).
    pub send_timeout_ms: Option<f64>,
    /// First back-off after a validator closes or cannot be reached, ms (default 200).
    pub backoff_base_ms: Option<f64>,
    /// Longest back-off, ms (default 10 000).
    pub backoff_max_ms: Option<f64>,
}

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

/// A QUIC TPU client: one connection per validator TPU address, shared by every thread of the
/// process that uses the same identity.
#[napi]
pub struct QuicClient {
    /// None once `close()`d.
    inner: Option<Arc<quic::QuicClient>>,
    identity: String,
}

#[napi]
impl QuicClient {
    #[napi(constructor)]
    pub fn new(opts: QuicClientOptions) -> Result<Self, JsCode> {
        let seed = parse_seed(&opts.identity)?;
        let d = quic::ClientConfig::default();
        let idle_timeout = millis("idleTimeoutMs", opts.idle_timeout_ms, d.idle_timeout)?;
        let keep_alive = millis("keepAliveMs", opts.keep_alive_ms, d.keep_alive)?;
        let cfg = quic::ClientConfig {
            max_queue_per_peer: whole(
                "maxQueuePerPeer",
                opts.max_queue_per_peer,
                d.max_queue_per_peer as u64,
                1_000_000,
            )? as usize,
            idle_timeout,
            keep_alive,
            alive_window: millis(
                "aliveWindowMs",
                opts.alive_window_ms,
                (keep_alive * 3 / 2).min(idle_timeout),
            )?,
            handshake_timeout: millis(
                "handshakeTimeoutMs",
                opts.handshake_timeout_ms,
                d.handshake_timeout,
            )?,
            send_timeout: millis("sendTimeoutMs", opts.send_timeout_ms, d.send_timeout)?,
            backoff_base: millis("backoffBaseMs", opts.backoff_base_ms, d.backoff_base)?,
            backoff_max: millis("backoffMaxMs", opts.backoff_max_ms, d.backoff_max)?,
            unused_close: d.unused_close,
        };
        let inner = quic::QuicClient::new(&seed, cfg).map_err(|e| to_js(&e))?;
        let identity = base58::encode(&inner.identity());
        Ok(QuicClient {
            inner: Some(inner),
            identity,
        })
    }

    /// The identity public key, base58.
    #[napi(getter)]
    pub fn identity(&self) -> String {
        self.identity.clone()
    }

    fn client(&self) -> Result<&Arc<quic::QuicClient>, JsCode> {
        self.inner
            .as_ref()
            .ok_or_else(|| fail("QUIC_CLOSED", "this QuicClient was closed"))
    }

    /// Send one transaction (1..=1232 bytes) to every target ("ip:port") at once, one
    /// unidirectional stream each. Resolves with one result per target, in order; never
    /// rejects for network failures (they are results). Throws for bad arguments.
    #[napi(ts_return_type = "Promise<SendResult[]>")]
    pub fn send<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string[] | TpuTargets")] targets: Targets<'env>,
        tx: &[u8],
    ) -> Result<Object<'env>, JsCode> {
        let client = self.client()?;
        check_tx(tx, None)?;
        let targets = parse_targets(targets)?;
        let tx = Bytes::copy_from_slice(tx);
        let (deferred, promise) = env.create_deferred().map_err(internal)?;
        // Queued here, on the JS thread: the writes start without waiting for a runtime task.
        let dispatched = client.dispatch(&targets.addrs, tx);
        runtime().spawn(async move {
            let outcomes = dispatched.outcomes().await;
            let results: Vec<SendResult> = targets
                .texts
                .iter()
                .cloned()
                .zip(outcomes)
                .map(to_send_result)
                .collect();
            deferred.resolve(move |_| Ok(results));
        });
        Ok(promise)
    }

    /// The hot path's send: the same writes as `send` (one stream per target, all at once), but
    /// resolves as soon as ONE target has the transaction written, without waiting for slower
    /// or dead targets, or once every target has failed. Outcomes that come later are counted
    /// for `drainOutcomes`. Throws for bad arguments, as `send` does.
    ///
    /// With `deadlineMs` (1..=60000): resolves within that many ms whatever the targets do, and
    /// the transaction is written by then or never — if it resolves with `target: null`, no
    /// target has it and none will (the targets not heard back from are listed with
    /// `deadline`).
    #[napi(ts_return_type = "Promise<FirstSend>")]
    pub fn send_first<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string[] | TpuTargets")] targets: Targets<'env>,
        tx: &[u8],
        deadline_ms: Option<f64>,
    ) -> Result<Object<'env>, JsCode> {
        let client = self.client()?;
        check_tx(tx, None)?;
        let targets = parse_targets(targets)?;
        let budget = match deadline_ms {
            None => None,
            Some(ms) if ms.is_finite() && ms.fract() == 0.0 && (1.0..=60_000.0).contains(&ms) => {
                Some(Duration::from_millis(ms as u64))
            }
            Some(ms) => {
                return Err(to_js(&QuicError::InvalidConfig(format!(
                    "deadlineMs must be a whole number in 1..=60000 (got {ms})"
                ))))
            }
        };
        let tx = Bytes::copy_from_slice(tx);
        let (deferred, promise) = env.create_deferred().map_err(internal)?;
        let dispatched = match budget {
            Some(budget) => client.dispatch_by(&targets.addrs, tx, budget),
            None => client.dispatch(&targets.addrs, tx),
        };
        // Gathered on the first sends' thread, as they are written: the answer does not wait for
        // the shared runtime's thread (busy with rebroadcast rounds, or waiting for a CPU).
        quic::first_runtime().spawn(async move {
            let first = dispatched.first_written().await;
            let target = first
                .written
                .as_ref()
                .map_or(Either::B(Null), |o| Either::A(targets.name(o.addr)));
            let failures: Vec<SendResult> = first
                .failures
                .into_iter()
                .map(|o| to_send_result((targets.name(o.addr), o)))
                .collect();
            let elapsed_us = first.elapsed_us as f64;
            deferred.resolve(move |_| {
                Ok(FirstSend {
                    target,
                    elapsed_us,
                    failures,
                })
            });
        });
        Ok(promise)
    }

    /// Every transaction of `txs` (a rebroadcast round) to every target, queued at once in the
    /// order given. Resolves when every outcome is known with one outcome word per
    /// (transaction, target), `result[i * targets.length + t]` for `txs[i]` to `targets[t]`:
    /// low byte 1 if it was written, else 2 + the reason's index in `sendOutcomeReasons()`;
    /// high byte the validator's close code + 1 behind a failure (capped at 255), 0 for none.
    /// (Every outcome is also counted for `drainOutcomes`.) Every transaction and target is
    /// checked before anything is queued; throws `QUIC_TX_EMPTY` / `QUIC_TX_TOO_LARGE` naming
    /// the index.
    #[napi(ts_return_type = "Promise<Uint16Array>")]
    pub fn send_many<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string[] | TpuTargets")] targets: Targets<'env>,
        txs: Vec<Uint8Array>,
    ) -> Result<Object<'env>, JsCode> {
        let client = self.client()?;
        for (i, tx) in txs.iter().enumerate() {
            check_tx(tx, Some(i))?;
        }
        let addrs = parse_targets(targets)?.addrs;
        // Copied once, here, on the JS thread: nothing JavaScript owns crosses to the runtime.
        let txs: Vec<Bytes> = txs.iter().map(|tx| Bytes::copy_from_slice(tx)).collect();
        let (deferred, promise) = env.create_deferred().map_err(internal)?;
        let dispatched = client.dispatch_batch(&addrs, &txs);
        runtime().spawn(async move {
            let words: Vec<u16> = dispatched
                .outcomes()
                .await
                .iter()
                .map(quic::SendOutcome::word)
                .collect();
            deferred.resolve(move |_| Ok(Uint16Array::new(words)));
        });
        Ok(promise)
    }

    /// Counts of every send outcome per target and reason (`ok` or the failure reason) since
    /// the last call, from every send path of this process's client for the identity (`send`,
    /// `sendFirst` including outcomes after it resolved, `sendMany`), resetting them. Targets
    /// and reasons with no outcome are left out.
    #[napi]
    pub fn drain_outcomes(&self) -> Result<Vec<OutcomeCount>, JsCode> {
        Ok(self
            .client()?
            .drain_outcomes()
            .into_iter()
            .map(|c| OutcomeCount {
                target: c.addr.to_string(),
                reason: c.reason.map_or("ok", quic::FailReason::as_str).to_owned(),
                count: c.count as f64,
            })
            .collect())
    }

    /// Open connections to `targets` ahead of the first send; returns at once.
    #[napi]
    pub fn prewarm(
        &self,
        #[napi(ts_arg_type = "string[] | TpuTargets")] targets: Targets<'_>,
    ) -> Result<(), JsCode> {
        let client = self.client()?;
        client.prewarm(&parse_targets(targets)?.addrs);
        Ok(())
    }

    /// Connection state and counters of every validator this process's client has reached.
    #[napi]
    pub fn peer_stats(&self) -> Result<Vec<PeerStats>, JsCode> {
        Ok(self
            .client()?
            .peer_stats()
            .into_iter()
            .map(to_peer_stats)
            .collect())
    }

    /// Give up this handle. The shared client closes when the process's last handle for the
    /// identity is closed (or garbage-collected): connections linger until what was written is
    /// acknowledged, at most 2 s. Closing twice does nothing.
    #[napi]
    pub fn close(&mut self) {
        self.inner = None;
    }
}

fn to_send_result((target, o): (String, quic::SendOutcome)) -> SendResult {
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

fn to_peer_stats(p: quic::PeerStats) -> PeerStats {
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

/// Worker threads of the process-wide QUIC runtime (1..=64; default 1), set before it starts:
/// before the first `QuicClient` or `QuicServer` of the process. Afterwards only the count it
/// runs with is accepted (`QUIC_INVALID_OPTION` otherwise, naming it).
#[napi]
pub fn set_quic_threads(threads: u32) -> Result<(), JsCode> {
    quic::set_runtime_threads(threads as usize).map_err(|e| to_js(&e))
}

/// Start the first sends' own QUIC thread (`landfall-first`) with niceness `nice` (-20..=19;
/// 0 leaves it as the process's) and say what it got: `{ nice }`, or `{ error }` when the OS
/// refused (lowering it needs `CAP_SYS_NICE`; the thread then runs at the process's priority).
/// A client's first send starts that thread too, with -10, so call this before the first
/// `QuicClient` sends; afterwards only the value it started with is accepted (the result it got
/// is returned again), anything else is `QUIC_INVALID_OPTION`.
#[napi]
pub fn set_quic_first_send_nice(nice: i32) -> Result<ThreadPriority, JsCode> {
    quic::start_first_sends(nice)
        .map(priority_of)
        .map_err(|e| to_js(&e))
}

#[napi]
pub fn quic_first_send_priority() -> Option<ThreadPriority> {
    quic::first_send_priority().map(priority_of)
}

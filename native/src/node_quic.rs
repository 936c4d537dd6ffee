//! The napi layer of the QUIC TPU endpoint (`crate::quic`): `QuicClient` and `QuicServer` for
//! JavaScript. Every argument is checked and converted to owned Rust data here, before anything
//! crosses to the QUIC runtime's threads; bad input throws an error with a stable `code`
//! (`QUIC_INVALID_ADDRESS`, `QUIC_INVALID_IDENTITY`, `QUIC_INVALID_OPTION`, `QUIC_TX_EMPTY`,
//! `QUIC_TX_TOO_LARGE`, `QUIC_CLOSED`, `QUIC_BIND_FAILED`, `QUIC_TLS`, `QUIC_INTERNAL`).
//!
//! Promises are settled from the runtime's threads through napi deferreds; received
//! transactions reach JavaScript through a threadsafe function called non-blocking, so the QUIC
//! runtime never waits on the event loop.

use crate::base58;
use crate::node::JsCode;
use crate::quic::{self, runtime, QuicError, MAX_TX_SIZE};
use bytes::Bytes;
use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi_derive::napi;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// The one construction of a thrown QUIC error.
fn fail(code: &'static str, message: impl Into<String>) -> napi::Error<JsCode> {
    napi::Error::new(JsCode(code), message.into())
}

fn quic_error(e: &QuicError) -> napi::Error<JsCode> {
    fail(e.code(), e.to_string())
}

fn internal(e: napi::Error) -> napi::Error<JsCode> {
    fail("QUIC_INTERNAL", e.reason.clone())
}

fn parse_addr(text: &str) -> Result<SocketAddr, JsCode> {
    text.parse()
        .map_err(|_| fail("QUIC_INVALID_ADDRESS", format!("`{text}` is not an \"ip:port\" socket address")))
}

fn parse_addrs(texts: &[String]) -> Result<Vec<SocketAddr>, JsCode> {
    texts.iter().map(|t| parse_addr(t)).collect()
}

/// The one check of a transaction's size before it is queued; `index` names it in a batch.
fn check_tx(tx: &[u8], index: Option<usize>) -> Result<(), JsCode> {
    let which = index.map_or_else(|| "transaction".to_owned(), |i| format!("transaction {i}"));
    if tx.is_empty() {
        return Err(fail("QUIC_TX_EMPTY", format!("{which} is empty")));
    }
    if tx.len() > MAX_TX_SIZE {
        return Err(fail("QUIC_TX_TOO_LARGE", format!("{which} is {} bytes, more than {MAX_TX_SIZE}", tx.len())));
    }
    Ok(())
}

fn parse_seed(identity: &[u8]) -> Result<[u8; 32], JsCode> {
    identity.try_into().map_err(|_| {
        fail(
            "QUIC_INVALID_IDENTITY",
            format!("identity must be the 32-byte ed25519 secret seed (got {} bytes)", identity.len()),
        )
    })
}

/// An optional JS number as a whole number in `0..=max`, or `default` when absent.
fn whole(name: &str, value: Option<f64>, default: u64, max: u64) -> Result<u64, JsCode> {
    let Some(v) = value else { return Ok(default) };
    if v.is_finite() && v.fract() == 0.0 && (0.0..=max as f64).contains(&v) {
        Ok(v as u64)
    } else {
        Err(quic_error(&QuicError::InvalidConfig(format!("{name} must be a whole number in 0..={max} (got {v})"))))
    }
}

/// An optional millisecond option as a Duration (range checks are the config's own).
fn millis(name: &str, value: Option<f64>, default: Duration) -> Result<Duration, JsCode> {
    let ms = whole(name, value, u64::try_from(default.as_millis()).unwrap_or(u64::MAX), 3_600_000)?;
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
            max_queue_per_peer: whole("maxQueuePerPeer", opts.max_queue_per_peer, d.max_queue_per_peer as u64, 1_000_000)? as usize,
            idle_timeout,
            keep_alive,
            alive_window: millis("aliveWindowMs", opts.alive_window_ms, (keep_alive * 3 / 2).min(idle_timeout))?,
            handshake_timeout: millis("handshakeTimeoutMs", opts.handshake_timeout_ms, d.handshake_timeout)?,
            send_timeout: millis("sendTimeoutMs", opts.send_timeout_ms, d.send_timeout)?,
            backoff_base: millis("backoffBaseMs", opts.backoff_base_ms, d.backoff_base)?,
            backoff_max: millis("backoffMaxMs", opts.backoff_max_ms, d.backoff_max)?,
            unused_close: d.unused_close,
        };
        let inner = quic::QuicClient::new(&seed, cfg).map_err(|e| quic_error(&e))?;
        let identity = base58::encode(&inner.identity());
        Ok(QuicClient { inner: Some(inner), identity })
    }

    /// The identity public key, base58.
    #[napi(getter)]
    pub fn identity(&self) -> String {
        self.identity.clone()
    }

    fn client(&self) -> Result<&Arc<quic::QuicClient>, JsCode> {
        self.inner.as_ref().ok_or_else(|| fail("QUIC_CLOSED", "this QuicClient was closed"))
    }

    /// Send one transaction (1..=1232 bytes) to every target ("ip:port") at once, one
    /// unidirectional stream each. Resolves with one result per target, in order; never
    /// rejects for network failures (they are results). Throws for bad arguments.
    #[napi(ts_return_type = "Promise<SendResult[]>")]
    pub fn send<'env>(&self, env: &'env Env, targets: Vec<String>, tx: &[u8]) -> Result<Object<'env>, JsCode> {
        let client = self.client()?;
        check_tx(tx, None)?;
        let addrs = parse_addrs(&targets)?;
        let tx = Bytes::copy_from_slice(tx);
        let (deferred, promise) = env.create_deferred().map_err(internal)?;
        // Queued here, on the JS thread: the writes start without waiting for a runtime task.
        let dispatched = client.dispatch(&addrs, tx);
        runtime().spawn(async move {
            let outcomes = dispatched.outcomes().await;
            deferred.resolve(move |_| Ok(targets.into_iter().zip(outcomes).map(to_send_result).collect::<Vec<_>>()));
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
        targets: Vec<String>,
        tx: &[u8],
        deadline_ms: Option<f64>,
    ) -> Result<Object<'env>, JsCode> {
        let client = self.client()?;
        check_tx(tx, None)?;
        let addrs = parse_addrs(&targets)?;
        let budget = match deadline_ms {
            None => None,
            Some(ms) if ms.is_finite() && ms.fract() == 0.0 && (1.0..=60_000.0).contains(&ms) => Some(Duration::from_millis(ms as u64)),
            Some(ms) => return Err(quic_error(&QuicError::InvalidConfig(format!("deadlineMs must be a whole number in 1..=60000 (got {ms})")))),
        };
        let tx = Bytes::copy_from_slice(tx);
        let (deferred, promise) = env.create_deferred().map_err(internal)?;
        let dispatched = match budget {
            Some(budget) => client.dispatch_by(&addrs, tx, budget),
            None => client.dispatch(&addrs, tx),
        };
        runtime().spawn(async move {
            let first = dispatched.first_written().await;
            // Name outcomes by the target text given (two spellings of one address stay apart).
            let name = move |o: &quic::SendOutcome| {
                addrs.iter().position(|a| *a == o.addr).map_or_else(|| o.addr.to_string(), |i| targets[i].clone())
            };
            let target = first.written.as_ref().map_or(Either::B(Null), |o| Either::A(name(o)));
            let failures: Vec<SendResult> = first.failures.into_iter().map(|o| to_send_result((name(&o), o))).collect();
            let elapsed_us = first.elapsed_us as f64;
            deferred.resolve(move |_| Ok(FirstSend { target, elapsed_us, failures }));
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
    pub fn send_many<'env>(&self, env: &'env Env, targets: Vec<String>, txs: Vec<Uint8Array>) -> Result<Object<'env>, JsCode> {
        let client = self.client()?;
        for (i, tx) in txs.iter().enumerate() {
            check_tx(tx, Some(i))?;
        }
        let addrs = parse_addrs(&targets)?;
        // Copied once, here, on the JS thread: nothing JavaScript owns crosses to the runtime.
        let txs: Vec<Bytes> = txs.iter().map(|tx| Bytes::copy_from_slice(tx)).collect();
        let (deferred, promise) = env.create_deferred().map_err(internal)?;
        let dispatched = client.dispatch_batch(&addrs, &txs);
        runtime().spawn(async move {
            let words: Vec<u16> = dispatched.outcomes().await.iter().map(quic::SendOutcome::word).collect();
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
    pub fn prewarm(&self, targets: Vec<String>) -> Result<(), JsCode> {
        let client = self.client()?;
        client.prewarm(&parse_addrs(&targets)?);
        Ok(())
    }

    /// Connection state and counters of every validator this process's client has reached.
    #[napi]
    pub fn peer_stats(&self) -> Result<Vec<PeerStats>, JsCode> {
        Ok(self.client()?.peer_stats().into_iter().map(to_peer_stats).collect())
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
    }
}

// ---- server ------------------------------------------------------------------------------

/// Options of `new QuicServer(...)`. Limits default to what an Agave validator applies to an
/// unstaked sender, per peer IP.
#[napi(object)]
pub struct QuicServerOptions {
    /// "ip:port" to bind; port 0 picks a free port.
    pub bind: String,
    /// The server's 32-byte ed25519 secret seed.
    pub identity: Uint8Array,
    /// Streams a peer may start per 100 ms before its streams wait (default 20; 0 = no limit).
    #[napi(js_name = "maxStreamsPer100ms")]
    pub max_streams_per_100ms: Option<f64>,
    /// Connections a peer may hold; one more is closed with code 4 (default 8).
    pub max_connections_per_peer: Option<f64>,
    /// New connections a peer may open per minute; one more is closed with code 2 (default 8;
    /// 0 = no limit).
    pub max_connections_per_ip_per_minute: Option<f64>,
    /// Idle timeout, ms (default 60 000; a client's lower one wins).
    pub idle_timeout_ms: Option<f64>,
    /// Handshake timeout, ms (default 2000).
    pub handshake_timeout_ms: Option<f64>,
}

/// One received transaction.
#[napi(object)]
pub struct ReceivedTransaction {
    pub bytes: Buffer,
    /// The sender's identity (base58) from its certificate, or null.
    #[napi(ts_type = "string | null")]
    pub peer: Either<String, Null>,
    /// The sender's "ip:port".
    pub remote_addr: String,
    /// When the stream's end arrived: ms since the Unix epoch (fractional), before any
    /// injected delay.
    pub arrival_ms: f64,
}

/// Faults to inject. `setFaults` replaces them all: a field left out (or null) is off.
#[napi(object)]
pub struct QuicFaults {
    /// Percentage (0–100) of UDP datagrams dropped, both directions.
    pub packet_loss_pct: Option<f64>,
    /// Delay before each received transaction is handed over, ms.
    pub delay_ms: Option<f64>,
    /// Accept each new connection's handshake, then close it with this code, reason "refused".
    #[napi(ts_type = "number | null")]
    pub refuse_code: Option<f64>,
}

/// Server counters since it was bound.
#[napi(object)]
pub struct ServerStats {
    pub connections_open: f64,
    pub connections_accepted: f64,
    pub accepted_txs: f64,
    pub rejected_oversize: f64,
    pub rejected_empty: f64,
    pub throttled: f64,
    pub refused: f64,
    pub rate_limited: f64,
    pub too_many: f64,
    pub stream_errors: f64,
    pub datagrams_dropped: f64,
}

/// A QUIC TPU server that treats senders as an Agave validator treats unstaked ones.
#[napi]
pub struct QuicServer {
    inner: Arc<quic::QuicServer>,
    local_addr: String,
    identity: String,
}

#[napi]
impl QuicServer {
    /// Bind and start accepting. `onTransaction` is called on this thread for every received
    /// transaction; an exception it throws is an uncaught exception, as in any event listener.
    /// Until `close()`, the server keeps the process alive, as an open `net.Server` does.
    #[napi(constructor)]
    pub fn new(opts: QuicServerOptions, on_transaction: Function<ReceivedTransaction, ()>) -> Result<Self, JsCode> {
        let seed = parse_seed(&opts.identity)?;
        let d = quic::ServerConfig::default();
        let cfg = quic::ServerConfig {
            bind: parse_addr(&opts.bind)?,
            max_streams_per_100ms: whole("maxStreamsPer100ms", opts.max_streams_per_100ms, d.max_streams_per_100ms, 1_000_000)?,
            max_connections_per_peer: whole("maxConnectionsPerPeer", opts.max_connections_per_peer, d.max_connections_per_peer as u64, 65_536)?
                as usize,
            max_connections_per_ip_per_minute: whole(
                "maxConnectionsPerIpPerMinute",
                opts.max_connections_per_ip_per_minute,
                d.max_connections_per_ip_per_minute,
                1_000_000,
            )?,
            idle_timeout: millis("idleTimeoutMs", opts.idle_timeout_ms, d.idle_timeout)?,
            handshake_timeout: millis("handshakeTimeoutMs", opts.handshake_timeout_ms, d.handshake_timeout)?,
            stream_read_timeout: d.stream_read_timeout,
        };
        let callback = on_transaction
            .build_threadsafe_function::<quic::Received>()
            .build_callback(|ctx| Ok(to_received(ctx.value)))
            .map_err(internal)?;
        let (inner, mut received) = quic::QuicServer::bind(&seed, cfg).map_err(|e| quic_error(&e))?;
        // Owns the threadsafe function: it ends, and releases it (so it no longer holds the
        // event loop open), when `close()` ends the channel.
        runtime().spawn(async move {
            while let Some(tx) = received.recv().await {
                callback.call(tx, ThreadsafeFunctionCallMode::NonBlocking);
            }
        });
        Ok(QuicServer {
            local_addr: inner.local_addr().to_string(),
            identity: base58::encode(&inner.identity()),
            inner: Arc::new(inner),
        })
    }

    /// The bound "ip:port" (with the real port when bound to port 0).
    #[napi(getter)]
    pub fn local_addr(&self) -> String {
        self.local_addr.clone()
    }

    /// The server's identity public key, base58.
    #[napi(getter)]
    pub fn identity(&self) -> String {
        self.identity.clone()
    }

    /// Replace the injected faults (see `QuicFaults`); applies at once.
    #[napi]
    pub fn set_faults(&self, faults: QuicFaults) -> Result<(), JsCode> {
        let loss = faults.packet_loss_pct.unwrap_or(0.0);
        if !(0.0..=100.0).contains(&loss) {
            return Err(quic_error(&QuicError::InvalidConfig(format!("packetLossPct must be in 0..=100 (got {loss})"))));
        }
        let refuse_code = match faults.refuse_code {
            None => None,
            Some(c) => Some(whole("refuseCode", Some(c), 0, u64::from(u32::MAX))? as u32),
        };
        self.inner.set_faults(quic::Faults {
            packet_loss_pct: loss,
            delay_ms: whole("delayMs", faults.delay_ms, 0, 3_600_000)?,
            refuse_code,
        });
        Ok(())
    }

    #[napi]
    pub fn stats(&self) -> ServerStats {
        let s = self.inner.stats();
        ServerStats {
            connections_open: s.connections_open as f64,
            connections_accepted: s.connections_accepted as f64,
            accepted_txs: s.accepted_txs as f64,
            rejected_oversize: s.rejected_oversize as f64,
            rejected_empty: s.rejected_empty as f64,
            throttled: s.throttled as f64,
            refused: s.refused as f64,
            rate_limited: s.rate_limited as f64,
            too_many: s.too_many as f64,
            stream_errors: s.stream_errors as f64,
            datagrams_dropped: s.datagrams_dropped as f64,
        }
    }

    /// Close every connection (code 0), stop delivering, and resolve once the port is free
    /// again. `stats()` keeps working; closing twice resolves at once.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> Result<Object<'env>, JsCode> {
        let (deferred, promise) = env.create_deferred().map_err(internal)?;
        let server = self.inner.clone();
        runtime().spawn(async move {
            server.close().await;
            deferred.resolve(|_| Ok(()));
        });
        Ok(promise)
    }
}

fn to_received(r: quic::Received) -> ReceivedTransaction {
    ReceivedTransaction {
        bytes: Buffer::from(r.bytes.to_vec()),
        peer: match r.peer {
            Some(key) => Either::A(base58::encode(&key)),
            None => Either::B(Null),
        },
        remote_addr: r.remote_addr.to_string(),
        arrival_ms: r.arrival_ms,
    }
}

/// The failure reasons of `sendMany`'s outcome words, by index (its low byte minus 2): the
/// same strings `SendResult.reason` and `drainOutcomes` use.
#[napi]
pub fn send_outcome_reasons() -> Vec<&'static str> {
    quic::FailReason::ALL.iter().map(|r| r.as_str()).collect()
}

//! The napi layer of the QUIC TPU server (`crate::quic::QuicServer`): the stand-in validator of
//! the local cluster and the tests. Argument checks are the client's (`node_quic`); received
//! transactions reach JavaScript through a threadsafe function called non-blocking, so the QUIC
//! runtime never waits on the event loop.

use crate::base58;
use crate::error::{internal, to_js, JsCode};
use crate::node_quic::args::{millis, parse_addr, parse_seed, whole};
use crate::quic::{self, runtime, QuicError};
use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi_derive::napi;
use std::sync::Arc;

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
    pub fn new(
        opts: QuicServerOptions,
        on_transaction: Function<ReceivedTransaction, ()>,
    ) -> Result<Self, JsCode> {
        let seed = parse_seed(&opts.identity)?;
        let d = quic::ServerConfig::default();
        let cfg = quic::ServerConfig {
            bind: parse_addr(&opts.bind)?,
            max_streams_per_100ms: whole(
                "maxStreamsPer100ms",
                opts.max_streams_per_100ms,
                d.max_streams_per_100ms,
                1_000_000,
            )?,
            max_connections_per_peer: whole(
                "maxConnectionsPerPeer",
                opts.max_connections_per_peer,
                d.max_connections_per_peer as u64,
                65_536,
            )? as usize,
            max_connections_per_ip_per_minute: whole(
                "maxConnectionsPerIpPerMinute",
                opts.max_connections_per_ip_per_minute,
                d.max_connections_per_ip_per_minute,
                1_000_000,
            )?,
            idle_timeout: millis("idleTimeoutMs", opts.idle_timeout_ms, d.idle_timeout)?,
            handshake_timeout: millis(
                "handshakeTimeoutMs",
                opts.handshake_timeout_ms,
                d.handshake_timeout,
            )?,
            stream_read_timeout: d.stream_read_timeout,
        };
        let callback = on_transaction
            .build_threadsafe_function::<quic::Received>()
            .build_callback(|ctx| Ok(to_received(ctx.value)))
            .map_err(internal)?;
        let (inner, mut received) = quic::QuicServer::bind(&seed, cfg).map_err(|e| to_js(&e))?;
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
            return Err(to_js(&QuicError::InvalidConfig(format!(
                "packetLossPct must be in 0..=100 (got {loss})"
            ))));
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

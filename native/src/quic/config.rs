//! Client settings and the quinn configuration they make.

use super::error::{check_range, QuicError};
use super::tls;
use quinn::{IdleTimeout, TransportConfig, VarInt};
use std::sync::Arc;
use std::time::Duration;

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
    pub(super) fn validate(&self) -> Result<(), QuicError> {
        let ms = |d: Duration| d.as_millis();
        check_range("maxQueuePerPeer", self.max_queue_per_peer, 1..=1_000_000)?;
        check_range("idleTimeoutMs", ms(self.idle_timeout), 2..=10_000)?;
        check_range(
            "keepAliveMs",
            ms(self.keep_alive),
            1..=ms(self.idle_timeout) - 1,
        )?;
        check_range(
            "aliveWindowMs",
            ms(self.alive_window),
            ms(self.keep_alive) + 1..=ms(self.idle_timeout),
        )?;
        check_range("handshakeTimeoutMs", ms(self.handshake_timeout), 1..=60_000)?;
        check_range("sendTimeoutMs", ms(self.send_timeout), 1..=60_000)?;
        check_range("backoffBaseMs", ms(self.backoff_base), 1..=60_000)?;
        check_range(
            "backoffMaxMs",
            ms(self.backoff_max),
            ms(self.backoff_base)..=600_000,
        )?;
        check_range("unusedCloseMs", ms(self.unused_close), 1..=3_600_000)
    }

    pub(super) fn transport(&self) -> Result<TransportConfig, QuicError> {
        let mut t = TransportConfig::default();
        let idle = IdleTimeout::try_from(self.idle_timeout)
            .map_err(|_| QuicError::InvalidConfig("idleTimeoutMs too large".into()))?;
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
/// raw streams. Connect with the server name [`server_name`](super::tls::server_name) gives.
pub fn tpu_client_config(
    seed: &[u8; 32],
    cfg: &ClientConfig,
) -> Result<quinn::ClientConfig, QuicError> {
    cfg.validate()?;
    let mut quinn = quinn::ClientConfig::new(Arc::new(tls::client_crypto(seed)?));
    quinn.transport_config(Arc::new(cfg.transport()?));
    Ok(quinn)
}

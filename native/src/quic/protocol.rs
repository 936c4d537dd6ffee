//! What the TPU protocol fixes: the ALPN id, the largest transaction, Agave's close codes.

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

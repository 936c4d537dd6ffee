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

// The layers, each naming only the ones below it (so there are no cycles; this file only
// declares and re-exports). `test/unit/native-layers.test.ts` holds the code to this list:
//   flights     the rebroadcast flight table: a slot's round and its outcomes, the traces' rounds
//   first_rounds  the hot path's first send: round 1 to the current route, round 2 if it wrote nothing
//   client      QuicClient: the registry per identity, a queue and a worker per peer
//   server      QuicServer: the stand-in validator (beside the client, sharing nothing of it)
//   dispatched  awaiting what was queued: every outcome, or the first written one
//   worker      a peer's two tasks: take the queue, write, count
//   lanes       a peer's shared state: acquire a connection, dial in a task, watch for close
//   dialer      one handshake; knows nothing of lanes
//   peer        a peer's state machine (Idle, Dialing, Live, Backoff, Shut), pure
//   unacked, gate, outcome, config, heard, lossy   leaves: written-stream window, deadline,
//               results, settings, when a peer was last heard from, a lossy socket for tests
//   tls, runtime            certificates; the process-wide runtimes and the lock helper
//   error, protocol         QuicError and option checks; ALPN, sizes, close codes
mod client;
mod config;
mod dialer;
mod dispatched;
mod error;
mod first_rounds;
mod flights;
mod gate;
mod heard;
mod lanes;
mod lossy;
mod outcome;
mod peer;
mod protocol;
mod runtime;
mod server;
mod tls;
mod unacked;
mod worker;

pub use client::QuicClient;
pub use config::{tpu_client_config, ClientConfig};
pub use dispatched::Dispatched;
pub use error::QuicError;
pub use first_rounds::{round_budget, FirstRounds, FirstRoutes, Round};
pub use flights::{
    monotonic_us, round_offset, span_of, Attempt, Counters, FlightSpec, Flights, Leader, Resumed,
    RoundReport, Route, TraceRounds, LANDED_PAUSE_SLOTS, UNTIL_EXPIRY_GAP,
};
pub use outcome::{
    FailReason, FirstSend, OutcomeCount, PeerStats, SendOutcome, WORD_FAILED_BASE, WORD_MAX_CODE,
    WORD_WRITTEN,
};
pub use protocol::{close, ALPN_TPU, MAX_TX_SIZE};
pub use runtime::{
    first_runtime, first_send_priority, runtime, set_first_send_nice, set_runtime_threads,
    start_first_sends, DEFAULT_FIRST_SEND_NICE, DEFAULT_RUNTIME_THREADS,
};
pub use server::{Faults, QuicServer, Received, ServerConfig, ServerStats};
pub use tls::{identity_pubkey, peer_pubkey_from_cert, self_signed_identity, server_name};

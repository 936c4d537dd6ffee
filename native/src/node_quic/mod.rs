//! The napi layer of the QUIC TPU client (`crate::quic::QuicClient`) for JavaScript, and the
//! argument checks the server's layer (`node_quic_server`) shares. Every argument is checked and converted to owned Rust data here, before anything
//! crosses to the QUIC runtime's threads; bad input throws an error with a stable `code`
//! (`QUIC_INVALID_ADDRESS`, `QUIC_INVALID_IDENTITY`, `QUIC_INVALID_OPTION`, `QUIC_TX_EMPTY`,
//! `QUIC_TX_TOO_LARGE`, `QUIC_CLOSED`, `QUIC_BIND_FAILED`, `QUIC_TLS`, `QUIC_INTERNAL`).
//!
//! Promises are settled from the runtime's threads through napi deferreds, so the QUIC runtime
//! never waits on the event loop. Targets are "ip:port" strings, parsed on every call, or a
//! `TpuTargets` handle parsed once (the hot path's: see `targets.rs`).

// One file per concern, each naming only the ones below it (`test/unit/native-layers.test.ts`):
//   flights   the RebroadcastFlights class: the rebroadcast rounds' flight table
//   first     QuicClient.sendFirstRoute: the hot path's first send, both rounds, in one call
//   client    the QuicClient class: its options and its send calls
//   results   what the sends resolve with, and their conversion from the QUIC layer's
//   targets   "ip:port" targets, as strings or parsed once in a TpuTargets handle
//   threads   the QUIC runtime's threads: how many, the first sends' priority
//   args      the checks of every argument, shared with `node_quic_server`
pub(crate) mod args;
mod client;
mod first;
mod flights;
mod results;
mod targets;
mod threads;

// For the send's one call (`node_admit_key.rs`), which also makes the first send.
pub(crate) use client::QuicClient;
pub(crate) use first::FirstRouteBudget;
pub(crate) use targets::TpuTargets;

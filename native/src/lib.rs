//! Landfall native core.
//!
//! Pure-Rust modules (`parse`, `verify`, `tip`, `bucket`, `inspect`, `quic`, `record`, `keys`,
//! `generations`, `admission`, and the process-wide shared state `overlay`, `registry`, `usage`,
//! `handoff`, `known`, `in_flight`) know nothing of Node; the `node`, `node_record`, `node_keys`,
//! `node_admission`, `node_admit_key`, `node_handoff`, `node_known`, `node_quic` and
//! `node_quic_server` modules map them to JavaScript and are the only places that do, each error
//! through `error::to_js`.
//!
//! The modules' layers, top first; each names only the ones below it (so there are no cycles),
//! and `test/unit/native-layers.test.ts` holds the code to this list (the folders' own lists are
//! in `quic/mod.rs` and `node_quic/mod.rs`):
//!   `node_quic_server`, `node_admit_key` → `node_quic`, `node_admission` → `node`,
//!   `node_record`, `node_keys`,
//!   `node_handoff`, `node_known` → `inspect`, `usage`, `quic`, `keys` → `verify`, `tip`,
//!   `registry`, `overlay`, `admission`, `handoff` →
//!   `parse`, `bucket`, `record`, `generations`, `known`, `in_flight` → `error`, `base58`, `priority`, `memory`.
//! `error` is the bottom: each error type above it implements its `Coded` where it is defined.
//!
//! `npm test` runs clippy with warnings as errors and `cargo fmt --check` (`test:lint`).
#![deny(clippy::all)]

pub mod admission;
pub mod base58;
pub mod bucket;
pub mod error;
pub mod generations;
pub mod handoff;
pub mod in_flight;
pub mod inspect;
pub mod keys;
pub mod known;
pub mod memory;
pub mod overlay;
pub mod parse;
pub mod priority;
pub mod quic;
pub mod record;
pub mod registry;
pub mod tip;
pub mod usage;
pub mod verify;

#[cfg(feature = "node")]
mod node;
#[cfg(feature = "node")]
mod node_admission;
#[cfg(feature = "node")]
mod node_admit_key;
#[cfg(feature = "node")]
mod node_handoff;
#[cfg(feature = "node")]
mod node_keys;
#[cfg(feature = "node")]
mod node_known;
#[cfg(feature = "node")]
mod node_quic;
#[cfg(feature = "localnet")]
mod node_quic_server;
#[cfg(feature = "node")]
mod node_record;

//! Landfall native core.
//!
//! Pure-Rust modules (`parse`, `verify`, `tip`, `bucket`, `inspect`) know nothing of Node; the
//! `node` module maps them to JavaScript and is the only place that does.
#![deny(clippy::all)]

pub mod base58;
pub mod bucket;
pub mod error;
pub mod inspect;
pub mod parse;
pub mod tip;
pub mod verify;

#[cfg(feature = "node")]
mod node;

//! The checks of the QUIC napi layer's arguments (addresses, identities, sizes, numeric options),
//! each refusing with a stable code; shared with the server's layer (`node_quic_server`).

use crate::error::{to_js, JsCode, Refusal};
use crate::quic::{QuicError, MAX_TX_SIZE};
use napi::bindgen_prelude::*;
use std::net::SocketAddr;
use std::time::Duration;

/// A refusal of the QUIC layer's napi boundary, thrown.
pub(crate) fn fail(code: &'static str, message: impl Into<String>) -> napi::Error<JsCode> {
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

/// The one check of a transaction's size before it is queued; `index` names it in a batch.
pub(crate) fn check_tx(tx: &[u8], index: Option<usize>) -> Result<(), JsCode> {
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

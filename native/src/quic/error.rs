//! Why building a QUIC client or server failed, with the stable code JavaScript sees, and the
//! one check of a numeric option that makes those errors.

use crate::error::Coded;
use std::fmt;

/// Why building a client or server failed. `code()` is the stable code JavaScript sees.
#[derive(Debug)]
pub enum QuicError {
    /// A configuration value is out of range; the text names it.
    InvalidConfig(String),
    /// The UDP socket could not be bound or wrapped.
    Bind(std::io::Error),
    /// rustls refused the generated certificate or configuration (a bug, never bad input).
    Tls(String),
}

impl QuicError {
    pub const fn code(&self) -> &'static str {
        match self {
            QuicError::InvalidConfig(_) => "QUIC_INVALID_OPTION",
            QuicError::Bind(_) => "QUIC_BIND_FAILED",
            QuicError::Tls(_) => "QUIC_TLS",
        }
    }
}

impl fmt::Display for QuicError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QuicError::InvalidConfig(m) => write!(f, "invalid option: {m}"),
            QuicError::Bind(e) => write!(f, "cannot bind UDP socket: {e}"),
            QuicError::Tls(m) => write!(f, "TLS configuration failed: {m}"),
        }
    }
}

impl std::error::Error for QuicError {}

impl Coded for QuicError {
    fn code(&self) -> &'static str {
        QuicError::code(self)
    }
    fn message(&self) -> String {
        self.to_string()
    }
}

/// A check of one numeric option: `Err(InvalidConfig)` naming it when outside `range`.
pub(super) fn check_range<T: PartialOrd + fmt::Display + Copy>(
    name: &str,
    value: T,
    range: std::ops::RangeInclusive<T>,
) -> Result<(), QuicError> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(QuicError::InvalidConfig(format!(
            "{name} must be in {}..={} (got {value})",
            range.start(),
            range.end()
        )))
    }
}

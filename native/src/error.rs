//! Errors of the transaction core, each with a stable code.
//!
//! The codes are part of Landfall's public contract (the transaction codes reach API clients in
//! the `reason` of a 400; the shared-state codes reach the service's own code as a thrown
//! `error.code`), so they never change meaning. `TxError::message` is the one place that renders
//! them.

use std::fmt;

/// Stable error codes. `as_str` is what JavaScript sees in `error.code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    /// The input is not canonical, padded, standard-alphabet base64.
    Base64Invalid,
    /// More than 1232 bytes once decoded (or a base64 text too long to decode to ≤ 1232).
    TooLarge,
    /// The bytes do not frame as a transaction: truncated, bad compact-u16, trailing bytes.
    Malformed,
    /// A versioned message other than v0.
    UnsupportedVersion,
    /// Signature count differs from `num_required_signatures`, or exceeds the static keys.
    SignatureCountMismatch,
    /// Header counts are inconsistent (readonly overlap, no writable fee payer).
    InvalidHeader,
    /// More than 256 accounts (static + lookup).
    TooManyAccounts,
    /// An instruction's program index is out of range or is the fee payer.
    InvalidProgramIndex,
    /// An instruction's account index is out of range.
    InvalidAccountIndex,
    /// An address table lookup with no indexes.
    EmptyLookup,
    /// A required signature is all zeros.
    Unsigned,
    /// A required signature does not verify.
    SignatureInvalid,
    /// Not a valid base58 string of the expected length.
    Base58Invalid,

    // ---- process-wide shared state (`overlay`, `registry`, `usage`): never about a client's
    // transaction, so never rendered into an HTTP reason.
    /// A status-overlay key longer than `overlay::MAX_KEY`.
    OverlayKeyTooLarge,
    /// A status-overlay value longer than `overlay::MAX_VALUE`.
    OverlayValueTooLarge,
    /// Every account slot (`registry::CAPACITY`) is taken; the key got none.
    AccountSlotsFull,
    /// A usage index at or past `registry::CAPACITY`.
    UsageIndexOutOfRange,
    /// A usage count or day that is not a whole number in range.
    UsageInvalidValue,
}

impl Code {
    pub const fn as_str(self) -> &'static str {
        match self {
            Code::Base64Invalid => "BASE64_INVALID",
            Code::TooLarge => "TOO_LARGE",
            Code::Malformed => "MALFORMED",
            Code::UnsupportedVersion => "UNSUPPORTED_VERSION",
            Code::SignatureCountMismatch => "SIGNATURE_COUNT_MISMATCH",
            Code::InvalidHeader => "INVALID_HEADER",
            Code::TooManyAccounts => "TOO_MANY_ACCOUNTS",
            Code::InvalidProgramIndex => "INVALID_PROGRAM_INDEX",
            Code::InvalidAccountIndex => "INVALID_ACCOUNT_INDEX",
            Code::EmptyLookup => "EMPTY_LOOKUP",
            Code::Unsigned => "UNSIGNED",
            Code::SignatureInvalid => "SIGNATURE_INVALID",
            Code::Base58Invalid => "BASE58_INVALID",
            Code::OverlayKeyTooLarge => "OVERLAY_KEY_TOO_LARGE",
            Code::OverlayValueTooLarge => "OVERLAY_VALUE_TOO_LARGE",
            Code::AccountSlotsFull => "ACCOUNT_SLOTS_FULL",
            Code::UsageIndexOutOfRange => "USAGE_INDEX_OUT_OF_RANGE",
            Code::UsageInvalidValue => "USAGE_INVALID_VALUE",
        }
    }
}

/// An error of the transaction core. Cheap to build (no allocation): the human text is rendered
/// only when it crosses to JavaScript.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxError {
    pub code: Code,
    /// Byte offset into the decoded transaction where the problem was found.
    pub offset: Option<u32>,
    /// Index of the signature, instruction or lookup concerned.
    pub index: Option<u32>,
    /// What was expected there, or the detail of the violated rule.
    pub detail: &'static str,
    /// A number that makes the detail precise (a length, a count, a version).
    pub value: Option<u32>,
}

impl TxError {
    pub const fn new(code: Code, detail: &'static str) -> Self {
        TxError {
            code,
            offset: None,
            index: None,
            detail,
            value: None,
        }
    }
    pub const fn at(mut self, offset: usize) -> Self {
        self.offset = Some(offset as u32);
        self
    }
    pub const fn index(mut self, index: usize) -> Self {
        self.index = Some(index as u32);
        self
    }
    pub const fn value(mut self, value: usize) -> Self {
        self.value = Some(value as u32);
        self
    }
    pub(crate) const fn malformed(offset: usize, expected: &'static str) -> Self {
        TxError::new(Code::Malformed, expected).at(offset)
    }

    /// The human-readable message: the single rendering of every error.
    pub fn message(&self) -> String {
        let mut s = String::with_capacity(96);
        match self.code {
            Code::Malformed => {
                s.push_str("malformed transaction: expected ");
                s.push_str(self.detail);
            }
            _ => s.push_str(self.detail),
        }
        if let Some(v) = self.value {
            s.push_str(&format!(" ({v})"));
        }
        if let Some(i) = self.index {
            s.push_str(&format!(" [index {i}]"));
        }
        if let Some(o) = self.offset {
            s.push_str(&format!(" at byte {o}"));
        }
        s
    }
}

impl fmt::Display for TxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message())
    }
}

impl std::error::Error for TxError {}

pub type Result<T> = std::result::Result<T, TxError>;

/// An error on its way to JavaScript: the stable code `error.code` holds and the message. Every
/// error type of the pure-Rust modules implements it, and a refusal made at the napi boundary
/// is a [`Refusal`]; the napi layer turns any of them into a thrown error with one function
/// ([`to_js`]), so a code is never spelt in two places.
pub trait Coded {
    fn code(&self) -> &'static str;
    fn message(&self) -> String;
}

impl Coded for TxError {
    fn code(&self) -> &'static str {
        self.code.as_str()
    }
    fn message(&self) -> String {
        TxError::message(self)
    }
}

/// A refusal decided at the napi boundary (a bad argument, a closed handle), or a failure of
/// napi itself: a code and a message, nothing more to render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: &'static str,
    pub message: String,
}

impl Refusal {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Refusal {
            code,
            message: message.into(),
        }
    }
}

impl Coded for Refusal {
    fn code(&self) -> &'static str {
        self.code
    }
    fn message(&self) -> String {
        self.message.clone()
    }
}

/// A JS error whose `code` property is one of the stable codes above.
#[cfg(feature = "node")]
pub struct JsCode(pub(crate) &'static str);

#[cfg(feature = "node")]
impl AsRef<str> for JsCode {
    fn as_ref(&self) -> &str {
        self.0
    }
}

/// The one mapping from an internal error to a thrown JS error.
#[cfg(feature = "node")]
pub fn to_js(e: &impl Coded) -> napi::Error<JsCode> {
    napi::Error::new(JsCode(e.code()), e.message())
}

/// A failure of napi itself (creating a promise or a threadsafe function): never the caller's
/// input, so it gets the one internal code (named for the QUIC layer, the only one that makes
/// promises and threadsafe functions).
#[cfg(feature = "node")]
pub fn internal(e: napi::Error) -> napi::Error<JsCode> {
    to_js(&Refusal::new("QUIC_INTERNAL", e.reason.clone()))
}

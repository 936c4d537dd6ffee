//! One call for the hot path: decode, frame, verify, find tips — and report everything the
//! service needs so nothing is parsed twice.

use crate::error::{Code, Result, TxError};
use crate::parse::{TxView, Version, PACKET_DATA_SIZE};
use crate::tip::{scan, Scan, TipSet};
use crate::verify::{verify_batch, verify_single};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;

/// Longest base64 text that can decode to ≤ 1232 bytes (padded, 4 chars per 3 bytes).
pub const MAX_BASE64_LEN: usize = PACKET_DATA_SIZE.div_ceil(3) * 4;

/// Facts about one verified transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub signature: [u8; 64],
    pub num_signatures: u8,
    pub fee_payer: [u8; 32],
    pub recent_blockhash: [u8; 32],
    /// Where the first signature and the recent blockhash sit in the wire bytes: the service
    /// keys its records by those bytes, read in place rather than decoded again from base58.
    pub signature_offset: usize,
    pub blockhash_offset: usize,
    pub version: Version,
    pub scan: Scan,
    /// Decoded length in bytes.
    pub len: usize,
}

/// Decode standard, padded base64 into `out`, refusing anything that cannot be a transaction.
pub fn decode_base64(text: &[u8], out: &mut [u8; PACKET_DATA_SIZE]) -> Result<usize> {
    if text.len() > MAX_BASE64_LEN {
        return Err(TxError::new(
            Code::TooLarge,
            "base64 text longer than any 1232-byte transaction",
        )
        .value(text.len()));
    }
    if text.is_empty() {
        return Err(TxError::new(Code::Base64Invalid, "empty transaction"));
    }
    STANDARD.decode_slice(text, out).map_err(|e| {
        let (detail, at) = match e {
            base64::DecodeSliceError::DecodeError(base64::DecodeError::InvalidByte(at, _)) => {
                ("invalid base64 character", Some(at))
            }
            base64::DecodeSliceError::DecodeError(base64::DecodeError::InvalidLength(_)) => {
                ("base64 length is not a multiple of 4", None)
            }
            base64::DecodeSliceError::DecodeError(base64::DecodeError::InvalidLastSymbol(
                at,
                _,
            )) => ("non-canonical final base64 symbol", Some(at)),
            base64::DecodeSliceError::DecodeError(base64::DecodeError::InvalidPadding) => {
                ("invalid base64 padding", None)
            }
            base64::DecodeSliceError::OutputSliceTooSmall => {
                return TxError::new(Code::TooLarge, "transaction larger than 1232 bytes");
            }
        };
        let e = TxError::new(Code::Base64Invalid, detail);
        match at {
            Some(a) => e.index(a),
            None => e,
        }
    })
}

/// Offset of `part` (a slice of `whole`) in `whole`.
fn offset_in(whole: &[u8], part: &[u8]) -> usize {
    part.as_ptr() as usize - whole.as_ptr() as usize
}

fn report(view: &TxView<'_>, tips: &TipSet) -> Report {
    let bytes = view.bytes();
    Report {
        signature_offset: offset_in(bytes, view.signature(0)),
        blockhash_offset: offset_in(bytes, view.recent_blockhash()),
        signature: *view.signature(0),
        num_signatures: view.num_signatures,
        fee_payer: *view.static_key(0),
        recent_blockhash: *view.recent_blockhash(),
        version: view.version,
        scan: scan(view, tips),
        len: view.bytes().len(),
    }
}

/// Frame, verify and scan one wire transaction.
pub fn inspect_bytes(bytes: &[u8], tips: &TipSet) -> Result<Report> {
    let view = TxView::parse(bytes)?;
    verify_single(&view)?;
    Ok(report(&view, tips))
}

/// Frame every transaction, verify all surviving signatures together, scan each.
/// Verdicts are per item and equal to `inspect_bytes` on each.
pub fn inspect_many(txs: &[&[u8]], tips: &TipSet) -> Vec<Result<Report>> {
    let parsed: Vec<Result<TxView<'_>>> = txs.iter().map(|b| TxView::parse(b)).collect();
    let views: Vec<TxView<'_>> = parsed
        .iter()
        .filter_map(|p| p.as_ref().ok().copied())
        .collect();
    let mut verdicts = verify_batch(&views).into_iter();
    parsed
        .iter()
        .map(|p| match p {
            Err(e) => Err(*e),
            Ok(view) => {
                // One verdict per parsed view, in order; a missing one (impossible) must never
                // read as "verified".
                verdicts.next().unwrap_or(Err(TxError::new(
                    Code::SignatureInvalid,
                    "signature not verified",
                )))?;
                Ok(report(view, tips))
            }
        })
        .collect()
}

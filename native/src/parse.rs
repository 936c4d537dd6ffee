//! Solana wire-format transaction parser (legacy and v0), as strict as the validator's own
//! `agave/transaction-view`: the same framing and the same sanitize rules, so a transaction
//! Landfall accepts is one a leader will not discard for its shape.
//!
//! The parser frames the bytes once and records offsets; nothing is copied. All reads are
//! bounds-checked (`get`), so no input can panic.

use crate::error::{Code, Result, TxError};

/// Maximum size of a transaction on the wire (`PACKET_DATA_SIZE`).
pub const PACKET_DATA_SIZE: usize = 1232;
/// Maximum number of accounts a transaction may reference (static + lookup).
pub const MAX_ACCOUNTS: usize = 256;
pub const SIGNATURE_LEN: usize = 64;
pub const PUBKEY_LEN: usize = 32;
pub const HASH_LEN: usize = 32;
/// A versioned message has its top bit set in the first message byte.
const VERSION_PREFIX_MASK: u8 = 0x80;

/// Message version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Legacy,
    V0,
}

/// A framed and sanitized transaction: offsets into the caller's bytes.
#[derive(Debug, Clone, Copy)]
pub struct TxView<'a> {
    bytes: &'a [u8],
    pub num_signatures: u8,
    signatures_offset: u16,
    message_offset: u16,
    pub version: Version,
    pub num_required_signatures: u8,
    pub num_readonly_signed: u8,
    pub num_readonly_unsigned: u8,
    pub num_static_keys: u8,
    static_keys_offset: u16,
    blockhash_offset: u16,
    pub num_instructions: u16,
    instructions_offset: u16,
    pub num_lookups: u8,
    lookups_offset: u16,
    pub num_lookup_writable: u16,
    pub num_lookup_readonly: u16,
}

/// One compiled instruction, borrowed from the transaction bytes.
#[derive(Debug, Clone, Copy)]
pub struct Instruction<'a> {
    pub program_id_index: u8,
    pub accounts: &'a [u8],
    pub data: &'a [u8],
}

/// One address table lookup, borrowed from the transaction bytes.
#[derive(Debug, Clone, Copy)]
pub struct Lookup<'a> {
    pub table: &'a [u8; 32],
    pub writable: &'a [u8],
    pub readonly: &'a [u8],
}

/// Read a compact-u16 (Solana "short vec" length): 1–3 bytes, 7 bits each, minimal encoding
/// only (no zero continuation byte), and the value must fit in 16 bits.
#[inline(always)]
pub fn read_compact_u16(bytes: &[u8], offset: &mut usize) -> Result<u16> {
    let start = *offset;
    let mut value: u32 = 0;
    for i in 0..3 {
        let Some(&byte) = bytes.get(start + i) else {
            return Err(TxError::malformed(
                start + i,
                "a compact-u16 length, found end of input",
            ));
        };
        if i > 0 && byte == 0 {
            return Err(TxError::malformed(
                start + i,
                "a minimally encoded compact-u16",
            ));
        }
        if i == 2 && byte > 0x03 {
            return Err(TxError::malformed(
                start + i,
                "a compact-u16 that fits in 16 bits",
            ));
        }
        value |= u32::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            *offset = start + i + 1;
            return Ok(value as u16);
        }
    }
    // The third byte was ≤ 3, so its continuation bit is clear and the loop returned.
    Err(TxError::malformed(
        start + 2,
        "a compact-u16 of at most 3 bytes",
    ))
}

#[inline(always)]
fn take<'a>(
    bytes: &'a [u8],
    offset: &mut usize,
    len: usize,
    what: &'static str,
) -> Result<&'a [u8]> {
    let start = *offset;
    match bytes.get(start..start.saturating_add(len)) {
        Some(s) => {
            *offset = start + len;
            Ok(s)
        }
        None => Err(TxError::malformed(start, what)),
    }
}

#[inline(always)]
fn byte(bytes: &[u8], offset: &mut usize, what: &'static str) -> Result<u8> {
    let b = *bytes
        .get(*offset)
        .ok_or(TxError::malformed(*offset, what))?;
    *offset += 1;
    Ok(b)
}

impl<'a> TxView<'a> {
    /// Frame and sanitize `bytes` as one transaction. Errors carry the byte offset.
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        if bytes.len() > PACKET_DATA_SIZE {
            return Err(
                TxError::new(Code::TooLarge, "transaction larger than 1232 bytes")
                    .value(bytes.len()),
            );
        }
        let mut off = 0usize;

        // Signatures.
        let num_sigs = read_compact_u16(bytes, &mut off)?;
        // 12 × (64-byte signature + 32-byte key) already exceeds a packet: anything above is
        // unframeable, and the count must fit the u8 header field it is compared with.
        if usize::from(num_sigs) * (SIGNATURE_LEN + PUBKEY_LEN) > PACKET_DATA_SIZE {
            return Err(TxError::malformed(0, "at most 12 signatures").value(num_sigs.into()));
        }
        let signatures_offset = off;
        take(
            bytes,
            &mut off,
            usize::from(num_sigs) * SIGNATURE_LEN,
            "64 bytes per signature",
        )?;

        // Message: optional version prefix, then the header.
        let message_offset = off;
        let first = byte(bytes, &mut off, "a message header")?;
        let (version, num_required_signatures) = if first & VERSION_PREFIX_MASK != 0 {
            let v = first & !VERSION_PREFIX_MASK;
            if v != 0 {
                return Err(
                    TxError::new(Code::UnsupportedVersion, "unsupported message version")
                        .value(v.into())
                        .at(message_offset),
                );
            }
            (Version::V0, byte(bytes, &mut off, "a message header")?)
        } else {
            (Version::Legacy, first)
        };
        let num_readonly_signed = byte(bytes, &mut off, "a message header")?;
        let num_readonly_unsigned = byte(bytes, &mut off, "a message header")?;

        // Static account keys.
        let keys_len_offset = off;
        let num_static_keys = read_compact_u16(bytes, &mut off)?;
        if usize::from(num_static_keys) > MAX_ACCOUNTS {
            return Err(
                TxError::new(Code::TooManyAccounts, "too many static account keys")
                    .value(num_static_keys.into())
                    .at(keys_len_offset),
            );
        }
        let static_keys_offset = off;
        take(
            bytes,
            &mut off,
            usize::from(num_static_keys) * PUBKEY_LEN,
            "32 bytes per account key",
        )?;
        let blockhash_offset = off;
        take(bytes, &mut off, HASH_LEN, "a 32-byte recent blockhash")?;

        // Instructions: frame only here; index rules are checked once lookups are known.
        let num_instructions = read_compact_u16(bytes, &mut off)?;
        let instructions_offset = off;
        for _ in 0..num_instructions {
            byte(bytes, &mut off, "an instruction program index")?;
            let n = read_compact_u16(bytes, &mut off)?;
            take(bytes, &mut off, n.into(), "instruction account indexes")?;
            let n = read_compact_u16(bytes, &mut off)?;
            take(bytes, &mut off, n.into(), "instruction data")?;
        }

        // Address table lookups (v0 only).
        let mut num_lookups = 0u16;
        let lookups_offset = off;
        let mut lookups_start = off;
        let (mut w, mut r) = (0u16, 0u16);
        if version == Version::V0 {
            num_lookups = read_compact_u16(bytes, &mut off)?;
            lookups_start = off;
            for i in 0..num_lookups {
                let at = off;
                take(
                    bytes,
                    &mut off,
                    PUBKEY_LEN,
                    "a 32-byte lookup table address",
                )?;
                let nw = read_compact_u16(bytes, &mut off)?;
                take(bytes, &mut off, nw.into(), "lookup writable indexes")?;
                let nr = read_compact_u16(bytes, &mut off)?;
                take(bytes, &mut off, nr.into(), "lookup readonly indexes")?;
                if nw == 0 && nr == 0 {
                    return Err(TxError::new(
                        Code::EmptyLookup,
                        "address table lookup with no indexes",
                    )
                    .index(i.into())
                    .at(at));
                }
                w = w.saturating_add(nw);
                r = r.saturating_add(nr);
            }
        }
        let _ = lookups_offset;

        if off != bytes.len() {
            return Err(
                TxError::malformed(off, "end of transaction, found trailing bytes")
                    .value(bytes.len() - off),
            );
        }

        // Sanitize, in the validator's order.
        if num_sigs != u16::from(num_required_signatures) {
            return Err(TxError::new(
                Code::SignatureCountMismatch,
                "signature count differs from the header's num_required_signatures",
            )
            .value(num_sigs.into()));
        }
        if num_static_keys < num_sigs {
            return Err(TxError::new(
                Code::SignatureCountMismatch,
                "fewer static account keys than signatures",
            )
            .value(num_static_keys.into()));
        }
        let num_static = num_static_keys as usize;
        if usize::from(num_readonly_unsigned) > num_static - usize::from(num_required_signatures) {
            return Err(TxError::new(
                Code::InvalidHeader,
                "readonly unsigned accounts overlap the signers",
            ));
        }
        if num_readonly_signed >= num_required_signatures {
            return Err(TxError::new(Code::InvalidHeader, "no writable fee payer"));
        }
        let total_accounts = num_static + usize::from(w) + usize::from(r);
        if total_accounts > MAX_ACCOUNTS {
            return Err(
                TxError::new(Code::TooManyAccounts, "more than 256 accounts").value(total_accounts),
            );
        }

        let view = TxView {
            bytes,
            num_signatures: num_sigs as u8,
            signatures_offset: signatures_offset as u16,
            message_offset: message_offset as u16,
            version,
            num_required_signatures,
            num_readonly_signed,
            num_readonly_unsigned,
            num_static_keys: num_static_keys as u8,
            static_keys_offset: static_keys_offset as u16,
            blockhash_offset: blockhash_offset as u16,
            num_instructions,
            instructions_offset: instructions_offset as u16,
            num_lookups: num_lookups as u8,
            lookups_offset: lookups_start as u16,
            num_lookup_writable: w,
            num_lookup_readonly: r,
        };
        // `num_static_keys` ≤ 256 fits u8 only below 256; 256 static keys cannot fit a packet.
        debug_assert!(num_static_keys < 256);

        for (i, ix) in view.instructions().enumerate() {
            if usize::from(ix.program_id_index) >= num_static || ix.program_id_index == 0 {
                let detail = if ix.program_id_index == 0 {
                    "instruction program is the fee payer"
                } else {
                    "instruction program index is not a static account key"
                };
                return Err(TxError::new(Code::InvalidProgramIndex, detail)
                    .index(i)
                    .value(ix.program_id_index.into()));
            }
            if let Some(&bad) = ix
                .accounts
                .iter()
                .find(|&&a| usize::from(a) >= total_accounts)
            {
                return Err(TxError::new(
                    Code::InvalidAccountIndex,
                    "instruction account index out of range",
                )
                .index(i)
                .value(bad.into()));
            }
        }
        Ok(view)
    }

    /// The whole transaction as given.
    #[inline]
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The signed message: everything after the signatures, version prefix included.
    #[inline]
    pub fn message(&self) -> &'a [u8] {
        &self.bytes[usize::from(self.message_offset)..]
    }

    /// Signature `i` (< `num_signatures`).
    #[inline]
    pub fn signature(&self, i: usize) -> &'a [u8; 64] {
        let o = usize::from(self.signatures_offset) + i * SIGNATURE_LEN;
        self.bytes[o..o + SIGNATURE_LEN].try_into().expect("framed")
    }

    /// Static account key `i` (< `num_static_keys`).
    #[inline]
    pub fn static_key(&self, i: usize) -> &'a [u8; 32] {
        let o = usize::from(self.static_keys_offset) + i * PUBKEY_LEN;
        self.bytes[o..o + PUBKEY_LEN].try_into().expect("framed")
    }

    #[inline]
    pub fn recent_blockhash(&self) -> &'a [u8; 32] {
        let o = usize::from(self.blockhash_offset);
        self.bytes[o..o + HASH_LEN].try_into().expect("framed")
    }

    /// Iterate the (already framed) instructions.
    pub fn instructions(&self) -> Instructions<'a> {
        Instructions {
            bytes: self.bytes,
            offset: self.instructions_offset.into(),
            left: self.num_instructions,
        }
    }

    /// Iterate the (already framed) address table lookups; empty for legacy transactions.
    pub fn lookups(&self) -> Lookups<'a> {
        Lookups {
            bytes: self.bytes,
            offset: self.lookups_offset.into(),
            left: self.num_lookups,
        }
    }

    /// Whether account index `i` (static or lookup) is writable, by the header and lookup rules.
    pub fn is_writable_index(&self, i: usize) -> bool {
        let s = usize::from(self.num_static_keys);
        let req = usize::from(self.num_required_signatures);
        if i < req {
            i < req - usize::from(self.num_readonly_signed)
        } else if i < s {
            i < s - usize::from(self.num_readonly_unsigned)
        } else {
            i < s + usize::from(self.num_lookup_writable)
        }
    }
}

/// Iterator over framed instructions. The bytes were validated by `TxView::parse`; a failed
/// read therefore cannot happen, and would end the iteration rather than panic.
pub struct Instructions<'a> {
    bytes: &'a [u8],
    offset: usize,
    left: u16,
}

impl<'a> Iterator for Instructions<'a> {
    type Item = Instruction<'a>;
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let b = self.bytes;
        let off = &mut self.offset;
        let program_id_index = byte(b, off, "").ok()?;
        let n = read_compact_u16(b, off).ok()?;
        let accounts = take(b, off, n.into(), "").ok()?;
        let n = read_compact_u16(b, off).ok()?;
        let data = take(b, off, n.into(), "").ok()?;
        Some(Instruction {
            program_id_index,
            accounts,
            data,
        })
    }
}

/// Iterator over framed address table lookups.
pub struct Lookups<'a> {
    bytes: &'a [u8],
    offset: usize,
    left: u8,
}

impl<'a> Iterator for Lookups<'a> {
    type Item = Lookup<'a>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let b = self.bytes;
        let off = &mut self.offset;
        let table = take(b, off, PUBKEY_LEN, "").ok()?.try_into().ok()?;
        let n = read_compact_u16(b, off).ok()?;
        let writable = take(b, off, n.into(), "").ok()?;
        let n = read_compact_u16(b, off).ok()?;
        let readonly = take(b, off, n.into(), "").ok()?;
        Some(Lookup {
            table,
            writable,
            readonly,
        })
    }
}

//! The record of an accepted send, in its two on-disk forms, written natively on the request path
//! (issue 35, item 1: the accepted send's bookkeeping in one native call, `node_record.rs`).
//!
//! - **The status value** of a fresh `sent` record with its resend tail: byte for byte what
//!   `encodeStatus` in `src/store/status-codec.ts` writes for it (that file's table is the one
//!   description of the layout; `test/unit/record-native.test.ts` encodes many records both ways
//!   and decodes these bytes with the TypeScript decoder). Only this one shape is encoded here:
//!   every other write of a record (a settlement, an expiry, another node's acceptance) and every
//!   read stays with the TypeScript codec.
//! - **The acknowledgement log's frame** around it (`src/store/ack-log.ts`): `u32 payload length |
//!   u32 CRC-32 of the payload | payload = 64-byte key + value`, little-endian, CRC-32 as zlib
//!   computes it, written with one `writev(2)` on the segment's file (opened by JavaScript with
//!   `O_APPEND`, so one call is one append, as `writeSync` of one buffer was).
//!
//! What is not here: the segment's file, its rotation, its `fdatasync` schedule, and the cut-back
//! of a failed or short write — those stay in `ack-log.ts`, which is told what happened.

use crate::error::Coded;

/// Bytes of a status key: the first signature.
pub const KEY_BYTES: usize = 64;
/// Bytes of a recent blockhash.
pub const BLOCKHASH_BYTES: usize = 32;
/// The value's version byte (`STATUS_CODEC_VERSION`).
pub const VERSION: u8 = 1;
/// Offset of the blockhash; the strings follow it (`OFF_STRINGS`).
const OFF_BLOCKHASH: usize = 58;
const OFF_STRINGS: usize = OFF_BLOCKHASH + BLOCKHASH_BYTES;
/// The value's bytes before its two strings' bytes (their two length bytes included).
pub const FIXED_BYTES: usize = OFF_STRINGS + 2;
/// The resend tail's fixed part: its options byte and the u16 wire length.
const RESEND_HEADER_BYTES: usize = 3;
const DEADLINE_BYTES: usize = 8;
/// Largest wire transaction (Solana's packet data size).
pub const MAX_WIRE_BYTES: usize = 1232;
/// Bytes of a frame's header: payload length, CRC-32.
pub const FRAME_HEADER_BYTES: usize = 8;

const FLAG_DURABLE_NONCE: u8 = 0b1000;
const FLAG_RESEND: u8 = 0b1_0000;
const FLAG_DEADLINE: u8 = 0b100_0000;
/// The resend options byte's defined bits: antiMev, untilExpiry, maxRetries (bits 4–7).
const RESEND_OPTION_BITS: u8 = 0b1111_0011;
/// `NULL_U64`: a null u64 field.
const NULL_U64: u64 = u64::MAX;
/// 2^53: the integers a JavaScript number holds exactly (the TypeScript codec accepts no other).
const MAX_SAFE: u64 = 1 << 53;

/// What an accepted send's `sent` record holds, as the status value stores it.
#[derive(Debug, Clone, Copy)]
pub struct Accepted<'a> {
    /// The 32 bytes of the recent blockhash (or nonce value).
    pub blockhash: &'a [u8],
    /// The two strings as the value holds them: `u8 length | accountId | u8 length | keyName`.
    pub names: &'a [u8],
    pub tip_lamports: u64,
    /// ms since the Unix epoch.
    pub submitted_at: u64,
    pub submit_slot: u64,
    pub last_valid_block_height: Option<u64>,
    pub durable_nonce: bool,
    /// `options.deadline_slot`.
    pub deadline_slot: Option<u64>,
    /// The resend tail: the transaction's wire bytes and its options byte (`antiMev` bit 0,
    /// `untilExpiry` bit 1, `maxRetries` bits 4–7).
    pub wire: &'a [u8],
    pub resend_options: u8,
}

/// A record that cannot be encoded (a bug of the caller: `RECORD_INVALID`), or a log write that
/// failed (`errno` set: the code is the errno's name, as Node names a failed `writeSync`'s) or
/// was short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordError {
    Invalid(&'static str),
    Write { errno: i32 },
    Short { written: usize, frame: usize },
}

impl Coded for RecordError {
    fn code(&self) -> &'static str {
        match self {
            RecordError::Invalid(_) => "RECORD_INVALID",
            RecordError::Write { errno } => errno_name(*errno),
            // As the TypeScript writer says it: a short write is a full disk.
            RecordError::Short { .. } => "ENOSPC",
        }
    }
    fn message(&self) -> String {
        match self {
            RecordError::Invalid(what) => format!("accepted record: {what}"),
            RecordError::Write { errno } => format!(
                "{}, write of the acknowledgement log",
                std::io::Error::from_raw_os_error(*errno)
            ),
            RecordError::Short { written, frame } => {
                format!("short write to the acknowledgement log ({written} of {frame} bytes)")
            }
        }
    }
}

/// The name Node gives an errno in `error.code` (those a file write can fail with), else `EIO`.
fn errno_name(errno: i32) -> &'static str {
    match errno {
        libc::ENOSPC => "ENOSPC",
        libc::EDQUOT => "EDQUOT",
        libc::EFBIG => "EFBIG",
        libc::EBADF => "EBADF",
        libc::EINVAL => "EINVAL",
        libc::EPERM => "EPERM",
        libc::EROFS => "EROFS",
        libc::EAGAIN => "EAGAIN",
        libc::EINTR => "EINTR",
        libc::EFAULT => "EFAULT",
        libc::EISDIR => "EISDIR",
        _ => "EIO",
    }
}

fn check(ok: bool, what: &'static str) -> Result<(), RecordError> {
    if ok {
        Ok(())
    } else {
        Err(RecordError::Invalid(what))
    }
}

impl Accepted<'_> {
    /// The value's length, once `check`ed.
    pub fn value_len(&self) -> usize {
        FIXED_BYTES - 2
            + self.names.len()
            + RESEND_HEADER_BYTES
            + self.wire.len()
            + if self.deadline_slot.is_some() {
                DEADLINE_BYTES
            } else {
                0
            }
    }

    /// Whether every field fits its slot as the TypeScript codec requires (it throws a
    /// `RangeError` where this refuses).
    pub fn check(&self) -> Result<(), RecordError> {
        check(
            self.blockhash.len() == BLOCKHASH_BYTES,
            "recentBlockhash must be 32 bytes",
        )?;
        let n = self.names;
        let account = n.first().map(|&b| b as usize);
        let key_name = account.and_then(|a| n.get(1 + a)).map(|&b| b as usize);
        check(
            matches!((account, key_name), (Some(a), Some(k)) if n.len() == 2 + a + k),
            "names must be u8 length + accountId + u8 length + keyName",
        )?;
        check(
            !self.wire.is_empty() && self.wire.len() <= MAX_WIRE_BYTES,
            "resend wire must be 1..1232 bytes",
        )?;
        check(
            self.resend_options & !RESEND_OPTION_BITS == 0,
            "resend options has undefined bits",
        )?;
        let safe = |v: u64| v < MAX_SAFE;
        check(
            safe(self.submitted_at),
            "submittedAt must be a safe integer",
        )?;
        check(safe(self.submit_slot), "submitSlot must be a safe integer")?;
        check(
            self.last_valid_block_height.is_none_or(safe),
            "lastValidBlockHeight must be a safe integer",
        )?;
        check(
            self.deadline_slot.is_none_or(safe),
            "deadlineSlot must be a safe integer",
        )
    }

    /// Encode the value into `out`, which must be `value_len()` bytes (`check` first).
    pub fn encode_into(&self, out: &mut [u8]) -> Result<(), RecordError> {
        self.check()?;
        check(
            out.len() == self.value_len(),
            "the value's buffer is not value_len bytes",
        )?;
        out[0] = VERSION;
        // Status `sent` (0), not expired: the resend tail is always there.
        out[1] = (if self.durable_nonce {
            FLAG_DURABLE_NONCE
        } else {
            0
        }) | FLAG_RESEND
            | if self.deadline_slot.is_some() {
                FLAG_DEADLINE
            } else {
                0
            };
        out[2..10].copy_from_slice(&self.submitted_at.to_be_bytes());
        out[10..18].copy_from_slice(&NULL_U64.to_be_bytes()); // confirmedAt
        out[18..26].copy_from_slice(&f64::NAN.to_be_bytes()); // latencyMs
        out[26..34].copy_from_slice(&NULL_U64.to_be_bytes()); // slot
        out[34..42].copy_from_slice(&self.submit_slot.to_be_bytes());
        out[42..50].copy_from_slice(
            &self
                .last_valid_block_height
                .unwrap_or(NULL_U64)
                .to_be_bytes(),
        );
        out[50..58].copy_from_slice(&self.tip_lamports.to_be_bytes());
        out[OFF_BLOCKHASH..OFF_STRINGS].copy_from_slice(self.blockhash);
        let mut off = OFF_STRINGS;
        out[off..off + self.names.len()].copy_from_slice(self.names);
        off += self.names.len();
        out[off] = self.resend_options;
        out[off + 1..off + 3].copy_from_slice(&(self.wire.len() as u16).to_be_bytes());
        off += RESEND_HEADER_BYTES;
        out[off..off + self.wire.len()].copy_from_slice(self.wire);
        off += self.wire.len();
        if let Some(d) = self.deadline_slot {
            out[off..off + DEADLINE_BYTES].copy_from_slice(&d.to_be_bytes());
        }
        Ok(())
    }
}

/// The frame header of `key` + `value`: payload length and CRC-32 (zlib's), little-endian.
pub fn frame_header(key: &[u8], value: &[u8]) -> [u8; FRAME_HEADER_BYTES] {
    let mut crc = crc32fast::Hasher::new();
    crc.update(key);
    crc.update(value);
    let mut h = [0u8; FRAME_HEADER_BYTES];
    h[..4].copy_from_slice(&((key.len() + value.len()) as u32).to_le_bytes());
    h[4..].copy_from_slice(&crc.finalize().to_le_bytes());
    h
}

/// Append one frame of `key` + `value` to the log file `fd` with one `writev(2)`. Returns the
/// bytes written (the whole frame); a failed write is `Write`, a short one `Short` (the caller
/// cuts the file back to its last whole frame).
pub fn append_frame(fd: i32, key: &[u8], value: &[u8]) -> Result<usize, RecordError> {
    let header = frame_header(key, value);
    let frame = header.len() + key.len() + value.len();
    let iov = [
        libc::iovec {
            iov_base: header.as_ptr() as *mut libc::c_void,
            iov_len: header.len(),
        },
        libc::iovec {
            iov_base: key.as_ptr() as *mut libc::c_void,
            iov_len: key.len(),
        },
        libc::iovec {
            iov_base: value.as_ptr() as *mut libc::c_void,
            iov_len: value.len(),
        },
    ];
    loop {
        // SAFETY: the three iovecs point at live slices of their lengths, read only.
        let n = unsafe { libc::writev(fd, iov.as_ptr(), iov.len() as libc::c_int) };
        if n < 0 {
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            // Interrupted before anything was written: nothing to cut back, write again.
            if errno == libc::EINTR {
                continue;
            }
            return Err(RecordError::Write { errno });
        }
        let written = n as usize;
        return if written == frame {
            Ok(written)
        } else {
            Err(RecordError::Short { written, frame })
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn names(a: &str, k: &str) -> Vec<u8> {
        let mut v = vec![a.len() as u8];
        v.extend_from_slice(a.as_bytes());
        v.push(k.len() as u8);
        v.extend_from_slice(k.as_bytes());
        v
    }

    fn sample<'a>(names: &'a [u8], wire: &'a [u8], bh: &'a [u8]) -> Accepted<'a> {
        Accepted {
            blockhash: bh,
            names,
            tip_lamports: 1_000_000,
            submitted_at: 1_764_000_000_000,
            submit_slot: 345,
            last_valid_block_height: Some(500),
            durable_nonce: false,
            deadline_slot: None,
            wire,
            resend_options: 0b0011_0001,
        }
    }

    #[test]
    fn encodes_the_layout() {
        let n = names("acc", "key");
        let wire = [9u8; 200];
        let bh = [7u8; 32];
        let mut a = sample(&n, &wire, &bh);
        a.deadline_slot = Some(0x0102_0304_0506);
        let mut out = vec![0u8; a.value_len()];
        a.encode_into(&mut out).unwrap();
        assert_eq!(out.len(), FIXED_BYTES + 6 + 3 + 200 + 8);
        assert_eq!(out[0], 1);
        assert_eq!(out[1], FLAG_RESEND | FLAG_DEADLINE);
        assert_eq!(&out[10..18], &[0xff; 8]);
        assert!(f64::from_be_bytes(out[18..26].try_into().unwrap()).is_nan());
        assert_eq!(&out[58..90], &bh);
        assert_eq!(&out[90..98], &n[..]);
        assert_eq!(out[98], 0b0011_0001);
        assert_eq!(u16::from_be_bytes([out[99], out[100]]), 200);
        assert_eq!(
            u64::from_be_bytes(out[out.len() - 8..].try_into().unwrap()),
            0x0102_0304_0506
        );
    }

    #[test]
    fn refuses_what_does_not_fit() {
        let n = names("acc", "key");
        let wire = [9u8; 200];
        let bh = [7u8; 32];
        let ok = sample(&n, &wire, &bh);
        let bad_names = [3u8, b'a', b'b'];
        let long_wire = [0u8; 1233];
        let cases = [
            Accepted {
                blockhash: &bh[..31],
                ..ok
            },
            Accepted {
                names: &bad_names,
                ..ok
            },
            Accepted { wire: &[], ..ok },
            Accepted {
                wire: &long_wire,
                ..ok
            },
            Accepted {
                resend_options: 0b100,
                ..ok
            },
            Accepted {
                submitted_at: MAX_SAFE,
                ..ok
            },
            Accepted {
                deadline_slot: Some(MAX_SAFE),
                ..ok
            },
        ];
        for c in cases {
            assert!(matches!(c.check(), Err(RecordError::Invalid(_))), "{c:?}");
        }
        let mut wrong = vec![0u8; ok.value_len() + 1];
        assert!(ok.encode_into(&mut wrong).is_err());
    }

    #[test]
    fn crc_is_zlibs() {
        // The check value of CRC-32 (IEEE, as zlib): "123456789" → 0xCBF43926.
        let h = frame_header(b"1234", b"56789");
        assert_eq!(u32::from_le_bytes(h[..4].try_into().unwrap()), 9);
        assert_eq!(u32::from_le_bytes(h[4..].try_into().unwrap()), 0xCBF4_3926);
    }

    #[test]
    fn appends_whole_frames_and_reports_a_bad_fd() {
        let dir = std::env::temp_dir().join(format!("record-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("seg.log");
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap();
        use std::os::fd::AsRawFd;
        let key = [1u8; 64];
        let value = [2u8; 100];
        assert_eq!(append_frame(f.as_raw_fd(), &key, &value).unwrap(), 172);
        assert_eq!(append_frame(f.as_raw_fd(), &key, &value).unwrap(), 172);
        let mut got = Vec::new();
        std::fs::File::open(&path)
            .unwrap()
            .read_to_end(&mut got)
            .unwrap();
        assert_eq!(got.len(), 344);
        assert_eq!(&got[..8], &frame_header(&key, &value));
        assert_eq!(&got[172..180], &frame_header(&key, &value));
        drop(f);
        std::fs::remove_dir_all(&dir).unwrap();
        let e = append_frame(-1, &key, &value).unwrap_err();
        assert_eq!(e.code(), "EBADF");
    }
}

//! The napi call of an accepted send's record (`recordAccepted`): what the request path did in
//! six calls out of JavaScript (the value's encoding, the log frame's CRC-32 through `node:zlib`,
//! its `writeSync`, `overlayPut`, `usageAdd`) and the JavaScript between them, in one.

use crate::error::{to_js, JsCode};
use crate::record::{append_frame, Accepted, RecordError, KEY_BYTES};
use crate::{handoff, overlay, usage};
use napi::bindgen_prelude::{BigInt, BufferSlice};
use napi_derive::napi;

/// 2^53: every whole JS number below it is exact.
const MAX_SAFE: f64 = 9_007_199_254_740_992.0;

fn whole(v: f64, what: &'static str) -> Result<u64, RecordError> {
    if v.is_finite() && v.fract() == 0.0 && (0.0..MAX_SAFE).contains(&v) {
        Ok(v as u64)
    } else {
        Err(RecordError::Invalid(what))
    }
}

/// -1 (or any negative) for null, else a whole number.
fn whole_or_none(v: f64, what: &'static str) -> Result<Option<u64>, RecordError> {
    if v < 0.0 {
        Ok(None)
    } else {
        whole(v, what).map(Some)
    }
}

/// `fdatasync(2)` of the log's file (`syncMs: 0`: every append is on disk before it is answered).
fn sync_data(fd: i32) -> Result<(), RecordError> {
    // SAFETY: a plain system call on a file descriptor; a bad one is an error, not UB.
    if unsafe { libc::fdatasync(fd) } == 0 {
        Ok(())
    } else {
        Err(RecordError::Write {
            errno: std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        })
    }
}

/// Record an accepted send: encode its `sent` status value (with the resend tail) into `value`,
/// append `u32 length | u32 CRC-32 | key + value` to the acknowledgement log segment `fd` with
/// one `writev(2)`, put the value in the process-wide overlay under `key`, and count one send of
/// usage index `usageIndex` on UTC day `day`. With `sync`, the file is `fdatasync`ed after the
/// write, before the overlay and the usage see the record. Returns the overlay token.
///
/// `value` must be exactly the value's length (`acceptedValueBytes` in
/// `src/store/status-codec.ts`). `names` is `u8 length | accountId | u8 length | keyName`
/// (`acceptedNames`). Nullable numbers (`lastValidBlockHeight`, `deadlineSlot`) are -1 for null.
///
/// Everything is checked before the write, so a throw means nothing happened (`RECORD_INVALID`),
/// except a failed or short write, or a failed sync: `error.code` is then the errno's name
/// (`ENOSPC` for a short write), the segment may hold a torn tail the caller must cut back, and
/// neither the overlay nor the usage was touched.
///
/// With `handoffQueue` (an open queue's id; 0: none, the main thread's own sends), the value and
/// `handoffTail` are pushed onto that hand-off queue as the last step (`handoff.rs`): an ingress
/// thread's accepted send on its way to the main thread. The push cannot fail, so a return means
/// exactly one push, numbered one past the queue's last.
#[napi(js_name = "recordAccepted")]
#[allow(clippy::too_many_arguments)]
pub fn record_accepted(
    fd: i32,
    key: &[u8],
    wire: &[u8],
    blockhash_offset: u32,
    names: &[u8],
    tip_lamports: BigInt,
    submitted_at: f64,
    submit_slot: f64,
    last_valid_block_height: f64,
    durable_nonce: bool,
    deadline_slot: f64,
    resend_options: u32,
    usage_index: u32,
    day: u32,
    sync: bool,
    mut value: BufferSlice,
    handoff_queue: u32,
    handoff_tail: &[u8],
) -> napi::Result<f64, JsCode> {
    let value: &mut [u8] = &mut value;
    // The fallible part returns the record's own error; it becomes a JS error in one place.
    let mut record = || -> Result<f64, RecordError> {
        if key.len() != KEY_BYTES {
            return Err(RecordError::Invalid("key must be the signature's 64 bytes"));
        }
        if (usage_index as usize) >= usage::CAPACITY {
            return Err(RecordError::Invalid("usage index out of range"));
        }
        let (negative, tip, lossless) = tip_lamports.get_u64();
        if negative || !lossless {
            return Err(RecordError::Invalid("tipLamports must be a u64"));
        }
        let bh = blockhash_offset as usize;
        let blockhash = wire
            .get(bh..bh + crate::record::BLOCKHASH_BYTES)
            .ok_or(RecordError::Invalid("blockhash offset past the wire"))?;
        let resend_options =
            u8::try_from(resend_options).map_err(|_| RecordError::Invalid("resend options"))?;
        let rec = Accepted {
            blockhash,
            names,
            tip_lamports: tip,
            submitted_at: whole(submitted_at, "submittedAt must be a safe integer")?,
            submit_slot: whole(submit_slot, "submitSlot must be a safe integer")?,
            last_valid_block_height: whole_or_none(
                last_valid_block_height,
                "lastValidBlockHeight must be a safe integer or -1",
            )?,
            durable_nonce,
            deadline_slot: whole_or_none(
                deadline_slot,
                "deadlineSlot must be a safe integer or -1",
            )?,
            wire,
            resend_options,
        };
        if rec.value_len() > overlay::MAX_VALUE {
            return Err(RecordError::Invalid("value larger than the overlay holds"));
        }
        rec.encode_into(value)?;
        append_frame(fd, key, value)?;
        if sync {
            sync_data(fd)?;
        }
        // Checked above (key 64 ≤ MAX_KEY, value ≤ MAX_VALUE), so neither call can fail now; the
        // errors are mapped anyway rather than unwrapped.
        let token = overlay::global()
            .put(key, value)
            .map_err(|_| RecordError::Invalid("overlay put"))?;
        usage::TABLE
            .add(usage_index, 1, day)
            .map_err(|_| RecordError::Invalid("usage index out of range"))?;
        if handoff_queue != 0 {
            handoff::global().push(handoff_queue, value, handoff_tail);
        }
        Ok(token as f64)
    };
    record().map_err(|e| to_js(&e))
}

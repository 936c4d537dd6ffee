//! napi: `POST /v1/send`'s one call on an ingress thread, the key lookup folded into
//! `inspectAdmit` (`node_admission.rs`): the presented API key looked up in the thread's key table
//! (`keys.rs`, hashed there as `KeyTable.lookup` hashes it) and, only when the table answers a
//! current entry with its account's plan facts (the plan's minimum tip, the account's send
//! bucket: `keys::PlanFacts`), the transaction inspected and admitted on those facts, ending with
//! its send token, exactly as `inspectAdmit` with the same two numbers. Anything else — a key not
//! entered, revoked or read under an old generation, a write in progress, a credit held in the
//! overlay, an account to read again, an entry without facts — answers "ask JavaScript" (null)
//! having done nothing else: the caller then runs the key cache's own path and `inspectAdmit`,
//! so every answer but the hit's is the one the separate calls give.

use crate::node::{Inspection, TipSet};
use crate::node_admission::{check_out, inspect_admit_into, AdmissionView, ADMIT_OUT_LEN};
use crate::node_keys::KeyTable;
use napi::bindgen_prelude::*;
use napi_derive::napi;

/// How many numbers `inspectAdmitKey` writes: `inspectAdmit`'s, then the key's slot.
#[napi]
pub const ADMIT_KEY_OUT_LEN: u32 = ADMIT_OUT_LEN + 1;

/// Look `key` up in `table`; on a current hit with plan facts, `inspectAdmit(transaction, tips,
/// view, <the entry's minimum tip>, <its send slot>, out)` and `out[8]` the entry's slot (the
/// index of the caller's resolved pair). Null (and `out` untouched): ask JavaScript.
#[napi(catch_unwind)]
pub fn inspect_admit_key(
    key: String,
    transaction: String,
    tips: &TipSet,
    view: &AdmissionView,
    table: &KeyTable,
    mut out: Float64ArraySlice,
) -> Result<Option<Inspection>> {
    // Safety: as `inspect_admit`'s: this call's argument, written on the thread that owns it.
    let out = unsafe { out.as_mut() };
    check_out(out, ADMIT_KEY_OUT_LEN)?;
    let Some((slot, facts)) = table.current(&key) else {
        return Ok(None);
    };
    out[ADMIT_OUT_LEN as usize] = f64::from(slot);
    Ok(Some(inspect_admit_into(
        &transaction,
        tips,
        view,
        facts.min_tip_lamports,
        facts.send_slot,
        out,
    )))
}

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
//!
//! `inspectAdmitKeySend`: the same call when the send may go out at once — and then, in it, the
//! first send (`sendFirstRoute`'s both rounds) of a transaction that needs nothing more from
//! JavaScript before it is written:
//! - admitted (`out[0]` 0) and certainly new (`out[7]` 1: no record of it can exist, so neither
//!   an idempotent answer nor a resend's rules apply);
//! - its `deadlineSlot` (-1: none) not behind the view's slot (`out[1]`);
//! - a place among its account's transactions in flight taken (`in_flight.rs`), when the service
//!   counts them: a send over the plan's cap is not written;
//! - and what only JavaScript knows, checked by the caller before it chose this call over
//!   `inspectAdmitKey`: the store can record, no preflight is asked, the route is known and not
//!   held.
//!
//! Anything else sends nothing and answers exactly as `inspectAdmitKey` does; the caller then
//! goes on as it does after that call (its own checks refuse what this call did not send, in
//! the same order and with the same answers). When it sent, the inspection carries `sent`: the
//! promise `sendFirstRoute` would have given; and the account's place in flight is taken (the
//! caller gives it back if the send is not accepted after all, as it does its own).

use crate::error::{to_js, JsCode, Refusal};
use crate::in_flight;
use crate::keys::PlanFacts;
use crate::node::{Inspection, TipSet};
use crate::node_admission::{check_out, inspect_admit_into, AdmissionView, ADMIT_OUT_LEN};
use crate::node_keys::KeyTable;
use crate::node_quic::{FirstRouteBudget, QuicClient, TpuTargets};
use napi::bindgen_prelude::*;
use napi_derive::napi;
use std::time::Instant;

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
    Ok(admit_key(&key, &transaction, tips, view, table, out).map(|(inspection, _)| inspection))
}

/// Both calls' work: `key` looked up in `table` and, on a current hit with plan facts, the
/// transaction inspected and admitted on them, `out[8]` the entry's slot; None: ask JavaScript.
fn admit_key(
    key: &str,
    transaction: &str,
    tips: &TipSet,
    view: &AdmissionView,
    table: &KeyTable,
    out: &mut [f64],
) -> Option<(Inspection, PlanFacts)> {
    let (slot, facts) = table.current(key)?;
    out[ADMIT_OUT_LEN as usize] = f64::from(slot);
    let inspection = inspect_admit_into(
        transaction,
        tips,
        view,
        facts.min_tip_lamports,
        facts.send_slot,
        out,
    );
    Some((inspection, facts))
}

/// Indexes of `out` this call reads back (`inspectAdmit`'s, see `node_admission.rs`).
const VERDICT: usize = 0;
const SLOT: usize = 1;
const CERTAINLY_NEW: usize = 7;

/// Whether the inspection's numbers let the transaction go out from this call: admitted,
/// certainly new, and its deadline (negative: none) not behind the view's slot.
fn may_send(out: &[f64], deadline_slot: f64) -> bool {
    out[VERDICT] == 0.0
        && out[CERTAINLY_NEW] == 1.0
        && !(deadline_slot >= 0.0 && deadline_slot < out[SLOT])
}

/// As `inspectAdmitKey(key, transaction, tips, view, table, out)` and, when the transaction may
/// go out (see the module), its first send as `client.sendFirstRoute(first, next, <its wire>,
/// round1Ms, budgetMs, sinceUs + <µs this call took until it sent>)`, the place in flight taken
/// first from `inFlight` (the process's counters: `AccountCounters.counts`). Null (and `out`
/// untouched, nothing sent): ask JavaScript. A closed client sends nothing here (the caller's
/// own `sendFirstRoute` then throws as ever).
#[napi(
    catch_unwind,
    ts_return_type = "(Inspection & { sent?: Promise<Float64Array | string> }) | null"
)]
#[allow(clippy::too_many_arguments)]
pub fn inspect_admit_key_send<'env>(
    env: &'env Env,
    key: String,
    transaction: String,
    tips: &TipSet,
    view: &AdmissionView,
    table: &KeyTable,
    mut out: Float64ArraySlice,
    mut in_flight: Int32ArraySlice,
    client: &QuicClient,
    first: &TpuTargets,
    next: &TpuTargets,
    round1_ms: f64,
    budget_ms: f64,
    deadline_slot: f64,
    since_us: f64,
) -> Result<Option<Object<'env>>, JsCode> {
    let entered = Instant::now();
    // Safety: as `inspect_admit`'s: this call's argument, written on the thread that owns it.
    let out = unsafe { out.as_mut() };
    check_out(out, ADMIT_KEY_OUT_LEN).map_err(|e| invalid(e.reason))?;
    let budget = FirstRouteBudget::check(round1_ms, budget_ms, since_us)?;
    let Some((inspection, facts)) = admit_key(&key, &transaction, tips, view, table, out) else {
        return Ok(None);
    };
    let mut sent = None;
    let wire = inspection.tx.as_ref().and_then(|tx| tx.wire.as_deref());
    if let (true, Some(wire)) = (may_send(out, deadline_slot), wire) {
        // Safety: the counters are a typed array over memory every thread changes only
        // atomically (`Atomics` in JavaScript, `in_flight` here); it lives through this call.
        let counts = unsafe { in_flight::as_atomics(in_flight.as_mut()) };
        if facts
            .in_flight
            .is_none_or(|p| in_flight::try_take(counts, p))
        {
            let later_us = entered.elapsed().as_secs_f64() * 1e6;
            match budget.start(env, client, first, next, wire, later_us) {
                Ok(promise) => sent = Some(promise),
                Err(_) => {
                    if let Some(p) = facts.in_flight {
                        in_flight::give_back(counts, p);
                    }
                }
            }
        }
    }
    // Safety: `env` is this call's; the inspection converts as the plain call's return does.
    let raw = unsafe { Inspection::to_napi_value(env.raw(), inspection) }
        .map_err(|e| internal(e.reason))?;
    let mut object = Object::from_raw(env.raw(), raw);
    if let Some(promise) = sent {
        object
            .set_named_property("sent", promise)
            .map_err(|e| internal(e.reason))?;
    }
    Ok(Some(object))
}

fn invalid(message: String) -> napi::Error<JsCode> {
    to_js(&Refusal::new("QUIC_INVALID_OPTION", message))
}

fn internal(message: String) -> napi::Error<JsCode> {
    to_js(&Refusal::new("QUIC_INTERNAL", message))
}

//! napi: a chain view's admission facts (`AdmissionView`) and the send's one call that inspects
//! a transaction and admits it, ending with its send token (`inspectAdmit`): what were three
//! calls and the JavaScript between them (`inspect`, the chain facts' reads, the budget's
//! `bucketTakeDetailed`). The pure part is `admission.rs`.

use crate::admission::{self, ChainFacts};
use crate::inspect::{decode_base64, inspect_bytes};
use crate::known;
use crate::node::{to_inspection, Inspection, TipSet};
use crate::parse::PACKET_DATA_SIZE;
use napi::bindgen_prelude::*;
use napi_derive::napi;

/// One chain view's admission facts in native memory: its slot, freshness and live blockhashes,
/// applied from each snapshot (`ChainViewReplica.apply`), read by `inspectAdmit` on the same
/// thread. One per view: never shared between threads or services.
#[napi]
pub struct AdmissionView {
    facts: ChainFacts,
}

impl Default for AdmissionView {
    fn default() -> Self {
        Self::new()
    }
}

/// A blockhash's base58 text as its 32 bytes, or None (such a text can never be a
/// transaction's blockhash, so a view that skips it answers the same).
fn hash_of(text: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    (crate::base58::decode_into(text, &mut out) == Some(32)).then_some(out)
}

/// A JS number as a whole non-negative u64 (a block height, a slot); negatives and NaN are 0.
fn whole(v: f64) -> u64 {
    if v.is_finite() && v > 0.0 {
        v as u64
    } else {
        0
    }
}

/// Wall clock in whole ms since the Unix epoch: `Date.now()`, which the snapshot's `seenAtMs`
/// is comparable with across threads.
fn now_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_millis() as f64)
}

#[napi]
impl AdmissionView {
    #[napi(constructor)]
    pub fn new() -> Self {
        AdmissionView {
            facts: ChainFacts::default(),
        }
    }

    /// Apply one snapshot: slot, when it was seen (ms since the Unix epoch), the stale limit,
    /// whether the schedule names the slot's leader, the block height, and the blockhashes first
    /// seen since the previous snapshot with their last valid block heights (same order). A
    /// lower slot than the last forgets every blockhash (a resync onto another chain).
    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn apply(
        &mut self,
        slot: f64,
        seen_at_ms: f64,
        stale_ms: f64,
        leader_known: bool,
        block_height: f64,
        hashes: Vec<String>,
        last_valid: Vec<f64>,
    ) {
        let fresh: Vec<([u8; 32], u64)> = hashes
            .iter()
            .zip(last_valid.iter())
            .filter_map(|(h, lv)| hash_of(h).map(|k| (k, whole(*lv))))
            .collect();
        self.facts.apply(
            whole(slot),
            seen_at_ms,
            stale_ms,
            leader_known,
            whole(block_height),
            &fresh,
        );
    }

    /// Last valid block height of a blockhash this view has seen, or null.
    #[napi]
    pub fn last_valid(&self, blockhash: String) -> Option<f64> {
        hash_of(&blockhash).and_then(|h| self.facts.last_valid(&h).map(|lv| lv as f64))
    }

    /// True only for a blockhash known to be past its last valid block height.
    #[napi]
    pub fn expired(&self, blockhash: String) -> bool {
        hash_of(&blockhash).is_some_and(|h| self.facts.expired(&h))
    }

    /// Blockhashes held.
    #[napi(getter)]
    pub fn size(&self) -> u32 {
        self.facts.len() as u32
    }
}

/// Where `inspectAdmit` writes its numbers (a `Float64Array` of at least `ADMIT_OUT_LEN`).
#[napi]
pub const ADMIT_OUT_LEN: u32 = 8;

/// Decode, frame, verify and scan one base64 transaction (as `inspect`), then, if it is valid,
/// admit it on `view` in the submission core's order — blockhash not known-expired, a tip, at
/// least `minTipLamports`, a fresh view — and only then take one token of bucket `sendSlot`.
/// Answers the inspection (the verified transaction even when admission refused it: the
/// refusal's message names its blockhash and tip) and writes into `out`:
/// `[0]` the verdict (`admission::Verdict`: 0 admitted, 1 blockhash expired, 2 tip required,
/// 3 tip below the minimum, 4 stale view, 5 send budget spent; -1 the inspection refused it),
/// `[1]` the view's slot, `[2]` its age in ms (Infinity before the first snapshot), `[3]` the
/// blockhash's last valid block height (-1: unknown, or a durable nonce), and of the take (0
/// without one) `[4]` tokens remaining, `[5]` ms until one is available (Infinity: never),
/// `[6]` ms until the bucket is full, and `[7]` 1 if the signature is certainly new (the
/// process's filter of known signatures, `known.rs`, is ready and never had it: no status
/// record of it can exist, so the duplicate check is answered), 0 if it may be known (the
/// caller asks the store).
#[napi(catch_unwind)]
pub fn inspect_admit(
    transaction: String,
    tips: &TipSet,
    view: &AdmissionView,
    min_tip_lamports: f64,
    send_slot: f64,
    mut out: Float64ArraySlice,
) -> Result<Inspection> {
    // Safety: the view is this call's argument, on the thread that owns it; nothing else runs
    // on this thread while the call writes it.
    let out = unsafe { out.as_mut() };
    check_out(out, ADMIT_OUT_LEN)?;
    Ok(inspect_admit_into(
        &transaction,
        tips,
        view,
        whole(min_tip_lamports),
        bucket_slot(send_slot),
        out,
    ))
}

/// Refuse an `out` shorter than `len` numbers, with a clear error.
pub(crate) fn check_out(out: &[f64], len: u32) -> Result<()> {
    if out.len() < len as usize {
        return Err(Error::new(
            Status::InvalidArg,
            format!("out must hold {len} numbers"),
        ));
    }
    Ok(())
}

/// A JS number as a bucket slot; out of range (negative, fractional, NaN): `u32::MAX`, a slot
/// that does not exist and is never granted, as `bucketTakeDetailed` answers it.
fn bucket_slot(send_slot: f64) -> u32 {
    if send_slot.is_finite() && send_slot >= 0.0 && send_slot.fract() == 0.0 {
        send_slot.min(f64::from(u32::MAX)) as u32
    } else {
        u32::MAX
    }
}

/// `inspect_admit`'s work, for it and for the send's call that also resolves the key
/// (`node_admit_key.rs`): writes `out[0..ADMIT_OUT_LEN]`.
pub(crate) fn inspect_admit_into(
    transaction: &str,
    tips: &TipSet,
    view: &AdmissionView,
    min_tip_lamports: u64,
    send_slot: u32,
    out: &mut [f64],
) -> Inspection {
    let tips = &tips.inner;
    let mut buf = [0u8; PACKET_DATA_SIZE];
    let n = match decode_base64(transaction.as_bytes(), &mut buf) {
        Ok(n) => n,
        Err(e) => {
            out[0] = -1.0;
            return to_inspection(Err(e), tips, None);
        }
    };
    let wire = &buf[..n];
    let r = inspect_bytes(wire, tips);
    match &r {
        Err(_) => out[0] = -1.0,
        Ok(rep) => {
            let a = admission::admit(
                &view.facts,
                now_ms(),
                (!rep.scan.durable_nonce).then_some(&rep.recent_blockhash),
                rep.scan.tip_lamports,
                min_tip_lamports,
                send_slot,
            );
            out[0] = f64::from(a.verdict as u8);
            out[1] = a.health.slot as f64;
            out[2] = a.health.slot_age_ms;
            out[3] = a.last_valid.map_or(-1.0, |lv| lv as f64);
            let (remaining, retry, reset) = match a.take {
                None => (0.0, 0.0, 0.0),
                Some(t) => (
                    f64::from(t.remaining),
                    if t.retry_after_ns == u64::MAX {
                        f64::INFINITY
                    } else {
                        t.retry_after_ns as f64 / 1e6
                    },
                    t.reset_ns as f64 / 1e6,
                ),
            };
            out[4] = remaining;
            out[5] = retry;
            out[6] = reset;
            out[7] = if known::global().certainly_new(&rep.signature) {
                1.0
            } else {
                0.0
            };
        }
    }
    to_inspection(r, tips, Some(wire))
}

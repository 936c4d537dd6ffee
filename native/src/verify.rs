//! Ed25519 verification of every required signature, single and batched.
//!
//! The single path is exactly the validator's check: `VerifyingKey::verify_strict` over the
//! message bytes (version prefix included) against the matching static key.
//!
//! The batch path must reach the *same verdict for every item*. A batch equation can only say
//! "all valid" or "something is wrong", and ed25519 batch equations accept a few encodings that
//! `verify_strict` rejects. So:
//! 1. Every check that `verify_strict` makes beyond the group equation is made up front, per
//!    signature, from bytes and cheap point tests (canonical `s`, canonical non-small-order `R`,
//!    decodable non-small-order key). A transaction failing any of them goes to the single path.
//! 2. The rest are verified together with one multiscalar equation (`ed25519_dalek::verify_batch`).
//! 3. If a batch fails, it is split in halves and each half retried, down to single verification,
//!    so one bad signature costs O(log n) extra batches, not n single verifications.
//!
//! Residual difference (documented, not hidden): a cofactorless batch equation cannot see a
//! *small-order component* of a mixed-order `R` or key. An adversary who grinds such an `R` can
//! make a signature that `verify_strict` rejects pass a batch (Chalkias et al., "Taming the many
//! EdDSAs", 2020). Honest signers never produce one; the validator would then drop that one
//! transaction, exactly as it drops any invalid one. Tests assert equality on every other input.

use crate::error::{Code, Result, TxError};
use crate::parse::TxView;
use ed25519_dalek::{Signature, VerifyingKey};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Verifying keys decoded lately on this thread: at most this many (then the cache starts over).
pub const KEY_CACHE: usize = 1024;

thread_local! {
    static KEYS: RefCell<HashMap<[u8; 32], VerifyingKey>> = RefCell::new(HashMap::with_capacity(KEY_CACHE));
}

/// The verifying key of `bytes`, decoded once per thread while it stays in the cache: a bot
/// signs with the same few keys, and decoding one (a square root in the field, on the serial
/// backend) is ~4 µs of a ~49 µs inspection. `None` if `bytes` is not a point (never cached).
/// The cache is keyed by the exact 32 bytes and bounded; SipHash keeps crafted keys from
/// colliding on purpose, and a flood of new keys only empties it.
pub fn verifying_key(bytes: &[u8; 32]) -> Option<VerifyingKey> {
    KEYS.with(|cell| {
        let mut keys = cell.borrow_mut();
        if let Some(vk) = keys.get(bytes) {
            return Some(*vk);
        }
        let vk = VerifyingKey::from_bytes(bytes).ok()?;
        if keys.len() >= KEY_CACHE {
            keys.clear();
        }
        keys.insert(*bytes, vk);
        Some(vk)
    })
}

/// Below this many signatures a batch costs more than it saves.
pub const MIN_BATCH: usize = 4;

fn unsigned_check(view: &TxView<'_>) -> Result<()> {
    for i in 0..usize::from(view.num_signatures) {
        if view.signature(i).iter().all(|&b| b == 0) {
            return Err(
                TxError::new(Code::Unsigned, "required signature is all zeros (unsigned)").index(i),
            );
        }
    }
    Ok(())
}

fn invalid(i: usize) -> TxError {
    TxError::new(Code::SignatureInvalid, "signature does not verify").index(i)
}

/// Verify every required signature of one transaction (the validator's `verify_strict`).
/// Reports the first all-zero signature as `UNSIGNED`, else the first failing one as
/// `SIGNATURE_INVALID`, with its index.
pub fn verify_single(view: &TxView<'_>) -> Result<()> {
    unsigned_check(view)?;
    let message = view.message();
    for i in 0..usize::from(view.num_signatures) {
        let key = verifying_key(view.static_key(i)).ok_or_else(|| invalid(i))?;
        let sig = Signature::from_bytes(view.signature(i));
        key.verify_strict(message, &sig).map_err(|_| invalid(i))?;
    }
    Ok(())
}

/// The canonical encodings' y-coordinates of the eight small-order points, sign bit cleared.
/// A signature `R` whose y is one of these is small order (or a non-canonical encoding of a
/// small-order point): `verify_strict` rejects it either way.
fn small_order_ys() -> &'static [[u8; 32]; 8] {
    static YS: OnceLock<[[u8; 32]; 8]> = OnceLock::new();
    YS.get_or_init(|| {
        let mut ys = [[0u8; 32]; 8];
        for (y, p) in ys
            .iter_mut()
            .zip(curve25519_dalek::constants::EIGHT_TORSION.iter())
        {
            *y = p.compress().to_bytes();
            y[31] &= 0x7f;
        }
        ys
    })
}

/// p = 2^255 - 19, little endian. A field encoding is canonical iff its 255-bit value < p.
fn is_canonical_field(bytes: &[u8; 32]) -> bool {
    // value ≥ p  ⟺  bits 8..255 all ones and low byte ≥ 0xed.
    if bytes[31] & 0x7f != 0x7f || bytes[1..31].iter().any(|&b| b != 0xff) {
        return true;
    }
    bytes[0] < 0xed
}

/// ℓ, the order of the prime subgroup, little endian: `s` must be < ℓ.
const ELL: [u8; 32] = [
    0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10,
];

fn is_canonical_scalar(s: &[u8]) -> bool {
    for i in (0..32).rev() {
        if s[i] != ELL[i] {
            return s[i] < ELL[i];
        }
    }
    false
}

/// Everything `verify_strict` checks besides the group equation, for one signature. `None` if
/// the signature must go to the single path (which will then give the precise verdict).
fn prepare(key: &[u8; 32], sig: &[u8; 64]) -> Option<(VerifyingKey, Signature)> {
    let r: &[u8; 32] = sig[..32].try_into().ok()?;
    if !is_canonical_scalar(&sig[32..]) || !is_canonical_field(r) {
        return None;
    }
    let mut y = *r;
    y[31] &= 0x7f;
    if small_order_ys().contains(&y) {
        return None;
    }
    // R is decompressed by the batch itself: one that is not on the curve fails the batch and
    // is then judged singly.
    let vk = verifying_key(key)?;
    if vk.is_weak() {
        return None;
    }
    Some((vk, Signature::from_bytes(sig)))
}

/// Verify many transactions at once. Returns one verdict per view, identical to
/// `verify_single` on each (see the module comment for the one documented exception).
pub fn verify_batch(views: &[TxView<'_>]) -> Vec<Result<()>> {
    let mut verdicts: Vec<Result<()>> = vec![Ok(()); views.len()];
    // Signatures that go to the batch: (view index, message, key, signature).
    let mut items: Vec<(usize, &[u8], VerifyingKey, Signature)> = Vec::with_capacity(views.len());
    for (t, view) in views.iter().enumerate() {
        if let Err(e) = unsigned_check(view) {
            verdicts[t] = Err(e);
            continue;
        }
        let start = items.len();
        let mut ok = true;
        for i in 0..usize::from(view.num_signatures) {
            match prepare(view.static_key(i), view.signature(i)) {
                Some((vk, sig)) => items.push((t, view.message(), vk, sig)),
                None => {
                    ok = false;
                    break;
                }
            }
        }
        if !ok {
            items.truncate(start);
            verdicts[t] = verify_single(view);
        }
    }
    let mut failed = vec![false; views.len()];
    check_group(&items, &mut failed);
    for (t, f) in failed.iter().enumerate() {
        if *f {
            verdicts[t] = verify_single(&views[t]);
        }
    }
    verdicts
}

/// Batch-verify `items`; on failure bisect, marking the transactions that own a failing item.
fn check_group(items: &[(usize, &[u8], VerifyingKey, Signature)], failed: &mut [bool]) {
    if items.is_empty() {
        return;
    }
    if items.len() < MIN_BATCH {
        for (t, msg, vk, sig) in items {
            if vk.verify_strict(msg, sig).is_err() {
                failed[*t] = true;
            }
        }
        return;
    }
    let msgs: Vec<&[u8]> = items.iter().map(|x| x.1).collect();
    let keys: Vec<VerifyingKey> = items.iter().map(|x| x.2).collect();
    let sigs: Vec<Signature> = items.iter().map(|x| x.3).collect();
    if ed25519_dalek::verify_batch(&msgs, &sigs, &keys).is_ok() {
        return;
    }
    let mid = items.len() / 2;
    check_group(&items[..mid], failed);
    check_group(&items[mid..], failed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::SigningKey;

    fn cached_keys() -> usize {
        KEYS.with(|cell| cell.borrow().len())
    }

    fn key_bytes(seed: u32) -> [u8; 32] {
        let mut secret = [0u8; 32];
        secret[..4].copy_from_slice(&seed.to_le_bytes());
        SigningKey::from_bytes(&secret).verifying_key().to_bytes()
    }

    #[test]
    fn a_cached_key_is_the_key_decoded_afresh_and_bytes_off_the_curve_are_never_cached() {
        for seed in 0..8 {
            let bytes = key_bytes(seed);
            let fresh = VerifyingKey::from_bytes(&bytes).unwrap();
            assert_eq!(verifying_key(&bytes), Some(fresh)); // decoded, then cached
            assert_eq!(verifying_key(&bytes), Some(fresh)); // from the cache
        }
        assert_eq!(cached_keys(), 8);
        // A y-coordinate with no x on the curve: refused every time, and not kept.
        let off_curve = (2u8..=255)
            .map(|y| {
                let mut b = [0u8; 32];
                b[0] = y;
                b
            })
            .find(|b| VerifyingKey::from_bytes(b).is_err())
            .expect("some small y is off the curve");
        assert_eq!(verifying_key(&off_curve), None);
        assert_eq!(verifying_key(&off_curve), None);
        assert_eq!(cached_keys(), 8);
    }

    #[test]
    fn the_key_cache_starts_over_when_full_and_keeps_the_newest() {
        let n = u32::try_from(KEY_CACHE).unwrap() + 10;
        for seed in 0..n {
            verifying_key(&key_bytes(seed)).unwrap();
            assert!(cached_keys() <= KEY_CACHE);
        }
        assert_eq!(cached_keys(), 10);
        let newest = key_bytes(n - 1);
        assert!(KEYS.with(|cell| cell.borrow().contains_key(&newest)));
    }

    #[test]
    fn ell_is_not_canonical_but_ell_minus_one_is() {
        assert!(!is_canonical_scalar(&ELL));
        let mut m = ELL;
        m[0] -= 1;
        assert!(is_canonical_scalar(&m));
        assert!(is_canonical_scalar(&[0u8; 32]));
        assert!(!is_canonical_scalar(&[0xff; 32]));
    }

    #[test]
    fn field_canonicality_boundary() {
        let mut p = [0xffu8; 32];
        p[31] = 0x7f;
        p[0] = 0xed; // p itself
        assert!(!is_canonical_field(&p));
        p[0] = 0xec; // p - 1
        assert!(is_canonical_field(&p));
        // The sign bit does not take part in the field value.
        let mut q = p;
        q[31] = 0xff;
        assert!(is_canonical_field(&q));
        q[0] = 0xee;
        assert!(!is_canonical_field(&q));
    }

    #[test]
    fn small_order_table_has_distinct_entries_for_the_torsion_subgroup() {
        let ys = small_order_ys();
        // The identity (0, 1) is y = 1.
        let mut one = [0u8; 32];
        one[0] = 1;
        assert!(ys.contains(&one));
        // (±x, y) pairs share a y: the eight points have five distinct ys (1, -1, 0, ±y8).
        let mut distinct: Vec<_> = ys.to_vec();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), 5);
    }
}

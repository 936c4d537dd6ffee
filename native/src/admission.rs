//! Admission of a verified transaction, in native memory: the chain facts a send is admitted on
//! (the thread's view of the slot, its freshness, the live blockhashes with their last valid
//! block height) and the admission itself, in the submission core's order, ending with the send
//! token: blockhash not known-expired, a tip, the plan's minimum tip, a fresh view, then one
//! token of the account's bucket. A refusal before the token takes none.
//!
//! One `ChainFacts` per chain view (an ingress thread's replica, fed once per slot from the
//! snapshot the main thread posts it): never shared between threads, so no lock; and never
//! process-wide, so two services in one process (tests, an in-process cluster) keep their own.

use crate::bucket;
use std::collections::{HashMap, VecDeque};

/// Agave's MAX_PROCESSING_AGE: a blockhash is valid for this many blocks after its own
/// (`BLOCKHASH_VALIDITY_BLOCKS` in `src/delivery/chain-view.ts`).
pub const BLOCKHASH_VALIDITY_BLOCKS: u64 = 150;

/// One chain view's facts, as its last snapshot gave them.
#[derive(Debug, Default)]
pub struct ChainFacts {
    /// None before the first snapshot.
    slot: Option<u64>,
    /// Wall clock (ms since the Unix epoch) when `slot` was observed.
    seen_at_ms: f64,
    stale_ms: f64,
    /// The schedule names a leader for `slot`.
    leader_known: bool,
    block_height: u64,
    /// Blockhash → last valid block height.
    hashes: HashMap<[u8; 32], u64>,
    /// The same hashes in the order first seen (oldest first), for the forgetting.
    order: VecDeque<[u8; 32]>,
}

/// The view's freshness (`ChainHealth` in `chain-view.ts`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Health {
    pub synced: bool,
    /// 0 before the first snapshot.
    pub slot: u64,
    /// Infinite before the first snapshot.
    pub slot_age_ms: f64,
}

impl ChainFacts {
    /// Apply one snapshot: its slot and freshness, and the blockhashes first seen since the
    /// previous one. A slot lower than the last one only comes after a resync onto a restarted
    /// chain (or another node): the blockhashes known so far belong to the chain that is gone.
    /// Hashes dead for more than a validity window are forgotten (oldest first, stopping at the
    /// first one still live, as `ChainViewReplica` did).
    #[allow(clippy::too_many_arguments)]
    pub fn apply(
        &mut self,
        slot: u64,
        seen_at_ms: f64,
        stale_ms: f64,
        leader_known: bool,
        block_height: u64,
        new_hashes: &[([u8; 32], u64)],
    ) {
        if self.slot.is_some_and(|s| slot < s) {
            self.hashes.clear();
            self.order.clear();
        }
        self.slot = Some(slot);
        self.seen_at_ms = seen_at_ms;
        self.stale_ms = stale_ms;
        self.leader_known = leader_known;
        self.block_height = block_height;
        for (h, lv) in new_hashes {
            if self.hashes.insert(*h, *lv).is_none() {
                self.order.push_back(*h);
            }
        }
        let floor = block_height.saturating_sub(BLOCKHASH_VALIDITY_BLOCKS);
        while let Some(oldest) = self.order.front() {
            match self.hashes.get(oldest) {
                Some(&lv) if lv >= floor => break,
                _ => {
                    let h = self.order.pop_front().expect("front exists");
                    self.hashes.remove(&h);
                }
            }
        }
    }

    /// Last valid block height of a blockhash this view has seen, or None.
    pub fn last_valid(&self, hash: &[u8; 32]) -> Option<u64> {
        self.hashes.get(hash).copied()
    }

    /// True only for a blockhash known to be past its last valid block height.
    pub fn expired(&self, hash: &[u8; 32]) -> bool {
        self.last_valid(hash)
            .is_some_and(|lv| self.slot.is_some() && self.block_height > lv)
    }

    /// Blockhashes held (the live ones and those dead for less than a validity window).
    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// Freshness at wall-clock `now_ms`: synced while the schedule names a leader for the slot
    /// and the slot is no older than the stale limit.
    pub fn health(&self, now_ms: f64) -> Health {
        match self.slot {
            None => Health {
                synced: false,
                slot: 0,
                slot_age_ms: f64::INFINITY,
            },
            Some(slot) => {
                let age = now_ms - self.seen_at_ms;
                Health {
                    synced: self.leader_known && age <= self.stale_ms,
                    slot,
                    slot_age_ms: age,
                }
            }
        }
    }
}

/// What admission answered, in the order it is decided (the codes `src/submission/core.ts`
/// maps to its refusals).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Verdict {
    Admitted = 0,
    BlockhashExpired = 1,
    TipRequired = 2,
    TipInsufficient = 3,
    Stale = 4,
    RateLimited = 5,
}

/// A transaction's admission, with the facts it was decided on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Admission {
    pub verdict: Verdict,
    pub health: Health,
    /// Its blockhash's last valid block height, if the view knows it (None for a durable nonce).
    pub last_valid: Option<u64>,
    /// The send token's take, if admission got that far (`Admitted` or `RateLimited`).
    pub take: Option<bucket::Take>,
}

/// Admit one verified transaction, then take one token of bucket `send_slot`.
/// `blockhash`: None for a durable-nonce transaction (no blockhash lifetime).
pub fn admit(
    facts: &ChainFacts,
    now_ms: f64,
    blockhash: Option<&[u8; 32]>,
    tip_lamports: u64,
    min_tip_lamports: u64,
    send_slot: u32,
) -> Admission {
    let health = facts.health(now_ms);
    let last_valid = blockhash.and_then(|h| facts.last_valid(h));
    let refused = |verdict| Admission {
        verdict,
        health,
        last_valid,
        take: None,
    };
    if blockhash.is_some_and(|h| facts.expired(h)) {
        return refused(Verdict::BlockhashExpired);
    }
    if tip_lamports == 0 {
        return refused(Verdict::TipRequired);
    }
    if tip_lamports < min_tip_lamports {
        return refused(Verdict::TipInsufficient);
    }
    if !health.synced {
        return refused(Verdict::Stale);
    }
    let t = bucket::take(send_slot, 1);
    Admission {
        verdict: if t.granted {
            Verdict::Admitted
        } else {
            Verdict::RateLimited
        },
        health,
        last_valid,
        take: Some(t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H1: [u8; 32] = [1; 32];
    const H2: [u8; 32] = [2; 32];
    const H3: [u8; 32] = [3; 32];
    /// A bucket slot of their own (the table is process-wide; other tests use low slots).
    const SLOT: u32 = (bucket::SLOTS as u32) - 7;

    fn view() -> ChainFacts {
        let mut f = ChainFacts::default();
        // Block height 1000: H1 expired (last valid 990), H2 live (1100).
        f.apply(500, 10_000.0, 5_000.0, true, 1000, &[(H1, 990), (H2, 1100)]);
        f
    }

    #[test]
    fn facts_answer_expiry_and_last_valid_height() {
        let f = view();
        assert!(f.expired(&H1));
        assert!(!f.expired(&H2));
        assert!(!f.expired(&H3), "an unknown blockhash is not known-expired");
        assert_eq!(f.last_valid(&H2), Some(1100));
        assert_eq!(f.last_valid(&H3), None);
    }

    #[test]
    fn health_is_fresh_only_with_a_leader_and_a_young_slot() {
        assert!(!ChainFacts::default().health(0.0).synced);
        assert_eq!(ChainFacts::default().health(0.0).slot_age_ms, f64::INFINITY);
        let mut f = view();
        assert_eq!(
            f.health(12_000.0),
            Health {
                synced: true,
                slot: 500,
                slot_age_ms: 2_000.0
            }
        );
        assert!(!f.health(15_001.0).synced, "older than the stale limit");
        f.apply(501, 10_000.0, 5_000.0, false, 1000, &[]);
        assert!(!f.health(10_000.0).synced, "no leader known for the slot");
    }

    #[test]
    fn a_resync_to_a_lower_slot_forgets_every_blockhash() {
        let mut f = view();
        f.apply(499, 10_000.0, 5_000.0, true, 1000, &[]);
        assert!(f.is_empty());
        assert!(!f.expired(&H1));
        // The same slot again (a blockhash's snapshot) keeps them.
        let mut g = view();
        g.apply(500, 10_000.0, 5_000.0, true, 1000, &[(H3, 1150)]);
        assert_eq!(g.len(), 3);
    }

    #[test]
    fn hashes_dead_for_a_validity_window_are_forgotten_oldest_first() {
        let mut f = view();
        // Height 1141: H1 (990) is dead for more than 150 blocks; H2 (1100) is not.
        f.apply(501, 10_000.0, 5_000.0, true, 1141, &[]);
        assert_eq!(f.last_valid(&H1), None);
        assert_eq!(f.last_valid(&H2), Some(1100));
        assert!(f.expired(&H2));
    }

    #[test]
    fn admission_refuses_in_order_and_takes_a_token_only_once_admitted() {
        bucket::configure(SLOT, 1.0, 1).unwrap();
        bucket::reset(SLOT).unwrap();
        let f = view();
        let stale_at = 16_000.0;
        let fresh_at = 11_000.0;
        // Each refusal wins over every later one (all of them apply at once here).
        let a = admit(&f, stale_at, Some(&H1), 0, 100, SLOT);
        assert_eq!(a.verdict, Verdict::BlockhashExpired);
        assert_eq!(a.last_valid, Some(990));
        assert_eq!(
            admit(&f, stale_at, Some(&H2), 0, 100, SLOT).verdict,
            Verdict::TipRequired
        );
        assert_eq!(
            admit(&f, stale_at, Some(&H2), 99, 100, SLOT).verdict,
            Verdict::TipInsufficient
        );
        let s = admit(&f, stale_at, Some(&H2), 100, 100, SLOT);
        assert_eq!(s.verdict, Verdict::Stale);
        assert_eq!(s.health.slot_age_ms, 6_000.0);
        assert!(s.take.is_none());
        // None of those took the one token.
        assert_eq!(bucket::available(SLOT), 1);
        let ok = admit(&f, fresh_at, None, 100, 100, SLOT);
        assert_eq!(ok.verdict, Verdict::Admitted);
        assert_eq!(
            ok.last_valid, None,
            "a durable nonce has no blockhash lifetime"
        );
        assert!(ok.take.unwrap().granted);
        let limited = admit(&f, fresh_at, Some(&H2), 100, 100, SLOT);
        assert_eq!(limited.verdict, Verdict::RateLimited);
        assert!(limited.take.unwrap().retry_after_ns > 0);
        assert_eq!(limited.last_valid, Some(1100));
    }
}

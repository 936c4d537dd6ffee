//! A thread's key table: SHA-256 of a presented API key → what the thread's JavaScript resolved
//! it to (a slot of its array of `{ key, account }`), with the generations it was read under.
//!
//! One lookup does what the key cache did in five crossings: the hash (no raw key is kept: the
//! table is keyed by it), the generations (`generations.rs`, two atomic loads instead of a fresh
//! LMDB snapshot and two `meta` reads), and the look for the account's credit not committed yet
//! (the caller's `held`, the process-wide overlay). The rules are `src/accounts/key-cache.ts`'s:
//! an entry is used only while the key generation it was read under is current, its account
//! only while the account generation is; nothing is trusted or filled while a write is in
//! progress anywhere in the data directory; unknown keys are never entered (only the caller's
//! `insert`, after its slow path found the key live, enters one).

use crate::generations::{Generations, Snapshot};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// Entries at which the table starts over (keys are few: this never churns in practice).
pub const MAX_ENTRIES: usize = 100_000;

struct Entry {
    slot: u32,
    keys: u64,
    /// The account generation its account was read under; `None`: not read yet.
    accounts: Option<u64>,
    overlay_key: Box<[u8]>,
    /// What admission needs of its account, as the caller computed them from the account it
    /// entered (or read again) with this entry; `None`: none given (no account, or the caller
    /// keeps admission), and `current` answers nothing for the entry.
    facts: Option<PlanFacts>,
}

/// The plan facts a send of the entry's account is admitted on: the plan's minimum tip and the
/// account's send bucket (its slot in `bucket.rs`'s table). They are written only together with
/// the account they were computed from (`insert`, `account_read`), so a fact can never outlive
/// its account: whatever changes the plan changes the account record, which moves the account
/// generation, which makes the entry answer `Account` until the caller reads it again and gives
/// new facts. (A bucket's rate and size are not facts here: they live in the bucket itself, which
/// every reconfiguration — a plan, a cluster's budget share — rewrites in place, under the same
/// slot.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanFacts {
    pub min_tip_lamports: u64,
    pub send_slot: u32,
    /// The account's place among the process's transactions in flight and its plan's cap
    /// (`in_flight.rs`), or None when the service counts none: the send's one call takes a
    /// place there before it sends (`node_quic/admit_send.rs`). The cap follows the plan, so it
    /// is a fact of the account as the minimum tip is.
    pub in_flight: Option<crate::in_flight::Place>,
}

/// The answer to one presented key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The key and its committed account are current: the slot's pair is the answer.
    Hit(u32),
    /// The key is current and the account has a credit not committed yet: the caller reads it
    /// from the overlay.
    Held(u32),
    /// The key is current, its account changed since: the caller reads the committed account
    /// and calls `account_read`.
    Account(u32),
    /// Not cached (or not current, or a write in progress): the caller's slow path, then
    /// `insert` if the key is live.
    Miss,
}

impl Answer {
    /// As one number for JavaScript: `slot * 4 + kind` (kind 0 hit, 1 held, 2 account), or -1.
    pub fn code(self) -> f64 {
        let (slot, kind) = match self {
            Answer::Hit(s) => (s, 0),
            Answer::Held(s) => (s, 1),
            Answer::Account(s) => (s, 2),
            Answer::Miss => return -1.0,
        };
        f64::from(slot) * 4.0 + f64::from(kind)
    }
}

/// What the last lookup read, for the `insert` or `account_read` that follows it.
struct Last {
    hash: [u8; 32],
    at: Snapshot,
}

#[derive(Default)]
pub struct KeyTable {
    entries: HashMap<[u8; 32], Entry>,
    /// The slot the next new entry gets (slots are never reused while the table lives: an entry
    /// forgotten leaves its slot unused, so no two entries ever share one).
    next_slot: u32,
    last: Option<Last>,
}

impl KeyTable {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Look `key` up. The generations are read here, before the caller's own reads of the store
    /// on a miss, so what it enters next is labelled with generations no newer than its data.
    pub fn lookup(
        &mut self,
        key: &[u8],
        gens: &Generations,
        held: impl Fn(&[u8]) -> bool,
    ) -> Answer {
        let hash: [u8; 32] = Sha256::digest(key).into();
        let at = gens.read();
        let answer = match self.entries.get(&hash) {
            Some(e) if at.settled() && e.keys == at.keys => {
                if held(&e.overlay_key) {
                    Answer::Held(e.slot)
                } else if e.accounts != Some(at.accounts) {
                    Answer::Account(e.slot)
                } else {
                    Answer::Hit(e.slot)
                }
            }
            _ => Answer::Miss,
        };
        // Kept for the call that follows a miss or an account to read (none follows the others).
        self.last =
            matches!(answer, Answer::Miss | Answer::Account(_)).then_some(Last { hash, at });
        answer
    }

    /// The send path's lookup (`node_admit_key.rs`): the slot and its plan facts only when
    /// `lookup` would answer `Hit` and the entry has facts; None for everything else (a miss, a
    /// credit held, an account to read again, no facts), which the caller answers with its slow
    /// path — `lookup` and what follows it — so this leaves the last lookup's state alone.
    pub fn current(
        &self,
        key: &[u8],
        gens: &Generations,
        held: impl Fn(&[u8]) -> bool,
    ) -> Option<(u32, PlanFacts)> {
        let hash: [u8; 32] = Sha256::digest(key).into();
        let at = gens.read();
        let e = self.entries.get(&hash)?;
        let current = at.settled() && e.keys == at.keys && e.accounts == Some(at.accounts);
        if !current || held(&e.overlay_key) {
            return None;
        }
        e.facts.map(|f| (e.slot, f))
    }

    /// After a `Miss` whose slow path found the key live: enter it under the last lookup's hash
    /// and generations, its committed account read on a snapshot taken after that lookup, with
    /// that account's plan facts (None: the account has none, or the caller gives none). The
    /// slot the caller stores the pair in, or None (not entered: a write was in progress, or no
    /// lookup came before).
    pub fn insert(&mut self, overlay_key: &[u8], facts: Option<PlanFacts>) -> Option<u32> {
        let last = self.last.take()?;
        if !last.at.settled() {
            return None;
        }
        let slot = match self.entries.get(&last.hash) {
            Some(e) => e.slot,
            None => {
                if self.next_slot as usize >= MAX_ENTRIES {
                    self.entries.clear();
                    self.next_slot = 0;
                }
                self.next_slot += 1;
                self.next_slot - 1
            }
        };
        self.entries.insert(
            last.hash,
            Entry {
                slot,
                keys: last.at.keys,
                accounts: Some(last.at.accounts),
                overlay_key: overlay_key.into(),
                facts,
            },
        );
        Some(slot)
    }

    /// After an `Account` answer: the caller has read the committed account on a snapshot
    /// taken after the lookup; the entry's account is current under the lookup's generation,
    /// with that account's plan facts (None: it has none).
    pub fn account_read(&mut self, facts: Option<PlanFacts>) -> bool {
        let Some(last) = self.last.take() else {
            return false;
        };
        match self.entries.get_mut(&last.hash) {
            Some(e) if last.at.settled() && e.keys == last.at.keys => {
                e.accounts = Some(last.at.accounts);
                e.facts = facts;
                true
            }
            Some(e) => {
                // Not current after all: whatever facts it had belong to an account gone by.
                e.facts = None;
                false
            }
            None => false,
        }
    }

    /// After a `Miss` whose slow path found no live key: drop any entry of the last lookup's
    /// hash (a revoked key's), so nothing of it is kept.
    pub fn forget(&mut self) {
        if let Some(last) = self.last.take() {
            self.entries.remove(&last.hash);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gens() -> (Generations, std::path::PathBuf) {
        let d = crate::generations::test_dir("lf-keys");
        (Generations::open(&d, true).unwrap(), d)
    }

    const NONE: fn(&[u8]) -> bool = |_| false;

    #[test]
    fn a_key_is_entered_only_by_insert_and_answered_until_a_generation_moves() {
        let (g, d) = gens();
        let mut t = KeyTable::new();
        assert_eq!(t.lookup(b"lf_a", &g, NONE), Answer::Miss);
        assert_eq!(t.len(), 0, "a lookup alone enters nothing");
        assert_eq!(t.insert(b"account:a", None), Some(0));
        assert_eq!(t.lookup(b"lf_a", &g, NONE), Answer::Hit(0));
        assert_eq!(t.lookup(b"lf_b", &g, NONE), Answer::Miss);
        assert_eq!(t.insert(b"account:b", None), Some(1));
        // An account written: the key stays, its account is read again.
        let m = g.begin();
        g.end(m, false, true);
        assert_eq!(t.lookup(b"lf_a", &g, NONE), Answer::Account(0));
        assert!(t.account_read(None));
        assert_eq!(t.lookup(b"lf_a", &g, NONE), Answer::Hit(0));
        // A credit in the overlay comes before the account generation.
        assert_eq!(
            t.lookup(b"lf_a", &g, |k| k == b"account:a"),
            Answer::Held(0)
        );
        // A key revoked: every entry is read again, and the same hash keeps its slot.
        let m = g.begin();
        g.end(m, true, false);
        assert_eq!(t.lookup(b"lf_b", &g, NONE), Answer::Miss);
        assert_eq!(t.insert(b"account:b", None), Some(1));
        assert_eq!(t.lookup(b"lf_a", &g, NONE), Answer::Miss);
        t.forget();
        assert_eq!(t.len(), 1);
        assert_eq!(t.lookup(b"lf_a", &g, NONE), Answer::Miss);
        // A slot forgotten is not given to another key.
        assert_eq!(t.lookup(b"lf_c", &g, NONE), Answer::Miss);
        assert_eq!(t.insert(b"account:c", None), Some(2));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn nothing_is_trusted_or_entered_while_a_write_is_in_progress() {
        let (g, d) = gens();
        let mut t = KeyTable::new();
        t.lookup(b"lf_a", &g, NONE);
        t.insert(b"account:a", None);
        let m = g.begin();
        assert_eq!(t.lookup(b"lf_a", &g, NONE), Answer::Miss);
        assert_eq!(t.insert(b"account:a", None), None);
        assert_eq!(t.lookup(b"lf_c", &g, NONE), Answer::Miss);
        assert_eq!(t.insert(b"account:c", None), None);
        assert!(!t.account_read(None));
        g.end(m, false, false);
        assert_eq!(t.lookup(b"lf_a", &g, NONE), Answer::Hit(0));
        assert_eq!(t.len(), 1);
        // An insert with no miss before it enters nothing.
        assert_eq!(t.insert(b"account:x", None), None);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_hash_is_sha256_of_the_bytes() {
        let h: [u8; 32] = Sha256::digest(b"abc").into();
        assert_eq!(h[..4], [0xba, 0x78, 0x16, 0xbf]);
        assert_eq!(Answer::Held(3).code(), 13.0);
        assert_eq!(Answer::Miss.code(), -1.0);
    }

    const F1: PlanFacts = PlanFacts {
        min_tip_lamports: 100_000,
        send_slot: 6,
        in_flight: None,
    };
    const F2: PlanFacts = PlanFacts {
        min_tip_lamports: 50_000,
        send_slot: 6,
        in_flight: Some(crate::in_flight::Place { slot: 3, cap: 40 }),
    };

    #[test]
    fn current_answers_the_facts_only_of_a_hit_that_has_them() {
        let (g, d) = gens();
        let mut t = KeyTable::new();
        assert_eq!(t.current(b"lf_a", &g, NONE), None, "not entered");
        t.lookup(b"lf_a", &g, NONE);
        t.insert(b"account:a", Some(F1));
        assert_eq!(t.current(b"lf_a", &g, NONE), Some((0, F1)));
        // An entry without facts (no account, or none given) is never answered.
        t.lookup(b"lf_b", &g, NONE);
        t.insert(b"account:b", None);
        assert_eq!(t.lookup(b"lf_b", &g, NONE), Answer::Hit(1));
        assert_eq!(t.current(b"lf_b", &g, NONE), None);
        // A credit held: none (the caller reads the overlay's account).
        assert_eq!(t.current(b"lf_a", &g, |k| k == b"account:a"), None);
        // Some account written (a plan set, say): none until the caller read it again, then the
        // facts it gave with it.
        let m = g.begin();
        assert_eq!(t.current(b"lf_a", &g, NONE), None, "a write in progress");
        g.end(m, false, true);
        assert_eq!(t.current(b"lf_a", &g, NONE), None);
        assert_eq!(t.lookup(b"lf_a", &g, NONE), Answer::Account(0));
        assert!(t.account_read(Some(F2)));
        assert_eq!(t.current(b"lf_a", &g, NONE), Some((0, F2)));
        // Read again and found with no facts (the account is gone): none.
        let m = g.begin();
        g.end(m, false, true);
        assert_eq!(t.lookup(b"lf_a", &g, NONE), Answer::Account(0));
        assert!(t.account_read(None));
        assert_eq!(t.current(b"lf_a", &g, NONE), None);
        // A key revoked: none, and the lookup's slow path decides.
        let m = g.begin();
        g.end(m, false, true);
        t.lookup(b"lf_a", &g, NONE);
        assert!(t.account_read(Some(F1)));
        assert_eq!(t.current(b"lf_a", &g, NONE), Some((0, F1)));
        let m = g.begin();
        g.end(m, true, false);
        assert_eq!(t.current(b"lf_a", &g, NONE), None);
        assert_eq!(t.lookup(b"lf_a", &g, NONE), Answer::Miss);
        t.forget();
        assert_eq!(t.current(b"lf_a", &g, NONE), None);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn current_leaves_the_last_lookup_for_the_insert_that_follows_it() {
        let (g, d) = gens();
        let mut t = KeyTable::new();
        t.lookup(b"lf_a", &g, NONE);
        t.insert(b"account:a", Some(F1));
        assert_eq!(t.lookup(b"lf_b", &g, NONE), Answer::Miss);
        assert_eq!(t.current(b"lf_a", &g, NONE), Some((0, F1)));
        // The insert still enters lf_b, the key its lookup missed.
        assert_eq!(t.insert(b"account:b", Some(F2)), Some(1));
        assert_eq!(t.current(b"lf_b", &g, NONE), Some((1, F2)));
        std::fs::remove_dir_all(&d).unwrap();
    }
}

//! Property tests and a bounded fuzz run: random valid transactions round-trip, random
//! mutations never panic and are always rejected, random bytes never panic, the batch path
//! agrees with the single path, tips are found exactly.
mod common;

use common::*;
use landfall_native::error::Code;
use landfall_native::inspect::{decode_base64, inspect_bytes, inspect_many};
use landfall_native::parse::{TxView, Version, PACKET_DATA_SIZE};
use landfall_native::tip::{TipSet, COMPUTE_BUDGET_PROGRAM};
use landfall_native::verify::{verify_batch, verify_single};
use proptest::prelude::*;

/// A random valid transaction: 1–3 signers, 0–4 extra keys, 1–4 instructions to random
/// programs (not the fee payer), optional v0 lookups.
fn arb_tx() -> impl Strategy<Value = Tx> {
    (
        1usize..=3,
        0usize..=4,
        any::<bool>(),
        prop::collection::vec(
            (
                any::<u8>(),
                prop::collection::vec(any::<u8>(), 0..6),
                prop::collection::vec(any::<u8>(), 0..40),
            ),
            1..4,
        ),
        prop::collection::vec((1usize..4, 0usize..3), 0..3),
        any::<u64>(),
        any::<[u8; 32]>(),
    )
        .prop_map(|(ns, nother, v0, ixs, luts, seed, blockhash)| {
            let signers: Vec<_> = (0..ns).map(|i| key(seed.wrapping_add(i as u64))).collect();
            let mut tx = Tx::new(signers);
            tx.blockhash = blockhash;
            tx.others = (0..nother + 1).map(|i| [i as u8 + 100; 32]).collect();
            tx.readonly_unsigned = 1;
            tx.v0 = v0;
            if v0 {
                tx.luts = luts
                    .into_iter()
                    .enumerate()
                    .map(|(i, (w, r))| Lut {
                        table: [i as u8 + 50; 32],
                        writable: (0..w as u8).collect(),
                        readonly: (0..r as u8).collect(),
                    })
                    .collect();
            }
            let nstatic = tx.num_static();
            let total = nstatic
                + tx.luts
                    .iter()
                    .map(|l| l.writable.len() + l.readonly.len())
                    .sum::<usize>();
            tx.ixs = ixs
                .into_iter()
                .map(|(p, accs, data)| Ix {
                    program: 1 + (p as usize % (nstatic - 1)) as u8,
                    accounts: accs
                        .into_iter()
                        .map(|a| (a as usize % total) as u8)
                        .collect(),
                    data,
                })
                .collect();
            tx
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn valid_transactions_round_trip(tx in arb_tx()) {
        let bytes = tx.build();
        prop_assume!(bytes.len() <= PACKET_DATA_SIZE);
        let v = TxView::parse(&bytes).expect("valid transaction parses");
        prop_assert_eq!(v.version, if tx.v0 { Version::V0 } else { Version::Legacy });
        prop_assert_eq!(usize::from(v.num_signatures), tx.signers.len());
        prop_assert_eq!(v.message(), &tx.message()[..]);
        prop_assert_eq!(v.recent_blockhash(), &tx.blockhash);
        let ixs: Vec<_> = v.instructions().collect();
        prop_assert_eq!(ixs.len(), tx.ixs.len());
        for (a, b) in ixs.iter().zip(&tx.ixs) {
            prop_assert_eq!(a.program_id_index, b.program);
            prop_assert_eq!(a.accounts, &b.accounts[..]);
            prop_assert_eq!(a.data, &b.data[..]);
        }
        prop_assert_eq!(v.lookups().count(), tx.luts.len());
        prop_assert!(verify_single(&v).is_ok());
    }

    #[test]
    fn every_mutation_is_rejected_without_panic(tx in arb_tx(), pos in any::<prop::sample::Index>(), x in 1u8..=255) {
        let mut bytes = tx.build();
        prop_assume!(bytes.len() <= PACKET_DATA_SIZE);
        let i = pos.index(bytes.len());
        bytes[i] ^= x;
        let r = TxView::parse(&bytes).and_then(|v| verify_single(&v));
        prop_assert!(r.is_err(), "mutation at {} by {:#x} accepted", i, x);
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..1400)) {
        let tips = TipSet::new(vec![[1; 32]]);
        let _ = inspect_bytes(&bytes, &tips);
        let mut buf = [0u8; PACKET_DATA_SIZE];
        let _ = decode_base64(&bytes, &mut buf);
    }

    #[test]
    fn batch_verdicts_equal_single_verdicts(
        txs in prop::collection::vec((arb_tx(), 0u8..5, any::<prop::sample::Index>()), 1..40)
    ) {
        // Kinds: 0/1 valid, 2 flipped message byte, 3 flipped signature byte, 4 zeroed signature.
        let mut all = Vec::new();
        for (tx, kind, pos) in &txs {
            let mut b = tx.build();
            if b.len() > PACKET_DATA_SIZE { continue; }
            let mo = tx.message_offset();
            match kind {
                2 => { let i = mo + pos.index(b.len() - mo); b[i] ^= 0x40; }
                3 => { let i = 1 + pos.index(mo - 1); b[i] ^= 0x01; }
                4 => { let s = pos.index(tx.signers.len()); b[1 + 64 * s..1 + 64 * (s + 1)].fill(0); }
                _ => {}
            }
            all.push(b);
        }
        let views: Vec<_> = all.iter().filter_map(|b| TxView::parse(b).ok()).collect();
        let batch = verify_batch(&views);
        for (v, got) in views.iter().zip(batch) {
            prop_assert_eq!(got, verify_single(v));
        }
        let tips = TipSet::new(vec![[100; 32]]);
        let slices: Vec<&[u8]> = all.iter().map(|b| &b[..]).collect();
        for (b, got) in all.iter().zip(inspect_many(&slices, &tips)) {
            prop_assert_eq!(got, inspect_bytes(b, &tips));
        }
    }
}

proptest! {
    // The bounded fuzz run CI executes on every `npm test` (cargo-fuzz needs nightly; see
    // native/fuzz for the coverage-guided target). Inputs start from a valid transaction and
    // get several random byte edits, insertions and truncations, so they reach deep into the
    // parser rather than failing at the first byte.
    #![proptest_config(ProptestConfig { cases: 20_000, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn fuzz_structured_mutations_never_panic(
        tx in arb_tx(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
    ) {
        let mut b = tx.build();
        for (pos, val, op) in edits {
            match op {
                0 if !b.is_empty() => { let i = pos.index(b.len()); b[i] = val; }
                1 => { let i = pos.index(b.len() + 1); b.insert(i, val); }
                _ if !b.is_empty() => { let i = pos.index(b.len()); b.truncate(i); }
                _ => {}
            }
        }
        let tips = TipSet::new(vec![[100; 32]]);
        let single = inspect_bytes(&b, &tips);
        let many = inspect_many(&[&b[..]], &tips);
        prop_assert_eq!(&many[0], &single);
    }
}

#[test]
fn crafted_encodings_get_the_same_verdict_in_batch_and_single() {
    // Signatures verify_strict refuses for reasons other than the group equation: a
    // non-canonical s (s + ℓ), a small-order R (identity), a non-canonical R (y ≥ p).
    let base: Vec<Vec<u8>> = (0..12)
        .map(|i| simple_transfer(key(900 + i), [9; 32], 1).build())
        .collect();
    let mut crafted = base.clone();
    // s + ℓ on tx 1 (adds ℓ to the little-endian scalar in bytes 33..65).
    {
        const ELL: [u8; 32] = [
            0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9,
            0xde, 0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
        ];
        let s = &mut crafted[1][33..65];
        let mut carry = 0u16;
        for i in 0..32 {
            let v = u16::from(s[i]) + u16::from(ELL[i]) + carry;
            s[i] = v as u8;
            carry = v >> 8;
        }
    }
    // R = identity encoding (y = 1) on tx 3.
    crafted[3][1..33].fill(0);
    crafted[3][1] = 1;
    // R with y = p (non-canonical encoding of y = 0) on tx 5.
    crafted[5][1..33].fill(0xff);
    crafted[5][1] = 0xed;
    crafted[5][32] = 0x7f;
    // Fee payer key replaced by a small-order point (identity): tx 7 (the message changes too).
    crafted[7][1 + 64 + 4..1 + 64 + 4 + 32].fill(0);
    crafted[7][1 + 64 + 4] = 1;
    let views: Vec<_> = crafted.iter().map(|b| TxView::parse(b).unwrap()).collect();
    let batch = verify_batch(&views);
    for (i, (v, got)) in views.iter().zip(batch).enumerate() {
        assert_eq!(got, verify_single(v), "tx {i}");
        assert_eq!(got.is_ok(), ![1, 3, 5, 7].contains(&i), "tx {i}");
    }
}

#[test]
fn tips_are_found_summed_and_lookup_tips_flagged() {
    let tip_a = [200u8; 32];
    let tip_b = [201u8; 32];
    let tips = TipSet::new(vec![tip_a, tip_b]);
    // Two transfers (to tip_a and tip_b) + one to a non-tip address, summed.
    let mut t = simple_transfer(key(20), tip_a, 1_000);
    t.others = vec![tip_a, SYSTEM, tip_b, [77; 32]];
    t.readonly_unsigned = 1;
    t.ixs = vec![
        Ix {
            program: 2,
            accounts: vec![0, 1],
            data: transfer_data(1_000),
        },
        Ix {
            program: 2,
            accounts: vec![0, 3],
            data: transfer_data(2_500),
        },
        Ix {
            program: 2,
            accounts: vec![0, 4],
            data: transfer_data(9_999),
        },
    ];
    // readonly_unsigned=1 makes key 4 ([77;32]) readonly; fine for a scan.
    let r = inspect_bytes(&t.build(), &tips).unwrap();
    assert_eq!(r.scan.tip_lamports, 3_500);
    assert_eq!(r.scan.tip_transfers, 2);
    assert_eq!(r.scan.first_tip_account, Some(0));

    // TransferWithSeed: destination is account 2.
    let mut t = Tx::new(vec![key(21)]);
    t.others = vec![[5; 32], tip_b, SYSTEM];
    t.readonly_unsigned = 1;
    t.ixs = vec![Ix {
        program: 3,
        accounts: vec![1, 0, 2],
        data: transfer_with_seed_data(4_321, b"seed", [6; 32]),
    }];
    let r = inspect_bytes(&t.build(), &tips).unwrap();
    assert_eq!(
        (r.scan.tip_lamports, r.scan.first_tip_account),
        (4_321, Some(1))
    );
    // A seed longer than 32 bytes can never execute: not a tip.
    t.ixs[0].data = transfer_with_seed_data(4_321, &[b'x'; 33], [6; 32]);
    assert_eq!(
        inspect_bytes(&t.build(), &tips).unwrap().scan.tip_lamports,
        0
    );

    // Destination only through a lookup table: flagged, not counted.
    let mut t = simple_transfer(key(22), [9; 32], 1);
    t.v0 = true;
    t.luts.push(Lut {
        table: [1; 32],
        writable: vec![4],
        readonly: vec![],
    });
    t.ixs[0].accounts = vec![0, 3];
    let r = inspect_bytes(&t.build(), &tips).unwrap();
    assert_eq!((r.scan.tip_lamports, r.scan.transfers_via_lookup), (0, 1));

    // Truncated transfer data and too few accounts: not tips.
    let mut t = simple_transfer(key(23), tip_a, 1);
    t.ixs[0].data.truncate(11);
    assert_eq!(
        inspect_bytes(&t.build(), &tips).unwrap().scan.tip_transfers,
        0
    );
    let mut t = simple_transfer(key(23), tip_a, 1);
    t.ixs[0].accounts = vec![1];
    assert_eq!(
        inspect_bytes(&t.build(), &tips).unwrap().scan.tip_transfers,
        0
    );

    // A transfer the System Program would refuse pays nothing: read-only destination,
    // unsigned source.
    let mut t = simple_transfer(key(25), tip_a, 5_000);
    t.readonly_unsigned = 2; // makes tip_a (index 1) read-only too
    assert_eq!(
        inspect_bytes(&t.build(), &tips).unwrap().scan.tip_transfers,
        0
    );
    let mut t = Tx::new(vec![key(26)]);
    t.others = vec![tip_a, [44; 32], SYSTEM]; // SYSTEM read-only, the others writable
    t.readonly_unsigned = 1;
    t.ixs = vec![Ix {
        program: 3,
        accounts: vec![2, 1],
        data: transfer_data(5_000),
    }]; // [44;32] never signed
    assert_eq!(
        inspect_bytes(&t.build(), &tips).unwrap().scan.tip_transfers,
        0
    );

    // Saturating sum.
    let mut t = simple_transfer(key(24), tip_a, u64::MAX);
    t.ixs.push(t.ixs[0].clone());
    assert_eq!(
        inspect_bytes(&t.build(), &tips).unwrap().scan.tip_lamports,
        u64::MAX
    );
}

#[test]
fn durable_nonce_and_compute_budget_are_reported() {
    let tips = TipSet::new(vec![]);
    let mut t = Tx::new(vec![key(30)]);
    t.others = vec![[8; 32], SYSTEM, COMPUTE_BUDGET_PROGRAM];
    t.readonly_unsigned = 2;
    let mut limit = vec![2u8];
    limit.extend_from_slice(&200_000u32.to_le_bytes());
    let mut price = vec![3u8];
    price.extend_from_slice(&12_345u64.to_le_bytes());
    t.ixs = vec![
        Ix {
            program: 2,
            accounts: vec![1, 0, 0],
            data: 4u32.to_le_bytes().to_vec(),
        },
        Ix {
            program: 3,
            accounts: vec![],
            data: limit,
        },
        Ix {
            program: 3,
            accounts: vec![],
            data: price,
        },
    ];
    let s = inspect_bytes(&t.build(), &tips).unwrap().scan;
    assert!(s.durable_nonce);
    // The nonce account is the first instruction's account 0 (static key 1 here).
    assert_eq!(s.nonce_account, Some([8; 32]));
    assert_eq!(
        (s.compute_unit_limit, s.compute_unit_price),
        (Some(200_000), Some(12_345))
    );
    // A read-only nonce account: the validator does not treat it as durable.
    let mut ro = t.clone();
    ro.others = vec![SYSTEM, COMPUTE_BUDGET_PROGRAM, [8; 32]];
    ro.readonly_unsigned = 3;
    ro.ixs[0] = Ix {
        program: 1,
        accounts: vec![3, 0, 0],
        data: 4u32.to_le_bytes().to_vec(),
    };
    ro.ixs[1].program = 2;
    ro.ixs[2].program = 2;
    assert!(
        !inspect_bytes(&ro.build(), &tips)
            .unwrap()
            .scan
            .durable_nonce
    );
    // AdvanceNonceAccount not first: not a durable-nonce transaction, and no nonce account.
    t.ixs.swap(0, 1);
    let s = inspect_bytes(&t.build(), &tips).unwrap().scan;
    assert!(!s.durable_nonce);
    assert_eq!(s.nonce_account, None);
}

#[test]
fn a_nonce_account_from_a_lookup_table_is_not_a_durable_nonce() {
    // SIMD-0242 (`require_static_nonce_account`, active on mainnet): the validator's
    // `get_durable_nonce` takes the nonce account only from the static keys; AdvanceNonceAccount
    // on a loaded one leaves an ordinary transaction whose blockhash is checked as usual.
    let tips = TipSet::new(vec![]);
    let advance = 4u32.to_le_bytes().to_vec();
    // Static keys [payer, nonce, SYSTEM]; loaded: 3 = table entry 5 (writable), 4 = entry 3 (read-only).
    let mut t = Tx::new(vec![key(31)]);
    t.v0 = true;
    t.others = vec![[8; 32], SYSTEM];
    t.readonly_unsigned = 1;
    t.luts = vec![Lut {
        table: [0xa1; 32],
        writable: vec![5],
        readonly: vec![3],
    }];
    t.ixs = vec![Ix {
        program: 2,
        accounts: vec![1, 0],
        data: advance.clone(),
    }];
    let s = inspect_bytes(&t.build(), &tips).unwrap().scan;
    assert_eq!(
        (s.durable_nonce, s.nonce_account),
        (true, Some([8; 32])),
        "static nonce account"
    );
    for i in [3u8, 4] {
        t.ixs = vec![Ix {
            program: 2,
            accounts: vec![i, 0],
            data: advance.clone(),
        }];
        let s = inspect_bytes(&t.build(), &tips).unwrap().scan;
        assert_eq!(
            (s.durable_nonce, s.nonce_account),
            (false, None),
            "account index {i}"
        );
    }
}

#[test]
fn base64_is_strict() {
    let mut buf = [0u8; PACKET_DATA_SIZE];
    let good = simple_transfer(key(40), [9; 32], 1).build();
    use base64::Engine;
    let text = base64::engine::general_purpose::STANDARD.encode(&good);
    assert_eq!(
        decode_base64(text.as_bytes(), &mut buf).unwrap(),
        good.len()
    );
    for bad in [
        "",
        "A",
        "AA=",
        "A===",
        "AAA-",
        "AB==",
        "AAAA AAAA",
        "AAAAAA",
    ] {
        assert!(decode_base64(bad.as_bytes(), &mut buf).is_err(), "{bad:?}");
    }
    let too_long = "A".repeat(1648);
    assert_eq!(
        decode_base64(too_long.as_bytes(), &mut buf)
            .unwrap_err()
            .code,
        Code::TooLarge
    );
}

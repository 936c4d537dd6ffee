//! Framing and sanitize rules, each asserted on hand-built transactions.
mod common;

use common::*;
use landfall_native::error::Code;
use landfall_native::parse::{read_compact_u16, TxView, Version, PACKET_DATA_SIZE};
use landfall_native::verify::verify_single;

fn code(bytes: &[u8]) -> Code {
    TxView::parse(bytes)
        .and_then(|v| verify_single(&v))
        .unwrap_err()
        .code
}

#[test]
fn compact_u16_round_trips_every_value_and_rejects_non_minimal() {
    for v in 0..=u16::MAX {
        let mut b = Vec::new();
        compact(v, &mut b);
        let mut off = 0;
        assert_eq!(read_compact_u16(&b, &mut off).unwrap(), v);
        assert_eq!(off, b.len());
    }
    for bad in [
        &[0x80u8, 0x00][..],
        &[0x81, 0x80, 0x00],
        &[0xff, 0xff, 0x04],
        &[0x80],
        &[0xff, 0xff],
    ] {
        assert!(read_compact_u16(bad, &mut 0).is_err(), "{bad:?}");
    }
}

#[test]
fn legacy_and_v0_parse_with_their_fields() {
    let payer = key(1);
    let tx = simple_transfer(payer.clone(), [9; 32], 5000);
    let bytes = tx.build();
    let v = TxView::parse(&bytes).unwrap();
    assert_eq!(v.version, Version::Legacy);
    assert_eq!(v.num_signatures, 1);
    assert_eq!(v.static_key(0), payer.verifying_key().as_bytes());
    assert_eq!(v.recent_blockhash(), &[7; 32]);
    assert_eq!(v.message(), &tx.message()[..]);
    verify_single(&v).unwrap();

    let mut t0 = tx.clone();
    t0.v0 = true;
    t0.luts.push(Lut {
        table: [3; 32],
        writable: vec![1, 2],
        readonly: vec![5],
    });
    t0.ixs[0].accounts = vec![0, 3]; // destination from the lookup table
    let b0 = t0.build();
    let v0 = TxView::parse(&b0).unwrap();
    assert_eq!(v0.version, Version::V0);
    assert_eq!((v0.num_lookup_writable, v0.num_lookup_readonly), (2, 1));
    assert_eq!(
        v0.message()[0],
        0x80,
        "the signed message includes the version prefix"
    );
    verify_single(&v0).unwrap();
    assert!(
        v0.is_writable_index(0)
            && !v0.is_writable_index(2)
            && v0.is_writable_index(3)
            && !v0.is_writable_index(5)
    );
}

#[test]
fn size_and_trailing_bytes() {
    let mut bytes = simple_transfer(key(2), [9; 32], 1).build();
    bytes.push(0);
    assert_eq!(code(&bytes), Code::Malformed);
    let big = vec![0u8; PACKET_DATA_SIZE + 1];
    assert_eq!(code(&big), Code::TooLarge);
    assert_eq!(code(&[]), Code::Malformed);
}

#[test]
fn every_truncation_is_malformed() {
    let mut tx = simple_transfer(key(3), [9; 32], 1);
    tx.v0 = true;
    tx.luts.push(Lut {
        table: [3; 32],
        writable: vec![1],
        readonly: vec![],
    });
    let bytes = tx.build();
    for n in 0..bytes.len() {
        let err = TxView::parse(&bytes[..n]).unwrap_err();
        assert_eq!(err.code, Code::Malformed, "prefix {n}");
        assert!(err.offset.unwrap() as usize <= n, "offset within input");
    }
}

#[test]
fn versions_other_than_v0_are_refused() {
    let mut t = simple_transfer(key(4), [9; 32], 1);
    t.v0 = true;
    let bytes = t.build();
    let mo = t.message_offset();
    for v in 1..=127u8 {
        let mut b = bytes.clone();
        b[mo] = 0x80 | v;
        let e = TxView::parse(&b).unwrap_err();
        assert_eq!(e.code, Code::UnsupportedVersion);
        assert_eq!(e.value, Some(v.into()));
    }
}

#[test]
fn sanitize_rules() {
    // Signature count ≠ num_required_signatures.
    let tx = simple_transfer(key(5), [9; 32], 1);
    let mut b = tx.build();
    let mo = tx.message_offset();
    b[mo] = 2;
    assert_eq!(code(&b), Code::SignatureCountMismatch);

    // More signers than static keys.
    let mut t = Tx::new(vec![key(6), key(7)]);
    t.others.clear();
    let mut b = t.build();
    // Drop the second static key by rewriting the count to 1 and removing 32 bytes.
    let mo = t.message_offset();
    b[mo + 3] = 1;
    b.drain(mo + 4 + 32..mo + 4 + 64);
    assert_eq!(code(&b), Code::SignatureCountMismatch);

    // Readonly unsigned overlapping the signers.
    let mut t = simple_transfer(key(8), [9; 32], 1);
    t.readonly_unsigned = 3;
    assert_eq!(code(&t.build()), Code::InvalidHeader);

    // No writable fee payer.
    let mut t = simple_transfer(key(8), [9; 32], 1);
    t.readonly_signed = 1;
    assert_eq!(code(&t.build()), Code::InvalidHeader);

    // Program index out of range, and program = fee payer.
    let mut t = simple_transfer(key(8), [9; 32], 1);
    t.ixs[0].program = 3;
    assert_eq!(code(&t.build()), Code::InvalidProgramIndex);
    t.ixs[0].program = 0;
    assert_eq!(code(&t.build()), Code::InvalidProgramIndex);

    // Account index out of range (legacy: no lookups), in range via a lookup (v0).
    let mut t = simple_transfer(key(8), [9; 32], 1);
    t.ixs[0].accounts = vec![0, 3];
    let e = TxView::parse(&t.build()).unwrap_err();
    assert_eq!(
        (e.code, e.index, e.value),
        (Code::InvalidAccountIndex, Some(0), Some(3))
    );
    t.v0 = true;
    t.luts.push(Lut {
        table: [1; 32],
        writable: vec![0],
        readonly: vec![],
    });
    assert!(TxView::parse(&t.build()).is_ok());

    // Empty lookup.
    let mut t = simple_transfer(key(8), [9; 32], 1);
    t.v0 = true;
    t.luts.push(Lut {
        table: [1; 32],
        writable: vec![],
        readonly: vec![],
    });
    assert_eq!(code(&t.build()), Code::EmptyLookup);

    // More than 256 accounts through lookups.
    let mut t = simple_transfer(key(8), [9; 32], 1);
    t.v0 = true;
    t.luts.push(Lut {
        table: [1; 32],
        writable: (0..=255).collect(),
        readonly: vec![],
    });
    assert_eq!(code(&t.build()), Code::TooManyAccounts);
}

#[test]
fn unsigned_and_invalid_signatures_name_their_index() {
    let mut t = simple_transfer(key(10), [9; 32], 1);
    t.signers.push(key(11));
    t.readonly_unsigned = 1;
    let good = t.build();
    assert!(TxView::parse(&good).and_then(|v| verify_single(&v)).is_ok());

    let mut zero = good.clone();
    zero[1 + 64..1 + 128].fill(0);
    let e = TxView::parse(&zero)
        .and_then(|v| verify_single(&v))
        .unwrap_err();
    assert_eq!((e.code, e.index), (Code::Unsigned, Some(1)));

    let mut bad = good.clone();
    bad[1 + 64 + 10] ^= 1;
    let e = TxView::parse(&bad)
        .and_then(|v| verify_single(&v))
        .unwrap_err();
    assert_eq!((e.code, e.index), (Code::SignatureInvalid, Some(1)));

    // Every single-bit flip of the message invalidates signature 0 (or the framing).
    let mo = t.message_offset();
    for i in mo..good.len() {
        let mut b = good.clone();
        b[i] ^= 0x10;
        assert!(
            TxView::parse(&b).and_then(|v| verify_single(&v)).is_err(),
            "flip at {i}"
        );
    }
}

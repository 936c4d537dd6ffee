//! A small Solana wire-format writer for tests, independent of the parser under test.
#![allow(dead_code)]

use ed25519_dalek::{Signer, SigningKey};

pub const SYSTEM: [u8; 32] = [0; 32];

pub fn key(seed: u64) -> SigningKey {
    let mut s = [0u8; 32];
    s[..8].copy_from_slice(&seed.to_le_bytes());
    s[8] = 0x5a;
    SigningKey::from_bytes(&s)
}

pub fn compact(mut v: u16, out: &mut Vec<u8>) {
    loop {
        let mut b = (v & 0x7f) as u8;
        v >>= 7;
        if v != 0 {
            b |= 0x80;
        }
        out.push(b);
        if v == 0 {
            break;
        }
    }
}

#[derive(Clone, Debug)]
pub struct Ix {
    pub program: u8,
    pub accounts: Vec<u8>,
    pub data: Vec<u8>,
}

#[derive(Clone, Debug)]
pub struct Lut {
    pub table: [u8; 32],
    pub writable: Vec<u8>,
    pub readonly: Vec<u8>,
}

/// A transaction description; `build` serializes and signs it.
#[derive(Clone, Debug)]
pub struct Tx {
    pub v0: bool,
    pub signers: Vec<SigningKey>,
    pub readonly_signed: u8,
    pub readonly_unsigned: u8,
    /// Non-signer static keys (after the signers' keys).
    pub others: Vec<[u8; 32]>,
    pub blockhash: [u8; 32],
    pub ixs: Vec<Ix>,
    pub luts: Vec<Lut>,
}

impl Tx {
    pub fn new(signers: Vec<SigningKey>) -> Self {
        Tx {
            v0: false,
            signers,
            readonly_signed: 0,
            readonly_unsigned: 0,
            others: vec![],
            blockhash: [7; 32],
            ixs: vec![],
            luts: vec![],
        }
    }

    pub fn num_static(&self) -> usize {
        self.signers.len() + self.others.len()
    }

    pub fn message(&self) -> Vec<u8> {
        let mut m = Vec::new();
        if self.v0 {
            m.push(0x80);
        }
        m.push(self.signers.len() as u8);
        m.push(self.readonly_signed);
        m.push(self.readonly_unsigned);
        compact(self.num_static() as u16, &mut m);
        for s in &self.signers {
            m.extend_from_slice(s.verifying_key().as_bytes());
        }
        for k in &self.others {
            m.extend_from_slice(k);
        }
        m.extend_from_slice(&self.blockhash);
        compact(self.ixs.len() as u16, &mut m);
        for ix in &self.ixs {
            m.push(ix.program);
            compact(ix.accounts.len() as u16, &mut m);
            m.extend_from_slice(&ix.accounts);
            compact(ix.data.len() as u16, &mut m);
            m.extend_from_slice(&ix.data);
        }
        if self.v0 {
            compact(self.luts.len() as u16, &mut m);
            for l in &self.luts {
                m.extend_from_slice(&l.table);
                compact(l.writable.len() as u16, &mut m);
                m.extend_from_slice(&l.writable);
                compact(l.readonly.len() as u16, &mut m);
                m.extend_from_slice(&l.readonly);
            }
        }
        m
    }

    /// Serialize with every signer's real signature.
    pub fn build(&self) -> Vec<u8> {
        let msg = self.message();
        let mut out = Vec::new();
        compact(self.signers.len() as u16, &mut out);
        for s in &self.signers {
            out.extend_from_slice(&s.sign(&msg).to_bytes());
        }
        out.extend_from_slice(&msg);
        out
    }

    /// Offset of the message inside `build()`'s output.
    pub fn message_offset(&self) -> usize {
        let mut v = Vec::new();
        compact(self.signers.len() as u16, &mut v);
        v.len() + 64 * self.signers.len()
    }
}

pub fn transfer_data(lamports: u64) -> Vec<u8> {
    let mut d = 2u32.to_le_bytes().to_vec();
    d.extend_from_slice(&lamports.to_le_bytes());
    d
}

pub fn transfer_with_seed_data(lamports: u64, seed: &[u8], owner: [u8; 32]) -> Vec<u8> {
    let mut d = 11u32.to_le_bytes().to_vec();
    d.extend_from_slice(&lamports.to_le_bytes());
    d.extend_from_slice(&(seed.len() as u64).to_le_bytes());
    d.extend_from_slice(seed);
    d.extend_from_slice(&owner);
    d
}

/// payer → `dest` System transfer: static keys [payer, dest, system].
pub fn simple_transfer(payer: SigningKey, dest: [u8; 32], lamports: u64) -> Tx {
    let mut tx = Tx::new(vec![payer]);
    tx.others = vec![dest, SYSTEM];
    tx.readonly_unsigned = 1;
    tx.ixs.push(Ix {
        program: 2,
        accounts: vec![0, 1],
        data: transfer_data(lamports),
    });
    tx
}

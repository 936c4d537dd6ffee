//! Tip detection and the other facts the service needs from one parse: durable nonce,
//! compute-budget limit and price.

use crate::parse::TxView;

/// The System Program id: 32 zero bytes (`11111111111111111111111111111111`).
pub const SYSTEM_PROGRAM: [u8; 32] = [0; 32];

/// `ComputeBudget111111111111111111111111111111`.
pub const COMPUTE_BUDGET_PROGRAM: [u8; 32] = [
    3, 6, 70, 111, 229, 33, 23, 50, 255, 236, 173, 186, 114, 195, 155, 231, 188, 140, 229, 187,
    197, 247, 18, 107, 44, 67, 155, 58, 64, 0, 0, 0,
];

const SYSTEM_TRANSFER: u32 = 2;
const SYSTEM_ADVANCE_NONCE: u32 = 4;
const SYSTEM_TRANSFER_WITH_SEED: u32 = 11;
/// `Pubkey::create_with_seed` rejects longer seeds, so such a transfer can never pay.
const MAX_SEED_LEN: u64 = 32;

/// The set of addresses that count as tips. Small (8 by default): a linear scan over 32-byte
/// keys beats hashing.
#[derive(Debug, Clone, Default)]
pub struct TipSet {
    keys: Vec<[u8; 32]>,
}

impl TipSet {
    pub fn new(keys: Vec<[u8; 32]>) -> Self {
        TipSet { keys }
    }
    #[inline]
    pub fn contains(&self, key: &[u8; 32]) -> bool {
        self.keys.iter().any(|k| k == key)
    }
    pub fn keys(&self) -> &[[u8; 32]] {
        &self.keys
    }
}

/// What one pass over the instructions found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scan {
    /// Sum of System transfers to tip addresses (saturating).
    pub tip_lamports: u64,
    /// How many such transfers.
    pub tip_transfers: u32,
    /// Index (into the tip set) of the first tip address paid.
    pub first_tip_account: Option<u32>,
    /// System transfers whose destination is loaded from an address lookup table: they may be
    /// aimed at a tip address, but it cannot be known without the table, so they do not count.
    pub transfers_via_lookup: u32,
    /// First instruction is System `AdvanceNonceAccount`: the blockhash is a durable nonce.
    pub durable_nonce: bool,
    /// The durable nonce account (the first instruction's account 0, a static key) when
    /// `durable_nonce`; the message's blockhash must equal the nonce it stores.
    pub nonce_account: Option<[u8; 32]>,
    /// `SetComputeUnitLimit`, if present.
    pub compute_unit_limit: Option<u32>,
    /// `SetComputeUnitPrice` in micro-lamports per CU, if present.
    pub compute_unit_price: Option<u64>,
}

#[inline]
fn u32_le(d: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(d.get(at..at + 4)?.try_into().ok()?))
}

#[inline]
fn u64_le(d: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(d.get(at..at + 8)?.try_into().ok()?))
}

/// Scan the instructions of a parsed transaction for tips, durable nonce and compute budget.
pub fn scan(view: &TxView<'_>, tips: &TipSet) -> Scan {
    let mut out = Scan::default();
    let num_static = usize::from(view.num_static_keys);
    for (n, ix) in view.instructions().enumerate() {
        // parse() guarantees the program index is a static key.
        let program = view.static_key(usize::from(ix.program_id_index));
        if *program == SYSTEM_PROGRAM {
            let Some(tag) = u32_le(ix.data, 0) else {
                continue;
            };
            // (lamports, destination account position) of a transfer, if this is one that can
            // execute: enough accounts and well-formed data (the program tolerates trailing bytes).
            // Account roles the System Program will insist on; a transfer that breaks them
            // fails (and the whole transaction with it), so it never pays a tip.
            let acc = |i: usize| usize::from(ix.accounts[i]);
            let signer = |i: usize| acc(i) < usize::from(view.num_required_signatures);
            let writable = |i: usize| view.is_writable_index(acc(i));
            let transfer = match tag {
                SYSTEM_TRANSFER if ix.accounts.len() >= 2 => u64_le(ix.data, 4)
                    .filter(|_| signer(0) && writable(0) && writable(1))
                    .map(|l| (l, 1)),
                SYSTEM_TRANSFER_WITH_SEED if ix.accounts.len() >= 3 => {
                    u64_le(ix.data, 4)
                        .zip(u64_le(ix.data, 12))
                        .and_then(|(l, seed_len)| {
                            // tag(4) + lamports(8) + seed len(8) + seed + owner(32); the funded
                            // account is derived (writable), its base signs, the destination is
                            // writable.
                            (seed_len <= MAX_SEED_LEN
                                && ix.data.len() as u64 >= 20 + seed_len + 32
                                && writable(0)
                                && signer(1)
                                && writable(2))
                            .then_some((l, 2))
                        })
                }
                // As the validator's durable-nonce check (`get_durable_nonce`): first
                // instruction, and the nonce account (its first account) writable and a static
                // key (SIMD-0242 `require_static_nonce_account`: one loaded from a lookup table
                // does not make a durable-nonce transaction, so its blockhash is checked as usual).
                SYSTEM_ADVANCE_NONCE
                    if n == 0 && !ix.accounts.is_empty() && writable(0) && acc(0) < num_static =>
                {
                    out.durable_nonce = true;
                    out.nonce_account = Some(*view.static_key(acc(0)));
                    None
                }
                _ => None,
            };
            if let Some((lamports, pos)) = transfer {
                let dest = usize::from(ix.accounts[pos]);
                if dest < num_static {
                    if let Some(k) = tips.keys().iter().position(|k| k == view.static_key(dest)) {
                        out.tip_lamports = out.tip_lamports.saturating_add(lamports);
                        out.tip_transfers += 1;
                        out.first_tip_account.get_or_insert(k as u32);
                    }
                } else {
                    out.transfers_via_lookup += 1;
                }
            }
        } else if *program == COMPUTE_BUDGET_PROGRAM {
            // Borsh, exact length: anything else fails the transaction, so is not reported.
            match (ix.data.first(), ix.data.len()) {
                (Some(2), 5) => out.compute_unit_limit = u32_le(ix.data, 1),
                (Some(3), 9) => out.compute_unit_price = u64_le(ix.data, 1),
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compute_budget_id_matches_its_base58() {
        let decoded = bs58::decode("ComputeBudget111111111111111111111111111111")
            .into_vec()
            .unwrap();
        assert_eq!(decoded.as_slice(), &COMPUTE_BUDGET_PROGRAM);
        let sys = bs58::decode("11111111111111111111111111111111")
            .into_vec()
            .unwrap();
        assert_eq!(sys.as_slice(), &SYSTEM_PROGRAM);
    }
}

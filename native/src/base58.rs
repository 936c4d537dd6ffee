//! base58 (Bitcoin alphabet) for signatures and addresses.
//!
//! Encoding is on the hot path (every accepted transaction reports its signature, fee payer and
//! blockhash), and the textbook byte-at-a-time algorithm costs ~5 µs for a 64-byte signature.
//! This one treats the input as big-endian u32 limbs and divides by 58^5 per pass, emitting five
//! digits at a time: ~18 passes over ≤ 16 limbs for a signature. Decoding is off the hot path
//! and uses the `bs58` crate.

const ALPHABET: &[u8; 58] = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
/// 58^5, the largest power of 58 below 2^32.
const BASE5: u64 = 656_356_768;
/// Inputs up to this many bytes take the fast path (signatures are 64, keys 32).
const MAX_FAST: usize = 128;

/// Encode bytes as base58.
pub fn encode(bytes: &[u8]) -> String {
    if bytes.len() > MAX_FAST {
        return bs58::encode(bytes).into_string();
    }
    let zeros = bytes.iter().take_while(|&&b| b == 0).count();
    let n_limbs = bytes.len().div_ceil(4);
    let mut limbs = [0u32; MAX_FAST / 4];
    let pad = n_limbs * 4 - bytes.len();
    for (i, &b) in bytes.iter().enumerate() {
        let pos = i + pad;
        limbs[pos / 4] |= u32::from(b) << (8 * (3 - pos % 4));
    }
    // Digits, least significant first. ceil(128 · log(256)/log(58)) = 175 < 180.
    let mut digits = [0u8; 180];
    let mut nd = 0;
    let mut start = limbs[..n_limbs].iter().take_while(|&&l| l == 0).count();
    while start < n_limbs {
        let mut rem: u64 = 0;
        for limb in &mut limbs[start..n_limbs] {
            let cur = (rem << 32) | u64::from(*limb);
            *limb = (cur / BASE5) as u32;
            rem = cur % BASE5;
        }
        let mut r = rem as u32;
        for _ in 0..5 {
            digits[nd] = (r % 58) as u8;
            r /= 58;
            nd += 1;
        }
        while start < n_limbs && limbs[start] == 0 {
            start += 1;
        }
    }
    while nd > 0 && digits[nd - 1] == 0 {
        nd -= 1;
    }
    let mut out = Vec::with_capacity(zeros + nd);
    out.resize(zeros, b'1');
    out.extend(digits[..nd].iter().rev().map(|&d| ALPHABET[usize::from(d)]));
    // SAFETY: every byte pushed is from ALPHABET, which is ASCII.
    unsafe { String::from_utf8_unchecked(out) }
}

/// Decode base58 text into `out`, returning the decoded length.
pub fn decode_into(text: &str, out: &mut [u8]) -> Option<usize> {
    bs58::decode(text).onto(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_values() {
        assert_eq!(encode(&[]), "");
        assert_eq!(encode(&[0]), "1");
        assert_eq!(encode(&[0, 0, 1]), "112");
        assert_eq!(encode(&[0u8; 32]), "11111111111111111111111111111111");
        assert_eq!(encode(&[57]), "z");
        assert_eq!(encode(&[58]), "21");
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]
        #[test]
        fn matches_bs58(zeros in 0usize..6, bytes in prop::collection::vec(any::<u8>(), 0..140)) {
            let mut v = vec![0u8; zeros];
            v.extend(bytes);
            prop_assert_eq!(encode(&v), bs58::encode(&v).into_string());
        }
    }
}

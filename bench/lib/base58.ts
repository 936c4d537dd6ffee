/**
 * base58 (Bitcoin alphabet) encoding in plain JS, for the JavaScript reference implementations.
 *
 * This is the algorithm of `base-x` 3.x, which `bs58` 4.x (the encoder `@solana/web3.js` 1.x uses
 * for `PublicKey.toBase58()`) is built on. It is written out here because `bs58` is only a
 * transitive dependency of this project and ships no types; the JS side of the benchmark thus
 * pays what web3.js itself pays for base58, no more.
 */
const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const FACTOR = Math.log(256) / Math.log(58);

export function base58Encode(source: Uint8Array): string {
  if (source.length === 0) return '';
  let zeroes = 0;
  let length = 0;
  let begin = 0;
  const end = source.length;
  while (begin !== end && source[begin] === 0) {
    begin++;
    zeroes++;
  }
  const size = ((end - begin) * FACTOR + 1) >>> 0;
  const b58 = new Uint8Array(size);
  while (begin !== end) {
    let carry = source[begin]!;
    let i = 0;
    for (let k = size - 1; (carry !== 0 || i < length) && k !== -1; k--, i++) {
      carry += (256 * b58[k]!) >>> 0;
      b58[k] = carry % 58 >>> 0;
      carry = (carry / 58) >>> 0;
    }
    length = i;
    begin++;
  }
  let k = size - length;
  while (k !== size && b58[k] === 0) k++;
  let out = '1'.repeat(zeroes);
  for (; k < size; ++k) out += ALPHABET.charAt(b58[k]!);
  return out;
}

/**
 * API keys out of the logs. A key is `lf_` + base58(32 random bytes) (`src/accounts/api-keys.ts`):
 * the secret is its base58 part, 32 to 44 characters. A client may put its key where it does not
 * belong — a path, a request id, a body field name a refusal quotes — glued to other characters,
 * percent-encoded, or without its `lf_` prefix. So what is redacted is what the secret looks
 * like, not the prefix alone:
 * - percent-escapes are decoded first (twice over: `%256C` is `%6C` is `l`), so an encoded key is
 *   seen as the key it is;
 * - a base58 run right after `lf_` (in any case, not itself after a letter or digit, so words
 *   such as `self_test` stay), of any length: a key or a piece of one;
 * - any other base58 run of 32 characters or more: a key without its prefix, glued to letters
 *   and digits (`Bearer5Jx…`, one longer run), or after a glued prefix (`xlf_…`, `Bearerlf_…`:
 *   the run is the whole secret). Public keys are that long too and
 *   are redacted with them (a client cannot be told apart from its key by shape). A run that
 *   decodes to exactly 64 bytes is a signature, kept: logs are read by signature.
 */
import { base58Decode } from '../native.js';

/** Base58 digits (no 0, O, I, l), by char code. */
const BASE58 = (() => {
  const t = new Uint8Array(128);
  for (const c of '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz') t[c.charCodeAt(0)] = 1;
  return t;
})();

/** Shortest base58 run redacted without an `lf_` before it: a 32-byte secret is 32 to 44 digits. */
const MIN_SECRET_RUN = 32;
const REDACTED = '[REDACTED]';
/** Percent-decoding passes: a doubly encoded key is still a key. */
const DECODE_PASSES = 3;

const isBase58 = (c: number): boolean => c < 128 && BASE58[c] === 1;

/** `%XX` escapes decoded (byte by byte, as Latin-1: only their shape matters here). */
function percentDecoded(s: string): string {
  for (let i = 0; i < DECODE_PASSES && s.includes('%'); i++) {
    const next = s.replace(/%([0-9a-fA-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    if (next === s) break;
    s = next;
  }
  return s;
}

/** True when the run is a transaction signature (64 bytes), not a secret. */
function isSignature(run: string): boolean {
  if (run.length < 64 || run.length > 88) return false;
  try {
    return base58Decode(run).length === 64;
  } catch {
    return false;
  }
}

const isAlphanumeric = (c: string | undefined): boolean => c !== undefined && /[A-Za-z0-9]/.test(c);

/** True when `s` has `lf_` (any case), not after a letter or digit, just before index `at`. */
function prefixedAt(s: string, at: number): boolean {
  return at >= 3 && s[at - 1] === '_' && (s[at - 2] === 'f' || s[at - 2] === 'F') && (s[at - 3] === 'l' || s[at - 3] === 'L') && !isAlphanumeric(s[at - 4]);
}

/**
 * `s` with every key-shaped secret replaced by `[REDACTED]` (see the module comment).
 * Fast path: a string shorter than a secret with no `_` and no `%` cannot hold one or a piece of
 * one, and is returned as is without a scan.
 */
export function redactKeys(s: string): string {
  if (s.length < MIN_SECRET_RUN && s.indexOf('_') === -1 && s.indexOf('%') === -1) return s;
  const text = percentDecoded(s);
  let out = '';
  let copied = 0;
  for (let i = 0; i < text.length; ) {
    if (!isBase58(text.charCodeAt(i))) {
      i++;
      continue;
    }
    let end = i + 1;
    while (end < text.length && isBase58(text.charCodeAt(end))) end++;
    const run = text.slice(i, end);
    if (prefixedAt(text, i) || (run.length >= MIN_SECRET_RUN && !isSignature(run))) {
      out += text.slice(copied, i) + REDACTED;
      copied = end;
    }
    i = end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

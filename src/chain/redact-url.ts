/**
 * A chain node's URL as it may be shown. RPC providers put the account's key in the URL itself;
 * the banner, the `serving` log line and chain error messages show the URL through this.
 */
const REDACTED = '***';

/** A path segment kept as is in a URL shown: a word (`rpc`, `solana-mainnet`) or a version (`v2`). */
const PLAIN_SEGMENT = /^(?:[A-Za-z][A-Za-z-]{0,15}|v\d{1,3})$/;

/**
 * A chain node's URL as it may be shown (banner, log lines, error messages): RPC providers put
 * the account's key in the URL — in the query (`?api-key=…`), as a path segment
 * (`/v2/<key>`, `/<token>/`) or as userinfo (`user:pass@`) — and whoever reads the log or the
 * terminal must not get it. Userinfo becomes `***@`, every query value `***`, every path segment
 * that is not a plain word or a version `***`; scheme, host and port stay (they say which node).
 * Not a URL at all: shown as `***`.
 */
export function redactUrlSecrets(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return REDACTED;
  }
  const auth = u.username !== '' || u.password !== '' ? '***@' : '';
  const path = u.pathname
    .split('/')
    .map((seg) => (seg === '' || PLAIN_SEGMENT.test(seg) ? seg : '***'))
    .join('/');
  const query = [...u.searchParams.keys()].map((k) => `${PLAIN_SEGMENT.test(k) || /^[a-z_-]{1,20}$/i.test(k) ? k : '***'}=***`).join('&');
  return `${u.protocol}//${auth}${u.host}${path === '/' ? '' : path}${query === '' ? '' : `?${query}`}${u.hash === '' ? '' : '#***'}`;
}

/**
 * Compare the shape of two JSON values — keys, types, nesting — and, at chosen paths, the values
 * themselves (error codes and messages), reporting every difference by its exact path
 * (`$.result.value[0].data`). Values that must differ between two chains (slots, hashes, keys)
 * are compared by type only. Used by the differential test of the local cluster against Agave.
 */

export interface ShapeOptions {
  /** Paths whose values must be equal too (patterns: `*` is one key, `[*]` any index). */
  exact?: readonly string[];
  /**
   * Paths where any difference (at or below them) is accepted, each with the reason: the
   * differential test's named allowances. A pattern that never matches is not an error here.
   */
  allow?: Readonly<Record<string, string>>;
  /**
   * Paths of objects that are maps keyed by values (`getLeaderSchedule`: identity → slots): their
   * keys are not compared, only their first values' shapes (at `path{*}`).
   */
  maps?: readonly string[];
}

export type Kind = 'null' | 'array' | 'object' | 'string' | 'number' | 'boolean' | 'undefined';

export function kindOf(v: unknown): Kind {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v as Kind;
}

function patternRegex(pattern: string): RegExp {
  const body = pattern
    .split(/(\[\*\]|\*)/)
    .map((part) => (part === '[*]' ? '\\[\\d+\\]' : part === '*' ? '[^.[]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${body}$`);
}

function matcher(patterns: readonly string[]): (path: string) => boolean {
  const res = patterns.map(patternRegex);
  return (path) => res.some((re) => re.test(path));
}

/** `path` itself or any path above it matches. */
function coveredBy(is: (p: string) => boolean, path: string): boolean {
  for (let p = path; ; ) {
    if (is(p)) return true;
    const cut = Math.max(p.lastIndexOf('.'), p.lastIndexOf('['));
    if (cut <= 0) return false;
    p = p.slice(0, cut);
  }
}

const show = (v: unknown): string => {
  const text = JSON.stringify(v);
  return text === undefined ? 'undefined' : text.length > 120 ? `${text.slice(0, 117)}...` : text;
};

/**
 * Differences between `reference` (Agave's answer) and `actual` (the local cluster's), one line
 * each, `path: what`. Arrays are compared element by element over their common length (lengths
 * are values); objects by their key sets, then key by key.
 */
export function shapeDiff(reference: unknown, actual: unknown, opts: ShapeOptions = {}): string[] {
  const exact = matcher(opts.exact ?? []);
  const allowed = matcher(Object.keys(opts.allow ?? {}));
  const isMap = matcher(opts.maps ?? []);
  const out: string[] = [];
  const walk = (a: unknown, b: unknown, path: string): void => {
    if (coveredBy(allowed, path)) return;
    const ka = kindOf(a);
    const kb = kindOf(b);
    if (ka !== kb) {
      out.push(`${path}: ${ka === 'undefined' ? 'extra' : kb === 'undefined' ? 'missing' : 'type differs'} (agave ${ka} ${show(a)}, local ${kb} ${show(b)})`);
      return;
    }
    if (exact(path) && JSON.stringify(a) !== JSON.stringify(b)) {
      out.push(`${path}: value differs (agave ${show(a)}, local ${show(b)})`);
      return;
    }
    if (ka === 'array') {
      const x = a as unknown[];
      const y = b as unknown[];
      for (let i = 0; i < Math.min(x.length, y.length); i++) walk(x[i], y[i], `${path}[${i}]`);
    } else if (ka === 'object' && isMap(path)) {
      walk(Object.values(a as object)[0], Object.values(b as object)[0], `${path}{*}`);
    } else if (ka === 'object') {
      const x = a as Record<string, unknown>;
      const y = b as Record<string, unknown>;
      for (const key of new Set([...Object.keys(x), ...Object.keys(y)])) walk(x[key], y[key], `${path}.${key}`);
    }
  };
  walk(reference, actual, '$');
  return out;
}

/** The `leader` label's bound: the first N values keep their own label, later ones are "other". */
import { describe, expect, it } from 'vitest';
import { BoundedLabel, OTHER } from '../../src/telemetry/bounded-label.js';

describe('BoundedLabel', () => {
  it('admits the first max values and counts every later one as other, for good', () => {
    const label = new BoundedLabel(3);
    expect(['a', 'b', 'a', 'c'].map((v) => label.of(v))).toEqual(['a', 'b', 'a', 'c']);
    expect(label.of('d')).toBe(OTHER);
    // An admitted value keeps its series; a refused one never gets one later.
    expect(label.of('b')).toBe('b');
    expect(label.of('d')).toBe(OTHER);
  });
});

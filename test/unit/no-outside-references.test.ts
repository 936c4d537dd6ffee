/**
 * The repository stands alone (docs/decisions.md, "Dependencies"): nothing in it cites a document
 * outside it. The team's design notes are not shipped, so a comment citing one leaves the next
 * engineer with a dead reference; what the code relies on is in docs/. This test reads every file
 * of the repository (as git lists it, untracked ones included) and fails on:
 * - a design document outside the repository named by file name, or a path into the shared folder
 *   beside the checkout naming a document;
 * - a relative Markdown link that leaves the repository or names a file that does not exist;
 * - a `docs/<page>` named anywhere (code comments included) that does not exist;
 * - a section of the API contract cited as `spec §N` that docs/decisions.md does not describe.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(new URL('../..', import.meta.url).pathname);

/** Files of the repository, relative to it: tracked and untracked, not ignored. */
function repoFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' });
  return out.split('\n').filter((f) => f && existsSync(join(ROOT, f)));
}

/** The files read for references: text, not this file (its made-up texts are violations on purpose). */
const readable = (f: string): boolean =>
  !/\.(png|jpg|ico|node|lock)$/.test(f) && f !== 'package-lock.json' && f !== 'test/unit/no-outside-references.test.ts';

/** The sections of the contract docs/decisions.md describes (its table's first column). */
function describedSections(decisions: string): Set<string> {
  const table = decisions.slice(decisions.indexOf("## The contract's sections"));
  return new Set([...table.matchAll(/^\| §([\d.]+) \|/gm)].map((m) => m[1]!));
}

/** Every reference of `text` (the file `file`, relative to the repository) that leaves the repository or leads nowhere. */
function outsideReferences(file: string, text: string, exists: (path: string) => boolean, sections: Set<string>): string[] {
  const out: string[] = [];
  const at = (i: number): number => text.slice(0, i).split('\n').length;
  for (const m of text.matchAll(/\b(?:DECISIONS|ARCHITECTURE|STYLE)\.md\b|interface-specification\.md/g)) {
    out.push(`${file}:${at(m.index)}: names ${m[0]}, a document outside the repository`);
  }
  for (const m of text.matchAll(/(?:\.\.\/)+shared\/[\w./-]*\.md\b/g)) {
    out.push(`${file}:${at(m.index)}: names ${m[0]}, a document outside the repository`);
  }
  if (file.endsWith('.md')) {
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]!.replace(/#.*$/, '');
      if (!target || /^[a-z]+:/i.test(target)) continue;
      const abs = resolve(ROOT, dirname(file), target);
      if (!abs.startsWith(ROOT + sep) && abs !== ROOT) out.push(`${file}:${at(m.index)}: links ${m[1]}, outside the repository`);
      else if (!exists(relative(ROOT, abs))) out.push(`${file}:${at(m.index)}: links ${m[1]}, which does not exist`);
    }
  }
  for (const m of text.matchAll(/(?<![\w/.-])docs\/([\w-]+\.(?:md|json))\b/g)) {
    if (!exists(`docs/${m[1]}`)) out.push(`${file}:${at(m.index)}: names docs/${m[1]}, which does not exist`);
  }
  for (const m of text.matchAll(/\bspec §(\d+(?:\.\d+)*)/g)) {
    if (!sections.has(m[1]!)) out.push(`${file}:${at(m.index)}: cites spec §${m[1]}, which docs/decisions.md does not describe`);
  }
  return out;
}

describe('no reference to a file outside the repository', () => {
  const files = repoFiles();
  const known = new Set(files);
  // A folder named in a link (`../examples/`) exists when a file lies in it.
  const exists = (p: string): boolean => known.has(p) || known.has(p.replace(/\/$/, '')) || files.some((f) => f.startsWith(p.endsWith('/') ? p : `${p}/`));
  const sections = describedSections(readFileSync(join(ROOT, 'docs', 'decisions.md'), 'utf8'));

  it('no file of the repository cites a document outside it, links out of it, or names a page that is not there', () => {
    expect(files.length).toBeGreaterThan(300); // the walk really read the tree
    expect(files).toContain('docs/decisions.md');
    expect(sections.has('2.4')).toBe(true);
    const found = files.filter(readable).flatMap((f) => outsideReferences(f, readFileSync(join(ROOT, f), 'utf8'), exists, sections));
    expect(found).toEqual([]);
  });

  it('the check fails on each kind of outside reference (made-up texts)', () => {
    const design = ['DECISIONS', 'ARCHITECTURE'].map((n) => `${n}.md`);
    const text = [
      `/** Error body (${design[0]} "Error body"). */`,
      `// the layering (${design[1]}: dependencies point one way)`,
      'see ../shared/spec/interface-specification.md §4',
      '// the plans table: docs/plans.md',
      '// spec §2.4 (described) and spec §12.3 (not)',
    ].join('\n');
    expect(outsideReferences('src/x.ts', text, exists, sections)).toEqual([
      `src/x.ts:1: names ${design[0]}, a document outside the repository`,
      `src/x.ts:2: names ${design[1]}, a document outside the repository`,
      'src/x.ts:3: names interface-specification.md, a document outside the repository',
      'src/x.ts:3: names ../shared/spec/interface-specification.md, a document outside the repository',
      'src/x.ts:4: names docs/plans.md, which does not exist',
      'src/x.ts:5: cites spec §12.3, which docs/decisions.md does not describe',
    ]);
    const md = ['[the spec](../../shared/spec/x.md)', '[api](api.md#plans) [gone](gone.md) [site](https://example.com/a.md)', '[examples](../examples/)'].join('\n');
    expect(outsideReferences('docs/page.md', md, exists, sections)).toEqual([
      'docs/page.md:1: names ../../shared/spec/x.md, a document outside the repository',
      'docs/page.md:1: links ../../shared/spec/x.md, outside the repository',
      'docs/page.md:2: links gone.md, which does not exist',
    ]);
  });
});

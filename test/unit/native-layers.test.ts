/**
 * The layering rule of native/src (the Rust addon), as `test/unit/imports.test.ts` holds it for
 * src/: every top-level module (a file, or a folder such as `quic/`) sits on a layer and names only
 * modules on layers below its own; inside a folder every file sits on a layer of the folder's, the
 * folder's `mod.rs` (and the crate's `lib.rs`) at the top, declaring and re-exporting only — a file
 * that reaches for an item defined in its `mod.rs` (`use super::lock`) points up. No module may
 * reach itself through what it names.
 *
 * What counts as naming another module: every `crate::…` and `super::…` path outside comments and
 * `#[cfg(test)]` modules, in `use` items (group forms `use super::{a, b::c}` included) and inline
 * (`impl Coded for crate::quic::QuicError`), and a facade's `mod x;` declarations.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cycles } from '../../harness/cycles.js';

const SRC = resolve(new URL('../../native/src', import.meta.url).pathname);

/**
 * Layers, top first, per folder ('' is the crate root). A module names only modules on layers
 * after its own. Keep in step with the comments of `lib.rs`, `quic/mod.rs` and `node_quic/mod.rs`.
 */
const LAYERS: Record<string, readonly (readonly string[])[]> = {
  '': [
    ['lib.rs'],
    ['node_quic_server.rs', 'node_admit_key.rs'], // napi: the QUIC server (feature `localnet`); the send's key lookup folded into its inspection and admission
    ['node_quic/', 'node_admission.rs'], // napi: the QUIC client, and the argument checks the server shares; a send's inspection and admission in one call
    ['node.rs', 'node_record.rs', 'node_keys.rs', 'node_handoff.rs', 'node_known.rs'], // napi: everything else; the accepted send's record; the key table; the hand-off queues; the known-signature filter
    ['inspect.rs', 'usage.rs', 'quic/', 'keys.rs'],
    ['verify.rs', 'tip.rs', 'registry.rs', 'overlay.rs', 'admission.rs', 'handoff.rs'],
    ['parse.rs', 'bucket.rs', 'record.rs', 'generations.rs', 'known.rs', 'in_flight.rs'],
    ['error.rs', 'base58.rs', 'priority.rs', 'memory.rs'], // the bottom: error names nothing above it
  ],
  quic: [
    ['mod.rs'],
    ['flights.rs', 'first_rounds.rs'],
    ['client.rs', 'server.rs'],
    ['dispatched.rs'],
    ['worker.rs'],
    ['lanes.rs'],
    ['dialer.rs'],
    ['peer.rs'],
    ['unacked.rs', 'gate.rs', 'config.rs', 'heard.rs', 'lossy.rs'],
    ['outcome.rs', 'tls.rs', 'runtime.rs'],
    ['error.rs', 'protocol.rs'],
  ],
  node_quic: [['mod.rs'], ['flights.rs', 'first.rs'], ['client.rs'], ['results.rs', 'targets.rs', 'threads.rs'], ['args.rs']],
};

function rustFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? rustFiles(p) : p.endsWith('.rs') ? [relative(SRC, p)] : [];
  });
}

/** The source with comments, string contents and `#[cfg(test)]` modules removed. */
function code(text: string): string {
  let out = '';
  let i = 0;
  text = text.replace(/'\\?"'/g, "' '"); // a '"' char literal would open a string
  while (i < text.length) {
    if (text.startsWith('//', i)) {
      const nl = text.indexOf('\n', i);
      i = nl < 0 ? text.length : nl;
    } else if (text.startsWith('/*', i)) {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? text.length : end + 2;
    } else if (text[i] === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += '""';
      i = j + 1;
    } else out += text[i++];
  }
  // Test modules name `super::*` (the file itself) and whatever they test with.
  for (let m = /#\[cfg\(test\)\]\s*mod\s+\w+\s*\{/.exec(out); m; m = /#\[cfg\(test\)\]\s*mod\s+\w+\s*\{/.exec(out)) {
    let depth = 0;
    let j = m.index + m[0].length - 1;
    for (; j < out.length; j++) {
      if (out[j] === '{') depth++;
      else if (out[j] === '}' && --depth === 0) break;
    }
    out = out.slice(0, m.index) + out.slice(j + 1);
  }
  return out;
}

/** Every path a use tree starting at `text[at]` (just past `crate::` / `super::`) names, as segments. */
function useTree(text: string, at: number): string[][] {
  const paths: string[][] = [];
  const walk = (pos: number, prefix: string[]): number => {
    const segs = [...prefix];
    for (;;) {
      const ws = /^\s*/.exec(text.slice(pos))![0].length;
      pos += ws;
      if (text[pos] === '{') {
        pos++;
        for (;;) {
          pos = walk(pos, segs);
          pos += /^\s*/.exec(text.slice(pos))![0].length;
          if (text[pos] === ',') pos++;
          pos += /^\s*/.exec(text.slice(pos))![0].length;
          if (text[pos] === '}') return pos + 1;
          if (pos >= text.length) return pos;
        }
      }
      const id = /^(\w+|\*)/.exec(text.slice(pos));
      if (!id) break;
      segs.push(id[1]!);
      pos += id[1]!.length;
      const sep = /^\s*::/.exec(text.slice(pos));
      if (!sep) break;
      pos += sep[0].length;
    }
    if (segs.length > prefix.length) paths.push(segs);
    return pos;
  };
  walk(at, []);
  return paths;
}

/** The facade of a folder ('' → lib.rs). */
const facade = (dir: string): string => (dir === '' ? 'lib.rs' : `${dir}/mod.rs`);
const folderOf = (file: string): string => (file.includes('/') ? file.slice(0, file.lastIndexOf('/')) : '');

/** The file a path names, seen from `from` (`root` + segments, `root` = crate or super). */
function target(from: string, root: string, segs: string[], exists: (f: string) => boolean): string {
  let dir: string;
  if (root === 'crate') dir = '';
  else {
    // `super` of quic/lanes.rs is quic; of quic/mod.rs and of error.rs, the crate.
    const own = folderOf(from);
    dir = from.endsWith('mod.rs') || own === '' ? folderOf(own) : own;
  }
  for (let i = 0; ; i++) {
    const name = segs[i];
    if (name === undefined || name === 'self' || name === '*') return facade(dir);
    const file = dir === '' ? `${name}.rs` : `${dir}/${name}.rs`;
    if (exists(file)) return file;
    const sub = dir === '' ? name : `${dir}/${name}`;
    if (!exists(`${sub}/mod.rs`)) return facade(dir); // an item the folder's facade defines
    if (!from.startsWith(`${sub}/`)) return `${sub}/mod.rs`; // from outside: through the facade
    dir = sub;
  }
}

/** native/src as a graph: file (relative to native/src) → the files it names. */
function nativeGraph(sources: Map<string, string>): Map<string, Set<string>> {
  const exists = (f: string): boolean => sources.has(f);
  const graph = new Map<string, Set<string>>();
  for (const [file, text] of sources) {
    const named = new Set<string>();
    const body = code(text);
    for (const m of body.matchAll(/\b(crate|super)\s*::/g)) {
      for (const segs of useTree(body, m.index + m[0].length)) named.add(target(file, m[1]!, segs, exists));
    }
    if (file === 'lib.rs' || file.endsWith('mod.rs')) {
      const dir = folderOf(file);
      for (const m of body.matchAll(/^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;/gm)) {
        named.add(target(file, 'crate', [...(dir ? dir.split('/') : []), m[1]!], exists));
      }
    }
    named.delete(file);
    graph.set(file, named);
  }
  return graph;
}

/** The part a file is in, within `dir`: the file itself, or the top folder under `dir` it lies in. */
function partIn(dir: string, file: string): string | undefined {
  const rest = dir === '' ? file : file.startsWith(`${dir}/`) ? file.slice(dir.length + 1) : undefined;
  if (rest === undefined) return undefined;
  const slash = rest.indexOf('/');
  return slash < 0 ? rest : rest.slice(0, slash + 1);
}

/** The graph between the parts of `dir` (files and subfolders directly in it). */
function levelGraph(graph: Map<string, Set<string>>, dir: string): Map<string, Set<string>> {
  const level = new Map<string, Set<string>>();
  for (const [from, tos] of graph) {
    const a = partIn(dir, from);
    if (a === undefined) continue;
    if (!level.has(a)) level.set(a, new Set());
    for (const to of tos) {
      const b = partIn(dir, to);
      if (b !== undefined && b !== a) level.get(a)!.add(b);
    }
  }
  return level;
}

/** Every circle and every name pointing up or sideways, at every level: empty when native/src keeps its layers. */
function violations(graph: Map<string, Set<string>>): string[] {
  const out: string[] = [];
  for (const [dir, layers] of Object.entries(LAYERS)) {
    const level = levelGraph(graph, dir);
    const where = dir === '' ? 'native/src' : `native/src/${dir}`;
    for (const c of cycles(level, [...level.keys()].sort())) out.push(`${where}: circle ${c}`);
    const layerOf = new Map(layers.flatMap((parts, i) => parts.map((p) => [p, i] as const)));
    for (const [a, tos] of level) {
      const la = layerOf.get(a);
      if (la === undefined) {
        out.push(`${where}: ${a} has no place in LAYERS`);
        continue;
      }
      for (const b of tos) {
        const lb = layerOf.get(b);
        if (lb !== undefined && lb <= la) out.push(`${where}: ${a} → ${b} (${lb === la ? 'same layer' : 'a layer above'})`);
      }
    }
  }
  return out;
}

function sources(): Map<string, string> {
  return new Map(rustFiles(SRC).map((f) => [f, readFileSync(join(SRC, f), 'utf8')]));
}

describe('the layers of native/src', () => {
  const src = sources();
  const graph = nativeGraph(src);

  it('every folder of native/src has its layers, and every module is placed', () => {
    expect(graph.size).toBeGreaterThan(30); // the walk really read the tree
    const folders = new Set([...graph.keys()].map(folderOf));
    expect([...folders].sort()).toEqual(Object.keys(LAYERS).sort());
    // The parser sees what the modules name (a sample of known edges).
    expect(graph.get('quic/worker.rs')).toContain('quic/lanes.rs');
    expect(graph.get('node_quic/client.rs')).toContain('quic/mod.rs');
    expect(graph.get('parse.rs')).toContain('error.rs');
  });

  it('native/src has no circle and no name pointing up, at any level', () => {
    expect(violations(graph)).toEqual([]);
  });

  it('the bottom error module names nothing of the crate', () => {
    expect([...graph.get('error.rs')!]).toEqual([]);
  });

  it('the check fails on the circles it was written for: error.rs naming quic inline, dialer ↔ worker', () => {
    const broken = new Map(src);
    // As error.rs was: `impl Coded for crate::quic::QuicError`, and a bucket match through a group use.
    broken.set(
      'error.rs',
      `${src.get('error.rs')}\nimpl Coded for crate::quic::QuicError {}\nfn f() { use crate::bucket::{BucketError::*}; }\n`,
    );
    broken.set('quic/dialer.rs', `${src.get('quic/dialer.rs')}\nuse super::{lanes::{Lane, PeerState}, tls};\n`);
    expect(violations(nativeGraph(broken))).toEqual([
      'native/src: circle error.rs → quic/ → error.rs',
      'native/src: circle error.rs → quic/ → parse.rs → error.rs',
      'native/src: circle bucket.rs → error.rs → bucket.rs',
      'native/src: error.rs → quic/ (a layer above)',
      'native/src: error.rs → bucket.rs (a layer above)',
      'native/src/quic: circle dialer.rs → lanes.rs → dialer.rs',
      'native/src/quic: dialer.rs → lanes.rs (a layer above)',
    ]);
  });

  it('the check fails on a reach into a facade, a sideways name, and an unplaced module; comments and tests do not count', () => {
    const broken = new Map(src);
    broken.set('quic/gate.rs', `${src.get('quic/gate.rs')}\nuse super::lock;\n`); // an item of quic/mod.rs
    broken.set('verify.rs', `${src.get('verify.rs')}\nconst X: usize = crate::tip::MAX;\n`);
    broken.set('newpart.rs', 'use crate::error::Code;\n');
    // Not names: a comment, a string, a test module.
    broken.set(
      'tip.rs',
      `${src.get('tip.rs')}\n// see crate::node\nconst S: &str = "crate::node";\n#[cfg(test)]\nmod more {\n    use crate::node::X;\n}\n`,
    );
    expect(violations(nativeGraph(broken))).toEqual([
      'native/src: verify.rs → tip.rs (same layer)',
      'native/src: newpart.rs has no place in LAYERS',
      // One name up closes a circle through every module that uses the gate.
      'native/src/quic: circle client.rs → dispatched.rs → gate.rs → mod.rs → client.rs',
      'native/src/quic: circle dispatched.rs → gate.rs → mod.rs → dispatched.rs',
      'native/src/quic: circle client.rs → dispatched.rs → gate.rs → mod.rs → first_rounds.rs → client.rs',
      'native/src/quic: circle dispatched.rs → gate.rs → mod.rs → first_rounds.rs → dispatched.rs',
      'native/src/quic: circle client.rs → dispatched.rs → gate.rs → mod.rs → flights.rs → client.rs',
      'native/src/quic: circle gate.rs → mod.rs → gate.rs',
      'native/src/quic: circle gate.rs → mod.rs → lanes.rs → gate.rs',
      'native/src/quic: circle gate.rs → mod.rs → worker.rs → gate.rs',
      'native/src/quic: gate.rs → mod.rs (a layer above)',
    ]);
  });

  it('the lowest error module is the one every coded error is rendered by (a code spelt once)', () => {
    // Coded is implemented beside each error type, never in error.rs for a type above it.
    const impls = [...src].filter(([, t]) => /impl\s+(?:crate::error::)?Coded\s+for/.test(code(t))).map(([f]) => f);
    expect(impls.sort()).toEqual(['bucket.rs', 'error.rs', 'quic/error.rs', 'record.rs']);
  });

  it('LAYERS names only modules that exist', () => {
    for (const [dir, layers] of Object.entries(LAYERS)) {
      for (const p of layers.flat()) {
        const path = join(SRC, dir, p);
        expect(existsSync(path), `${dir}/${p}`).toBe(true);
      }
    }
  });
});

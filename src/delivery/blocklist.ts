/**
 * The anti-MEV validator blocklist: a file of validator identities (base58, one per line, `#`
 * comments; or a JSON array of strings), reloaded when it changes. A file that fails to parse
 * keeps the previous list and counts the error: a typo must not silently unblock everyone.
 */
import { readFileSync, statSync, unwatchFile, watchFile } from 'node:fs';
import { base58Decode } from '../native.js';

export class Blocklist {
  private set = new Set<string>();
  private mtimeMs = -1;
  /** Reloads that failed (the previous list stayed in force). */
  errors = 0;
  lastError: string | null = null;

  constructor(
    readonly path: string | null,
    pollMs = 1_000,
  ) {
    if (path === null) return;
    this.reload();
    // watchFile (stat polling) survives editors that replace the file by rename, unlike fs.watch.
    watchFile(path, { interval: pollMs, persistent: false }, () => this.reload());
  }

  has(identity: string): boolean {
    return this.set.has(identity);
  }

  get size(): number {
    return this.set.size;
  }

  /** Re-read the file if its mtime changed. Public so tests and SIGHUP can force it. */
  reload(): void {
    if (this.path === null) return;
    try {
      const m = statSync(this.path).mtimeMs;
      if (m === this.mtimeMs) return;
      this.set = parseBlocklist(readFileSync(this.path, 'utf8'));
      this.mtimeMs = m;
      this.lastError = null;
    } catch (e) {
      this.errors++;
      this.lastError = (e as Error).message;
    }
  }

  close(): void {
    if (this.path !== null) unwatchFile(this.path);
  }
}

export function parseBlocklist(text: string): Set<string> {
  const trimmed = text.trim();
  const entries: unknown[] = trimmed.startsWith('[')
    ? (JSON.parse(trimmed) as unknown[])
    : trimmed.split('\n').map((l) => l.replace(/#.*/, '').trim()).filter((l) => l.length > 0);
  if (!Array.isArray(entries)) throw new Error('blocklist JSON must be an array of identities');
  for (const e of entries) {
    if (typeof e !== 'string' || !isAddress(e)) throw new Error(`blocklist entry ${JSON.stringify(e)} is not a base58 validator identity`);
  }
  return new Set(entries as string[]);
}

function isAddress(s: string): boolean {
  try {
    return base58Decode(s).length === 32;
  } catch {
    return false;
  }
}

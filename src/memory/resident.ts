/**
 * The process's resident memory by kind, from Linux's `/proc/self/status` (`RssAnon`, `RssFile`,
 * `RssShmem`): read by the memory metric and by the give-back's before/after log line.
 */
import { readFileSync } from 'node:fs';

/** `/proc/self/status`, or null where there is none (off Linux). */
export function procStatus(): string | null {
  try {
    return readFileSync('/proc/self/status', 'utf8');
  } catch {
    return null;
  }
}

/** One `<field>: <n> kB` line of `status`, in bytes; null when absent. */
export function statusBytes(status: string | null, field: string): number | null {
  if (status === null) return null;
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
  return m ? Number(m[1]) * 1024 : null;
}

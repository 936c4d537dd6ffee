/** Reading a service's JSON log (pino lines) in tests. */

/** The JSON log lines of a process's output (or a log file's text); other lines are skipped. */
export function logLines(out: string): Record<string, unknown>[] {
  return out.split('\n').flatMap((l) => {
    try {
      const v: unknown = JSON.parse(l);
      return typeof v === 'object' && v !== null ? [v as Record<string, unknown>] : [];
    } catch {
      return [];
    }
  });
}

/**
 * `landfall demo` stopped while it starts (the local cluster and the service take a few seconds):
 * by Ctrl-C (SIGINT), twice, or by a reader that went away (EPIPE on stdout, as
 * `landfall demo | head -0` does). The built CLI runs in a real child process with its own
 * TMPDIR, so the test sees exactly which temporary directories it leaves behind: none.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../harness/tmp.js';

const BIN = fileURLToPath(new URL('../../bin/landfall.js', import.meta.url));
/** The demo's start-up takes a few seconds; an exit is waited for this long at most. */
const EXIT_BOUND_MS = 60_000;

let tmp: ReturnType<typeof tempDir> | undefined;
let child: ChildProcess | undefined;
afterEach(() => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  tmp?.cleanup();
});

/** Start `landfall demo` with TMPDIR set to a fresh directory of the test's. */
function demo(): { child: ChildProcess; exited: Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }> } {
  tmp = tempDir('landfall-demo-test-');
  child = spawn(process.execPath, [BIN, 'demo', '--duration', '30'], { env: { ...process.env, TMPDIR: tmp.dir }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const c = child;
  const exited = new Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`landfall demo still running ${EXIT_BOUND_MS} ms after it was stopped\n${stdout}\n${stderr}`)), EXIT_BOUND_MS + 30_000);
    c.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return { child: c, exited };
}

/** Resolves once the child has printed `text` (it is then inside the demo's start-up). */
function printed(c: ChildProcess, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    c.stdout!.on('data', (d) => {
      seen += d;
      if (seen.includes(text)) resolve();
    });
    c.on('exit', () => reject(new Error(`exited before printing ${JSON.stringify(text)}: ${seen}`)));
  });
}

const leftovers = () => readdirSync(tmp!.dir).filter((f) => f.startsWith('landfall-demo-'));

describe('landfall demo stopped during start-up', () => {
  it('Ctrl-C: stops once the service is up, closes it, removes its temporary directory, exits 130', { timeout: EXIT_BOUND_MS + 40_000 }, async () => {
    const { child: c, exited } = demo();
    await printed(c, 'starting the local cluster');
    // The data directory exists while it starts.
    expect(leftovers()).toHaveLength(1);
    c.kill('SIGINT');
    const r = await exited;
    expect(r.stderr).toBe('');
    expect(r.code).toBe(130);
    expect(r.stdout).not.toMatch(/^final: /m); // it never started sending
    expect(leftovers()).toEqual([]);
  });

  it('a second Ctrl-C exits at once, and still removes the directory', { timeout: EXIT_BOUND_MS + 40_000 }, async () => {
    const { child: c, exited } = demo();
    await printed(c, 'starting the local cluster');
    c.kill('SIGINT');
    await new Promise((r) => setTimeout(r, 100));
    c.kill('SIGINT');
    const r = await exited;
    expect(r.code).toBe(130);
    expect(leftovers()).toEqual([]);
  });

  it('EPIPE (nobody reads its output any more): stops, removes the directory, no crash', { timeout: EXIT_BOUND_MS + 40_000 }, async () => {
    const { child: c, exited } = demo();
    await printed(c, 'starting the local cluster');
    // The reader goes away: the demo's next write (the service's banner line) fails with EPIPE.
    c.stdout!.destroy();
    const r = await exited;
    expect(r.stderr).toBe('');
    expect(r.signal).toBeNull();
    expect(leftovers()).toEqual([]);
  });
});

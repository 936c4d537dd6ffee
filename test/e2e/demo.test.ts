/**
 * `landfall demo` as a user runs it: the built CLI in a child process (stdout is a pipe, so it
 * prints plain progress lines), on its own local cluster and service. It must show transactions
 * confirmed and, by design, failed, apply its faults, stop by itself and exit 0.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../../bin/landfall.js', import.meta.url));

/** Run `landfall …`; killed (and failing) if it has not exited after `limitMs`. */
function landfall(args: string[], limitMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`landfall ${args.join(' ')} still running after ${limitMs} ms\n${stdout}\n${stderr}`));
    }, limitMs);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('landfall demo', () => {
  it('runs for --duration 5 and shows confirmed and failed transactions, then exits 0', { timeout: 90_000 }, async () => {
    const r = await landfall(['demo', '--duration', '5'], 80_000);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    // Not a terminal: plain lines, no cursor movement.
    expect(r.stdout).not.toContain('\x1b[');
    expect(r.stdout).toMatch(/fault: v2 loses 30% of its packets/);
    expect(r.stdout).toMatch(/fault: v3 is down/);
    const final = /^final: (.*)$/m.exec(r.stdout);
    expect(final, r.stdout).not.toBeNull();
    const fields = Object.fromEntries(final![1]!.split(' ').map((kv) => kv.split('=') as [string, string]));
    expect(Number(fields.confirmed)).toBeGreaterThan(0);
    expect(Number(fields.failed)).toBeGreaterThan(0);
    expect(Number(fields.submitted)).toBeGreaterThanOrEqual(Number(fields.confirmed) + Number(fields.failed));
    expect(fields.p50_ms).toMatch(/^\d+$/);
    expect(fields.landing).toMatch(/^\d+\.\d%$/);
    // The delivery trace of a failed one: its cause with the chain's reason (it moves more than its
    // payer holds), then its rounds, attempts named by validator.
    const trace = /^trace \S+: failed on chain in slot (\d+): (.+) \((\d+) attempts\)\n((?:  round .*\n)+)/m.exec(r.stdout);
    expect(trace, r.stdout).not.toBeNull();
    expect(trace![2]).toMatch(/^Error processing Instruction \d: custom program error: 0x1$/);
    expect(Number(trace![3])).toBeGreaterThan(0);
    expect(trace![4]).toMatch(/^  round 0  slot \d+  \+\d+\.\d ms  v\d (written|pending|refused|backoff|failed)/);
  });

  it('refuses a bad option with a clear message and exit code 2', async () => {
    const r = await landfall(['demo', '--duration', '0'], 20_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('landfall: --duration must be a positive number, got "0"\n');
    const fast = await landfall(['demo', '--rate', '1000'], 20_000);
    expect(fast.code).toBe(2);
    expect(fast.stderr).toMatch(/--rate 1000 is above the top plan's 150 tx\/s/);
  });
});

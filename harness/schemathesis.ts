/**
 * schemathesis (a Python tool) for the test suite: installed by the project itself into a venv
 * under `.venv/schemathesis` (git-ignored), from the pinned `test/schemathesis/requirements.txt`,
 * the first time a test asks for it and again whenever the pins change. Needs `python3` (3.9+)
 * with `venv` and a reachable PyPI on that first run; later runs reuse the venv.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const SCHEMATHESIS_DIR = join(ROOT, 'test', 'schemathesis');
const REQUIREMENTS = join(SCHEMATHESIS_DIR, 'requirements.txt');
const VENV = join(ROOT, '.venv', 'schemathesis');
const STAMP = join(VENV, 'requirements.sha256');

/** The `st` executable, installing the pinned schemathesis first if the venv is missing or stale. */
export function schemathesis(): string {
  const st = join(VENV, 'bin', 'st');
  const want = createHash('sha256').update(readFileSync(REQUIREMENTS)).digest('hex');
  if (existsSync(st) && existsSync(STAMP) && readFileSync(STAMP, 'utf8') === want) return st;
  rmSync(VENV, { recursive: true, force: true });
  mkdirSync(join(ROOT, '.venv'), { recursive: true });
  const run = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: 600_000 });
  try {
    run('python3', ['-m', 'venv', VENV]);
    run(join(VENV, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', '-r', REQUIREMENTS]);
  } catch (e) {
    const err = e as { stderr?: Buffer; message: string };
    rmSync(VENV, { recursive: true, force: true });
    throw new Error(`installing schemathesis into ${VENV} failed: ${err.stderr?.toString() || err.message}`);
  }
  writeFileSync(STAMP, want);
  return st;
}

export interface StRun {
  code: number | null;
  output: string;
}

/** Run `st run <schemaUrl>` with the project's config and `args`; resolves when it exits. */
export function runSchemathesis(schemaUrl: string, args: string[], timeoutMs: number): Promise<StRun> {
  const st = schemathesis();
  return new Promise((resolve, reject) => {
    const child = spawn(st, ['--config-file', join(SCHEMATHESIS_DIR, 'schemathesis.toml'), 'run', schemaUrl, '--no-color', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its report directory and hypothesis database stay out of the work tree.
      cwd: join(ROOT, '.venv'),
      env: { ...process.env, PYTHONUNBUFFERED: '1' },
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`schemathesis still running after ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

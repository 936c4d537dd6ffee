/**
 * The Prometheus rules (deploy/prometheus/) checked and unit-tested by Prometheus's own promtool:
 * the file is valid, and each alert fires on the series that should fire it and stays quiet on
 * the healthy ones (landfall.rules.test.yml). test/cluster/prometheus.test.ts runs the same rules
 * on a real Prometheus scraping real nodes.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { findTool, missingTool } from '../../scripts/debian-tools.mjs';

const DIR = join(import.meta.dirname, '..', '..', 'deploy', 'prometheus');
const promtool = findTool('promtool');
if (promtool === null) process.stderr.write(`promtool tests not run: ${missingTool('promtool')}\n`);

/** promtool's exit code and output (it exits 1 on a failed check or test). */
async function run(...args: string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(promtool!, args, { cwd: DIR });
    return { code: 0, out: stdout + stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, out: err.stdout + err.stderr };
  }
}

describe.runIf(promtool !== null)('promtool', () => {
  it('check rules: the rule file is valid', async () => {
    const r = await run('check', 'rules', 'landfall.rules.yml');
    expect(r.out).toContain('SUCCESS: 18 rules found');
    expect(r.code).toBe(0);
  });

  it('test rules: every alert fires when it should and only then', async () => {
    const r = await run('test', 'rules', 'landfall.rules.test.yml');
    expect(r.out).toContain('SUCCESS');
    expect(r.code).toBe(0);
  });
});

#!/usr/bin/env node
// Obtains the Debian tools the dashboard and Prometheus tests drive: `chromium` (for playwright-core,
// which downloads no browser) and `prometheus` (which also brings `promtool`).
//
// Order, per tool: its environment variable (LANDFALL_CHROMIUM, LANDFALL_PROMETHEUS,
// LANDFALL_PROMTOOL: a path to a binary), else the binary on PATH. When one is missing and this
// process may install packages (root, apt-get present: CI on a fresh Debian machine), `apt-get
// install -y --no-install-recommends chromium prometheus` (about 250 MB with their libraries).
// Where that is impossible the tests that need the tool say so in one line and the others run.
//
// Usage: node scripts/debian-tools.mjs     prints each tool's path (installing what is missing when possible)
//        import { findTool, ensureDebianTools } from './debian-tools.mjs'
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { executable, onPath } from './executable.mjs';

/** Each tool: its binary's name, the variable that overrides it, and the Debian package that has it. */
export const TOOLS = {
  chromium: { bin: 'chromium', env: 'LANDFALL_CHROMIUM', pkg: 'chromium' },
  prometheus: { bin: 'prometheus', env: 'LANDFALL_PROMETHEUS', pkg: 'prometheus' },
  promtool: { bin: 'promtool', env: 'LANDFALL_PROMTOOL', pkg: 'prometheus' },
};


/** The tool's path (override, else PATH), or null. */
export function findTool(name) {
  const tool = TOOLS[name];
  const override = process.env[tool.env];
  if (override) return executable(override) ? override : null;
  return onPath(tool.bin);
}

/** Why `name` is not available, in one line, or null when it is (for a test's skip message). */
export function missingTool(name) {
  if (findTool(name) !== null) return null;
  const tool = TOOLS[name];
  return `${tool.bin} not found (Debian package ${tool.pkg}; npm run test:deps installs it as root, or set ${tool.env})`;
}

/** Install the packages of the missing tools when this process can (root with apt-get); returns what is still missing. */
export function ensureDebianTools({ log = (line) => process.stderr.write(line + '\n') } = {}) {
  const missing = Object.keys(TOOLS).filter((name) => findTool(name) === null);
  if (missing.length === 0) return [];
  const packages = [...new Set(missing.map((name) => TOOLS[name].pkg))];
  const apt = onPath('apt-get');
  if (process.getuid?.() !== 0 || apt === null) {
    log(`missing ${missing.join(', ')}: cannot install ${packages.join(' ')} here (needs root and apt-get); the tests that use them will say so`);
    return missing;
  }
  log(`installing ${packages.join(' ')} with apt-get (for the dashboard and Prometheus tests)`);
  try {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    execFileSync(apt, ['update'], { stdio: ['ignore', 'inherit', 'inherit'], env });
    execFileSync(apt, ['install', '-y', '--no-install-recommends', ...packages], { stdio: ['ignore', 'inherit', 'inherit'], env });
  } catch (err) {
    log(`apt-get install ${packages.join(' ')} failed: ${err.message}`);
  }
  return Object.keys(TOOLS).filter((name) => findTool(name) === null);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  ensureDebianTools();
  for (const name of Object.keys(TOOLS)) process.stdout.write(`${name}: ${findTool(name) ?? missingTool(name)}\n`);
}

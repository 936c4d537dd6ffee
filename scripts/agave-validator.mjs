#!/usr/bin/env node
// Finds (and, for `npm run test:agave`, builds) Agave's `solana-test-validator` for the Agave suite
// (test/agave/), the differential test and `npm run bench -- agave`.
//
// Order: $LANDFALL_AGAVE_VALIDATOR (a path to a binary; `.ci/run` sets it to the validator CI's
// machine provides), else the project cache (.cache/agave/<version>/bin/solana-test-validator),
// else `solana-test-validator` on PATH.
//
// Building (only when none is found, and only by `ensureAgaveValidator`): `cargo install
// agave-validator --version =4.2.2 --locked --bin solana-test-validator --root <cache>`. It is
// expensive: 61 minutes on 2 cores, several GB of crate downloads and build files, and it needs
// the Debian packages clang libclang-dev protobuf-compiler libudev-dev pkg-config libssl-dev
// (`apt-get install -y …`) and a Rust toolchain (Agave 4.2 builds with stable Rust; 4.3+ needs 1.97).
//
// Usage: node scripts/agave-validator.mjs          prints the binary's path (building it if needed)
//        node scripts/agave-validator.mjs --find   prints the path, or exits 1 without building
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { executable, onPath } from './executable.mjs';

export const AGAVE_VERSION = '4.2.2';
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const AGAVE_CACHE = join(ROOT, '.cache', 'agave', AGAVE_VERSION);
export const AGAVE_CACHE_BIN = join(AGAVE_CACHE, 'bin', 'solana-test-validator');
const DEBIAN_PACKAGES = 'clang libclang-dev protobuf-compiler libudev-dev pkg-config libssl-dev';


/** The validator binary's path per the order above, or null when there is none. */
export function findAgaveValidator() {
  const override = process.env.LANDFALL_AGAVE_VALIDATOR;
  if (override) return executable(override) ? override : null;
  if (executable(AGAVE_CACHE_BIN)) return AGAVE_CACHE_BIN;
  return onPath('solana-test-validator');
}

/** One line saying why the Agave tests do not run here (null when a validator was found). */
export function agaveMissingReason() {
  if (findAgaveValidator()) return null;
  const override = process.env.LANDFALL_AGAVE_VALIDATOR;
  return override
    ? `Agave tests not run: LANDFALL_AGAVE_VALIDATOR=${override} is not an executable file`
    : `Agave tests not run: no solana-test-validator (LANDFALL_AGAVE_VALIDATOR, ${AGAVE_CACHE_BIN} or PATH); \`npm run test:agave\` builds one (about an hour)`;
}

/** The binary's path, building the pinned version into the cache first when none is found. */
export function ensureAgaveValidator({ log = (line) => process.stderr.write(line + '\n') } = {}) {
  const override = process.env.LANDFALL_AGAVE_VALIDATOR;
  if (override && !executable(override)) throw new Error(`LANDFALL_AGAVE_VALIDATOR=${override} is not an executable file`);
  const found = findAgaveValidator();
  if (found) return found;
  const staging = `${AGAVE_CACHE}.tmp-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  log(
    `solana-test-validator ${AGAVE_VERSION} not found: building it with cargo install into ${AGAVE_CACHE}.\n` +
      `This takes about an hour (61 minutes on 2 cores) and needs: apt-get install -y ${DEBIAN_PACKAGES}`,
  );
  try {
    execFileSync('cargo', ['install', 'agave-validator', '--version', `=${AGAVE_VERSION}`, '--locked', '--bin', 'solana-test-validator', '--root', staging], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
  } catch (err) {
    rmSync(staging, { recursive: true, force: true });
    throw new Error(`building solana-test-validator ${AGAVE_VERSION} failed (a Rust toolchain and the Debian packages ${DEBIAN_PACKAGES} are needed): ${err.message}`);
  }
  // Publish atomically so a concurrent run never sees a half-written binary.
  mkdirSync(dirname(AGAVE_CACHE), { recursive: true });
  try {
    renameSync(staging, AGAVE_CACHE);
  } catch (err) {
    if (!existsSync(AGAVE_CACHE_BIN)) throw err;
    rmSync(staging, { recursive: true, force: true });
  }
  return AGAVE_CACHE_BIN;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const findOnly = process.argv.includes('--find');
  const path = findOnly ? findAgaveValidator() : ensureAgaveValidator();
  if (!path) {
    process.stderr.write(agaveMissingReason() + '\n');
    process.exit(1);
  }
  process.stdout.write(`${path}\n`);
}

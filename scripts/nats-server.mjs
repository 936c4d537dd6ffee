#!/usr/bin/env node
// Obtains the pinned nats-server for multi-node tests, `landfall cluster-demo` and the cluster bench.
//
// Order: $LANDFALL_NATS_SERVER (a path to a binary), else the project cache
// (.cache/nats-server/<version>/nats-server), else a Go module build of the pinned version into that cache
// (`go install github.com/nats-io/nats-server/v2@<version>` with GOBIN set to the cache folder: about 30 s and
// ~25 MB of module downloads from the Go module proxy on a fresh machine). Debian's package is 2.9, too old for
// the per-message TTLs and the JetStream features we rely on (>= 2.11), hence the build.
//
// Usage: node scripts/nats-server.mjs            prints the binary's path (building it if needed)
//        import { ensureNatsServer } from './nats-server.mjs'
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const NATS_SERVER_VERSION = 'v2.12.2';
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const NATS_SERVER_CACHE = join(ROOT, '.cache', 'nats-server', NATS_SERVER_VERSION);

/** The cached binary's path if present, without building; the env override wins. */
export function natsServerPath() {
  const override = process.env.LANDFALL_NATS_SERVER;
  if (override) return existsSync(override) ? override : null;
  const cached = join(NATS_SERVER_CACHE, 'nats-server');
  return existsSync(cached) ? cached : null;
}

/** The binary's path, building the pinned version into the cache first when it is missing. */
export function ensureNatsServer({ log = (line) => process.stderr.write(line + '\n') } = {}) {
  const override = process.env.LANDFALL_NATS_SERVER;
  if (override) {
    if (!existsSync(override)) throw new Error(`LANDFALL_NATS_SERVER=${override} does not exist`);
    return override;
  }
  const found = natsServerPath();
  if (found) return found;
  const staging = `${NATS_SERVER_CACHE}.tmp-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  log(`nats-server ${NATS_SERVER_VERSION} not cached: building it with go install into ${NATS_SERVER_CACHE} (about 30 s)`);
  try {
    execFileSync('go', ['install', `github.com/nats-io/nats-server/v2@${NATS_SERVER_VERSION}`], {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, GOBIN: staging, GOFLAGS: '-mod=mod', CGO_ENABLED: '0' },
    });
  } catch (err) {
    rmSync(staging, { recursive: true, force: true });
    throw new Error(`building nats-server ${NATS_SERVER_VERSION} failed (is Go >= 1.24 installed?): ${err.message}`);
  }
  // Publish atomically so a concurrent run never sees a half-written binary.
  mkdirSync(dirname(NATS_SERVER_CACHE), { recursive: true });
  try {
    renameSync(staging, NATS_SERVER_CACHE);
  } catch (err) {
    if (!existsSync(join(NATS_SERVER_CACHE, 'nats-server'))) throw err;
    rmSync(staging, { recursive: true, force: true });
  }
  return join(NATS_SERVER_CACHE, 'nats-server');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const path = ensureNatsServer();
  const version = execFileSync(path, ['--version'], { encoding: 'utf8' }).trim();
  process.stdout.write(`${path} (${version})\n`);
}

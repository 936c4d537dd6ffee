/**
 * Log volume under a flood without a key (docs/hardening.md "Logging"). Run:
 * `node --import tsx bench/log-flood.ts [seconds]`.
 *
 * A real service (embedded local cluster, default ingress threads, `logLevel: info`, the log in a
 * file) and one client with 16 keep-alive connections that sends, for `seconds` (default 10)
 * each, one kind of request as fast as the service answers: key-less `GET /v1/tip-floor`,
 * `GET /v1/account` with a wrong key (401), and an unknown path (404). Reported per kind: the
 * requests answered, and the bytes the log file grew, per minute.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { DEFAULT_CONFIG } from '../src/config.js';
import { startServiceOnChain } from '../src/cli/chain.js';

const seconds = Number(process.argv[2] ?? 10);
const CONNECTIONS = 16;
const KINDS: Record<string, { path: string; headers?: Record<string, string> }> = {
  'tip-floor (no key)': { path: '/v1/tip-floor' },
  '401 (wrong key)': { path: '/v1/account', headers: { authorization: 'Bearer lf_wrong' } },
  '404 (unknown path)': { path: '/nope' },
};

/** Requests answered by `CONNECTIONS` loops on `pool` for `ms`. */
async function flood(pool: Pool, kind: { path: string; headers?: Record<string, string> }, ms: number): Promise<number> {
  const until = Date.now() + ms;
  let answered = 0;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (Date.now() < until) {
        const r = await pool.request({ method: 'GET', path: kind.path, headers: kind.headers });
        await r.body.dump();
        answered++;
      }
    }),
  );
  return answered;
}

const dir = mkdtempSync(join(tmpdir(), 'landfall-log-flood-'));
const logFile = join(dir, 'landfall.log');
const running = await startServiceOnChain({ ...DEFAULT_CONFIG, port: 0, dataDir: join(dir, 'data'), logLevel: 'info', logFile, localnet: { validators: 1, slotMs: 400, rpcPort: 0 } });
const svc = running.service;
const pool = new Pool(svc.url, { connections: CONNECTIONS });
const size = () => statSync(logFile).size;
const settle = () => new Promise((r) => setTimeout(r, 1_500)); // past the log's flush interval
try {
  const rows = [];
  for (const [name, kind] of Object.entries(KINDS)) {
    await settle();
    const before = size();
    const answered = await flood(pool, kind, seconds * 1000);
    await settle();
    const grew = size() - before;
    rows.push({ kind: name, requests_per_s: Math.round(answered / seconds), log_bytes_per_min: Math.round((grew / seconds) * 60), log_bytes_per_request: +(grew / answered).toFixed(2) });
  }
  console.log(JSON.stringify({ seconds, connections: CONNECTIONS, ingressThreads: svc.config.ingressThreads, rows }, null, 2));
} finally {
  await pool.close();
  await running.close();
  rmSync(dir, { recursive: true, force: true });
}

/**
 * One validated configuration object, from defaults ← file ← environment ← flags.
 * A bad value is a clear error naming the setting, never a half-started service.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism, hostname } from 'node:os';
import { LandfallError } from './errors.js';
import { TIP_RENT_CHECKS, type TipRentCheck } from './tip-rent.js';
import { DEFAULT_LAMPORTS_PER_POINT, DEFAULT_PLANS, validatePlans, type PlanTable } from './accounts/plans.js';

/** pino's levels, most severe first; `silent` writes nothing. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Config {
  /** HTTP listen port. */
  port: number;
  /** HTTP listen host. */
  host: string;
  /** LMDB data directory. */
  dataDir: string;
  /** Plan table (DECISIONS.md defaults). */
  plans: PlanTable;
  /** Lamports per service point (BP). */
  lamportsPerPoint: number;
  /** Status record retention, days. */
  retentionDays: number;
  /**
   * Transactions an account may have in flight (accepted, neither settled nor expired) at once,
   * in seconds of its plan's send rate: the cap is `inFlightPerTps × max_tps` (at least 1).
   */
  inFlightPerTps: number;
  /** Chain node JSON-RPC URL; null runs the embedded local cluster. */
  rpcUrl: string | null;
  /** Chain node PubSub URL; null derives it from rpcUrl (ws[s]://, port + 1, as Agave serves it). */
  wsUrl: string | null;
  /** Solana CLI keypair file of the QUIC identity; null uses (or creates) `<dataDir>/identity.json`. */
  identityPath: string | null;
  /** Anti-MEV validator blocklist file (reloaded when it changes); null blocks no one. */
  blocklistPath: string | null;
  /** Leaders each send goes to: the current one and the next distinct ones. */
  fanout: number;
  /**
   * Worker threads serving HTTP, each a uWS app on the same port (SO_REUSEPORT), each doing
   * auth, inspect, budget, record and first send itself; the main thread then runs only the
   * leader tracker, the rebroadcast scheduler and the confirmation tracker. 0 serves HTTP on
   * the main thread (one event loop for everything). Default: one less than the cores, at least
   * one — the main thread and the QUIC runtime need the rest (on 2 cores, two runs of the send
   * bench gave 2 ingress threads 1.05× and 1.13× the throughput of 1 for 5–8 % more CPU per send).
   */
  ingressThreads: number;
  /** Tip addresses (base58); null uses (or creates) the data directory's own eight. */
  tipAddresses: string[] | null;
  /**
   * At start, against a chain other than the embedded one, a tip address below the rent-exempt
   * minimum (a tip smaller than that into it fails on chain): `warn` logs it, `refuse` stops the
   * start, `off` does not look (`src/tip-rent.ts`). The embedded cluster's are funded instead.
   */
  tipRentCheck: TipRentCheck;
  /** The embedded local cluster, when rpcUrl is null. */
  localnet: { validators: number; slotMs: number };
  /**
   * The confirmation tracker's two sources: `push` (`logsSubscribe` mentions of the tip
   * addresses) and `poll` (`getSignatureStatuses` sweeps). Both on by default; one off serves to
   * test the other alone against a real node, or to spare a node that limits subscriptions.
   * Both off is refused: nothing would ever settle.
   */
  tracker: { push: boolean; poll: boolean };
  /** Least severe log level written (pino's: fatal … trace, or silent). */
  logLevel: LogLevel;
  /** Append the JSON log lines to this file; null writes them to stdout. */
  logFile: string | null;
  /**
   * Bearer token `/metrics` and the details of `/health` require (`Authorization: Bearer <token>`,
   * at least 16 characters); null leaves them open to whoever reaches the listener.
   */
  metricsToken: string | null;
  /**
   * Port of a separate admin listener (on `adminHost`) serving `/metrics` and `/health` with its
   * details; the API port then serves no `/metrics` and a bare `/health`. null: no admin listener.
   */
  adminPort: number | null;
  /** Host of the admin listener. */
  adminHost: string;
  /**
   * Join other Landfall nodes through NATS JetStream (issue 13, `src/cluster/`): the servers to
   * connect to, this node's name (unique among the nodes: a NATS subject token and a KV key
   * token) and the replicas of the stream and buckets it creates. null (the default): a single
   * node, and nothing of `src/cluster/` is loaded.
   */
  nats: NatsConfig | null;
}

export interface NatsConfig {
  servers: string[];
  node: string;
  replicas: number;
}

export const DEFAULT_CONFIG: Config = {
  port: 8080,
  host: '127.0.0.1',
  dataDir: './data',
  plans: DEFAULT_PLANS,
  lamportsPerPoint: DEFAULT_LAMPORTS_PER_POINT,
  retentionDays: 7,
  inFlightPerTps: 20,
  rpcUrl: null,
  wsUrl: null,
  identityPath: null,
  blocklistPath: null,
  fanout: 2,
  ingressThreads: Math.max(1, availableParallelism() - 1),
  tipAddresses: null,
  tipRentCheck: 'warn',
  localnet: { validators: 4, slotMs: 400 },
  tracker: { push: true, poll: true },
  logLevel: 'info',
  logFile: null,
  metricsToken: null,
  adminPort: null,
  adminHost: '127.0.0.1',
  nats: null,
};

/** Parse the JSON file at `path`, or a clear configuration error naming it as `what`. */
export function readJsonFile(path: string, what: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new LandfallError('CONFIG_INVALID', `cannot read ${what} ${path}: ${(e as Error).message}`);
  }
}

/** Agave serves PubSub on the RPC port + 1. */
export function deriveWsUrl(rpcUrl: string): string {
  const u = new URL(rpcUrl);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  if (u.port !== '') u.port = String(Number(u.port) + 1);
  return u.toString();
}

function urlOf(v: unknown, name: string, protocols: string[]): string | null {
  if (v === null || v === undefined) return null;
  const s = stringOf(v, name);
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    throw new LandfallError('CONFIG_INVALID', `${name} must be a URL, got ${JSON.stringify(v)}`);
  }
  if (!protocols.includes(u.protocol)) {
    throw new LandfallError('CONFIG_INVALID', `${name} must use ${protocols.join(' or ')}, got ${JSON.stringify(v)}`);
  }
  return s;
}

function optionalString(v: unknown, name: string): string | null {
  return v === null || v === undefined ? null : stringOf(v, name);
}

function tipAddressesOf(v: unknown): string[] | null {
  if (v === null || v === undefined) return null;
  if (!Array.isArray(v) || v.length === 0 || v.length > 64 || !v.every((a) => typeof a === 'string')) {
    throw new LandfallError('CONFIG_INVALID', `tipAddresses must be a non-empty array of at most 64 base58 addresses`);
  }
  return v as string[];
}

function localnetOf(v: unknown): Config['localnet'] {
  const o = (typeof v === 'object' && v !== null ? v : {}) as Record<string, unknown>;
  return {
    validators: positiveOf(o.validators ?? DEFAULT_CONFIG.localnet.validators, 'localnet.validators', true),
    slotMs: positiveOf(o.slotMs ?? DEFAULT_CONFIG.localnet.slotMs, 'localnet.slotMs', true),
  };
}

function tipRentCheckOf(v: unknown): TipRentCheck {
  if (v === undefined) return DEFAULT_CONFIG.tipRentCheck;
  if (!TIP_RENT_CHECKS.includes(v as TipRentCheck)) {
    throw new LandfallError('CONFIG_INVALID', `tipRentCheck must be one of ${TIP_RENT_CHECKS.map((c) => `"${c}"`).join(', ')}, got ${JSON.stringify(v)}`);
  }
  return v as TipRentCheck;
}

function trackerOf(v: unknown): Config['tracker'] {
  if (v !== undefined && (typeof v !== 'object' || v === null || Array.isArray(v))) {
    throw new LandfallError('CONFIG_INVALID', `tracker must be an object like {"push":true,"poll":true}, got ${JSON.stringify(v)}`);
  }
  const o = (v ?? {}) as Record<string, unknown>;
  const flag = (x: unknown, name: string): boolean => {
    if (x === undefined) return true;
    if (typeof x !== 'boolean') throw new LandfallError('CONFIG_INVALID', `${name} must be true or false, got ${JSON.stringify(x)}`);
    return x;
  };
  const t = { push: flag(o.push, 'tracker.push'), poll: flag(o.poll, 'tracker.poll') };
  if (!t.push && !t.poll) throw new LandfallError('CONFIG_INVALID', 'tracker.push and tracker.poll cannot both be false: no transaction would ever settle');
  return t;
}

function logLevelOf(v: unknown): LogLevel {
  if (typeof v !== 'string' || !(LOG_LEVELS as readonly string[]).includes(v)) {
    throw new LandfallError('CONFIG_INVALID', `logLevel must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(v)}`);
  }
  return v as LogLevel;
}

function positiveOf(v: unknown, name: string, integer: boolean): number {
  const n = typeof v === 'string' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new LandfallError('CONFIG_INVALID', `${name} must be a positive ${integer ? 'integer' : 'number'}, got ${JSON.stringify(v)}`);
  }
  return n;
}

function nonNegativeIntOf(v: unknown, name: string): number {
  const n = typeof v === 'string' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 64) {
    throw new LandfallError('CONFIG_INVALID', `${name} must be an integer 0..64, got ${JSON.stringify(v)}`);
  }
  return n;
}

function portOf(v: unknown, name: string): number {
  const n = typeof v === 'string' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 65535) {
    throw new LandfallError('CONFIG_INVALID', `${name} must be an integer port 0..65535, got ${JSON.stringify(v)}`);
  }
  return n;
}

function metricsTokenOf(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v !== 'string' || v.length < 16 || v.length > 256 || !/^[\x21-\x7e]+$/.test(v)) {
    throw new LandfallError('CONFIG_INVALID', 'metricsToken must be 16 to 256 visible ASCII characters (no spaces)');
  }
  return v;
}

/**
 * `nats` from the file (an object `{servers, node?, replicas?}`, or a comma-separated string of
 * URLs) with the node name and replicas given apart (flags, environment) taking precedence.
 */
function natsOf(v: unknown, node: unknown, replicas: unknown): NatsConfig | null {
  if (v === null || v === undefined || v === '') {
    if (node !== undefined || replicas !== undefined) throw new LandfallError('CONFIG_INVALID', 'a node name or NATS replicas need nats servers (--nats nats://host:4222,...)');
    return null;
  }
  const o = (typeof v === 'string' || Array.isArray(v) ? { servers: v } : v) as Record<string, unknown>;
  if (typeof o !== 'object' || o === null) throw new LandfallError('CONFIG_INVALID', `nats must be {"servers":[...],"node":"..."} or a comma-separated URL list, got ${JSON.stringify(v)}`);
  const raw = typeof o.servers === 'string' ? o.servers.split(',') : o.servers;
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > 32) throw new LandfallError('CONFIG_INVALID', `nats.servers must be 1 to 32 nats:// URLs, got ${JSON.stringify(o.servers)}`);
  const servers = raw.map((u) => urlOf(typeof u === 'string' ? u.trim() : u, 'nats.servers', ['nats:', 'tls:'])!);
  const name = node ?? o.node ?? hostname().replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 64);
  if (typeof name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(name)) {
    throw new LandfallError('CONFIG_INVALID', `node name must be 1-64 letters, digits, '-' or '_', got ${JSON.stringify(name)}`);
  }
  const r = replicas ?? o.replicas ?? Math.min(3, servers.length);
  const n = typeof r === 'string' ? Number(r) : r;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 5) throw new LandfallError('CONFIG_INVALID', `nats replicas must be an integer 1..5, got ${JSON.stringify(r)}`);
  return { servers, node: name, replicas: n };
}

function stringOf(v: unknown, name: string): string {
  if (typeof v !== 'string' || v.length === 0) {
    throw new LandfallError('CONFIG_INVALID', `${name} must be a non-empty string, got ${JSON.stringify(v)}`);
  }
  return v;
}

/**
 * Build the configuration.
 * @param flags values from the command line (highest precedence)
 * @param env environment (`LANDFALL_PORT`, `LANDFALL_HOST`, `LANDFALL_DATA`, `LANDFALL_CONFIG`,
 *   `LANDFALL_RPC_URL`, `LANDFALL_WS_URL`, `LANDFALL_LOG_LEVEL`, `LANDFALL_LOG_FILE`,
 *   `LANDFALL_METRICS_TOKEN`, `LANDFALL_ADMIN_PORT`, `LANDFALL_NATS` (comma-separated URLs),
 *   `LANDFALL_NODE`, `LANDFALL_NATS_REPLICAS`)
 */
export function loadConfig(
  flags: Partial<Record<keyof Config | 'config' | 'nodeName' | 'natsReplicas', unknown>> = {},
  env: NodeJS.ProcessEnv = process.env,
): Config {
  const merged: Record<string, unknown> = { ...DEFAULT_CONFIG };
  const file = flags.config ?? env.LANDFALL_CONFIG;
  if (file !== undefined) {
    const path = stringOf(file, 'config');
    const parsed = readJsonFile(path, 'config file');
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw new LandfallError('CONFIG_INVALID', `config file ${path} must hold a JSON object`);
    }
    Object.assign(merged, parsed);
  }
  if (env.LANDFALL_PORT !== undefined) merged.port = env.LANDFALL_PORT;
  if (env.LANDFALL_HOST !== undefined) merged.host = env.LANDFALL_HOST;
  if (env.LANDFALL_DATA !== undefined) merged.dataDir = env.LANDFALL_DATA;
  if (env.LANDFALL_RPC_URL !== undefined) merged.rpcUrl = env.LANDFALL_RPC_URL;
  if (env.LANDFALL_WS_URL !== undefined) merged.wsUrl = env.LANDFALL_WS_URL;
  if (env.LANDFALL_LOG_LEVEL !== undefined) merged.logLevel = env.LANDFALL_LOG_LEVEL;
  if (env.LANDFALL_LOG_FILE !== undefined) merged.logFile = env.LANDFALL_LOG_FILE;
  if (env.LANDFALL_METRICS_TOKEN !== undefined) merged.metricsToken = env.LANDFALL_METRICS_TOKEN;
  if (env.LANDFALL_ADMIN_PORT !== undefined) merged.adminPort = env.LANDFALL_ADMIN_PORT;
  if (env.LANDFALL_NATS !== undefined) merged.nats = env.LANDFALL_NATS;
  if (env.LANDFALL_NODE !== undefined) merged.nodeName = env.LANDFALL_NODE;
  if (env.LANDFALL_NATS_REPLICAS !== undefined) merged.natsReplicas = env.LANDFALL_NATS_REPLICAS;
  for (const [k, v] of Object.entries(flags)) if (v !== undefined && k !== 'config') merged[k] = v;
  return {
    port: portOf(merged.port, 'port'),
    host: stringOf(merged.host, 'host'),
    dataDir: stringOf(merged.dataDir, 'dataDir'),
    plans: validatePlans(merged.plans),
    lamportsPerPoint: positiveOf(merged.lamportsPerPoint, 'lamportsPerPoint', true),
    retentionDays: positiveOf(merged.retentionDays, 'retentionDays', false),
    inFlightPerTps: positiveOf(merged.inFlightPerTps, 'inFlightPerTps', false),
    rpcUrl: urlOf(merged.rpcUrl, 'rpcUrl', ['http:', 'https:']),
    wsUrl: urlOf(merged.wsUrl, 'wsUrl', ['ws:', 'wss:']),
    identityPath: optionalString(merged.identityPath, 'identityPath'),
    blocklistPath: optionalString(merged.blocklistPath, 'blocklistPath'),
    fanout: positiveOf(merged.fanout, 'fanout', true),
    ingressThreads: nonNegativeIntOf(merged.ingressThreads, 'ingressThreads'),
    tipAddresses: tipAddressesOf(merged.tipAddresses),
    tipRentCheck: tipRentCheckOf(merged.tipRentCheck),
    localnet: localnetOf(merged.localnet),
    tracker: trackerOf(merged.tracker),
    logLevel: logLevelOf(merged.logLevel),
    logFile: optionalString(merged.logFile, 'logFile'),
    metricsToken: metricsTokenOf(merged.metricsToken),
    adminPort: merged.adminPort === null || merged.adminPort === undefined ? null : portOf(merged.adminPort, 'adminPort'),
    adminHost: stringOf(merged.adminHost, 'adminHost'),
    nats: natsOf(merged.nats, merged.nodeName, merged.natsReplicas),
  };
}

/**
 * One validated configuration object, from defaults ← file ← environment ← flags.
 * A bad value is a clear error naming the setting, never a half-started service.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { LandfallError } from './errors.js';
import { NATS_ENV, natsOf, refuseWorldReadable, type NatsConfig, type NatsOverrides } from './config-nats.js';
import { DEFAULT_LAMPORTS_PER_POINT, DEFAULT_PLANS, PLAN_ORDER, validatePlans, type PlanTable } from './accounts/plans.js';
import { TIP_RENT_CHECKS, type TipRentCheck } from './tip-rent.js';

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
  /** Plan table (the defaults of docs/decisions.md, "Plans"). */
  plans: PlanTable;
  /** Lamports per service point (BP). */
  lamportsPerPoint: number;
  /** Status record retention, days. */
  retentionDays: number;
  /**
   * How often the acknowledgement log (`src/store/ack-log.ts`) is flushed to disk (fdatasync),
   * ms: what a power loss or OS crash may lose of acknowledged sends. A process crash loses
   * nothing whatever this is. 0 flushes every acceptance before it is answered.
   */
  ackSyncMs: number;
  /**
   * When a clustered node's `200` is written (docs/durability.md): `local` once the record is in
   * this node's acknowledgement log (what the death of the process cannot take); `quorum` also
   * only once JetStream acknowledged the record's status event (stored by a quorum of its
   * replicas: what the loss of this node's machine cannot take). `quorum` needs `nats`.
   */
  ackReplication: AckReplication;
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
  /**
   * Threads of the native QUIC runtime (1..64), which every thread's sends share. Default 1: on
   * the bench machine one thread did the QUIC work of the service's maximum in 0.2 core, and a
   * second mostly woke to find nothing (docs/performance.md). Raise it when the `landfall-quic`
   * thread nears a whole core (many ingress threads on a large machine).
   */
  quicThreads: number;
  /**
   * Niceness of the first sends' own QUIC thread (-20..19; 0 leaves it as the process's).
   * Default -10: on a busy machine that thread, woken for a first send, otherwise waits for a
   * CPU, and that wait was the whole tail of the service-added latency (docs/performance.md).
   * Lowering it needs `CAP_SYS_NICE` (or root); without, the service says so once at start and
   * the thread runs at the process's priority.
   */
  quicFirstSendNice: number;
  /**
   * Niceness of each ingress thread (-20..19; 0 leaves it as the process's), set by the thread
   * as it starts. Default -5: ahead of each slot's rebroadcast burst, the tracker and the rest of
   * the machine, behind the first sends' thread. At 2,300 req/s on 2 cores it halved the clients'
   * p99 (docs/performance.md). Lowering it needs `CAP_SYS_NICE` (or root); without, the service
   * says so once at start and the threads run at the process's priority.
   */
  ingressNice: number;
  /** Tip addresses (base58); null uses (or creates) the data directory's own eight. */
  tipAddresses: string[] | null;
  /**
   * At start, against a chain other than the embedded one, a tip address below the rent-exempt
   * minimum (a tip smaller than that into it fails on chain): `warn` logs it, `refuse` stops the
   * start, `off` does not look (`src/tip-rent.ts`). The embedded cluster's are funded instead.
   */
  tipRentCheck: TipRentCheck;
  /**
   * The embedded local cluster, when rpcUrl is null. `rpcPort`: its JSON-RPC port (PubSub on the
   * next one, as Agave serves it); 0 takes any free pair, so several services can run side by side.
   */
  localnet: { validators: number; slotMs: number; rpcPort: number };
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
   * Successful requests and landed transactions: `summary` (default) counts them and writes one
   * `info` line per 10 s ("requests served, counted"), each at `debug`; `every` writes one `info`
   * line each. Refusals, failures and errors are logged one by one either way (within the
   * per-source bound). At ~200 sends/s a line each was 9.1 MB of log a minute.
   */
  logSuccesses: 'summary' | 'every';
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

export type { NatsConfig } from './config-nats.js';

export const DEFAULT_CONFIG: Config = {
  port: 8080,
  host: '127.0.0.1',
  dataDir: './data',
  plans: DEFAULT_PLANS,
  lamportsPerPoint: DEFAULT_LAMPORTS_PER_POINT,
  retentionDays: 7,
  ackSyncMs: 100,
  ackReplication: 'local',
  inFlightPerTps: 20,
  rpcUrl: null,
  wsUrl: null,
  identityPath: null,
  blocklistPath: null,
  fanout: 2,
  ingressThreads: Math.max(1, availableParallelism() - 1),
  quicThreads: 1,
  quicFirstSendNice: -10,
  ingressNice: -5,
  tipAddresses: null,
  tipRentCheck: 'warn',
  localnet: { validators: 4, slotMs: 400, rpcPort: 0 },
  tracker: { push: true, poll: true },
  logLevel: 'info',
  logFile: null,
  logSuccesses: 'summary',
  metricsToken: null,
  adminPort: null,
  adminHost: '127.0.0.1',
  nats: null,
};

/** The first secret a config file holds (its setting's name), or null: such a file must not be world-readable. */
function secretIn(file: Record<string, unknown>): string | null {
  if (typeof file.metricsToken === 'string') return 'metricsToken';
  const nats = file.nats;
  const servers = typeof nats === 'string' ? nats : typeof nats === 'object' && nats !== null ? (nats as Record<string, unknown>).servers : undefined;
  const urls = typeof servers === 'string' ? servers.split(',') : Array.isArray(servers) ? servers : [];
  if (urls.some((u) => typeof u === 'string' && /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/@\s]+@/.test(u.trim()))) return 'credentials in nats.servers';
  if (typeof nats === 'object' && nats !== null) {
    const n = nats as Record<string, unknown>;
    if (typeof n.password === 'string') return 'nats.password';
    if (typeof n.token === 'string') return 'nats.token';
  }
  return null;
}

/** Parse the JSON file at `path`, or a clear configuration error naming it as `what`. */
export function readJsonFile(path: string, what: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new LandfallError('CONFIG_INVALID', `cannot read ${what} ${path}: ${(e as Error).message}`);
  }
}

/**
 * Environment variables and the setting each sets (`LANDFALL_NATS`: comma-separated URLs).
 * `LANDFALL_CONFIG` names the file.
 */
const ENV_SETTINGS: Readonly<Record<string, string>> = {
  LANDFALL_PORT: 'port',
  LANDFALL_HOST: 'host',
  LANDFALL_DATA: 'dataDir',
  LANDFALL_RPC_URL: 'rpcUrl',
  LANDFALL_WS_URL: 'wsUrl',
  LANDFALL_LOG_LEVEL: 'logLevel',
  LANDFALL_LOG_FILE: 'logFile',
  LANDFALL_LOG_SUCCESSES: 'logSuccesses',
  LANDFALL_METRICS_TOKEN: 'metricsToken',
  LANDFALL_ADMIN_PORT: 'adminPort',
  LANDFALL_NATS: 'nats',
  ...NATS_ENV,
  LANDFALL_ACK_SYNC_MS: 'ackSyncMs',
  LANDFALL_ACK_REPLICATION: 'ackReplication',
  LANDFALL_QUIC_THREADS: 'quicThreads',
  LANDFALL_QUIC_FIRST_SEND_NICE: 'quicFirstSendNice',
  LANDFALL_INGRESS_NICE: 'ingressNice',
};

/**
 * `LANDFALL_*` variables that are not service settings, so the service leaves them alone: the
 * examples' and the client's (`LANDFALL_KEY`, `LANDFALL_URL`, `LANDFALL_URLS`, as their
 * documentation sets them in the same shell), the test tooling's binaries (`LANDFALL_NATS_SERVER`,
 * `LANDFALL_AGAVE_VALIDATOR`, `LANDFALL_CHROMIUM`, `LANDFALL_PROMETHEUS`, `LANDFALL_PROMTOOL`),
 * and the tests' fault hook `LANDFALL_TEST_KILL_AFTER_COMMIT` (`store/generations.ts`).
 */
const OTHER_VARIABLES = [
  'LANDFALL_CONFIG',
  'LANDFALL_KEY',
  'LANDFALL_URL',
  'LANDFALL_URLS',
  'LANDFALL_NATS_SERVER',
  'LANDFALL_AGAVE_VALIDATOR',
  'LANDFALL_CHROMIUM',
  'LANDFALL_PROMETHEUS',
  'LANDFALL_PROMTOOL',
  'LANDFALL_TEST_KILL_AFTER_COMMIT',
];

/**
 * The keys a config file may hold, and those of its nested objects: a key not here is an error
 * naming the nearest known one (a typo such as `rpcURL` would otherwise be ignored, and the
 * service would start on the embedded local cluster instead of the chain it names).
 */
const FILE_KEYS: KeySpec = {
  ...Object.fromEntries(Object.keys(DEFAULT_CONFIG).map((k) => [k, null])),
  localnet: { validators: null, slotMs: null, rpcPort: null },
  tracker: { push: null, poll: null },
  nats: { servers: null, node: null, replicas: null, user: null, password: null, token: null, credsFile: null, nkeyFile: null, tls: { caFile: null, certFile: null, keyFile: null } },
  plans: Object.fromEntries(PLAN_ORDER.map((p) => [p, { maxTps: null, queryTps: null, minTipBp: null, thresholdBp: null }])),
};

/** Known keys of an object: null for a leaf, or the known keys of the nested object. */
interface KeySpec {
  [key: string]: KeySpec | null;
}

/** Levenshtein distance: the edits from `a` to `b`. */
function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
}

/** How far `name` is from `known`: one containing the other counts as one edit (`threads`, `ingressThreads`). */
function remoteness(name: string, known: string): number {
  const a = name.toLowerCase();
  const b = known.toLowerCase();
  return a !== b && (a.includes(b) || b.includes(a)) ? 1 : distance(a, b);
}

/**
 * Settings that were removed or renamed, and the one that does their job now: named for them
 * whatever the edit distance says (`sendThreads` is as near to `quicThreads` as to
 * `ingressThreads`, which replaced it).
 */
const REPLACED_BY: Readonly<Record<string, string>> = { sendThreads: 'ingressThreads' };

/** The known name nearest to `name` (its replacement if it was removed; else the first of equals). */
export function nearest(name: string, known: readonly string[]): string {
  const replacement = REPLACED_BY[name];
  if (replacement !== undefined && known.includes(replacement)) return replacement;
  let best = known[0]!;
  for (const k of known) if (remoteness(name, k) < remoteness(name, best)) best = k;
  return best;
}

/** `unknown <what> "name"; did you mean "nearest"?` */
export function unknownName(what: string, name: string, known: readonly string[]): string {
  return `unknown ${what} ${JSON.stringify(name)}; did you mean ${JSON.stringify(nearest(name, known))}?`;
}

/** Refuse a key of `o` (and of its nested objects) that `spec` does not know. */
function refuseUnknownKeys(o: Record<string, unknown>, spec: KeySpec, where: string, prefix = ''): void {
  const known = Object.keys(spec);
  for (const [k, v] of Object.entries(o)) {
    if (!Object.hasOwn(spec, k)) {
      throw new LandfallError('CONFIG_INVALID', where + unknownName('setting', prefix + k, known.map((n) => prefix + n)));
    }
    const nested = spec[k];
    if (nested && typeof v === 'object' && v !== null && !Array.isArray(v)) refuseUnknownKeys(v as Record<string, unknown>, nested, where, `${prefix}${k}.`);
  }
}

/** Refuse a `LANDFALL_*` variable that is no setting (`LANDFALL_RPC` for `LANDFALL_RPC_URL`). */
function refuseUnknownVariables(env: NodeJS.ProcessEnv): void {
  const known = [...Object.keys(ENV_SETTINGS), ...OTHER_VARIABLES];
  for (const name of Object.keys(env)) {
    if (name.startsWith('LANDFALL_') && !known.includes(name)) throw new LandfallError('CONFIG_INVALID', unknownName('environment variable', name, known));
  }
}

/**
 * `wsUrl` names a chain only with `rpcUrl`: alone it would be dropped for the embedded local
 * cluster's, so it is an error (the embedded cluster starts only when no setting names a chain).
 */
function wsUrlOf(v: unknown, rpcUrl: unknown): string | null {
  const ws = urlOf(v, 'wsUrl', ['ws:', 'wss:']);
  if (ws !== null && (rpcUrl === null || rpcUrl === undefined)) {
    throw new LandfallError('CONFIG_INVALID', 'wsUrl needs rpcUrl: without rpcUrl the service would start the embedded local cluster and ignore wsUrl');
  }
  return ws;
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

/** The file's `localnet` object, with the RPC port given apart (the `--localnet-rpc-port` flag) taking precedence. */
function localnetOf(v: unknown, rpcPort: unknown): Config['localnet'] {
  const o = (typeof v === 'object' && v !== null ? v : {}) as Record<string, unknown>;
  return {
    validators: positiveOf(o.validators ?? DEFAULT_CONFIG.localnet.validators, 'localnet.validators', true),
    slotMs: positiveOf(o.slotMs ?? DEFAULT_CONFIG.localnet.slotMs, 'localnet.slotMs', true),
    rpcPort: portOf(rpcPort ?? o.rpcPort ?? DEFAULT_CONFIG.localnet.rpcPort, 'localnet.rpcPort'),
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

function logSuccessesOf(v: unknown): 'summary' | 'every' {
  if (v !== 'summary' && v !== 'every') throw new LandfallError('CONFIG_INVALID', `logSuccesses must be "summary" or "every", got ${JSON.stringify(v)}`);
  return v;
}

export const ACK_REPLICATIONS = ['local', 'quorum'] as const;
export type AckReplication = (typeof ACK_REPLICATIONS)[number];

/** `quorum` is a promise about JetStream: refused on a single node rather than silently `local`. */
function ackReplicationOf(v: unknown, clustered: boolean): AckReplication {
  if (typeof v !== 'string' || !(ACK_REPLICATIONS as readonly string[]).includes(v)) {
    throw new LandfallError('CONFIG_INVALID', `ackReplication must be one of ${ACK_REPLICATIONS.join(', ')}, got ${JSON.stringify(v)}`);
  }
  if (v === 'quorum' && !clustered) {
    throw new LandfallError('CONFIG_INVALID', 'ackReplication "quorum" needs a cluster: set nats (or LANDFALL_NATS), or use "local" on a single node');
  }
  return v as AckReplication;
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

function nonNegativeIntOf(v: unknown, name: string, max = 64): number {
  const n = typeof v === 'string' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > max) {
    throw new LandfallError('CONFIG_INVALID', `${name} must be an integer 0..${max}, got ${JSON.stringify(v)}`);
  }
  return n;
}

function niceOf(v: unknown, name: string): number {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < -20 || n > 19) {
    throw new LandfallError('CONFIG_INVALID', `${name} must be an integer -20..19, got ${JSON.stringify(v)}`);
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

/** The NATS settings given apart from `nats` (flags, environment) out of the merged settings. */
function natsOverridesOf(merged: Record<string, unknown>): NatsOverrides {
  return Object.fromEntries(Object.values(NATS_ENV).map((k) => [k, merged[k]]));
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
 * @param env environment: `LANDFALL_CONFIG` and {@link ENV_SETTINGS} (the NATS ones from
 *   `NATS_ENV`); any other `LANDFALL_*` variable (but {@link OTHER_VARIABLES}) is an error
 */
export function loadConfig(
  flags: Partial<Record<keyof Config | 'config' | keyof NatsOverrides | 'localnetRpcPort', unknown>> = {},
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
    refuseUnknownKeys(parsed as Record<string, unknown>, FILE_KEYS, `config file ${path}: `);
    const secret = secretIn(parsed as Record<string, unknown>);
    if (secret !== null) refuseWorldReadable(path, `config file ${path} holds a secret (${secret})`);
    Object.assign(merged, parsed);
  }
  refuseUnknownVariables(env);
  for (const [name, setting] of Object.entries(ENV_SETTINGS)) if (env[name] !== undefined) merged[setting] = env[name];
  for (const [k, v] of Object.entries(flags)) if (v !== undefined && k !== 'config') merged[k] = v;
  const nats = natsOf(merged.nats, natsOverridesOf(merged));
  return {
    port: portOf(merged.port, 'port'),
    host: stringOf(merged.host, 'host'),
    dataDir: stringOf(merged.dataDir, 'dataDir'),
    plans: validatePlans(merged.plans),
    lamportsPerPoint: positiveOf(merged.lamportsPerPoint, 'lamportsPerPoint', true),
    retentionDays: positiveOf(merged.retentionDays, 'retentionDays', false),
    ackSyncMs: nonNegativeIntOf(merged.ackSyncMs, 'ackSyncMs', 60_000),
    ackReplication: ackReplicationOf(merged.ackReplication, nats !== null),
    inFlightPerTps: positiveOf(merged.inFlightPerTps, 'inFlightPerTps', false),
    rpcUrl: urlOf(merged.rpcUrl, 'rpcUrl', ['http:', 'https:']),
    wsUrl: wsUrlOf(merged.wsUrl, merged.rpcUrl),
    identityPath: optionalString(merged.identityPath, 'identityPath'),
    blocklistPath: optionalString(merged.blocklistPath, 'blocklistPath'),
    fanout: positiveOf(merged.fanout, 'fanout', true),
    ingressThreads: nonNegativeIntOf(merged.ingressThreads, 'ingressThreads'),
    quicThreads: positiveOf(nonNegativeIntOf(merged.quicThreads, 'quicThreads'), 'quicThreads', true),
    quicFirstSendNice: niceOf(merged.quicFirstSendNice, 'quicFirstSendNice'),
    ingressNice: niceOf(merged.ingressNice, 'ingressNice'),
    tipAddresses: tipAddressesOf(merged.tipAddresses),
    tipRentCheck: tipRentCheckOf(merged.tipRentCheck),
    localnet: localnetOf(merged.localnet, merged.localnetRpcPort),
    tracker: trackerOf(merged.tracker),
    logLevel: logLevelOf(merged.logLevel),
    logFile: optionalString(merged.logFile, 'logFile'),
    logSuccesses: logSuccessesOf(merged.logSuccesses),
    metricsToken: metricsTokenOf(merged.metricsToken),
    adminPort: merged.adminPort === null || merged.adminPort === undefined ? null : portOf(merged.adminPort, 'adminPort'),
    adminHost: stringOf(merged.adminHost, 'adminHost'),
    nats,
  };
}

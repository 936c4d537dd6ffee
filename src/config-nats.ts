/**
 * The `nats` setting (issue 13, hardened by issue 20): the servers, this node's name, the
 * replicas, and how the node or the admin CLI proves who it is — a credentials file, an nkey
 * seed file, a user and password, or a token (at most one) — and TLS (a CA, a client
 * certificate). Kept apart from `config.ts` so `src/cluster/` and the CLIs share one parser.
 *
 * Secrets never leave this module in a message: a password or token is never quoted in an
 * error, and credentials written into a server URL (`nats://user:pass@host`, `nats://token@host`)
 * are taken out of the URL here, so the servers list that is logged or printed holds none.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { LandfallError } from './errors.js';

/** How a client proves who it is to NATS (at most one way). */
export type NatsAuth =
  | { kind: 'creds'; file: string }
  | { kind: 'nkey'; file: string }
  | { kind: 'user'; user: string; password: string }
  | { kind: 'token'; token: string };

/** TLS files (PEM); each null uses the default (the system CAs; no client certificate). */
export interface NatsTls {
  caFile: string | null;
  certFile: string | null;
  keyFile: string | null;
}

export interface NatsConfig {
  /** Server URLs, without credentials. */
  servers: string[];
  node: string;
  replicas: number;
  /** Absent: connect without credentials. */
  auth?: NatsAuth;
  /** Present: every connection must be TLS (a server that does not offer it is refused). */
  tls?: NatsTls;
}

/** The settings given apart from the `nats` value (flags, environment); they win over the file. */
export interface NatsOverrides {
  nodeName?: unknown;
  natsReplicas?: unknown;
  natsUser?: unknown;
  natsPassword?: unknown;
  natsToken?: unknown;
  natsCreds?: unknown;
  natsNkey?: unknown;
  natsTlsCa?: unknown;
  natsTlsCert?: unknown;
  natsTlsKey?: unknown;
}

/** The environment variables of the NATS settings and the override each one sets. */
export const NATS_ENV: Readonly<Record<string, keyof NatsOverrides>> = {
  LANDFALL_NODE: 'nodeName',
  LANDFALL_NATS_REPLICAS: 'natsReplicas',
  LANDFALL_NATS_USER: 'natsUser',
  LANDFALL_NATS_PASSWORD: 'natsPassword',
  LANDFALL_NATS_TOKEN: 'natsToken',
  LANDFALL_NATS_CREDS: 'natsCreds',
  LANDFALL_NATS_NKEY: 'natsNkey',
  LANDFALL_NATS_TLS_CA: 'natsTlsCa',
  LANDFALL_NATS_TLS_CERT: 'natsTlsCert',
  LANDFALL_NATS_TLS_KEY: 'natsTlsKey',
};

/**
 * The command-line options of the NATS settings, shared by `serve` and the admin commands.
 * No option takes a password or token: a command line is visible to every user of the machine
 * (`ps`); those come from the environment, the config file or the server URL.
 */
export const NATS_CLI_OPTIONS = {
  nats: { type: 'string' },
  'nats-replicas': { type: 'string' },
  'nats-user': { type: 'string' },
  'nats-creds': { type: 'string' },
  'nats-nkey': { type: 'string' },
  'nats-tls-ca': { type: 'string' },
  'nats-tls-cert': { type: 'string' },
  'nats-tls-key': { type: 'string' },
} as const;

/** The flags of {@link NATS_CLI_OPTIONS} as `loadConfig` takes them. */
export function natsFlagsOf(v: Partial<Record<keyof typeof NATS_CLI_OPTIONS, string>>): NatsOverrides & { nats?: string } {
  return {
    nats: v.nats,
    natsReplicas: v['nats-replicas'],
    natsUser: v['nats-user'],
    natsCreds: v['nats-creds'],
    natsNkey: v['nats-nkey'],
    natsTlsCa: v['nats-tls-ca'],
    natsTlsCert: v['nats-tls-cert'],
    natsTlsKey: v['nats-tls-key'],
  };
}

const invalid = (msg: string): LandfallError => new LandfallError('CONFIG_INVALID', msg);

/** `url` with any `user:password@` or `token@` shown as `***@`: for messages. */
export function redactUrl(url: string): string {
  return url.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/*)[^@\s]*@/, '$1***@');
}

/** A server URL's credentials (null: none) and the URL without them. */
function splitServer(raw: unknown): { url: string; auth: NatsAuth | null } {
  const s = typeof raw === 'string' ? raw.trim() : raw;
  if (typeof s !== 'string' || s.length === 0) throw invalid(`nats.servers must be nats:// or tls:// URLs, got a ${typeof s === 'string' ? 'blank string' : typeof s}`);
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    throw invalid(`nats.servers must be a URL, got ${JSON.stringify(redactUrl(s))}`);
  }
  if (u.protocol !== 'nats:' && u.protocol !== 'tls:') throw invalid(`nats.servers must use nats: or tls:, got ${JSON.stringify(redactUrl(s))}`);
  if (u.hostname === '') throw invalid(`nats.servers must name a host, got ${JSON.stringify(redactUrl(s))}`);
  let user: string;
  let password: string;
  try {
    [user, password] = [decodeURIComponent(u.username), decodeURIComponent(u.password)];
  } catch {
    throw invalid(`nats.servers: the credentials in ${JSON.stringify(redactUrl(s))} are not valid percent-encoding`);
  }
  const auth: NatsAuth | null = password !== '' ? { kind: 'user', user, password } : user !== '' ? { kind: 'token', token: user } : null;
  return { url: `${u.protocol}//${u.host}`, auth };
}

function secretOf(v: unknown, name: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  // Never quote the value: it is a secret (a typo in one is still most of the secret).
  if (typeof v !== 'string' || v.length === 0 || v.length > 4096) throw invalid(`${name} must be a non-empty string of at most 4096 characters`);
  return v;
}

function plainOf(v: unknown, name: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v.length === 0) throw invalid(`${name} must be a non-empty string, got ${JSON.stringify(v)}`);
  return v;
}

/** A file setting: a path this process can read now (a clear error at start, not at connect). */
function fileOf(v: unknown, name: string, secret = false): string | undefined {
  const path = plainOf(v, name);
  if (path === undefined) return undefined;
  try {
    accessSync(path, constants.R_OK);
  } catch (e) {
    throw invalid(`${name}: cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  if (secret) refuseWorldReadable(path, `${name} ${path} holds a secret`);
  return path;
}

/**
 * Refuse a file holding a secret (an nkey seed, a credentials file, a TLS private key, a config
 * file with a password or token) that every user of the machine may read: anyone on the host
 * could then act as this node on the cluster. Refused rather than warned: a warning scrolls past
 * in a log nobody reads, and the fix is one `chmod`. Group-readable stays allowed (a `landfall`
 * group is a deliberate choice); only the bit for every other user counts.
 */
export function refuseWorldReadable(path: string, what: string): void {
  let mode: number;
  try {
    mode = statSync(path).mode & 0o777;
  } catch {
    return; // unreadable is reported where the file is read
  }
  if ((mode & 0o004) === 0) return;
  throw invalid(
    `${what} and is readable by every user of this machine (mode 0${mode.toString(8)}): run \`chmod o-r ${path}\` (or chmod 600), or in Kubernetes mount it with defaultMode 0400`,
  );
}

/** The keys `nats` and `nats.tls` may hold in the config file. */
const NATS_KEYS = ['servers', 'node', 'replicas', 'user', 'password', 'token', 'credsFile', 'nkeyFile', 'tls'];
const NATS_TLS_KEYS = ['caFile', 'certFile', 'keyFile'];

/**
 * `v` as an object holding only `known` keys: a misspelt security setting (`credFile`) must be
 * an error, not a connection made without it.
 */
function objectOf(v: unknown, name: string, known: readonly string[]): Record<string, unknown> {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw invalid(`${name} must be an object`);
  const unknown = Object.keys(v).find((k) => !known.includes(k));
  if (unknown !== undefined) throw invalid(`unknown setting ${name}.${unknown} (known: ${known.join(', ')})`);
  return v as Record<string, unknown>;
}

/**
 * The one way of authenticating among those given (file, flags, environment, URL), or a clear
 * error when several are given or one is incomplete.
 */
function authOf(o: Record<string, unknown>, f: NatsOverrides, fromUrls: NatsAuth | null): NatsAuth | undefined {
  const creds = fileOf(f.natsCreds ?? o.credsFile, 'nats.credsFile', true);
  const nkey = fileOf(f.natsNkey ?? o.nkeyFile, 'nats.nkeyFile', true);
  const user = plainOf(f.natsUser ?? o.user, 'nats.user');
  const password = secretOf(f.natsPassword ?? o.password, 'nats.password');
  const token = secretOf(f.natsToken ?? o.token, 'nats.token');
  if (password !== undefined && user === undefined) throw invalid('a NATS password needs a user (nats.user, --nats-user or LANDFALL_NATS_USER)');
  if (user !== undefined && password === undefined) throw invalid('a NATS user needs a password (nats.password or LANDFALL_NATS_PASSWORD)');
  const given: [string, NatsAuth][] = [];
  if (creds !== undefined) given.push(['a credentials file', { kind: 'creds', file: creds }]);
  if (nkey !== undefined) given.push(['an nkey seed file', { kind: 'nkey', file: nkey }]);
  if (user !== undefined) given.push(['a user and password', { kind: 'user', user, password: password! }]);
  if (token !== undefined) given.push(['a token', { kind: 'token', token }]);
  if (fromUrls) given.push(['credentials in a server URL', fromUrls]);
  if (given.length > 1) throw invalid(`NATS credentials given more than one way (${given.map(([what]) => what).join(', ')}): give exactly one`);
  return given[0]?.[1];
}

/** TLS: required when a server URL is tls:// or a TLS file is given. */
function tlsOf(o: Record<string, unknown>, f: NatsOverrides, anyTlsUrl: boolean): NatsTls | undefined {
  const t = objectOf(o.tls, 'nats.tls', NATS_TLS_KEYS);
  const tls: NatsTls = {
    caFile: fileOf(f.natsTlsCa ?? t.caFile, 'nats.tls.caFile') ?? null,
    certFile: fileOf(f.natsTlsCert ?? t.certFile, 'nats.tls.certFile') ?? null,
    keyFile: fileOf(f.natsTlsKey ?? t.keyFile, 'nats.tls.keyFile', true) ?? null,
  };
  if ((tls.certFile === null) !== (tls.keyFile === null)) throw invalid('a NATS client certificate needs both nats.tls.certFile and nats.tls.keyFile');
  const anyFile = tls.caFile !== null || tls.certFile !== null;
  return anyTlsUrl || anyFile ? tls : undefined;
}

/**
 * `nats` from the file (an object `{servers, node?, replicas?, user?, password?, token?,
 * credsFile?, nkeyFile?, tls?: {caFile?, certFile?, keyFile?}}`, or a comma-separated string of
 * URLs) with the settings given apart (flags, environment) taking precedence.
 */
export function natsOf(v: unknown, f: NatsOverrides): NatsConfig | null {
  if (v === null || v === undefined || v === '') {
    const stray = Object.entries(f).find(([, x]) => x !== undefined);
    if (stray) throw invalid(`${stray[0]} is set, but NATS settings need nats servers (--nats nats://host:4222,...)`);
    return null;
  }
  const o = typeof v === 'string' || Array.isArray(v) ? { servers: v } : objectOf(v, 'nats', NATS_KEYS);
  const raw = typeof o.servers === 'string' ? o.servers.split(',') : o.servers;
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > 32) throw invalid(`nats.servers must be 1 to 32 nats:// or tls:// URLs`);
  const split = raw.map(splitServer);
  const urlAuth = split.find((s) => s.auth !== null)?.auth ?? null;
  if (split.some((s) => s.auth !== null && JSON.stringify(s.auth) !== JSON.stringify(urlAuth))) throw invalid('the NATS server URLs carry different credentials: give one set');
  const servers = split.map((s) => s.url);
  const name = f.nodeName ?? o.node ?? hostname().replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 64);
  if (typeof name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(name)) {
    throw invalid(`node name must be 1-64 letters, digits, '-' or '_', got ${JSON.stringify(name)}`);
  }
  const r = f.natsReplicas ?? o.replicas ?? Math.min(3, servers.length);
  const n = typeof r === 'string' ? Number(r) : r;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 5) throw invalid(`nats replicas must be an integer 1..5, got ${JSON.stringify(r)}`);
  const auth = authOf(o, f, urlAuth);
  const tls = tlsOf(o, f, servers.some((s) => s.startsWith('tls:')));
  return { servers, node: name, replicas: n, ...(auth && { auth }), ...(tls && { tls }) };
}

/**
 * Per-validator faults: what each fault means, how a faults file is read and checked.
 *
 * A faults file is a JSON object keyed by validator name (`v1` … `vN`, as `landfall localnet`
 * prints them); each value holds that validator's faults, every field optional:
 *
 * ```json
 * { "v2": { "down": true },
 *   "v3": { "link": "rtt=120ms,jitter=10ms,loss=3%" },
 *   "v4": { "refuseCode": 2, "sandwicher": true, "skipSlots": true } }
 * ```
 *
 * The path to a validator is one model, its link (`link.ts`): `link` sets it (an object or the
 * string form), field by field over the cluster's `--link`. The older `delayMs` and
 * `packetLossPct` are two of its fields under their old names, kept so existing faults files
 * still mean what they meant: `delayMs` is the one-way delay towards the validator
 * (`link.upDelayMs`), `packetLossPct` the loss each way (`link.lossPct`, as the server-side loss
 * it replaces dropped both ways). Given both ways, `link` wins.
 */
import { readFileSync } from 'node:fs';
import { LandfallError } from '../errors.js';
import { checkLink, parseLink, type LinkSettings } from './link.js';

export interface Fault {
  /** No listener at all: the validator's QUIC server is closed (connects fail), as if it were offline. */
  down?: boolean;
  /** Share of UDP datagrams lost each way on the link, 0–100 (QUIC retransmits them): `link.lossPct`. */
  packetLossPct?: number;
  /** One-way delay of every datagram towards the validator, ms: `link.upDelayMs`. */
  delayMs?: number;
  /** The link to this validator (delay, jitter, loss, bursts, bandwidth each way), over the cluster's. */
  link?: LinkSettings | string;
  /** The validator skips its leader slots: it produces no block in them (what reaches it is dropped). */
  skipSlots?: boolean;
  /** The validator starts each of its blocks this late, ms: what arrives before is held, then included. */
  lateStartMs?: number;
  /** Close every new connection with this application close code (e.g. 2 `disallowed`). */
  refuseCode?: number | null;
  /** Marks the validator as a sandwicher: a fixture for anti-MEV blocklists, reported in cluster info. */
  sandwicher?: boolean;
}

/** Largest injected delay: a minute is far past any leader window; larger is a typo. */
const MAX_DELAY_MS = 60_000;

const FIELDS: Record<Exclude<keyof Fault, 'link'>, (v: unknown) => string | null> = {
  down: (v) => (typeof v === 'boolean' ? null : 'must be true or false'),
  skipSlots: (v) => (typeof v === 'boolean' ? null : 'must be true or false'),
  lateStartMs: (v) =>
    typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= MAX_DELAY_MS ? null : `must be an integer number of ms from 0 to ${MAX_DELAY_MS}`,
  sandwicher: (v) => (typeof v === 'boolean' ? null : 'must be true or false'),
  packetLossPct: (v) => (typeof v === 'number' && v >= 0 && v <= 100 ? null : 'must be a number from 0 to 100'),
  delayMs: (v) =>
    typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= MAX_DELAY_MS
      ? null
      : `must be an integer number of ms from 0 to ${MAX_DELAY_MS}`,
  refuseCode: (v) =>
    v === null || (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 0xffff_ffff)
      ? null
      : 'must be a QUIC application close code (integer 0–4294967295) or null',
};

/** Check one validator's fault object; throws `CONFIG_INVALID` naming the bad field. */
export function checkFault(where: string, value: unknown): Fault {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new LandfallError('CONFIG_INVALID', `${where}: a fault must be an object like {"down": true}`);
  }
  const out: Fault = {};
  for (const [key, v] of Object.entries(value)) {
    if (key === 'link') {
      out.link = checkLink(`${where}.link`, v);
      continue;
    }
    const check = FIELDS[key as Exclude<keyof Fault, 'link'>];
    if (!check) {
      throw new LandfallError('CONFIG_INVALID', `${where}: unknown fault '${key}' (known: ${[...Object.keys(FIELDS), 'link'].join(', ')})`);
    }
    const problem = check(v);
    if (problem) throw new LandfallError('CONFIG_INVALID', `${where}.${key} ${problem} (got ${JSON.stringify(v)})`);
    (out as Record<string, unknown>)[key] = v;
  }
  return out;
}

/** Check a whole faults map, and its keys against the validator names when they are known. */
export function checkFaults(where: string, value: unknown, names?: readonly string[]): Record<string, Fault> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new LandfallError('CONFIG_INVALID', `${where}: faults must be an object keyed by validator name (v1, v2, …)`);
  }
  const out: Record<string, Fault> = {};
  for (const [name, fault] of Object.entries(value)) {
    if (names && !names.includes(name)) {
      throw new LandfallError('CONFIG_INVALID', `${where}: no validator named '${name}' (validators: ${names.join(', ')})`);
    }
    out[name] = checkFault(`${where}.${name}`, fault);
  }
  return out;
}

/** Read and check a faults file (format above). The names are checked when the cluster starts. */
export function readFaultsFile(path: string): Record<string, Fault> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new LandfallError('CONFIG_INVALID', `cannot read faults file ${path}: ${(e as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new LandfallError('CONFIG_INVALID', `faults file ${path} is not valid JSON: ${(e as Error).message}`);
  }
  return checkFaults(`faults file ${path}`, value);
}

/** The link settings a fault asks for: its old-name fields, then its `link` over them. */
export function faultLink(fault: Fault): LinkSettings {
  return {
    ...(fault.delayMs !== undefined && { upDelayMs: fault.delayMs }),
    ...(fault.packetLossPct !== undefined && { lossPct: fault.packetLossPct }),
    ...(typeof fault.link === 'string' ? parseLink(fault.link) : fault.link),
  };
}

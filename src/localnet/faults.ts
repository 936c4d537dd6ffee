/**
 * Per-validator faults: what each fault means, how a faults file is read and checked.
 *
 * A faults file is a JSON object keyed by validator name (`v1` … `vN`, as `landfall localnet`
 * prints them); each value holds that validator's faults, every field optional:
 *
 * ```json
 * { "v2": { "down": true },
 *   "v3": { "packetLossPct": 30, "delayMs": 80 },
 *   "v4": { "refuseCode": 2, "sandwicher": true } }
 * ```
 */
import { readFileSync } from 'node:fs';
import { LandfallError } from '../errors.js';

export interface Fault {
  /** No listener at all: the validator's QUIC server is closed (connects fail), as if it were offline. */
  down?: boolean;
  /** Share of incoming UDP datagrams the QUIC server discards, 0–100 (QUIC retransmits them). */
  packetLossPct?: number;
  /** Extra delay before each incoming datagram is processed, in ms. */
  delayMs?: number;
  /** Close every new connection with this application close code (e.g. 2 `disallowed`). */
  refuseCode?: number | null;
  /** Marks the validator as a sandwicher: a fixture for anti-MEV blocklists, reported in cluster info. */
  sandwicher?: boolean;
}

/** Largest injected delay: a minute is far past any leader window; larger is a typo. */
const MAX_DELAY_MS = 60_000;

const FIELDS: Record<keyof Fault, (v: unknown) => string | null> = {
  down: (v) => (typeof v === 'boolean' ? null : 'must be true or false'),
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
    const check = FIELDS[key as keyof Fault];
    if (!check) {
      throw new LandfallError('CONFIG_INVALID', `${where}: unknown fault '${key}' (known: ${Object.keys(FIELDS).join(', ')})`);
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

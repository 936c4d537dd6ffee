/**
 * One validated configuration object, from defaults ← file ← environment ← flags.
 * A bad value is a clear error naming the setting, never a half-started service.
 */
import { readFileSync } from 'node:fs';
import { LandfallError } from './errors.js';
import { DEFAULT_LAMPORTS_PER_POINT, DEFAULT_PLANS, validatePlans, type PlanTable } from './accounts/plans.js';

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
}

export const DEFAULT_CONFIG: Config = {
  port: 8080,
  host: '127.0.0.1',
  dataDir: './data',
  plans: DEFAULT_PLANS,
  lamportsPerPoint: DEFAULT_LAMPORTS_PER_POINT,
  retentionDays: 7,
};

function positiveOf(v: unknown, name: string, integer: boolean): number {
  const n = typeof v === 'string' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new LandfallError('CONFIG_INVALID', `${name} must be a positive ${integer ? 'integer' : 'number'}, got ${JSON.stringify(v)}`);
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

function stringOf(v: unknown, name: string): string {
  if (typeof v !== 'string' || v.length === 0) {
    throw new LandfallError('CONFIG_INVALID', `${name} must be a non-empty string, got ${JSON.stringify(v)}`);
  }
  return v;
}

/**
 * Build the configuration.
 * @param flags values from the command line (highest precedence)
 * @param env environment (`LANDFALL_PORT`, `LANDFALL_HOST`, `LANDFALL_DATA`, `LANDFALL_CONFIG`)
 */
export function loadConfig(
  flags: Partial<Record<keyof Config | 'config', unknown>> = {},
  env: NodeJS.ProcessEnv = process.env,
): Config {
  const merged: Record<string, unknown> = { ...DEFAULT_CONFIG };
  const file = flags.config ?? env.LANDFALL_CONFIG;
  if (file !== undefined) {
    const path = stringOf(file, 'config');
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(path, 'utf8'));
    } catch (e) {
      throw new LandfallError('CONFIG_INVALID', `cannot read config file ${path}: ${(e as Error).message}`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw new LandfallError('CONFIG_INVALID', `config file ${path} must hold a JSON object`);
    }
    Object.assign(merged, parsed);
  }
  if (env.LANDFALL_PORT !== undefined) merged.port = env.LANDFALL_PORT;
  if (env.LANDFALL_HOST !== undefined) merged.host = env.LANDFALL_HOST;
  if (env.LANDFALL_DATA !== undefined) merged.dataDir = env.LANDFALL_DATA;
  for (const [k, v] of Object.entries(flags)) if (v !== undefined && k !== 'config') merged[k] = v;
  return {
    port: portOf(merged.port, 'port'),
    host: stringOf(merged.host, 'host'),
    dataDir: stringOf(merged.dataDir, 'dataDir'),
    plans: validatePlans(merged.plans),
    lamportsPerPoint: positiveOf(merged.lamportsPerPoint, 'lamportsPerPoint', true),
    retentionDays: positiveOf(merged.retentionDays, 'retentionDays', false),
  };
}

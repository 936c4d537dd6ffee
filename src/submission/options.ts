/**
 * The spec's limits (§8) and the send options (§2.1), each defined once: REST, JSON-RPC and the
 * OpenAPI document all read them from here.
 */
import { DEFAULT_SEND_OPTIONS, MAX_RETRIES_LIMIT, type SendOptions } from '../delivery/delivery.js';
import { Refusal } from './refusals.js';

export { DEFAULT_SEND_OPTIONS, MAX_RETRIES_LIMIT, type SendOptions };

/** Transactions per `POST /v1/send/batch` (spec §4.2), and calls per JSON-RPC batch. */
export const MAX_BATCH = 100;

/** The REST option names (spec §2.1). */
const OPTION_KEYS = ['skip_preflight', 'max_retries', 'anti_mev', 'deadline_slot', 'rebroadcast_until_expiry'] as const;

/**
 * What a client most likely meant by an unknown option key: the camelCase spellings Solana
 * clients use, and near misses. A silently ignored `skipPreflight` is worse than an error.
 */
function likelyMeant(key: string): string | null {
  const folded = key.toLowerCase().replace(/[-_\s]/g, '');
  for (const k of OPTION_KEYS) if (k.replace(/_/g, '') === folded) return k;
  if (folded === 'maxretry' || folded === 'retries') return 'max_retries';
  if (folded === 'preflight' || folded === 'skippreflights') return 'skip_preflight';
  if (folded === 'antimevprotection' || folded === 'mev' || folded === 'mevprotection') return 'anti_mev';
  if (folded === 'deadline' || folded === 'landby' || folded === 'landbyslot') return 'deadline_slot';
  if (folded === 'untilexpiry' || folded === 'retryuntilexpiry' || folded === 'rebroadcastuntilexpired' || folded === 'retryuntilexpired') return 'rebroadcast_until_expiry';
  return null;
}

/**
 * Validate the REST `options` object (absent or null = every default). Unknown keys and wrong
 * types are refused with a reason naming the key (docs/decisions.md, "Faults").
 */
export function parseSendOptions(v: unknown): SendOptions {
  if (v === undefined || v === null) return DEFAULT_SEND_OPTIONS;
  if (typeof v !== 'object' || Array.isArray(v)) throw new Refusal('TX_OPTIONS', 'options must be an object');
  const o = v as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if ((OPTION_KEYS as readonly string[]).includes(key)) continue;
    const meant = likelyMeant(key);
    throw new Refusal(
      'TX_OPTIONS',
      `unknown option ${JSON.stringify(key)}${meant ? ` (did you mean "${meant}"?)` : ''}; options are ${OPTION_KEYS.join(', ')}`,
    );
  }
  const bool = (k: 'skip_preflight' | 'anti_mev' | 'rebroadcast_until_expiry', d: boolean): boolean => {
    if (o[k] === undefined) return d;
    if (typeof o[k] !== 'boolean') throw new Refusal('TX_OPTIONS', `options.${k} must be a boolean`);
    return o[k] as boolean;
  };
  let maxRetries = DEFAULT_SEND_OPTIONS.maxRetries;
  if (o.max_retries !== undefined) {
    const m = o.max_retries;
    if (typeof m !== 'number' || !Number.isInteger(m) || m < 0 || m > MAX_RETRIES_LIMIT) {
      throw new Refusal('TX_OPTIONS', `options.max_retries must be an integer 0..${MAX_RETRIES_LIMIT}`);
    }
    maxRetries = m;
  }
  const skipPreflight = bool('skip_preflight', DEFAULT_SEND_OPTIONS.skipPreflight);
  const antiMev = bool('anti_mev', DEFAULT_SEND_OPTIONS.antiMev);
  const rebroadcastUntilExpiry = bool('rebroadcast_until_expiry', DEFAULT_SEND_OPTIONS.rebroadcastUntilExpiry);
  const deadlineSlot = o.deadline_slot ?? null;
  if (deadlineSlot !== null && (typeof deadlineSlot !== 'number' || !Number.isSafeInteger(deadlineSlot) || deadlineSlot < 0)) {
    throw new Refusal('TX_OPTIONS', 'options.deadline_slot must be a slot number (a non-negative integer) or null');
  }
  if (
    skipPreflight === DEFAULT_SEND_OPTIONS.skipPreflight &&
    antiMev === DEFAULT_SEND_OPTIONS.antiMev &&
    maxRetries === DEFAULT_SEND_OPTIONS.maxRetries &&
    deadlineSlot === null &&
    !rebroadcastUntilExpiry
  ) {
    return DEFAULT_SEND_OPTIONS;
  }
  return { skipPreflight, maxRetries, antiMev, deadlineSlot, rebroadcastUntilExpiry };
}

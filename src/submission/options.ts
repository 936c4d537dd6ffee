/**
 * The spec's limits (§8), and the REST validation of the send options (§2.1): the options
 * themselves are defined once, in `SEND_OPTIONS` (`src/client/wire.ts`), and every check and
 * refusal here is read from that table, as the OpenAPI document's schema and the client are.
 */
import { DEFAULT_SEND_OPTIONS, MAX_RETRIES_LIMIT, type SendOptions } from '../delivery/delivery.js';
import { SEND_OPTIONS, type SendOptionName } from '../client/wire.js';
import { Refusal } from './refusals.js';

export { DEFAULT_SEND_OPTIONS, MAX_RETRIES_LIMIT, type SendOptions };

/** Transactions per `POST /v1/send/batch` (spec §4.2), and calls per JSON-RPC batch. */
export const MAX_BATCH = 100;

/** The REST option names (spec §2.1), in the table's order. */
export const OPTION_KEYS = Object.keys(SEND_OPTIONS) as readonly SendOptionName[];

/** Lower case without `_`, `-` or spaces: how an unknown key is compared with the names. */
const foldOptionKey = (key: string): string => key.toLowerCase().replace(/[-_\s]/g, '');

/**
 * Whether `key` names a send option, in any spelling (`deadline_slot`, `deadlineSlot`): a body
 * field that does is told it belongs inside `options`.
 */
export function namesSendOption(key: string): boolean {
  const folded = foldOptionKey(key);
  return OPTION_KEYS.some((k) => foldOptionKey(k) === folded);
}

/**
 * What a client most likely meant by an unknown option key: the camelCase spellings Solana
 * clients use, and near misses (each option's `meant` in `SEND_OPTIONS`). A silently ignored
 * `skipPreflight` is worse than an error.
 */
function likelyMeant(key: string): string | null {
  const folded = foldOptionKey(key);
  for (const k of OPTION_KEYS) if (foldOptionKey(k) === folded || (SEND_OPTIONS[k].meant as readonly string[]).includes(folded)) return k;
  return null;
}

/** What an option's value must be, as a refusal says it. */
function mustBe(k: SendOptionName): string {
  const o: { must?: string; schema: { type: string | readonly string[]; minimum?: number; maximum?: number } } = SEND_OPTIONS[k];
  if (o.must !== undefined) return o.must;
  if (o.schema.type === 'boolean') return 'a boolean';
  return `an integer ${o.schema.minimum ?? 0}..${o.schema.maximum ?? '∞'}`;
}

/** The option `k`'s value `v` checked against its schema, or `undefined` if it does not fit. */
function valueOf(k: SendOptionName, v: unknown): unknown {
  const s: { type: string | readonly string[]; minimum?: number; maximum?: number } = SEND_OPTIONS[k].schema;
  const types = typeof s.type === 'string' ? [s.type] : s.type;
  if (v === null && types.includes('null')) return null;
  if (typeof v === 'boolean' && types.includes('boolean')) return v;
  if (typeof v === 'number' && types.includes('integer') && Number.isSafeInteger(v) && v >= (s.minimum ?? -Infinity) && v <= (s.maximum ?? Infinity)) return v;
  return undefined;
}

/**
 * Validate the REST `options` object (absent or null = every default). Unknown keys and wrong
 * types are refused with a reason naming the key (docs/decisions.md, "Faults"). Every check comes
 * from the option's entry in `SEND_OPTIONS`; an object of defaults only is `DEFAULT_SEND_OPTIONS`
 * itself.
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
  let out: Record<string, unknown> | null = null;
  for (const k of OPTION_KEYS) {
    if (o[k] === undefined) continue;
    const value = valueOf(k, o[k]);
    if (value === undefined) throw new Refusal('TX_OPTIONS', `options.${k} must be ${mustBe(k)}`);
    const { field } = SEND_OPTIONS[k];
    if (value === DEFAULT_SEND_OPTIONS[field]) continue;
    out ??= { ...DEFAULT_SEND_OPTIONS };
    out[field] = value;
  }
  return out === null ? DEFAULT_SEND_OPTIONS : (out as SendOptions);
}

/**
 * The JSON the Landfall API sends, one type per response shape, written once. The client hands
 * these out; the service's renderers (`statusView`, `traceView`, the submission core, the account
 * view, the tip floor) are typed with them; the OpenAPI document's schemas are checked against
 * them by the compiler (`src/http/openapi.ts`: each schema's properties are exactly a type's
 * fields, its `required` exactly the fields that are not optional). Defined here, in the client
 * (which imports nothing from the server so that it can be packed on its own: `packages/client`),
 * so the three cannot drift apart. Field names are the wire's snake_case (spec §2).
 */

/** The plans, lowest first (the service's `PLAN_ORDER`; `test/unit/client-package.test.ts` checks they agree). */
export type PlanName = 'starter' | 'growth' | 'pro' | 'whale';

/** Every refusal of the REST API (docs/decisions.md, "Error body"); the client throws it as `LandfallApiError`. */
export interface ErrorBody {
  success: false;
  error: {
    /** The HTTP status. */
    code: number;
    /** The spec's message for it ("Tip insufficient"). */
    message: string;
    /** The precise cause, for humans. */
    reason: string;
  };
}

/** `POST /v1/send` (spec §2.2), without the `success` flag (always true: a refusal is an error body). */
export interface SendResult {
  signature: string;
  /** Cluster slot at submission. */
  slot: number;
}

/** The body of `POST /v1/send`'s 200. */
export type SendBody = { success: true } & SendResult;

/** One item of `POST /v1/send/batch`'s `results` (spec §2.3). */
export interface BatchItem {
  /** Position in the input array. */
  index: number;
  /** null when the transaction was rejected before delivery. */
  signature: string | null;
  status: 'sent' | 'failed';
  /** Present when failed: "<spec message>: <reason>". */
  error?: string;
}

/** The body of `POST /v1/send/batch`'s 200: one result per input transaction, by index. */
export interface BatchBody {
  success: true;
  results: BatchItem[];
}

/** `GET /v1/status/{signature}` (spec §2.4), plus `expired` once the transaction can no longer land, and why a failed one failed. */
export interface StatusRecord {
  signature: string;
  status: 'sent' | 'confirmed' | 'failed';
  submitted_at: string;
  confirmed_at: string | null;
  /** Request received to outcome observed, for confirmed and failed transactions. */
  latency_ms: number | null;
  slot: number | null;
  api_key_name: string;
  expired?: true;
  /** With `expired`: the send's `deadlineSlot` passed before it landed (not its blockhash). */
  deadline_passed?: true;
  /** A failed transaction: the chain's error as the RPC node gives it (`{"InstructionError":[0,{"Custom":1}]}`). */
  err?: unknown;
  /** A failed transaction: `err` in Agave's words ("Error processing Instruction 0: custom program error: 0x1"). */
  err_reason?: string;
}

/** `GET /v1/transactions`: a page of the account's own transactions, newest first. */
export interface TransactionPage {
  transactions: StatusRecord[];
  /** Pass as `before` for the next (older) page; null on the last page. */
  next_cursor: string | null;
}

/** A status change as `/v1/stream` pushes it: the status record, its tip and the slot at acceptance. */
export interface StreamStatus extends StatusRecord {
  type: 'status';
  /** Lamports the transaction tips to the service. */
  tip_lamports: number;
  /** The cluster slot when the service accepted it (`slot − submit_slot`: slots to land). */
  submit_slot: number;
  /** On an expired transaction's second push: why it did not land. */
  post_mortem?: PostMortem;
}

/** Why a transaction did not land (`post_mortem` of its trace and of its second expired push). */
export interface PostMortem {
  /** Its blockhash died, or its `deadline_slot` passed. */
  cause: 'expired' | 'deadline_passed';
  /** In one sentence: "expired after 3 rounds; 4 writes to 2 leaders; its leaders skipped 4 of the 8 slots it was sent for". */
  summary: string;
  /** Rebroadcast rounds written after the first send. */
  rounds: number;
  /** Writes that reached a leader's connection. */
  writes: number;
  /** Writes the validators refused, by leader and QUIC close code. */
  refused: Array<{ leader: string | null; close_code: number | null; count: number }>;
  /** Writes not attempted: a full queue, or backing off a leader that refused. */
  throttled: number;
  /** The leader slots it was sent for. */
  slots_sent_for: number[];
  /** Of those, the slots without a block (from the chain's `getBlocks`); null when the node cannot tell. */
  skipped_slots: number[] | null;
  /** Its fee against the blocks it missed (inferred); null when the node cannot tell or no block was missed. */
  fees: {
    /** Its own compute-unit price, micro-lamports (null: not known to this node, e.g. after a restart). */
    own_cu_price: number | null;
    /** The lowest compute-unit price of a non-vote transaction in those blocks (0: one paid no priority fee). */
    lowest_cu_price: number | null;
    /** Blocks read. */
    blocks: number;
    /** Its price is below every other transaction's in those blocks: consistent with being priced out. */
    priced_out: boolean;
    inferred: true;
  } | null;
}

/** One delivery attempt of a trace (`GET /v1/status/{signature}/trace`). */
export interface DeliveryAttempt {
  /** Microseconds from the request received to the outcome (a rebroadcast: to its round being sent). */
  at_us: number;
  slot: number;
  /** 0: the first send; n: the n-th rebroadcast round. */
  round: number;
  /** Leader identity (base58), null when unknown. */
  leader: string | null;
  /** TPU QUIC address written to; null for held and released. */
  tpu: string | null;
  outcome: 'written' | 'pending' | 'refused' | 'backoff' | 'queue_full' | 'failed' | 'held' | 'released';
  /** The validator's QUIC close code behind a refusal or back-off. */
  close_code: number | null;
  /** The send failure reason, null unless it failed. */
  reason: string | null;
}

/** Every delivery attempt of one transaction, and what became of it (`GET /v1/status/{signature}/trace`). */
export interface DeliveryTrace {
  signature: string;
  status: StatusRecord['status'];
  expired?: true;
  final_state: 'landed' | 'failed' | 'expired' | 'deadline_passed' | 'pending';
  /** In words: "landed in slot N", "failed on chain in slot N: <reason>", "expired: blockhash past last valid block height N, reached K of M leaders", ... */
  cause: string;
  /** As in the status record. */
  latency_ms: number | null;
  /** As in the status record. */
  err?: unknown;
  leaders_reached: number;
  leaders_tried: number;
  /** In order, at most 64. */
  attempts: DeliveryAttempt[];
  /** Attempts past the cap, not kept. */
  attempts_omitted: number;
  /** A transaction that did not land: why (kept in memory for the node's last 10,000 misses). */
  post_mortem?: PostMortem;
}

/** One row of `GET /v1/analytics`: counts, landing rate, slots to land (histogram-bin upper bounds). */
export interface LandingRow {
  transactions: number;
  landed: number;
  failed: number;
  expired: number;
  /** landed / transactions (failed ones landed, with an error); null with none. */
  landing_rate: number | null;
  /** Slots from acceptance to landing, as bin upper bounds ("at most"): p50, p90, p99; null when none landed. */
  slots_to_land: { p50: number; p90: number; p99: number } | null;
}

/** `GET /v1/analytics?window=1h|24h`: the account's own transactions that reached an outcome. */
export interface LandingAnalytics extends LandingRow {
  window: '1h' | '24h';
  from: string;
  to: string;
  /** Per leader of the submission slot ("other" beyond the kept ones), most transactions first. */
  by_leader: Array<LandingRow & { leader: string }>;
  /** 60 (24h) or 10 (1h). */
  series_minutes: number;
  /** Over time, oldest first: hourly for 24h, ten-minutely for 1h. */
  series: Array<LandingRow & { from: string }>;
}

/** The next plan up and what reaching it brings (`AccountRecord.next_tier`). */
export interface NextTier {
  plan: PlanName;
  threshold_bp: number;
  remaining_bp: number;
  progress_percent: number;
  benefits: { new_max_tps: number; new_tip_bp: number; tip_savings_percent: number };
}

/** `GET /v1/account` (spec §2.5). */
export interface AccountRecord {
  plan: PlanName;
  plan_upgraded_at: string;
  member_since: string;
  limits: { max_tps: number; min_tip_bp: number };
  usage: { service_points: number; transactions_total: number; transactions_today: number };
  /** null on the top tier. */
  next_tier: NextTier | null;
  /** Lamports per point (BP), the service's conversion: min tip in lamports = min_tip_bp × this. */
  lamports_per_point: number;
}

/**
 * The send options (spec §2.1), defined once: for each wire name (snake_case, the key of
 * `options` in `POST /v1/send` and `/v1/send/batch`), its camelCase `field` (the client's
 * `SendOptions`, and the service's validated options), its JSON Schema (`type`, bounds, the
 * service's `default`, the description the OpenAPI document carries), and the spellings a client
 * most likely meant by an unknown key (`meant`: folded to lower case without `_`, `-` or spaces;
 * the field's own spelling is always recognised), and, where the schema's words would not say it
 * well, what a refusal says the value `must` be.
 *
 * Everything else is derived from this table: the client's `SendOptions` type and what it puts
 * on the wire, the service's `SendOptions` and `DEFAULT_SEND_OPTIONS`, the REST validation and
 * its refusals (`src/submission/options.ts`), the OpenAPI document's `SendOptions` schema, and
 * the hint that a stray body field belongs inside `options`. A new option is one entry here, the
 * code that acts on it, and its row in docs/api.md (docs/native.md, "What crosses the boundary, defined once").
 */
export const SEND_OPTIONS = {
  /** Skip preflight simulation (service default true). */
  skip_preflight: {
    field: 'skipPreflight',
    schema: { type: 'boolean', default: true, description: 'false: simulate through the chain node first (a failure is 400)' },
    meant: ['preflight', 'skippreflights'],
  },
  /** Rebroadcast rounds after the first send, 0..10 (service default 3). */
  max_retries: {
    field: 'maxRetries',
    schema: {
      type: 'integer',
      minimum: 0,
      maximum: 10,
      default: 3,
      description:
        "Rebroadcast rounds after the first send, spread over the blockhash's life (the first in the next slot, the last near its last valid block height); they stop once the transaction is known landed",
    },
    meant: ['maxretry', 'retries'],
  },
  /** Never deliver to a blocklisted leader (service default true). */
  anti_mev: {
    field: 'antiMev',
    schema: { type: 'boolean', default: true, description: 'Never deliver to a leader on the validator blocklist' },
    meant: ['antimevprotection', 'mev', 'mevprotection'],
  },
  /**
   * Land by this slot or not at all: Landfall sends no round after it, and once it has passed the
   * status says `expired` with `deadline_passed` (a slot already passed is refused, 400).
   */
  deadline_slot: {
    field: 'deadlineSlot',
    schema: {
      type: ['integer', 'null'],
      minimum: 0,
      default: null,
      description:
        'Land by this slot or not at all: no rebroadcast round after it; once it is 2 slots behind the cluster and the transaction has not landed, the status is expired with deadline_passed (the trace: final_state deadline_passed). A slot already passed is refused (400)',
    },
    meant: ['deadline', 'landby', 'landbyslot'],
    must: 'a slot number (a non-negative integer) or null',
  },
  /**
   * Rebroadcast until the blockhash expires — a round every slot for the first leader window,
   * then one per leader window (4 slots) — rather than `maxRetries` rounds (service default false).
   */
  rebroadcast_until_expiry: {
    field: 'rebroadcastUntilExpiry',
    schema: {
      type: 'boolean',
      default: false,
      description:
        'true: rebroadcast until the blockhash expires (or the transaction lands, fails, or its deadline_slot passes) — a round every slot for the first leader window, then one per leader window (4 slots) — instead of max_retries rounds; about 40 writes over a fresh blockhash',
    },
    meant: ['untilexpiry', 'retryuntilexpiry', 'rebroadcastuntilexpired', 'retryuntilexpired'],
  },
} as const;

/** A send option's wire name (`skip_preflight`, …). */
export type SendOptionName = keyof typeof SEND_OPTIONS;

/** The value a send option's JSON Schema `type` admits. */
type SchemaValue<T> = T extends 'boolean' ? boolean : T extends 'integer' ? number : T extends 'null' ? null : T extends readonly (infer U)[] ? SchemaValue<U> : never;

/** Every send option by its camelCase `field`, with its value's type: the options as code uses them. */
export type SendOptionValues = {
  -readonly [K in SendOptionName as (typeof SEND_OPTIONS)[K]['field']]: SchemaValue<(typeof SEND_OPTIONS)[K]['schema']['type']>;
};

/** The percentiles reported. */
export const TIP_PERCENTILES = [25, 50, 75, 95, 99] as const;
export type TipPercentile = (typeof TIP_PERCENTILES)[number];

/** The windows reported, shortest first. */
export const TIP_WINDOWS = { '1m': 60, '10m': 600, '1h': 3600 } as const;
export type TipWindowName = keyof typeof TIP_WINDOWS;

/** p25 … p99. */
export type Percentiles = Record<`p${TipPercentile}`, number>;

export interface TipFloorWindow {
  /** Transactions seen landed (confirmed) in the window. */
  landed: number;
  /** Tip percentiles in lamports; null when nothing landed. */
  lamports: Percentiles | null;
  /** The same in points (BP): floor(lamports / lamports_per_point). */
  bp: Percentiles | null;
}

/** The compute-unit prices of what landed in one window: Landfall's priority-fee guidance. */
export interface PriorityFeeWindow {
  /** Landed transactions whose price is known (those accepted since the service started). */
  landed: number;
  /** Compute-unit price percentiles in micro-lamports per CU (0: no SetComputeUnitPrice); null when none landed. */
  micro_lamports_per_cu: Percentiles | null;
}

/** What `GET /v1/tip-floor` answers (without the caller's plan minimum). */
export interface TipFloorView {
  /** When the view was computed (UTC, ISO-8601 with milliseconds). */
  as_of: string;
  lamports_per_point: number;
  windows: Record<TipWindowName, TipFloorWindow>;
  /** Beside the tips: the compute-unit prices the same landings paid. */
  priority_fee: Record<TipWindowName, PriorityFeeWindow>;
}

/** The calling account's plan minimum in `GET /v1/tip-floor` (only with a key): tip at least this. */
export interface PlanMinimum {
  plan: PlanName;
  min_tip_bp: number;
  min_tip_lamports: number;
}

/** `GET /v1/tip-floor`: tip percentiles of what landed, and the caller's plan minimum when it sent a key. */
export type TipFloorRecord = TipFloorView & { plan_minimum?: PlanMinimum };

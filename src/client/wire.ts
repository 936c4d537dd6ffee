/**
 * The shapes of the Landfall API that the client and the service share: the tip floor's windows
 * and percentiles (tips and compute-unit prices), and the plan names. Defined here, in the client (which imports nothing from
 * the server so that it can be packed on its own: `packages/client`), and imported by the
 * service, so the two cannot drift apart.
 */

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

/** The plans, lowest first (the service's `PLAN_ORDER`; `test/unit/client-package.test.ts` checks they agree). */
export type PlanName = 'starter' | 'growth' | 'pro' | 'whale';

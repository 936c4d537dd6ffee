/**
 * Plans (starter → growth → pro → whale), their limits and thresholds, and the points rule.
 * Defaults are the table of docs/decisions.md, "Plans"; the whole table is configurable.
 */
import { LandfallError } from '../errors.js';
import { PLAN_ORDER, type PlanName } from '../store/records.js';

// The names are stored in every account record, so the store owns them.
export { PLAN_ORDER, type PlanName };

export interface Plan {
  /** Send transactions per second (token bucket rate; capacity = one second of burst). */
  maxTps: number;
  /** The plan's cap on status/account queries per second (spec §8); see `queryTps`. */
  queryTps: number;
  /** Minimum tip per transaction, in points (BP). */
  minTipBp: number;
  /** Points needed to reach this plan. */
  thresholdBp: number;
}

export type PlanTable = Record<PlanName, Plan>;

export const DEFAULT_PLANS: PlanTable = {
  starter: { maxTps: 8, queryTps: 16, minTipBp: 1000, thresholdBp: 0 },
  growth: { maxTps: 30, queryTps: 60, minTipBp: 750, thresholdBp: 1_000_000 },
  pro: { maxTps: 80, queryTps: 160, minTipBp: 500, thresholdBp: 10_000_000 },
  whale: { maxTps: 150, queryTps: 300, minTipBp: 250, thresholdBp: 100_000_000 },
};

/** The query budget of spec §8: 2 × the plan's send TPS, at most the plan's cap. */
export function queryTps(plan: Plan): number {
  return Math.min(2 * plan.maxTps, plan.queryTps);
}

/** 1 BP = 1000 lamports (0.000001 SOL) by default. */
export const DEFAULT_LAMPORTS_PER_POINT = 1000;

export function isPlanName(v: unknown): v is PlanName {
  return typeof v === 'string' && (PLAN_ORDER as readonly string[]).includes(v);
}

/** A plan name given by an administrator, or a clear error that lists the plans there are. */
export function assertPlanName(plan: string): asserts plan is PlanName {
  if (!isPlanName(plan)) throw new LandfallError('CONFIG_INVALID', `unknown plan ${JSON.stringify(plan)} (plans: ${PLAN_ORDER.join(', ')})`);
}

export function planIndex(plan: PlanName): number {
  return PLAN_ORDER.indexOf(plan);
}

/** The plan after `plan`, or null on the top tier. */
export function nextPlan(plan: PlanName): PlanName | null {
  return PLAN_ORDER[planIndex(plan) + 1] ?? null;
}

/**
 * The highest plan whose threshold `points` reaches, never below `current` (upgrades are
 * automatic and may skip tiers; nothing downgrades automatically).
 */
export function planForPoints(points: number, current: PlanName, plans: PlanTable): PlanName {
  let best = current;
  for (const p of PLAN_ORDER) {
    if (planIndex(p) > planIndex(best) && points >= plans[p].thresholdBp) best = p;
  }
  return best;
}

/** `floor(tip_lamports / lamports_per_point)`, exact for any u64 tip. */
export function pointsForTip(tipLamports: bigint, lamportsPerPoint: number): number {
  return Number(tipLamports / BigInt(lamportsPerPoint));
}

/** Minimum tip of a plan in lamports. */
export function minTipLamports(plan: Plan, lamportsPerPoint: number): bigint {
  return BigInt(plan.minTipBp) * BigInt(lamportsPerPoint);
}

/** Validate a plan table from configuration: every plan present, thresholds rising from 0. */
export function validatePlans(v: unknown): PlanTable {
  if (typeof v !== 'object' || v === null) throw new LandfallError('CONFIG_INVALID', 'plans must be an object');
  const out = {} as PlanTable;
  let prev = -1;
  for (const name of PLAN_ORDER) {
    const p = (v as Record<string, unknown>)[name] as Record<string, unknown> | undefined;
    if (!p) throw new LandfallError('CONFIG_INVALID', `plans.${name} is missing`);
    const num = (k: string, min: number) => {
      const x = p[k];
      if (typeof x !== 'number' || !Number.isFinite(x) || x < min) {
        throw new LandfallError('CONFIG_INVALID', `plans.${name}.${k} must be a number ≥ ${min}, got ${JSON.stringify(x)}`);
      }
      return x;
    };
    const plan: Plan = {
      maxTps: num('maxTps', 1),
      queryTps: num('queryTps', 1),
      minTipBp: num('minTipBp', 0),
      thresholdBp: num('thresholdBp', 0),
    };
    if (name === 'starter' && plan.thresholdBp !== 0) {
      throw new LandfallError('CONFIG_INVALID', 'plans.starter.thresholdBp must be 0');
    }
    if (plan.thresholdBp <= prev) {
      throw new LandfallError('CONFIG_INVALID', `plans.${name}.thresholdBp must exceed the previous plan's`);
    }
    prev = plan.thresholdBp;
    out[name] = plan;
  }
  return out;
}

/**
 * Accounts: creation, keys, plans, points, upgrades and usage counters, over the store.
 */
import { randomBytes } from 'node:crypto';
import { LandfallError } from '../errors.js';
import { base58Encode } from '../native.js';
import type { AccountRecord, KeyRecord, Store, UsageRecord } from '../store/store.js';
import { generateApiKey, hashApiKey, sameHash } from './api-keys.js';
import {
  isPlanName,
  nextPlan,
  planForPoints,
  pointsForTip,
  type PlanName,
  type PlanTable,
} from './plans.js';

const DAY_MS = 86_400_000;
const KEY_NAME_RE = /^[\w.\-@ ]{1,64}$/;

/** `2026-11-21T10:14:00`: ISO-8601 UTC without zone designator (spec §2.5). */
export function isoNoZone(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19);
}

export interface CreatedAccount {
  account_id: string;
  api_key: string;
  key_name: string;
}

/** The account record of spec §2.5. */
export interface AccountView {
  plan: PlanName;
  plan_upgraded_at: string;
  member_since: string;
  limits: { max_tps: number; min_tip_bp: number };
  usage: { service_points: number; transactions_total: number; transactions_today: number };
  next_tier: null | {
    plan: PlanName;
    threshold_bp: number;
    remaining_bp: number;
    progress_percent: number;
    benefits: { new_max_tps: number; new_tip_bp: number; tip_savings_percent: number };
  };
}

export interface AccountsOptions {
  plans: PlanTable;
  lamportsPerPoint: number;
  now?: () => number;
}

export class Accounts {
  private readonly now: () => number;
  /** In-process usage counters (authoritative while this process runs; persisted async). */
  private readonly usageCache = new Map<string, UsageRecord>();

  constructor(
    readonly store: Store,
    readonly opts: AccountsOptions,
  ) {
    this.now = opts.now ?? Date.now;
  }

  // ---- administration (CLI) ---------------------------------------------------------

  createAccount(name: string, plan: PlanName = 'starter', keyName = 'default'): CreatedAccount {
    if (!name || name.length > 128) throw new LandfallError('CONFIG_INVALID', 'account name must be 1..128 characters');
    if (!isPlanName(plan)) throw new LandfallError('CONFIG_INVALID', `unknown plan ${JSON.stringify(plan)}`);
    checkKeyName(keyName);
    const id = 'acc_' + base58Encode(randomBytes(12));
    const t = this.now();
    const apiKey = generateApiKey();
    this.store.createAccountSync(
      { id, name, plan, points: 0, memberSince: t, planUpgradedAt: t },
      hashApiKey(apiKey),
      { accountId: id, name: keyName, createdAt: t, revokedAt: null },
    );
    return { account_id: id, api_key: apiKey, key_name: keyName };
  }

  createKey(accountId: string, name: string): CreatedAccount {
    this.mustGet(accountId);
    checkKeyName(name);
    const apiKey = generateApiKey();
    const ok = this.store.addKeySync(hashApiKey(apiKey), { accountId, name, createdAt: this.now(), revokedAt: null });
    if (!ok) throw new LandfallError('CONFIG_INVALID', `account ${accountId} already has a key named ${JSON.stringify(name)}`);
    return { account_id: accountId, api_key: apiKey, key_name: name };
  }

  revokeKey(accountId: string, name: string): void {
    this.mustGet(accountId);
    if (!this.store.revokeKeySync(accountId, name, this.now())) {
      throw new LandfallError('CONFIG_INVALID', `account ${accountId} has no live key named ${JSON.stringify(name)}`);
    }
  }

  listKeys(accountId: string): Array<{ name: string; created_at: string; revoked_at: string | null }> {
    this.mustGet(accountId);
    return this.store.listKeys(accountId).map((k) => ({
      name: k.name,
      created_at: isoNoZone(k.createdAt),
      revoked_at: k.revokedAt === null ? null : isoNoZone(k.revokedAt),
    }));
  }

  /** Set a plan by hand (any direction). */
  setPlan(accountId: string, plan: string): AccountRecord {
    if (!isPlanName(plan)) throw new LandfallError('CONFIG_INVALID', `unknown plan ${JSON.stringify(plan)}`);
    const t = this.now();
    const a = this.store.updateAccountSync(accountId, (a) => (a.plan === plan ? undefined : { ...a, plan, planUpgradedAt: t }));
    if (!a) throw new LandfallError('CONFIG_INVALID', `no account ${accountId}`);
    return a;
  }

  get(accountId: string): AccountRecord | undefined {
    return this.store.getAccount(accountId);
  }

  list(): AccountRecord[] {
    return this.store.listAccounts();
  }

  private mustGet(accountId: string): AccountRecord {
    const a = this.store.getAccount(accountId);
    if (!a) throw new LandfallError('CONFIG_INVALID', `no account ${accountId}`);
    return a;
  }

  // ---- request path -----------------------------------------------------------------

  /**
   * Resolve an API key to its live key record and account, or undefined (→ 401).
   * Reads LMDB directly (memory-mapped, ~µs), so a revocation or plan change made by the CLI
   * in another process is seen by the next request.
   */
  authenticate(apiKey: string): { key: KeyRecord; account: AccountRecord } | undefined {
    if (apiKey.length === 0 || apiKey.length > 256) return undefined;
    const hash = hashApiKey(apiKey);
    const key = this.store.keyByHash(hash);
    if (!key || key.revokedAt !== null) return undefined;
    const stored = this.store.keyHashByName(key.accountId, key.name);
    if (!stored || !sameHash(stored, hash)) return undefined;
    const account = this.store.getAccount(key.accountId);
    return account ? { key, account } : undefined;
  }

  /** Count `n` accepted submissions for the account (total and UTC day). */
  countSubmissions(accountId: string, n: number): void {
    const t = this.now();
    const day = Math.floor(t / DAY_MS);
    let u = this.usageCache.get(accountId);
    if (!u) {
      u = this.store.getUsage(accountId) ?? { total: 0, day, today: 0 };
      this.usageCache.set(accountId, u);
    }
    if (u.day !== day) {
      u.day = day;
      u.today = 0;
    }
    u.total += n;
    u.today += n;
    void this.store.putUsage(accountId, { ...u });
  }

  usage(accountId: string): { total: number; today: number } {
    const u = this.usageCache.get(accountId) ?? this.store.getUsage(accountId);
    if (!u) return { total: 0, today: 0 };
    const day = Math.floor(this.now() / DAY_MS);
    return { total: u.total, today: u.day === day ? u.today : 0 };
  }

  /**
   * Credit the points a confirmed transaction earned and apply any upgrade (possibly several
   * tiers), atomically. Returns the account after the change.
   */
  async accrueTip(accountId: string, tipLamports: bigint): Promise<AccountRecord | undefined> {
    const pts = pointsForTip(tipLamports, this.opts.lamportsPerPoint);
    if (pts <= 0) return this.store.getAccount(accountId);
    const t = this.now();
    return this.store.updateAccount(accountId, (a) => {
      const points = a.points + pts;
      const plan = planForPoints(points, a.plan, this.opts.plans);
      return { ...a, points, plan, planUpgradedAt: plan === a.plan ? a.planUpgradedAt : t };
    });
  }

  /** The account record of spec §2.5. */
  view(a: AccountRecord): AccountView {
    const plans = this.opts.plans;
    const cur = plans[a.plan];
    const u = this.usage(a.id);
    const nxt = nextPlan(a.plan);
    let next_tier: AccountView['next_tier'] = null;
    if (nxt) {
      const np = plans[nxt];
      const remaining = Math.max(0, np.thresholdBp - a.points);
      const progress = np.thresholdBp === 0 ? 100 : Math.min(100, (a.points / np.thresholdBp) * 100);
      next_tier = {
        plan: nxt,
        threshold_bp: np.thresholdBp,
        remaining_bp: remaining,
        progress_percent: Math.round(progress * 100) / 100,
        benefits: {
          new_max_tps: np.maxTps,
          new_tip_bp: np.minTipBp,
          tip_savings_percent: cur.minTipBp === 0 ? 0 : Math.round(((cur.minTipBp - np.minTipBp) / cur.minTipBp) * 10000) / 100,
        },
      };
    }
    return {
      plan: a.plan,
      plan_upgraded_at: isoNoZone(a.planUpgradedAt),
      member_since: isoNoZone(a.memberSince),
      limits: { max_tps: cur.maxTps, min_tip_bp: cur.minTipBp },
      usage: { service_points: a.points, transactions_total: u.total, transactions_today: u.today },
      next_tier,
    };
  }
}

function checkKeyName(name: string): void {
  if (!KEY_NAME_RE.test(name)) {
    throw new LandfallError('CONFIG_INVALID', 'key name must be 1..64 characters of letters, digits, space, _ . - @');
  }
}

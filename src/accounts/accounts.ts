/**
 * Accounts: creation, keys, plans, points, upgrades and usage counters, over the store.
 *
 * Usage and points are derived from the status records, in the records' own transactions: a
 * record new to LMDB counts once in its account's usage, and a confirmation credits its tip's
 * points (and any upgrade) only if the committed record was not confirmed yet (`Store`'s
 * commit window). So neither can be lost or counted twice by a crash, a replayed
 * acknowledgement log, a restart that confirms again, or another node's event.
 *
 * The live view of usage is in native process-wide memory (`accountSlot`, `usage` in
 * `native.ts`), so every thread counts into the same numbers with one lock-free add: the first
 * touch of an account in the process loads its committed `UsageRecord` (`usage.init`: only the
 * first caller, on any thread, sets it), and every acceptance then adds to it.
 */
import { randomBytes } from 'node:crypto';
import { LandfallError } from '../errors.js';
import { accountSlot, base58Encode, usage as usageCounters, utcDay } from '../native.js';
import type { AccountRecord as ClientAccountRecord } from '../client/types.js';
import type { AccountRecord, Credit, KeyRecord, Store } from '../store/store.js';
import { generateApiKey, hashApiKey, sameHash } from './api-keys.js';
import {
  assertPlanName,
  nextPlan,
  planForPoints,
  pointsForTip,
  type PlanName,
  type PlanTable,
} from './plans.js';

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

/** The account record of spec §2.5, as `GET /v1/account` renders it: the client's own type, one shape for both. */
export type AccountView = ClientAccountRecord;

export interface AccountsOptions {
  plans: PlanTable;
  lamportsPerPoint: number;
  now?: () => number;
}

export class Accounts {
  private readonly now: () => number;
  /** Account id → its process-wide usage index, once this thread has initialized it. */
  private readonly usageSlots = new Map<string, number>();

  constructor(
    readonly store: Store,
    readonly opts: AccountsOptions,
  ) {
    this.now = opts.now ?? Date.now;
  }

  // ---- administration (CLI) ---------------------------------------------------------

  createAccount(name: string, plan: PlanName = 'starter', keyName = 'default'): CreatedAccount {
    checkNewAccount(name, plan, keyName);
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
    assertPlanName(plan);
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

  /**
   * Count `n` accepted submissions for the account (total and UTC day): one native add, shared
   * by every thread of the process.
   * @param at when they were submitted (default now; a cluster node counting another node's
   *   acceptance gives its time: a send of an earlier day is not counted in today's)
   */
  countSubmissions(accountId: string, n: number, at = this.now()): void {
    usageCounters.add(this.usageSlot(accountId), n, utcDay(at));
  }

  /**
   * The account's process-wide usage index and today's UTC day, for a caller that counts a send
   * itself (`Store.insertAccepted`, whose native call adds to the same counter
   * `countSubmissions` adds to). First touch on this thread loads the persisted counts, as there.
   */
  usageIndex(accountId: string): number {
    return this.usageSlot(accountId);
  }

  /** The UTC day `countSubmissions` counts a send of now on. */
  today(): number {
    return utcDay(this.now());
  }

  /** The account's sends: all-time, and on the current UTC day (every thread's, persisted or not). */
  usage(accountId: string): { total: number; today: number } {
    const u = usageCounters.get(this.usageSlot(accountId), utcDay(this.now()));
    return u ? { total: u.total, today: u.today } : { total: 0, today: 0 };
  }

  /**
   * The account's process-wide usage index. Fast path: this thread has it. Slow path (first
   * touch on this thread): register the id and offer the persisted counts to `usage.init`,
   * which only the first caller in the process (any thread) gets to apply.
   */
  private usageSlot(accountId: string): number {
    let slot = this.usageSlots.get(accountId);
    if (slot === undefined) {
      slot = accountSlot(accountId);
      const u = this.store.getUsage(accountId);
      usageCounters.init(slot, u?.total ?? 0, u?.day ?? utcDay(this.now()), u?.today ?? 0);
      this.usageSlots.set(accountId, slot);
    }
    return slot;
  }

  /**
   * What a confirmed transaction earns its account: floor(tip / lamports per point) points and
   * any upgrade they bring (possibly several tiers), for `Store.updateStatus`, which applies it in
   * the confirmation's own transaction, once. undefined when the tip earns no point.
   * @param at when it was confirmed: the time of an upgrade it causes (every node of a cluster
   *   gives the record's `confirmedAt`, so every node shows the same upgrade time)
   */
  confirmationCredit(tipLamports: bigint, at: number): Credit | undefined {
    const pts = pointsForTip(tipLamports, this.opts.lamportsPerPoint);
    if (pts <= 0) return undefined;
    return (a) => {
      const points = a.points + pts;
      const plan = planForPoints(points, a.plan, this.opts.plans);
      return { ...a, points, plan, planUpgradedAt: plan === a.plan ? a.planUpgradedAt : at };
    };
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
      lamports_per_point: this.opts.lamportsPerPoint,
    };
  }
}

/** The checks of a new account (the CLI's, on the store or on the cluster's bucket). */
export function checkNewAccount(name: string, plan: string, keyName: string): asserts plan is PlanName {
  if (!name || name.length > 128) throw new LandfallError('CONFIG_INVALID', 'account name must be 1..128 characters');
  assertPlanName(plan);
  checkKeyName(keyName);
}

export function checkKeyName(name: string): void {
  if (!KEY_NAME_RE.test(name)) {
    throw new LandfallError('CONFIG_INVALID', 'key name must be 1..64 characters of letters, digits, space, _ . - @');
  }
}

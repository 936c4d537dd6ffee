/**
 * Child process for the cluster suite's limit-accuracy phases: one node's budget layer, the real
 * one — the process-wide native buckets, `RateLimiter` with this node's `BudgetShares`, and the
 * `BudgetSharer` exchanging demand reports over a real nats-server — without the HTTP front or
 * the chain, so what is measured is the shares alone. Each node is its own process because the
 * buckets are process-wide (as they are for real nodes).
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { budgetShares, enableBudgetShares } from '../../src/accounts/budget-shares.js';
import { RateLimiter } from '../../src/accounts/rate-limiter.js';
import type { PlanTable } from '../../src/accounts/plans.js';
import { ACCOUNT_SLOTS } from '../../src/native.js';
import { BudgetSharer, natsShareLink } from '../../src/cluster/shares.js';
import type { AccountRecord } from '../../src/store/store.js';
import { serveChild } from '../lib/child.js';

let nc: NatsConnection | null = null;
let sharer: BudgetSharer | null = null;
let limiter: RateLimiter | null = null;
let account: AccountRecord | null = null;

serveChild({
  async start({ servers, node, plans, accountId }: { servers: string[]; node: string; plans: PlanTable; accountId: string }) {
    enableBudgetShares(ACCOUNT_SLOTS);
    account = { id: accountId, name: accountId, plan: 'starter', points: 0, memberSince: 0, planUpgradedAt: 0 };
    nc = await connect({ servers, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
    let up = true;
    void (async () => {
      for await (const st of nc!.status()) {
        if (st.type === 'disconnect') up = false;
        if (st.type === 'reconnect') up = true;
      }
    })();
    sharer = new BudgetSharer({ node, link: natsShareLink(nc, () => up), shares: budgetShares!, plans, account: () => account! });
    sharer.start();
    limiter = new RateLimiter(plans);
  },
  /**
   * Offer `rate` sends/s (open loop, one token per request) for `ms` from `startAt` (epoch ms);
   * returns the epoch-ms time of every granted request and how many were refused.
   */
  async load({ rate, ms, startAt }: { rate: number; ms: number; startAt: number }) {
    await sleep(Math.max(0, startAt - Date.now()));
    const granted: number[] = [];
    let refused = 0;
    const t0 = performance.now();
    let offered = 0;
    while (performance.now() - t0 < ms) {
      const due = Math.floor(((performance.now() - t0) / 1000) * rate);
      for (; offered < due; offered++) {
        if (limiter!.takeSend(account!, 1).granted) granted.push(Date.now());
        else refused++;
      }
      await sleep(2);
    }
    return { granted, refused };
  },
  mode() {
    return sharer!.mode();
  },
  /** Nodes this one hears demand reports from (itself included). */
  live() {
    return sharer!.table.liveNodes(Date.now()).length;
  },
  async close() {
    sharer?.stop();
    await nc?.close();
  },
});

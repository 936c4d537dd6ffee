/**
 * Many nodes, one service (issue 13): the one entry `service.ts` calls, and only when
 * `config.nats` is set (a dynamic import: a single node never loads anything of `src/cluster/`).
 *
 * The cluster is a list of parts over one NATS link, each with start/close and, optionally, a
 * say in `/health`'s `cluster` object. The hot path never waits on any of them: the service
 * hands acceptances and tracker changes over (`accepted`, `changed`) and goes on.
 */
import { Gauge } from 'prom-client';
import type { Accounts } from '../accounts/accounts.js';
import type { NatsConfig } from '../config.js';
import type { Accepted } from '../delivery/delivery.js';
import type { Engine } from '../delivery/engine.js';
import type { StatusRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import { recordBytesIn } from '../store/status-codec.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import type { Tracker } from '../tracker/tracker.js';
import { AccountsMirror } from './accounts-kv.js';
import { budgetShares } from '../accounts/budget-shares.js';
import type { PlanTable } from '../accounts/plans.js';
import { startCoordination, type Coordination } from './coordination.js';
import type { ClusterHealth } from './health.js';
import { Link } from './link.js';
import { StatusEvents } from './status-events.js';

export interface ClusterDeps {
  nats: NatsConfig;
  retentionMs: number;
  store: Store;
  accounts: Accounts;
  engine: Engine;
  tracker: Tracker;
  telemetry: Telemetry;
  plans: PlanTable;
  /** Hand a change applied from another node to `/v1/stream` (StatusHub and ingress threads). */
  publishLocal(rec: StatusRecord): void;
}

/** One part of the cluster. */
export interface ClusterPart {
  name: string;
  start(): void | Promise<void>;
  close(): void | Promise<void>;
  /** Amend `/health`'s cluster object (e.g. live nodes, budget mode). */
  health?(h: ClusterHealth): void;
}

export interface Cluster {
  link: Link;
  events: StatusEvents;
  mirror: AccountsMirror;
  /** `/health`'s `cluster` object. */
  health(): ClusterHealth;
  /** Accepted sends (engine on the main thread, or an ingress batch). */
  accepted(batch: readonly Accepted[]): void;
  /**
   * `ackReplication: quorum`: the same, published at once; resolves when JetStream acknowledged
   * every one's status event, rejects at the first that could not be (at once while NATS is
   * unreachable). Their events stay queued either way, published when the link allows.
   */
  acceptedStored(batch: readonly Accepted[]): Promise<void>;
  /** A tracker change. */
  changed(rec: StatusRecord): void;
  close(): Promise<void>;
}

export async function startCluster(d: ClusterDeps): Promise<Cluster> {
  const log = d.telemetry.log;
  const link = new Link(d.nats, { retentionMs: d.retentionMs, log });
  const mirror = new AccountsMirror(link, d.store, log);
  const events = new StatusEvents({
    link,
    store: d.store,
    accounts: d.accounts,
    log,
    registry: d.telemetry.metrics.registry,
    publishLocal: d.publishLocal,
    after: mirror.synced,
  });
  const parts: ClusterPart[] = [
    { name: 'link', start: () => link.start(), close: () => link.close() },
    { name: 'accounts', start: () => mirror.start(), close: () => mirror.close() },
    { name: 'status-events', start: () => events.start(), close: () => events.close() },
    coordinationPart(),
  ];

  /** Budget shares, node leases and takeover (coordination.ts). */
  function coordinationPart(): ClusterPart {
    let c: Coordination | null = null;
    return {
      name: 'coordination',
      start() {
        if (!budgetShares) throw new Error('cluster: budget shares were not enabled before the cluster started');
        c = startCoordination({ link, shares: budgetShares, plans: d.plans, store: d.store, tracker: d.tracker, engine: d.engine, log });
        const coordination = c;
        events.onApplied = (rec, origin) => coordination.applied(rec, origin);
      },
      close: () => c?.close(),
      health(h) {
        if (!c) return;
        h.nodes = c.liveNodes();
        h.budget = c.budgetMode();
      },
    };
  }

  const health = (): ClusterHealth => {
    const h: ClusterHealth = {
      node: link.node,
      nats: link.up ? 'up' : 'down',
      mode: link.up && link.ready ? 'clustered' : 'degraded',
      nodes: [link.node],
      budget: link.up ? 'shared' : 'local-share',
      replication_backlog: events.backlog,
      // Why it is degraded; a server error while clustered (logged) says nothing of the link.
      ...(!(link.up && link.ready) && link.lastError !== null && { nats_error: link.lastError }),
    };
    for (const p of parts) p.health?.(h);
    return h;
  };

  const registry = d.telemetry.metrics.registry;
  const gauge = (name: string, help: string, read: () => number) =>
    new Gauge({ name, help, registers: [registry], collect() { this.set(read()); } });
  gauge('landfall_cluster_nats_up', '1 while the NATS link is up, else 0 (degraded: serving from local state)', () => (link.up ? 1 : 0));
  gauge('landfall_cluster_nats_refused_attempts', 'Connection attempts NATS refused (authorization, TLS) since the start: each is retried, backed off', () => link.refusedAttempts);
  gauge('landfall_cluster_nodes', 'Live nodes of the cluster, this one included', () => health().nodes.length);
  gauge('landfall_cluster_budget_mode', 'Budgets: 0 shared across nodes, 1 local share (rate / known nodes)', () => (health().budget === 'shared' ? 0 : 1));
  gauge('landfall_cluster_outbox', 'Status events waiting to be acknowledged by JetStream', () => events.backlog);

  function publishAccepted(a: Accepted, stored?: (err: Error | null) => void): void {
    const bytes = a.signatureOffset !== undefined && a.blockhashOffset !== undefined ? recordBytesIn(a.wire, a.signatureOffset, a.blockhashOffset) : undefined;
    events.accepted(a.record, { wire: a.wire, antiMev: a.options.antiMev, maxRetries: a.options.maxRetries, ...(a.options.rebroadcastUntilExpiry && { untilExpiry: true }) }, bytes, stored);
  }

  for (const p of parts) await p.start();
  return {
    link,
    events,
    mirror,
    health,
    accepted(batch) {
      for (const a of batch) publishAccepted(a);
    },
    acceptedStored(batch) {
      if (!(link.up && link.ready)) {
        for (const a of batch) publishAccepted(a);
        return Promise.reject(new Error(`NATS unreachable${link.lastError !== null ? ` (${link.lastError})` : ''}`));
      }
      return new Promise<void>((resolve, reject) => {
        let left = batch.length;
        let told = false;
        const stored = (err: Error | null): void => {
          if (told) return;
          if (err !== null) {
            told = true;
            reject(err);
          } else if (--left === 0) {
            told = true;
            resolve();
          }
        };
        if (left === 0) resolve();
        for (const a of batch) publishAccepted(a, stored);
      });
    },
    changed: (rec) => events.changed(rec),
    async close() {
      for (const p of [...parts].reverse()) {
        try {
          await p.close();
        } catch {
          // best effort: one part failing to close must not keep the others open
        }
      }
    },
  };
}

/**
 * The node-to-node coordination parts of a clustered node, started together on the main thread
 * once the link is up: budget shares (part 5), leases and takeover (part 4). The cluster's
 * entry point (`index.ts`) starts this next to the link, the accounts mirror and the status
 * events; the status events' apply path feeds `applied` (origin of each remote record).
 */
import type { BudgetShares } from '../accounts/budget-shares.js';
import type { PlanTable } from '../accounts/plans.js';
import type { Engine } from '../delivery/engine.js';
import type { StatusRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import type { Tracker } from '../tracker/tracker.js';
import { Leases, openNodesBucket } from './leases.js';
import type { Link } from './link.js';
import { BudgetSharer, natsShareLink, TICK_MS, type BudgetMode, type ShareLink } from './shares.js';
import { PendingOrigins, Takeover } from './takeover.js';

export interface CoordinationOptions {
  link: Link;
  shares: BudgetShares;
  plans: PlanTable;
  store: Pick<Store, 'getAccount'>;
  tracker: Pick<Tracker, 'resumeSignatures'>;
  engine: Pick<Engine, 'resume'>;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
}

export interface Coordination {
  /** `shared`, or `local-share` while NATS is unreachable (/health `budget`, /metrics). */
  budgetMode(): BudgetMode;
  /** Live node names, this one included (/health `nodes`). */
  liveNodes(): string[];
  /** Status events' apply path: a record applied from another node's event. */
  applied(rec: StatusRecord, origin: string): void;
  /** Records resumed through takeovers so far. */
  takenOver(): number;
  close(): Promise<void>;
}

/** A `ShareLink` over the cluster link: publishes while it is up, subscribes once it connected. */
function shareLinkOf(link: Link): ShareLink {
  return {
    get up() {
      return link.up;
    },
    publish(subject, data) {
      if (link.nc && link.up) link.nc.publish(subject, data);
    },
    subscribe(subject, onData) {
      let stop: (() => void) | null = null;
      let closed = false;
      link.onReady(() => {
        if (!closed && link.nc) stop = natsShareLink(link.nc, () => link.up).subscribe(subject, onData);
      });
      return () => {
        closed = true;
        stop?.();
      };
    },
  };
}

export function startCoordination(o: CoordinationOptions): Coordination {
  const node = o.link.node;
  const log = (msg: string, fields: Record<string, unknown> = {}): void => o.log.info({ node, ...fields }, msg);
  const sharer = new BudgetSharer({
    node,
    link: shareLinkOf(o.link),
    shares: o.shares,
    plans: o.plans,
    account: (id) => o.store.getAccount(id),
    log: (msg) => o.log.warn({ node }, msg),
  });
  sharer.start();

  const origins = new PendingOrigins();
  let leases: Leases | null = null;
  const takeover = new Takeover({
    node,
    tracker: o.tracker,
    engine: o.engine,
    origins,
    heirOf: (n) => leases?.heirOf(n) ?? null,
    log,
  });
  let closed = false;
  o.link.onReady(() => {
    void (async () => {
      // Retried like the link's own setup: JetStream may still be electing a leader.
      while (!closed && !leases) {
        try {
          const kv = await openNodesBucket(o.link.nc!, o.link.config.replicas);
          if (closed) return;
          leases = new Leases({ kv, node, up: () => o.link.up, onTakeover: (dead) => void takeover.takeOver(dead), log });
          leases.start();
        } catch (e) {
          o.log.warn({ node, err: (e as Error).message }, 'cluster: node leases bucket not ready, retrying');
          await new Promise((r) => setTimeout(r, 500));
        }
      }
    })();
  });
  // The leases know which nodes are up before their first demand report arrives.
  const hint = setInterval(() => leases && sharer.table.hintKnownNodes(leases.liveNodes().length), TICK_MS);
  hint.unref();

  return {
    budgetMode: () => sharer.mode(),
    liveNodes: () => leases?.liveNodes() ?? [node],
    applied(rec, origin) {
      origins.note(rec, origin);
      takeover.applied(rec, origin);
    },
    takenOver: () => takeover.resumed,
    async close() {
      closed = true;
      clearInterval(hint);
      sharer.stop();
      takeover.close();
      await leases?.stop();
    },
  };
}

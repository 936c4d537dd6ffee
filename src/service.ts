/**
 * The whole service in one process: store, accounts, rate limits, the delivery engine and the
 * confirmation tracker, behind the HTTP API, delivering to the chain at `config.rpcUrl` (and
 * `wsUrl`). Which chain that is, a real one or the embedded local cluster the CLI starts
 * (`src/cli/chain.ts`), it does not know.
 */
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { RequestLog } from './telemetry/request-log.js';
import { AggregatorRegistry, type MetricValueWithName } from 'prom-client';
import { Accounts } from './accounts/accounts.js';
import { enableBudgetShares } from './accounts/budget-shares.js';
import { InFlight } from './accounts/in-flight.js';
import { RateLimiter } from './accounts/rate-limiter.js';
import { deriveWsUrl, type Config } from './config.js';
import { LandfallError } from './errors.js';
import type { Accepted } from './delivery/delivery.js';
import { Engine } from './delivery/engine.js';
import { loadIdentity } from './delivery/identity.js';
import { rearmWatched } from './delivery/rearm.js';
import { buildAdminApp } from './http/admin.js';
import { buildApp } from './http/api.js';
import { ensurePortFree, isLoopback, listen, urlHost, type RunningServer } from './http/server.js';
import { IngressPool } from './ingress/pool.js';
import { StatusHub } from './http/stream.js';
import { StreamSlots } from './http/stream-slots.js';
import { ACCOUNT_SLOTS, setQuicFirstSendNice, setQuicThreads, TipSet, trimFreeMemory } from './native.js';
import { startRetention, type Retention } from './store/retention.js';
import { lockDataDir } from './store/dir-lock.js';
import { StoreHealth } from './store/store-health.js';
import type { StatusRecord } from './store/records.js';
import { Store } from './store/store.js';
import type { Metrics } from './telemetry/metrics.js';
import { redactUrlSecrets } from './chain/redact-url.js';
import { Telemetry } from './telemetry/telemetry.js';
import { GiveBack, type GiveBackOptions } from './memory/give-back.js';
import { checkTipRent } from './tip-rent.js';
import { loadTipAddresses } from './tips.js';
import { TipFloor } from './tracker/tip-floor.js';
import { Tracker, type StatusChange } from './tracker/tracker.js';
import type { Cluster } from './cluster/index.js';
import type { ClusterHealth } from './cluster/health.js';
import { ReplicationWaits } from './submission/replicated.js';

/** How often the ingress threads are told the cluster's state (for their `/health`). */
const CLUSTER_HEALTH_MS = 250;

export interface Service {
  config: Config;
  url: string;
  port: number;
  /** The admin listener (`/metrics`, `/health` details), when `adminPort` is set. */
  adminUrl: string | null;
  store: Store;
  accounts: Accounts;
  engine: Engine;
  tracker: Tracker;
  tipAddresses: string[];
  rpcUrl: string;
  wsUrl: string;
  /** Status changes (confirmed, failed, expired) as the tracker writes them. */
  onStatus(listener: (change: StatusChange) => void): () => void;
  /** Feeds `/v1/stream` on the main thread: each acceptance and each tracker change, by owning account. */
  statusHub: StatusHub;
  /** Open `/v1/stream` sockets of an account, on every thread. */
  streamCount(accountId: string): number;
  /** Transactions of an account in flight (accepted, neither settled nor expired), every thread together. */
  inFlightCount(accountId: string): number;
  /** The ingress worker threads (null when the main thread serves HTTP: `ingressThreads: 0`). */
  ingress: IngressPool | null;
  /**
   * Service-added latency, every thread's first sends together (prom-client histogram values):
   * the whole of it, or its native part (first send handed to the QUIC client → stream written).
   */
  serviceLatency(part?: 'whole' | 'native'): Promise<MetricValueWithName<string>[]>;
  /** The JSON logger and the Prometheus metrics (`GET /metrics`). */
  telemetry: Telemetry;
  /** The node's part of a cluster (`config.nats`), else null. */
  cluster: Cluster | null;
  /** Gives the allocator's free memory back once the service goes quiet after a load (`memory/give-back.ts`). */
  giveBack: GiveBack;
  /** Every thread opens the log file again by its name (`landfall serve` does it on SIGHUP, for logrotate). */
  reopenLog(): void;
  close(): Promise<void>;
}

export interface ServiceOptions {
  /** Logged at warn once serving: what the caller knows of the chain that the service does not (the CLI: "the embedded test cluster"). */
  chainWarning?: string;
  /** Wait this long for the chain view before serving (default 15 s). */
  readyTimeoutMs?: number;
  /** When memory is given back after a load (defaults: `GIVE_BACK_DEFAULTS`); tests shorten the quiet. */
  giveBack?: Partial<GiveBackOptions>;
}

export async function startService(config: Config, opts: ServiceOptions = {}): Promise<Service> {
  const rpcUrl = config.rpcUrl;
  if (rpcUrl === null) throw new LandfallError('CONFIG_INVALID', 'no chain configured: set rpcUrl (`landfall serve` starts a local test cluster when none is set)');
  const wsUrl = config.wsUrl ?? deriveWsUrl(rpcUrl);
  const cleanup: Array<() => unknown> = [];
  // Before anything starts: a port another process holds is refused, not shared (SO_REUSEPORT).
  await ensurePortFree(config.host, config.port);
  setQuicThreads(config.quicThreads);
  if (config.adminPort !== null) await ensurePortFree(config.adminHost, config.adminPort);
  // Before anything opens the data directory: one service per directory (`store/dir-lock.ts`).
  const dirLock = lockDataDir(config.dataDir);
  cleanup.push(() => dirLock.release()); // pushed first, so released last
  try {
    const telemetry = new Telemetry({ level: config.logLevel, file: config.logFile, successes: config.logSuccesses });
    cleanup.push(() => telemetry.close()); // last out: the other parts may still log while closing
    // Before the first send: the first sends' own QUIC thread, at its priority if the OS allows.
    const firstSends = setQuicFirstSendNice(config.quicFirstSendNice);
    if (firstSends.error !== undefined) telemetry.log.warn({ quicFirstSendNice: config.quicFirstSendNice }, firstSends.error);
    // One store state for every thread; the probe (this thread) knows at once if the disk is full.
    const storeHealth = new StoreHealth();
    const store = Store.open(config.dataDir, { health: storeHealth, log: telemetry.log, ackSyncMs: config.ackSyncMs });
    store.startProbe();
    cleanup.push(() => store.close());
    // Before anything reads what is pending: what an earlier process acknowledged and never
    // committed (a kill -9, an OOM kill) is written now, from its acknowledgement log.
    store.recoverAcknowledged();
    // Then, in the background, every status key into the process's filter of known signatures
    // (`store/known-load.ts`): until it is loaded the send path asks the store, as without it.
    void store.loadKnownSignatures().done.then((n) => {
      if (n >= 0) telemetry.log.info({ signatures: n }, 'known-signature filter loaded');
    });
    const accounts = new Accounts(store, { plans: config.plans, lamportsPerPoint: config.lamportsPerPoint });
    const tipAddresses = loadTipAddresses(config.dataDir, config.tipAddresses);
    const tips = new TipSet(tipAddresses);
    const identity = loadIdentity(config.dataDir, config.identityPath ?? undefined);

    const engine = new Engine({
      rpcUrl,
      wsUrl,
      identity,
      fanout: config.fanout,
      blocklistPath: config.blocklistPath,
    });
    cleanup.push(() => engine.close());
    engine.traces.store = store;
    await engine.ready(opts.readyTimeoutMs ?? 15_000);
    // The tip addresses must already be rent-exempt (on the embedded cluster the CLI funded them).
    await checkTipRent(engine.leaders.rpc, tipAddresses, config.tipRentCheck, (message, short) =>
      telemetry.log.warn({ tipAddresses: short.map((s) => s.address) }, message),
    );

    const listeners = new Set<(c: StatusChange) => void>();
    let ingress: IngressPool | null = null;
    let cluster: Cluster | null = null;
    const statusHub = new StatusHub();
    let settle: (c: StatusChange) => void = () => {};
    // Counted by every thread's submission core, given back by the tracker (this thread).
    const inFlight = new InFlight(config.plans, config.inFlightPerTps);
    // Tips and compute-unit prices of what landed, for /v1/tip-floor (in memory: a restart starts it empty).
    const tipFloor = new TipFloor(config.lamportsPerPoint);
    const tracker = new Tracker({
      rpc: engine.leaders.rpc,
      wsUrl,
      store,
      accounts,
      tipAddresses,
      blockHeight: () => engine.leaders.currentBlockHeight(),
      slot: () => engine.leaders.currentSlot(),
      push: config.tracker.push,
      poll: config.tracker.poll,
      inFlight,
      // The push says it landed: no more rounds while its status is read and written.
      onLanded: (signature) => engine.landed(signature),
      onChange: (c) => {
        logOutcome(telemetry.requests, c);
        settle(c);
        const computeUnitPrice = engine.takeComputeUnitPrice(c.record.signature);
        // Did not land: why, from its trace and the chain, off this path; its status is pushed
        // again with the post-mortem once made (and the trace endpoint shows it).
        if (c.record.expired && c.record.status === 'sent') {
          let trace;
          try {
            trace = engine.traceNow(c.record.signature);
          } catch {
            trace = { attempts: [], omitted: 0 };
          }
          engine.postMortems.explain(c.record, trace, computeUnitPrice ?? null, (postMortem) => {
            const told = { ...c.record, postMortem };
            statusHub.publish(told);
            ingress?.publish([told]);
          });
        }
        if (c.record.status === 'confirmed') tipFloor.landed(c.record.tipLamports, computeUnitPrice, c.record.accountId);
        engine.analytics.record(c.record, engine.leaders.leaderAt(c.record.submitSlot));
        countSettled(telemetry.metrics, accounts, c.record);
        statusHub.publish(c.record);
        ingress?.publish([c.record]);
        cluster?.changed(c.record);
        for (const l of listeners) l(c);
      },
    });
    cleanup.push(() => tracker.close());
    settle = engine.attach(tracker);
    // After a restart: watch what is pending again, and send again what can still land.
    let resent = 0;
    const resumed = tracker.resume((rec) => {
      if (engine.resume(rec)) resent++;
    });
    if (resumed > 0) telemetry.log.info({ pending: resumed, resent }, 'resumed pending transactions');
    // The chain came back at a lower slot (a validator restarted from its snapshot, a fail-over
    // to a node behind): what landed in the lost slots is gone, so every pending transaction this
    // node tracks goes out again, every slot until it lands, fails or expires (`Engine.rearm`).
    engine.onRollback = (from, to) => {
      const { pending, rearmed } = rearmWatched({ tracker, store, engine });
      telemetry.log.warn({ from, to, pending, rearmed }, 'chain rolled back: pending transactions sent again');
    };

    const retention: Retention = startRetention(store, { retentionDays: config.retentionDays });
    cleanup.push(() => retention.stop());

    // Clustered: this node's buckets hold only its shares of each account's budgets
    // (src/cluster/shares.ts), read by every thread's limiter; allocated before any limiter
    // configures a bucket. Single node: none, and the limiters never look.
    const budgetShares = config.nats ? enableBudgetShares(ACCOUNT_SLOTS) : null;
    if (config.nats !== null) {
      // Several nodes, one service: loaded only when configured (a single node never imports it).
      const { startCluster } = await import('./cluster/index.js');
      cluster = await startCluster({
        nats: config.nats,
        retentionMs: config.retentionDays * 86_400_000,
        store,
        accounts,
        engine,
        tracker,
        telemetry,
        plans: config.plans,
        publishLocal: (rec) => {
          statusHub.publish(rec);
          ingress?.publish([rec]);
        },
      });
      const c = cluster;
      cleanup.push(() => c.close());
    }
    const clusterHealth = cluster ? cluster.health : (): ClusterHealth | null => null;

    telemetry.metrics.watchService({ version: VERSION, node: process.version });
    telemetry.metrics.watchDelivery(engine);
    telemetry.metrics.watchTracker(tracker);
    telemetry.metrics.watchStore(storeHealth, () => engine.rebroadcaster.counters.resent);
    telemetry.metrics.watchLog(telemetry.logHealth);
    telemetry.metrics.watchMemory();
    // `ackReplication: quorum` with the sends served on this thread (`ingressThreads: 0`): the
    // engine's acceptance starts the publish, its `replicated` is what the response awaits.
    const waits = cluster && config.ackReplication === 'quorum' ? new ReplicationWaits() : null;
    if (waits) engine.replicated = (signature) => waits.wait(signature);
    engine.onAccepted = cluster
      ? (record, a) => {
          statusHub.publish(record);
          if (waits)
            cluster!.acceptedStored([a]).then(
              () => waits.settle(record.signature, null),
              (e: Error) => waits.settle(record.signature, e.message),
            );
          else cluster!.accepted([a]);
        }
      : (record) => statusHub.publish(record);
    const streamSlots = new StreamSlots();
    let port: number;
    if (config.ingressThreads > 0) {
      // Every request on the worker threads; this thread keeps the tracker and rebroadcasts.
      ingress = await IngressPool.start({
        threads: config.ingressThreads,
        port: config.port,
        init: { config, rpcUrl, tipAddresses, identity: new Uint8Array(identity), streamSlots: streamSlots.counts.buffer as SharedArrayBuffer, inFlight: inFlight.buffer, storeHealth: storeHealth.buffer, logHealth: telemetry.logHealth.buffer, requestCount: telemetry.requestCount.buffer, budgetShares },
        engine,
        metrics: telemetry.metrics,
        ...(cluster && {
          onAccepted: (_records: StatusRecord[], batch: Accepted[], stored: boolean) => (stored ? cluster!.acceptedStored(batch) : cluster!.accepted(batch)),
        }),
        onWorkerExit: (index, code) => telemetry.log.error({ thread: index, code }, 'ingress thread died; replaced'),
      });
      const pool = ingress;
      cleanup.push(() => pool.close());
      port = pool.port;
      // The threads serve the floor this thread computes: sent once a second, as it is recomputed.
      pool.tipFloor(tipFloor.view());
      const floorTimer = setInterval(() => pool.tipFloor(tipFloor.view()), 1000).unref();
      cleanup.push(() => clearInterval(floorTimer));
      if (cluster) {
        // /health on the threads tells the cluster's state as this thread last saw it.
        const c = cluster;
        pool.clusterHealth(c.health()); // at once: a thread's /health has it from its first request
        const healthTimer = setInterval(() => pool.clusterHealth(c.health()), CLUSTER_HEALTH_MS).unref();
        cleanup.push(() => clearInterval(healthTimer));
      }
    } else {
      const app = buildApp({
        config,
        accounts,
        store,
        limiter: new RateLimiter(config.plans),
        tips,
        delivery: engine.delivery,
        statusHub,
        streamSlots,
        inFlight,
        telemetry,
        tipFloor,
        liveTrace: (sig) => engine.liveTrace(sig),
        analytics: (accountId, window) => engine.analytics.view(accountId, window),
        cluster: clusterHealth,
      });
      const server: RunningServer = await listen(app, config.host, config.port);
      cleanup.push(() => server.close());
      port = server.port;
    }
    let adminUrl: string | null = null;
    if (config.adminPort !== null) {
      // /metrics and /health's details on their own port, served by this thread (it gathers the
      // ingress threads' metrics itself).
      const pool = ingress;
      const adminApp = buildAdminApp(telemetry, {
        health: () => engine.health(),
        store: () => storeHealth.view(),
        log: () => telemetry.logHealth.view(),
        cluster: clusterHealth,
        metricsText: pool ? () => pool.metricsText() : () => telemetry.metrics.text(),
        metricsContentType: telemetry.metrics.contentType,
        token: config.metricsToken,
        exposed: !isLoopback(config.adminHost),
        startedAt: Date.now(),
      });
      const admin = await listen(adminApp, config.adminHost, config.adminPort);
      cleanup.push(() => {
        admin.close();
        adminApp.close();
      });
      adminUrl = `http://${urlHost(config.adminHost)}:${admin.port}`;
      if (!isLoopback(config.adminHost)) {
        telemetry.log.warn(
          { adminHost: config.adminHost, metricsToken: config.metricsToken !== null },
          config.metricsToken === null
            ? 'adminHost is not a loopback address: the admin listener (the dashboard, /health) is reachable from the network; /metrics and /health details need metricsToken there'
            : 'adminHost is not a loopback address: the admin listener is reachable from the network, behind metricsToken',
        );
      }
    }
    telemetry.log.info({ url: `http://${urlHost(config.host)}:${port}`, admin: adminUrl ?? undefined, rpc: redactUrlSecrets(rpcUrl), ws: redactUrlSecrets(wsUrl), identity: engine.identity, ingressThreads: config.ingressThreads }, 'serving');
    // After a burst, once quiet: the allocator's free pages back to the OS (once per quiet period).
    const giveBack = new GiveBack(
      { requests: () => telemetry.requestCount.total, watched: () => tracker.size + engine.inFlight },
      trimFreeMemory,
      (g) => telemetry.log.info({ released: g.released, anonBeforeMiB: mib(g.anonBeforeBytes), anonAfterMiB: mib(g.anonAfterBytes) }, 'quiet after a load: free memory given back'),
      opts.giveBack,
    );
    cleanup.push(() => giveBack.close());
    if (opts.chainWarning) telemetry.log.warn({ rpc: redactUrlSecrets(rpcUrl) }, opts.chainWarning);
    if (config.metricsToken === null && config.adminPort === null && !isLoopback(config.host)) {
      telemetry.log.warn({ host: config.host }, '/metrics is not served on a non-loopback address without metricsToken: set metricsToken or adminPort to scrape it');
    }

    return {
      config,
      url: `http://${urlHost(config.host)}:${port}`,
      port,
      adminUrl,
      store,
      accounts,
      engine,
      tracker,
      tipAddresses,
      rpcUrl,
      wsUrl,
      onStatus(listener) {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
      statusHub,
      streamCount: (id) => streamSlots.count(id),
      inFlightCount: (id) => inFlight.count(id),
      async serviceLatency(part: 'whole' | 'native' = 'whole') {
        const own = await (part === 'native' ? engine.nativeLatency : engine.serviceLatency).get();
        if (!ingress) return own.values;
        const merged = AggregatorRegistry.aggregate([
          [own],
          ...(await ingress.gather()).map((json) => json.filter((m) => m.name === own.name)),
        ] as Parameters<typeof AggregatorRegistry.aggregate>[0]);
        const h = merged.getSingleMetric(own.name);
        return h ? (await h.get()).values : own.values;
      },
      ingress,
      telemetry,
      cluster,
      giveBack,
      reopenLog() {
        telemetry.reopenLog();
        ingress?.reopenLog();
      },
      close: () => runCleanup(cleanup),
    };
  } catch (e) {
    await runCleanup(cleanup);
    throw e;
  }
}

/** This package's version (package.json, one directory above `src/` and `dist/`). */
const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** Count a tracker outcome under the owning account's plan; a confirmed one in the landing histograms. */
function countSettled(metrics: Metrics, accounts: Accounts, r: StatusRecord): void {
  const plan = accounts.get(r.accountId)?.plan ?? 'unknown';
  if (r.expired) return metrics.settled(plan, 'expired', null);
  const landing = r.status === 'confirmed' && r.latencyMs !== null && r.slot !== null ? { latencyMs: r.latencyMs, slots: r.slot - r.submitSlot } : null;
  metrics.settled(plan, r.status === 'confirmed' ? 'confirmed' : 'failed', landing);
}

/** A transaction's outcome, to the request log: landed (confirmed; counted under `logSuccesses: "summary"`), failed (landed with an error) or expired. */
function logOutcome(log: RequestLog, c: StatusChange): void {
  const r = c.record;
  const event = r.expired ? 'transaction expired' : r.status === 'confirmed' ? 'transaction landed' : r.status === 'failed' ? 'transaction failed' : null;
  if (event === null) return;
  log.outcome(event, { sig: r.signature, account: r.accountId, slot: r.slot ?? undefined, latency_ms: r.latencyMs ?? undefined, source: c.source, reason: c.reason });
}

/** Bytes in MiB to one decimal, for a log line (null stays null). */
function mib(bytes: number | null): number | null {
  return bytes === null ? null : Math.round((bytes / 1048576) * 10) / 10;
}

/** Undo in reverse order; every step runs even if an earlier one fails. */
async function runCleanup(steps: Array<() => unknown>): Promise<void> {
  for (const step of steps.reverse()) {
    try {
      await step();
    } catch {
      // Closing is best effort: one part failing to close must not keep the others open.
    }
  }
  steps.length = 0;
}

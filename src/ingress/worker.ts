/**
 * An ingress worker thread: a whole uWS app on the service's port (SO_REUSEPORT: the kernel
 * spreads connections over the threads listening on it), doing everything a request needs on
 * this thread — authentication (its own key cache), inspect, budget, record, first send.
 *
 * Shared with the other threads of the process without a message per request:
 * - token buckets, the account-slot registry, usage counters, the status read-your-writes
 *   overlay, and the QUIC client with its connections: process-wide native state;
 * - accounts, keys and status records: the one LMDB environment, opened in this thread;
 * - the chain view: a replica refreshed by the main thread's snapshot once per slot.
 * Sent back to the main thread, coalesced after the responses are written (`handoff.ts`): the
 * accepted transactions (for the one rebroadcast scheduler and the one tracker).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Accounts } from '../accounts/accounts.js';
import { adoptBudgetShares } from '../accounts/budget-shares.js';
import { InFlight } from '../accounts/in-flight.js';
import { RateLimiter } from '../accounts/rate-limiter.js';
import { Rpc } from '../chain/rpc.js';
import { ChainViewReplica } from '../delivery/chain-view.js';
import { QUIC_QUEUE_PER_PEER } from '../delivery/engine.js';
import { FirstSender } from '../delivery/first-send.js';
import { HandoffQueue } from '../delivery/handoff-queue.js';
import { ThreadDelivery } from '../delivery/thread-delivery.js';
import { buildApp } from '../http/api.js';
import { listen, type RunningServer } from '../http/server.js';
import { StatusHub } from '../http/stream.js';
import { StreamSlots } from '../http/stream-slots.js';
import { QuicClient, setThreadNice, TipSet } from '../native.js';
import { StoreHealth } from '../store/store-health.js';
import type { ClusterHealth } from '../cluster/health.js';
import { Store } from '../store/store.js';
import { LogHealth } from '../telemetry/log-sink.js';
import { RequestCount } from '../telemetry/request-count.js';
import { Telemetry } from '../telemetry/telemetry.js';
import { emptyTipFloor, type TipFloorView } from '../tracker/tip-floor.js';
import type { Trace } from '../delivery/trace.js';
import { AcceptedHandoff } from './handoff.js';
import { ReplicationWaits } from '../submission/replicated.js';
import type { FromWorker, IngressInit, ToWorker } from './messages.js';

const port = parentPort!;
const init = workerData as IngressInit;
const quorum = init.config.ackReplication === 'quorum';
// Before any limiter configures a bucket: a clustered node's buckets hold only its shares.
adoptBudgetShares(init.budgetShares);
const post = (m: FromWorker) => port.postMessage(m);

const { config } = init;
const telemetry = new Telemetry({ level: config.logLevel, file: config.logFile, health: new LogHealth(init.logHealth), requestCount: new RequestCount(init.requestCount), successes: config.logSuccesses });
// Requests ahead of the slot's rebroadcast burst and the tracker (`ingressNice`); said once, by the first thread.
const priority = setThreadNice(config.ingressNice, `ingress thread ${init.index}`);
if (priority.error !== undefined && init.index === 0) telemetry.log.warn({ ingressNice: config.ingressNice }, priority.error);
const store = Store.open(config.dataDir, { health: new StoreHealth(init.storeHealth), log: telemetry.log, ackSyncMs: config.ackSyncMs });
const accounts = new Accounts(store, { plans: config.plans, lamportsPerPoint: config.lamportsPerPoint });
const tips = new TipSet(init.tipAddresses);
// A handle to the process-wide client the engine created (its options, and connections, apply).
const client = new QuicClient({ identity: init.identity, maxQueuePerPeer: QUIC_QUEUE_PER_PEER });
const view = new ChainViewReplica();
const first = new FirstSender(client, view);
const hub = new StatusHub();
/**
 * Accepted transactions on their way to the main thread's one rebroadcast scheduler and tracker:
 * their record calls push them onto this thread's native queue (`handoff-queue.ts`); a batch's
 * message names their entries.
 */
const handoffQueue = new HandoffQueue(init.handoffQueue);
const handoff = quorum
  ? new AcceptedHandoff<number>((seqs) => post({ type: 'accepted', seqs, stored: true }), true)
  : new AcceptedHandoff<number>((seqs) => post({ type: 'accepted', seqs }));
/** `ackReplication: quorum`: the responses waiting for the main thread's `replicated`. */
const waits = quorum ? new ReplicationWaits() : null;
// This thread's `Delivery`: the replica answers, the first send is written from here, and what is
// accepted goes to this thread's streams at once and to the others through the main thread.
const delivery = new ThreadDelivery(
  view,
  first,
  new Rpc(init.rpcUrl),
  (a) => {
    hub.publish(a.record);
    handoff.add(a.handoffSeq!);
    return waits?.wait(a.record.signature);
  },
  handoffQueue,
);
/** The tip floor the main thread last sent (it computes it from the tracker's landings). */
let tipFloor: TipFloorView = emptyTipFloor(config.lamportsPerPoint);
/** The cluster state the main thread last sent (null: a single node, or none received yet). */
let clusterHealth: ClusterHealth | null = null;
hub.onAccountsChange = (streams, seq) => post({ type: 'streams', streams, seq });
telemetry.metrics.registry.registerMetric(first.serviceLatency);
telemetry.metrics.registry.registerMetric(first.nativeLatency);

/** Questions to the main thread (rare, off the send path), answered by id. */
let askIds = 0;
const answers = new Map<number, (answer: never) => void>();
function ask<T>(question: (id: number) => FromWorker): Promise<T> {
  return new Promise((resolve) => {
    const id = askIds++;
    answers.set(id, resolve as (answer: never) => void);
    post(question(id));
  });
}
function answer(id: number, value: unknown): void {
  answers.get(id)?.(value as never);
  answers.delete(id);
}
/** `/metrics` asked here: the main thread gathers every thread's values and answers. */
const metricsText = (): Promise<string> => ask((id) => ({ type: 'metrics-request', id }));
/** A trace asked here: the main thread's engine holds those of the transactions in flight. */
const liveTrace = (signature: string): Promise<Trace | null> => {
  handoff.flush(); // the main thread holds its trace only once it has it
  return ask((id) => ({ type: 'trace-request', id, signature }));
};

let server: RunningServer | null = null;
let app: ReturnType<typeof buildApp> | null = null;

port.on('message', (m: ToWorker) => {
  switch (m.type) {
    case 'chain':
      view.apply(m.snapshot);
      break;
    case 'status':
      for (const r of m.records) hub.publish(r);
      break;
    case 'streams-seen':
      hub.seenUpTo(m.seq);
      break;
    case 'tip-floor':
      tipFloor = m.floor;
      break;
    case 'cluster':
      clusterHealth = m.health;
      break;
    case 'metrics':
      void telemetry.metrics.json().then((json) => post({ type: 'metrics', id: m.id, json }));
      break;
    case 'metrics-text':
      answer(m.id, m.text);
      break;
    case 'trace':
      answer(m.id, m.trace);
      break;
    case 'analytics':
      answer(m.id, m.view);
      break;
    case 'reopen-log':
      telemetry.reopenLog();
      break;
    case 'replicated':
      for (const s of m.signatures) waits?.settle(s, m.error);
      break;
    case 'close':
      handoff.flush(); // what was accepted here is rebroadcast and tracked
      server?.close();
      server = null;
      // Every open connection too: a worker whose loop still holds a uWS socket never exits.
      app?.close();
      app = null;
      client.close();
      void Promise.all([telemetry.close(), store.close()]).finally(() => {
        post({ type: 'closed' });
        port.close();
      });
      break;
  }
});

try {
  app = buildApp({
    config,
    accounts,
    store,
    limiter: new RateLimiter(config.plans),
    tips,
    delivery,
    statusHub: hub,
    streamSlots: new StreamSlots(init.streamSlots),
    inFlight: new InFlight(config.plans, config.inFlightPerTps, init.inFlight),
    telemetry,
    metricsText,
    tipFloor: { view: () => tipFloor },
    liveTrace,
    analytics: (accountId, window) => ask((id) => ({ type: 'analytics-request', id, accountId, window })),
    cluster: () => clusterHealth,
  });
  server = await listen(app, config.host, init.port);
  post({ type: 'listening', port: server.port });
} catch (e) {
  post({ type: 'failed', message: (e as Error).message });
}

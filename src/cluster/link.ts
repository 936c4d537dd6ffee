/**
 * The node's one NATS connection (issue 13, part 1), owned by the main thread.
 *
 * `connect` never blocks the service: the connection is made in the background and, like every
 * reconnect, retried for ever — an unreachable server every 250–500 ms, a refusal (authorization,
 * TLS) with a back-off up to CONNECT_RETRY_MAX_MS, its reason in `lastError` (`/health`'s
 * `nats_error`) and the log — and once it is up the stream `LANDFALL_STATUS` and the bucket
 * `landfall-accounts` are created or updated (idempotent: every node does it at every start;
 * retried until JetStream answers, e.g. while a fresh cluster still elects its meta leader).
 * `up` says whether the connection is up now; `onChange` listeners hear every flip, and
 * `onReady` listeners the first time the stream and bucket exist (parts start their
 * consumers/watches then). Nothing on the hot path ever awaits anything here.
 */
import { AuthorizationError, connect, type NatsConnection, type Server } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, StorageType, type JetStreamClient, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConfig } from '../config.js';
import { natsConnectOptions, natsErrorReason } from './nats-connect.js';
import { CONNECT_TIMEOUT_MS, MAX_PING_OUT, PING_INTERVAL_MS, RECONNECT_WAIT_MAX_MS } from './timing.js';

export const STATUS_STREAM = 'LANDFALL_STATUS';
/** Subject of a node's status events: `lf.status.<node>`. */
export const statusSubject = (node: string): string => `lf.status.${node}`;
export const ACCOUNTS_BUCKET = 'landfall-accounts';
/** JetStream drops a repeated msgID within this window (a re-published event after a restart). */
const DUPLICATE_WINDOW_MS = 10 * 60_000;
const SETUP_RETRY_MS = 500;
/** A refused connection (authorization, TLS) is tried again after 1 s, 2 s, … up to this. */
const CONNECT_RETRY_MAX_MS = 30_000;
const ms2ns = (ms: number): number => Math.round(ms * 1e6);
/** A refusal the operator must fix (credentials, TLS), as opposed to a server not reachable yet. */
const isRefusal = (e: unknown): boolean => !/connection refused|ECONNRESET|timeout|ENOTFOUND|EAI_AGAIN/i.test((e as Error)?.message ?? '');

/** The accounts bucket, created (idempotently) with `replicas`: by every node and by the admin CLI. */
export function openAccountsBucket(nc: NatsConnection, replicas: number): Promise<KV> {
  return new Kvm(nc).create(ACCOUNTS_BUCKET, { replicas, history: 5 });
}

export interface LinkLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface LinkOptions {
  /** How long the status stream keeps events: the status records' retention. */
  retentionMs: number;
  log: LinkLog;
}

export class Link {
  /** Whether the NATS connection is up now. */
  up = false;
  /** Set once connected (and kept across reconnects: the client reconnects by itself). */
  nc: NatsConnection | null = null;
  js: JetStreamClient | null = null;
  jsm: JetStreamManager | null = null;
  /** The accounts bucket, once created. */
  accounts: KV | null = null;
  /** Whether the stream and bucket exist (set once, at the first successful setup). */
  ready = false;
  /** Why the last connection attempt failed (null once connected): `/health`'s `nats_error`. */
  lastError: string | null = null;
  /** Connection attempts NATS refused (authorization, TLS) since the start (`/metrics`). */
  refusedAttempts = 0;
  /** Refusals in a row: the back-off of {@link retryDelay}. */
  private refusals = 0;
  private readonly changeListeners = new Set<(up: boolean) => void>();
  private readonly readyListeners = new Set<() => void>();
  private closed = false;
  private starting: Promise<void> | null = null;
  /** The server the client dialled last (see `nextServer`). */
  private dialled: string | null = null;

  constructor(
    readonly config: NatsConfig,
    private readonly opts: LinkOptions,
  ) {}

  get node(): string {
    return this.config.node;
  }

  /** Connect and set up in the background; returns at once. */
  start(): void {
    this.starting ??= this.run().catch((e: unknown) => this.opts.log.warn({ err: (e as Error).message }, 'cluster: link stopped'));
  }

  /** Called with the new state on every disconnect / reconnect. */
  onChange(fn: (up: boolean) => void): () => void {
    this.changeListeners.add(fn);
    return () => this.changeListeners.delete(fn);
  }

  /** Called once the stream and bucket exist (at once if they already do). */
  onReady(fn: () => void): void {
    if (this.ready) fn();
    else this.readyListeners.add(fn);
  }

  private setUp(up: boolean): void {
    if (this.up === up) return;
    this.up = up;
    // The server a node is on is named: which nodes a stalled server held is then in the log.
    const fields = up ? { node: this.node, server: this.nc?.getServer() } : { node: this.node };
    this.opts.log[up ? 'info' : 'warn'](fields, up ? 'cluster: NATS link up' : 'cluster: NATS link down (degraded: serving from local state)');
    for (const fn of this.changeListeners) fn(up);
  }

  /**
   * Connect, for ever. The first connection is made here rather than by the client's own wait
   * (`waitOnFirstConnect`, which never says why it waits and gives up for good on a refused
   * password); once connected, the client reconnects by itself, refusals included
   * (`ignoreAuthErrorAbort`: credentials rotated on the server must not close the link for good).
   * Both wait `retryDelay()` between attempts, and each new reason is logged and kept for
   * `/health` (a refusal is an operator's to fix).
   */
  private async connect(): Promise<NatsConnection | null> {
    while (!this.closed) {
      try {
        return await connect({
          ...natsConnectOptions(this.config),
          name: `landfall-${this.node}`,
          maxReconnectAttempts: -1,
          reconnectDelayHandler: () => this.retryDelay(),
          ignoreAuthErrorAbort: true,
          reconnectToServer: (pool) => this.nextServer(pool),
          // A server that stopped answering (a stall: SIGSTOP, a frozen VM) is noticed within
          // STALL_NOTICED_MS, not the default 4 minutes: the other nodes' judgement of this one's
          // lease is timed from it (src/cluster/timing.ts).
          pingInterval: PING_INTERVAL_MS,
          maxPingOut: MAX_PING_OUT,
          // A reconnect that meets a server that accepts the TCP connection but never answers
          // (stalled) gives it up after this long and tries the next one.
          timeout: CONNECT_TIMEOUT_MS,
        });
      } catch (e) {
        if (isRefusal(e)) this.refused();
        else this.refusals = 0;
        const wait = this.retryDelay();
        this.noteError(e, 'cluster: cannot connect to NATS, retrying', { retry_in_ms: Math.round(wait) });
        await new Promise((r) => setTimeout(r, wait));
      }
    }
    return null;
  }

  /**
   * The server to dial next (null: the client's own choice, `pool[0]`). The client's first
   * reconnect dials the server it was connected to (its rotation starts behind it), so a node
   * that left a *stalled* server — one that accepts the TCP connection and never answers — waited
   * a whole connect timeout on it again before trying another (measured: up on another server
   * 2 s after the stall was noticed). Never the same server twice in a row while the pool has
   * another: a server that merely restarted is dialled again after the others were tried.
   */
  private nextServer(pool: ReadonlyArray<Server>): Server | null {
    const first = pool[0];
    const other = first && first.listen === this.dialled ? pool.find((s) => s.listen !== this.dialled) : undefined;
    this.dialled = (other ?? first)?.listen ?? null;
    return other ?? null;
  }

  /** One more refused attempt (authorization, TLS): counted, and the next waits longer. */
  private refused(): void {
    this.refusals++;
    this.refusedAttempts++;
  }

  /**
   * The wait before the next attempt: 250–500 ms while a server is only unreachable (it may be
   * back any moment), a back-off of 1 s, 2 s, 4 s, … CONNECT_RETRY_MAX_MS (±25 %) while NATS
   * refuses this node: trying faster would not fix the credentials.
   */
  private retryDelay(): number {
    if (this.refusals === 0) return RECONNECT_WAIT_MAX_MS / 2 + Math.random() * (RECONNECT_WAIT_MAX_MS / 2);
    return Math.min(1_000 * 2 ** (this.refusals - 1), CONNECT_RETRY_MAX_MS) * (0.75 + Math.random() * 0.5);
  }

  /** Keep why NATS failed for `/health`; log it when the reason changed (a retry loop says it once). */
  private noteError(e: unknown, msg: string, fields: object = {}): void {
    const reason = natsErrorReason(e, this.config);
    if (reason !== this.lastError) this.opts.log.warn({ node: this.node, err: reason, ...fields }, msg);
    this.lastError = reason;
  }

  private async run(): Promise<void> {
    const nc = await this.connect();
    if (!nc) return;
    this.lastError = null;
    this.refusals = 0;
    if (this.closed) {
      await nc.close();
      return;
    }
    this.nc = nc;
    this.js = jetstream(nc);
    this.jsm = await jetstreamManager(nc, { checkAPI: false });
    void this.watchStatus(nc);
    this.setUp(true);
    while (!this.closed) {
      try {
        await this.ensureStream(this.jsm);
        this.accounts = await openAccountsBucket(nc, this.config.replicas);
        this.lastError = null;
        break;
      } catch (e) {
        this.noteError(e, 'cluster: JetStream not ready, retrying');
        await new Promise((r) => setTimeout(r, SETUP_RETRY_MS));
      }
    }
    if (this.closed) return;
    this.ready = true;
    for (const fn of this.readyListeners) fn();
    this.readyListeners.clear();
  }

  private async watchStatus(nc: NatsConnection): Promise<void> {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect' || s.type === 'staleConnection') this.setUp(false);
      else if (s.type === 'reconnect') {
        this.lastError = null;
        this.refusals = 0;
        this.setUp(true);
      } else if (s.type === 'error') {
        // An authorization refusal at a reconnect backs the next attempts off; other server
        // errors (a permission refused while connected) say nothing of reconnecting.
        if (s.error instanceof AuthorizationError) this.refused();
        this.noteError(s.error, 'cluster: NATS server error');
      }
    }
  }

  private async ensureStream(jsm: JetStreamManager): Promise<void> {
    const cfg: Partial<StreamConfig> & { name: string } = {
      name: STATUS_STREAM,
      subjects: [statusSubject('*')],
      max_age: ms2ns(this.opts.retentionMs),
      num_replicas: this.config.replicas,
      storage: StorageType.File,
      duplicate_window: ms2ns(DUPLICATE_WINDOW_MS),
    };
    const info = await jsm.streams.info(STATUS_STREAM).catch(() => null);
    if (!info) {
      await jsm.streams.add(cfg);
      return;
    }
    const c = info.config;
    if (c.max_age !== cfg.max_age || c.num_replicas !== cfg.num_replicas || c.duplicate_window !== cfg.duplicate_window) {
      await jsm.streams.update(STATUS_STREAM, { ...cfg });
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const nc = this.nc;
    this.nc = null;
    if (nc) await nc.drain().catch(() => nc.close());
  }
}

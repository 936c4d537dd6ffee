/**
 * The node's one NATS connection (issue 13, part 1), owned by the main thread.
 *
 * `connect` never blocks the service: the connection is made in the background, retried for
 * ever (jittered), and once it is up the stream `LANDFALL_STATUS` and the bucket
 * `landfall-accounts` are created or updated (idempotent: every node does it at every start;
 * retried until JetStream answers, e.g. while a fresh cluster still elects its meta leader).
 * `up` says whether the connection is up now; `onChange` listeners hear every flip, and
 * `onReady` listeners the first time the stream and bucket exist (parts start their
 * consumers/watches then). Nothing on the hot path ever awaits anything here.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, StorageType, type JetStreamClient, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConfig } from '../config.js';

export const STATUS_STREAM = 'LANDFALL_STATUS';
/** Subject of a node's status events: `lf.status.<node>`. */
export const statusSubject = (node: string): string => `lf.status.${node}`;
export const ACCOUNTS_BUCKET = 'landfall-accounts';
/** JetStream drops a repeated msgID within this window (a re-published event after a restart). */
const DUPLICATE_WINDOW_MS = 10 * 60_000;
const SETUP_RETRY_MS = 500;
const ms2ns = (ms: number): number => Math.round(ms * 1e6);

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
  private readonly changeListeners = new Set<(up: boolean) => void>();
  private readonly readyListeners = new Set<() => void>();
  private closed = false;
  private starting: Promise<void> | null = null;

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
    this.opts.log[up ? 'info' : 'warn']({ node: this.node }, up ? 'cluster: NATS link up' : 'cluster: NATS link down (degraded: serving from local state)');
    for (const fn of this.changeListeners) fn(up);
  }

  private async run(): Promise<void> {
    const nc = await connect({
      servers: this.config.servers,
      name: `landfall-${this.node}`,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      reconnectJitter: 250,
      waitOnFirstConnect: true,
      // A server that stopped answering is noticed within ~4 s, not the default 4 minutes.
      pingInterval: 2_000,
      maxPingOut: 2,
    });
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
        break;
      } catch (e) {
        this.opts.log.warn({ err: (e as Error).message }, 'cluster: JetStream not ready, retrying');
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
      else if (s.type === 'reconnect') this.setUp(true);
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

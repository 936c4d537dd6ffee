/**
 * Solana PubSub (WebSocket) client that stays subscribed: it reconnects with capped exponential
 * back-off and re-issues every live subscription on each new connection, and it pings the node
 * so that a silently dead connection is noticed within `pingMs` × 2 rather than never.
 *
 * Callers see `onState(connected)` transitions so they can fall back to polling while the
 * connection is down.
 */
import WebSocket from 'ws';

type Handler = (result: unknown, slot: number | undefined) => void;

interface Sub {
  /** Local id (key in `subs`); gone from `subs` once unsubscribed. */
  id: number;
  method: string;
  params: unknown[];
  handler: Handler;
  /** Called when the node refuses the subscription (e.g. -32601: it does not offer the method). */
  onRefused?: (error: { code?: number; message?: string }) => void;
  /** Subscription id the node assigned on the current connection. */
  serverId: number | null;
}

export interface PubSubOptions {
  onState?: (connected: boolean) => void;
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  pingMs?: number;
}

export interface Subscription {
  unsubscribe(): void;
}

export class PubSub {
  private ws: WebSocket | null = null;
  private readonly subs = new Map<number, Sub>();
  private readonly byServerId = new Map<number, Sub>();
  /** Request id → subscription awaiting its server id. */
  private readonly awaiting = new Map<number, Sub>();
  private nextId = 1;
  private backoff: number;
  private closed = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private pingTimer: NodeJS.Timeout | null = null;
  private alive = false;
  connected = false;

  constructor(
    readonly url: string,
    private readonly opts: PubSubOptions = {},
  ) {
    this.backoff = opts.reconnectMinMs ?? 250;
    this.connect();
  }

  subscribe(method: string, params: unknown[], handler: Handler, onRefused?: Sub['onRefused']): Subscription {
    const id = this.nextId++;
    const sub: Sub = { id, method, params, handler, onRefused, serverId: null };
    this.subs.set(id, sub);
    if (this.connected) this.request(sub);
    return {
      unsubscribe: () => {
        if (!this.subs.delete(id)) return;
        if (sub.serverId !== null) {
          this.byServerId.delete(sub.serverId);
          this.send(method.replace(/Subscribe$/, 'Unsubscribe'), [sub.serverId]);
        }
      },
    };
  }

  close(): void {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.ws?.terminate();
    this.ws = null;
  }

  private connect(): void {
    const ws = new WebSocket(this.url, { perMessageDeflate: false, handshakeTimeout: 5_000 });
    this.ws = ws;
    ws.on('open', () => {
      this.connected = true;
      this.alive = true;
      this.backoff = this.opts.reconnectMinMs ?? 250;
      for (const sub of this.subs.values()) this.request(sub);
      this.pingTimer = setInterval(() => {
        if (!this.alive) {
          ws.terminate();
          return;
        }
        this.alive = false;
        ws.ping();
      }, this.opts.pingMs ?? 10_000);
      this.pingTimer.unref();
      this.opts.onState?.(true);
    });
    ws.on('pong', () => {
      this.alive = true;
    });
    ws.on('message', (data) => this.onMessage(data.toString()));
    ws.on('error', () => {
      // 'close' follows every error; reconnecting happens there.
    });
    ws.on('close', () => {
      if (this.pingTimer) clearInterval(this.pingTimer);
      this.pingTimer = null;
      const wasConnected = this.connected;
      this.connected = false;
      this.awaiting.clear();
      this.byServerId.clear();
      for (const sub of this.subs.values()) sub.serverId = null;
      if (wasConnected) this.opts.onState?.(false);
      if (this.closed) return;
      this.retryTimer = setTimeout(() => this.connect(), this.backoff);
      this.retryTimer.unref();
      this.backoff = Math.min(this.backoff * 2, this.opts.reconnectMaxMs ?? 5_000);
    });
  }

  private request(sub: Sub): void {
    const id = this.send(sub.method, sub.params);
    this.awaiting.set(id, sub);
  }

  private send(method: string, params: unknown[]): number {
    const id = this.nextId++;
    this.ws?.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    return id;
  }

  private onMessage(text: string): void {
    let msg: { id?: number; result?: unknown; error?: unknown; params?: { subscription: number; result: unknown } };
    try {
      msg = JSON.parse(text) as typeof msg;
    } catch {
      return; // A node that sends garbage is ignored, not trusted.
    }
    if (msg.id !== undefined) {
      const sub = this.awaiting.get(msg.id);
      this.awaiting.delete(msg.id);
      // Still wanted (not unsubscribed while the request was in flight)?
      if (sub && typeof msg.result === 'number' && this.subs.has(sub.id)) {
        sub.serverId = msg.result;
        this.byServerId.set(msg.result, sub);
      } else if (sub && msg.error !== undefined && this.subs.has(sub.id)) {
        sub.onRefused?.(typeof msg.error === 'object' && msg.error !== null ? msg.error : {});
      }
      return;
    }
    const p = msg.params;
    if (!p) return;
    const sub = this.byServerId.get(p.subscription);
    if (!sub) return;
    const result = p.result as { context?: { slot?: number } } | undefined;
    sub.handler(p.result, result?.context?.slot);
  }
}

/**
 * The link relay itself (see `link.ts` for the model): the delay lines and the UDP sockets. It
 * runs in the links' own worker thread (`link-worker.ts`), never on the cluster's event loop: a
 * loop busy executing transactions (or a test runner importing modules) would otherwise hold
 * every datagram, stretch every path and time out handshakes.
 */
import dgram from 'node:dgram';
import type { Direction, ResolvedLink } from './link.js';

/**
 * Counters shared with the cluster's thread (a `Float64Array` over a `SharedArrayBuffer`, written
 * here as things happen, read there at any time): clients, then each direction's datagrams,
 * dropped, dropped in a burst, delivered, queued.
 */
export const STATS_LENGTH = 11;
const DATAGRAMS = 0;
const DROPPED = 1;
const IN_BURST = 2;
const DELIVERED = 3;
const QUEUED = 4;

/** The bandwidth queue holds at most this much (then drops). */
const MAX_QUEUE_MS = 1000;
/** An upstream socket idle this long is closed (longer than the server's 60 s idle timeout). */
const UPSTREAM_IDLE_MS = 70_000;
/** How much before its time a timer is aimed (node timers are late by about this much, never early). */
const EARLY_MS = 1;
/** Upstream sockets at most; datagrams from more client addresses are dropped. */
const MAX_UPSTREAMS = 4096;

/** A datagram in a delay line. */
interface Pending {
  at: number;
  bytes: Buffer;
  send: (bytes: Buffer) => void;
}

/** One direction's state: the loss model, the bandwidth clock, the delay line. */
class Lane {
  cfg: Direction;
  private bad = false;
  /** When the bandwidth-limited sender is free again (performance-less ms clock: Date.now()). */
  private freeAt = 0;
  private readonly line: Pending[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | null = null;
  private lastAt = 0;
  /** This direction's five counters (a view into the shared ones). */
  readonly stats: Float64Array;

  constructor(cfg: Direction, stats: Float64Array) {
    this.cfg = cfg;
    this.stats = stats;
  }

  private bump(i: number): void {
    this.stats[i] = this.stats[i]! + 1;
  }

  get queued(): number {
    return this.line.length - this.head;
  }

  /** Take one datagram: drop it, send it now, or queue it. */
  push(bytes: Buffer, send: (bytes: Buffer) => void): void {
    const c = this.cfg;
    this.bump(DATAGRAMS);
    // The burst state moves per datagram (Gilbert–Elliott), whether or not this one is lost.
    if (c.burstEnterPct > 0) {
      this.bad = this.bad ? Math.random() * 100 >= c.burstExitPct : Math.random() * 100 < c.burstEnterPct;
    } else this.bad = false;
    if (this.bad && Math.random() * 100 < c.burstLossPct) {
      this.bump(DROPPED);
      this.bump(IN_BURST);
      return;
    }
    if (c.lossPct > 0 && Math.random() * 100 < c.lossPct) {
      this.bump(DROPPED);
      return;
    }
    const now = Date.now();
    let leave = now;
    if (c.bandwidthKbps > 0) {
      const start = Math.max(now, this.freeAt);
      if (start - now > MAX_QUEUE_MS) {
        this.bump(DROPPED);
        return;
      }
      leave = start + (bytes.length * 8) / c.bandwidthKbps; // kbit/s = bits per ms
      this.freeAt = leave;
    }
    const jitter = c.jitterMs > 0 ? (Math.random() * 2 - 1) * c.jitterMs : 0;
    const at = Math.max(leave + Math.max(0, c.delayMs + jitter), this.lastAt);
    this.lastAt = at;
    if (at <= now && this.head === this.line.length) {
      this.bump(DELIVERED);
      send(bytes);
      return;
    }
    this.line.push({ at, bytes, send });
    this.stats[QUEUED] = this.line.length - this.head;
    if (this.timer === null) this.arm();
  }

  private arm(): void {
    const next = this.line[this.head];
    if (!next) return;
    // A node timer fires a millisecond or more after it is due (more on a busy event loop), which
    // would lengthen every path: aim a millisecond early, and deliver what is due within it.
    this.timer = setTimeout(() => this.flush(), Math.max(0, next.at - Date.now() - EARLY_MS));
  }

  private flush(): void {
    this.timer = null;
    const now = Date.now();
    while (this.head < this.line.length && this.line[this.head]!.at <= now + EARLY_MS) {
      const p = this.line[this.head]!;
      this.line[this.head++] = undefined as unknown as Pending;
      this.bump(DELIVERED);
      p.send(p.bytes);
    }
    if (this.head === this.line.length) {
      this.line.length = 0;
      this.head = 0;
    } else if (this.head > 1024) {
      this.line.splice(0, this.head);
      this.head = 0;
    }
    this.stats[QUEUED] = this.line.length - this.head;
    this.arm();
  }

  clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.line.length = 0;
    this.head = 0;
    this.stats[QUEUED] = 0;
  }
}

interface Upstream {
  socket: dgram.Socket;
  lastUsed: number;
}

/**
 * The relay in front of one validator's QUIC server. `open` binds the public socket (the
 * address to advertise); `retarget` points it at a server that moved; `setLink` changes the
 * path at once (datagrams already in the delay line keep the delay they were given).
 */
export class Relay {
  private socket: dgram.Socket | null = null;
  private readonly upstreams = new Map<string, Upstream>();
  private readonly upLane: Lane;
  private readonly downLane: Lane;
  private sweeper: NodeJS.Timeout | null = null;
  private address = '';
  private closed = false;

  constructor(
    private target: { host: string; port: number },
    link: ResolvedLink,
    private readonly counters: Float64Array,
  ) {
    this.upLane = new Lane(link.up, counters.subarray(1, 6));
    this.downLane = new Lane(link.down, counters.subarray(6, 11));
  }

  /** Listen on `host:port` (0: any free port). Resolves with the bound `host:port`. */
  async open(host: string, port: number): Promise<string> {
    const socket = dgram.createSocket({ type: 'udp4', recvBufferSize: 4 << 20, sendBufferSize: 4 << 20 });
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(port, host, () => {
        socket.off('error', reject);
        resolve();
      });
    });
    // A send to a client that went away is not the relay's problem (ICMP errors surface here).
    socket.on('error', () => undefined);
    socket.on('message', (msg, rinfo) => this.fromClient(msg, rinfo));
    this.socket = socket;
    this.closed = false;
    this.address = `${host}:${socket.address().port}`;
    this.sweeper = setInterval(() => this.sweep(), 10_000);
    this.sweeper.unref();
    return this.address;
  }

  get localAddr(): string {
    return this.address;
  }

  get link(): ResolvedLink {
    return { up: this.upLane.cfg, down: this.downLane.cfg };
  }

  setLink(link: ResolvedLink): void {
    this.upLane.cfg = link.up;
    this.downLane.cfg = link.down;
  }

  /** The server moved (it came back on another port): new upstreams, as its old connections are gone anyway. */
  retarget(target: { host: string; port: number }): void {
    this.target = target;
    this.closeUpstreams();
  }

  private fromClient(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    const key = `${rinfo.address}:${rinfo.port}`;
    let up = this.upstreams.get(key);
    if (!up) {
      if (this.upstreams.size >= MAX_UPSTREAMS) return;
      up = this.openUpstream(key, rinfo);
    }
    up.lastUsed = Date.now();
    const upstream = up;
    this.upLane.push(msg, (bytes) => {
      if (this.closed || !this.upstreams.has(key)) return; // swept or closed while the datagram was on its way
      upstream.socket.send(bytes, this.target.port, this.target.host);
    });
  }

  private openUpstream(key: string, client: dgram.RemoteInfo): Upstream {
    const socket = dgram.createSocket({ type: 'udp4', recvBufferSize: 1 << 20, sendBufferSize: 1 << 20 });
    socket.on('error', () => undefined);
    socket.on('message', (msg) => {
      const u = this.upstreams.get(key);
      if (u) u.lastUsed = Date.now();
      this.downLane.push(msg, (bytes) => {
        if (!this.closed) this.socket?.send(bytes, client.port, client.address);
      });
    });
    // Bound on the server's host, any port: the validator sees this as the client's address.
    // (Sends made before the bind completes are queued by node until it does.)
    socket.bind(0, this.target.host);
    const up = { socket, lastUsed: Date.now() };
    this.upstreams.set(key, up);
    this.counters[0] = this.upstreams.size;
    return up;
  }

  private sweep(): void {
    const cutoff = Date.now() - UPSTREAM_IDLE_MS;
    for (const [key, u] of this.upstreams) {
      if (u.lastUsed < cutoff) {
        u.socket.close();
        this.upstreams.delete(key);
      }
    }
    this.counters[0] = this.upstreams.size;
  }

  private closeUpstreams(): void {
    for (const u of this.upstreams.values()) u.socket.close();
    this.upstreams.clear();
    this.counters[0] = 0;
  }

  /** Resolves once both delay lines are empty (what was in flight delivered), or after 2 s. */
  async drained(): Promise<void> {
    const deadline = Date.now() + 2000;
    while ((this.upLane.queued > 0 || this.downLane.queued > 0) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 5));
    }
    // One more turn for a datagram the server handed to the socket just before it closed.
    await new Promise((r) => setImmediate(r));
  }

  /** Stop listening and forget every client (idempotent). Datagrams in the delay lines are dropped. */
  async close(): Promise<void> {
    if (this.closed && !this.socket) return;
    this.closed = true;
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
    this.upLane.clear();
    this.downLane.clear();
    this.closeUpstreams();
    const s = this.socket;
    this.socket = null;
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  }
}

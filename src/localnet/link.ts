/**
 * Links with a distance: a userspace UDP relay in front of each validator's QUIC server that
 * delays, jitters, drops and rate-limits datagrams in each direction, so everything that talks
 * QUIC to the validator — its handshake, retransmissions, acknowledgements and flow-control
 * credit — pays the path as it would over the internet. This kernel has no netem; a relay is
 * the one place both directions of every datagram pass through without touching the QUIC stack.
 *
 * The relay listens on the address the cluster advertises as the validator's `tpuQuic`. Each
 * client address (ip:port) it hears from gets its own upstream socket towards the real server,
 * so the validator still sees one peer per client (its per-connection limits, its idle timers
 * and its stateless resets work as on a direct path); all of them are on the relay's host, the
 * same IP as the clients, so its per-IP limits count the same. An upstream socket unused for
 * `UPSTREAM_IDLE_MS` is closed.
 *
 * Each direction ("up": towards the validator, "down": back to the client) is a FIFO queue:
 *
 * - a datagram is first judged lost or not: random loss (`lossPct`), plus a Gilbert–Elliott
 *   burst model (`burstEnterPct` chance per datagram of entering the bad state, `burstExitPct` of
 *   leaving it, `burstLossPct` lost while in it: bursts of mean length 100 / burstExitPct);
 * - a bandwidth cap (`bandwidthKbps`) serialises what passes: a datagram leaves when the
 *   previous one has, plus its size at that rate (a queue longer than `MAX_QUEUE_MS` drops the
 *   datagram, as a router's tail drop);
 * - then it is delivered `delayMs` later, plus a jitter drawn uniformly from ±`jitterMs`, but
 *   never before the datagram ahead of it: a path that jitters without reordering, as most do
 *   (reordering makes QUIC declare losses that did not happen, which a real path rarely causes).
 *
 * With nothing set, a datagram is forwarded synchronously, with no timer.
 *
 * The relays run in a worker thread of their own (`link-worker.ts`, one per cluster; the relay
 * code is `link-relay.ts`): on the cluster's event loop, every datagram would wait whenever the
 * loop is busy (LiteSVM executing a block, a test runner importing modules), stretching every
 * path and timing out handshakes. This module holds the settings and drives the worker.
 *
 * Timed settings (`forMs`): a link can be set for a while and then go back to what it was, so a
 * test or a benchmark can make a 5-second loss burst without a timer of its own.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { LandfallError } from '../errors.js';

/** A link as given: every field optional, all of them 0 (a clean, direct path) when absent. */
export interface LinkSettings {
  /** Round-trip time, ms: half of it is each direction's delay (unless `upDelayMs`/`downDelayMs` say otherwise). */
  rttMs?: number;
  /** One-way delay towards the validator, ms. */
  upDelayMs?: number;
  /** One-way delay back from the validator, ms. */
  downDelayMs?: number;
  /** Jitter, each direction: each datagram's delay moves by up to ± this, ms (FIFO kept). */
  jitterMs?: number;
  /** Random loss, each direction, %. */
  lossPct?: number;
  /** Random loss towards the validator, % (overrides `lossPct` that way). */
  upLossPct?: number;
  /** Random loss back from the validator, % (overrides `lossPct` that way). */
  downLossPct?: number;
  /** Gilbert–Elliott bursts, each direction: % chance per datagram of a burst starting. */
  burstEnterPct?: number;
  /** % chance per datagram of a burst ending (mean burst length 100 / this, in datagrams; default 25). */
  burstExitPct?: number;
  /** % of datagrams lost during a burst (default 100). */
  burstLossPct?: number;
  /** Bandwidth cap each direction, kbit/s (0: none). */
  bandwidthKbps?: number;
}

/** One direction of a link, resolved. */
export interface Direction {
  delayMs: number;
  jitterMs: number;
  lossPct: number;
  burstEnterPct: number;
  burstExitPct: number;
  burstLossPct: number;
  bandwidthKbps: number;
}

export interface ResolvedLink {
  up: Direction;
  down: Direction;
}

export interface DirectionStats {
  /** Datagrams that entered this direction. */
  datagrams: number;
  /** Dropped: random loss, a burst, or the bandwidth queue's tail drop. */
  dropped: number;
  /** Of `dropped`, lost in a Gilbert–Elliott burst. */
  droppedInBurst: number;
  /** Delivered (sent on). */
  delivered: number;
  /** Waiting in the delay line now. */
  queued: number;
}

export interface LinkStats {
  /** Distinct client addresses with an upstream socket now. */
  clients: number;
  up: DirectionStats;
  down: DirectionStats;
}

/** Longest one-way delay (a minute is far past any leader window; more is a typo). */
const MAX_DELAY_MS = 60_000;

const NUMBER_FIELDS: Record<keyof LinkSettings, { max: number; unit: string }> = {
  rttMs: { max: 2 * MAX_DELAY_MS, unit: 'ms' },
  upDelayMs: { max: MAX_DELAY_MS, unit: 'ms' },
  downDelayMs: { max: MAX_DELAY_MS, unit: 'ms' },
  jitterMs: { max: MAX_DELAY_MS, unit: 'ms' },
  lossPct: { max: 100, unit: '%' },
  upLossPct: { max: 100, unit: '%' },
  downLossPct: { max: 100, unit: '%' },
  burstEnterPct: { max: 100, unit: '%' },
  burstExitPct: { max: 100, unit: '%' },
  burstLossPct: { max: 100, unit: '%' },
  bandwidthKbps: { max: 100_000_000, unit: 'kbit/s' },
};

/** Check a link object (faults file, JSON-RPC, in-process); throws `CONFIG_INVALID` naming the bad field. */
export function checkLink(where: string, value: unknown): LinkSettings {
  if (typeof value === 'string') return parseLink(value, where);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new LandfallError('CONFIG_INVALID', `${where}: a link must be an object like {"rttMs": 80, "lossPct": 2} or a string like "rtt=80ms,loss=2%"`);
  }
  const out: LinkSettings = {};
  for (const [key, v] of Object.entries(value)) {
    const field = NUMBER_FIELDS[key as keyof LinkSettings];
    if (!field) throw new LandfallError('CONFIG_INVALID', `${where}: unknown link field '${key}' (known: ${Object.keys(NUMBER_FIELDS).join(', ')})`);
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > field.max) {
      throw new LandfallError('CONFIG_INVALID', `${where}.${key} must be a number from 0 to ${field.max} ${field.unit} (got ${JSON.stringify(v)})`);
    }
    out[key as keyof LinkSettings] = v;
  }
  return out;
}

/** The short keys of the string form, and the field each sets. */
const SHORT: Record<string, { field: keyof LinkSettings; unit: 'ms' | '%' | 'bw' }> = {
  rtt: { field: 'rttMs', unit: 'ms' },
  up: { field: 'upDelayMs', unit: 'ms' },
  down: { field: 'downDelayMs', unit: 'ms' },
  jitter: { field: 'jitterMs', unit: 'ms' },
  loss: { field: 'lossPct', unit: '%' },
  'loss-up': { field: 'upLossPct', unit: '%' },
  'loss-down': { field: 'downLossPct', unit: '%' },
  'burst-enter': { field: 'burstEnterPct', unit: '%' },
  'burst-exit': { field: 'burstExitPct', unit: '%' },
  'burst-loss': { field: 'burstLossPct', unit: '%' },
  bw: { field: 'bandwidthKbps', unit: 'bw' },
};

/**
 * Parse the string form: `rtt=80ms,jitter=10ms,loss=2%`, with `up=`/`down=` (one-way delays),
 * `loss-up=`/`loss-down=`, `burst-enter=`/`burst-exit=`/`burst-loss=` (%), `bw=` (`10mbit`,
 * `500kbit`). Times take `ms` or `s`; an empty string is a clean link.
 */
export function parseLink(text: string, where = 'link'): LinkSettings {
  const out: Record<string, number> = {};
  for (const part of text.split(',').map((p) => p.trim()).filter((p) => p !== '')) {
    const m = /^([a-z-]+)=(\d+(?:\.\d+)?)(ms|s|%|kbit|mbit|gbit)?$/.exec(part);
    const key = m ? SHORT[m[1]!] : undefined;
    if (!m || !key) {
      throw new LandfallError('CONFIG_INVALID', `${where}: cannot read '${part}' (expected key=value with a key of ${Object.keys(SHORT).join(', ')}, e.g. rtt=80ms,jitter=10ms,loss=2%)`);
    }
    const n = Number(m[2]);
    const unit = m[3];
    let value: number;
    if (key.unit === 'ms') {
      if (unit !== 'ms' && unit !== 's') throw new LandfallError('CONFIG_INVALID', `${where}: ${m[1]} needs a time in ms or s (got '${part}')`);
      value = unit === 's' ? n * 1000 : n;
    } else if (key.unit === '%') {
      if (unit !== '%') throw new LandfallError('CONFIG_INVALID', `${where}: ${m[1]} needs a percentage (got '${part}')`);
      value = n;
    } else {
      const scale = unit === 'kbit' ? 1 : unit === 'mbit' ? 1000 : unit === 'gbit' ? 1_000_000 : null;
      if (scale === null) throw new LandfallError('CONFIG_INVALID', `${where}: bw needs kbit, mbit or gbit (got '${part}')`);
      value = n * scale;
    }
    out[key.field] = value;
  }
  return checkLink(where, out);
}

/** A duration like `5s` or `500ms` (the CLI's `--for`). */
export function parseDuration(text: string, where: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s)$/.exec(text.trim());
  if (!m) throw new LandfallError('CONFIG_INVALID', `${where} must be a duration like 5s or 500ms (got '${text}')`);
  return Number(m[1]) * (m[2] === 's' ? 1000 : 1);
}

/** Each direction's numbers from the settings given. */
export function resolveLink(s: LinkSettings): ResolvedLink {
  const half = (s.rttMs ?? 0) / 2;
  const dir = (delay: number | undefined, loss: number | undefined): Direction => ({
    delayMs: delay ?? half,
    jitterMs: s.jitterMs ?? 0,
    lossPct: loss ?? s.lossPct ?? 0,
    burstEnterPct: s.burstEnterPct ?? 0,
    burstExitPct: s.burstExitPct ?? 25,
    burstLossPct: s.burstLossPct ?? 100,
    bandwidthKbps: s.bandwidthKbps ?? 0,
  });
  return { up: dir(s.upDelayMs, s.upLossPct), down: dir(s.downDelayMs, s.downLossPct) };
}

/** The short string form of a resolved link, for banners and logs ("clean" when nothing is set). */
export function describeLink(l: ResolvedLink): string {
  const parts: string[] = [];
  const same = (f: keyof Direction): boolean => l.up[f] === l.down[f];
  if (same('delayMs')) {
    if (l.up.delayMs > 0) parts.push(`rtt=${2 * l.up.delayMs}ms`);
  } else parts.push(`up=${l.up.delayMs}ms`, `down=${l.down.delayMs}ms`);
  if (l.up.jitterMs > 0) parts.push(`jitter=${l.up.jitterMs}ms`);
  if (same('lossPct')) {
    if (l.up.lossPct > 0) parts.push(`loss=${l.up.lossPct}%`);
  } else parts.push(`loss-up=${l.up.lossPct}%`, `loss-down=${l.down.lossPct}%`);
  if (l.up.burstEnterPct > 0) parts.push(`burst-enter=${l.up.burstEnterPct}%`, `burst-exit=${l.up.burstExitPct}%`, `burst-loss=${l.up.burstLossPct}%`);
  if (l.up.bandwidthKbps > 0) parts.push(`bw=${l.up.bandwidthKbps}kbit`);
  return parts.length === 0 ? 'clean' : parts.join(',');
}


/** What the cluster's thread asks of the links' worker (`link-worker.ts`). */
export type LinkCommand =
  | { seq: number; op: 'open'; id: number; host: string; port: number; target: { host: string; port: number }; link: ResolvedLink; counters: SharedArrayBuffer }
  | { seq: number; op: 'set'; id: number; link: ResolvedLink }
  | { seq: number; op: 'retarget'; id: number; target: { host: string; port: number } }
  | { seq: number; op: 'close'; id: number };

export type LinkReply = { seq: number; ok: true; address?: string } | { seq: number; ok: false; error: string };

/**
 * The compiled worker. Under a TypeScript loader (vitest, tsx) this module runs from `src/`, and
 * a worker thread cannot load `.ts` by itself: it runs the build in `dist/` (`npm run build:ts`),
 * as the ingress threads do.
 */
function workerFile(): string {
  const here = fileURLToPath(import.meta.url);
  const sibling = here.replace(/link\.(ts|js)$/, 'link-worker.js');
  if (here.endsWith('.js') || existsSync(sibling)) return sibling;
  const built = fileURLToPath(new URL('../../dist/localnet/link-worker.js', import.meta.url));
  if (!existsSync(built)) throw new LandfallError('CONFIG_INVALID', `local cluster links not built: run \`npm run build:ts\` (missing ${built})`);
  return built;
}

/**
 * The links of one cluster: one worker thread holding every validator's relay. Started with the
 * first relay, ended by `close`. A relay's counters are read here without a round trip.
 */
export class Links {
  private worker: Worker | null = null;
  private seq = 0;
  private nextId = 1;
  private readonly waiting = new Map<number, (r: LinkReply) => void>();

  private start(): Worker {
    if (this.worker) return this.worker;
    // Not the parent's flags: a worker refuses some (`--input-type` of a `node -e` parent), and needs none.
    const worker = new Worker(workerFile(), { name: 'landfall-localnet-links', execArgv: [] });
    worker.on('message', (r: LinkReply) => {
      const done = this.waiting.get(r.seq);
      this.waiting.delete(r.seq);
      // Idle, the worker alone never keeps the process alive; with an answer awaited it must
      // (else a process closing its cluster exits with that await unsettled).
      if (this.waiting.size === 0) worker.unref();
      done?.(r);
    });
    worker.on('error', (e) => {
      for (const done of this.waiting.values()) done({ seq: -1, ok: false, error: `links worker failed: ${e.message}` });
      this.waiting.clear();
    });
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private ask(command: DistributiveOmit<LinkCommand, 'seq'>): Promise<LinkReply> {
    const worker = this.start();
    const seq = ++this.seq;
    return new Promise((resolve) => {
      this.waiting.set(seq, resolve);
      worker.ref();
      worker.postMessage({ ...command, seq });
    });
  }

  /** Open a relay on `host:port` (0: any) in front of `target`. Throws with the bind error. */
  async open(host: string, port: number, target: { host: string; port: number }, link: ResolvedLink): Promise<LinkRelay> {
    const id = this.nextId++;
    const counters = new SharedArrayBuffer(STATS_BYTES);
    const r = await this.ask({ op: 'open', id, host, port, target, link, counters });
    if (!r.ok) throw new Error(r.error);
    return new LinkRelay(this, id, r.address!, new Float64Array(counters), link);
  }

  /** @internal */
  async command(command: DistributiveOmit<LinkCommand, 'seq'>): Promise<void> {
    const r = await this.ask(command);
    if (!r.ok) throw new Error(r.error);
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** 11 counters (see `link-relay.ts`), 8 bytes each. */
const STATS_BYTES = 11 * 8;

/** One validator's relay, as the cluster's thread holds it. */
export class LinkRelay {
  constructor(
    private readonly links: Links,
    private readonly id: number,
    readonly localAddr: string,
    private readonly counters: Float64Array,
    private current: ResolvedLink,
  ) {}

  get link(): ResolvedLink {
    return this.current;
  }

  /** Change the path (applies in the worker at once; datagrams in flight keep their delay). */
  setLink(link: ResolvedLink): Promise<void> {
    this.current = link;
    return this.links.command({ op: 'set', id: this.id, link });
  }

  retarget(target: { host: string; port: number }): Promise<void> {
    return this.links.command({ op: 'retarget', id: this.id, target });
  }

  stats(): LinkStats {
    const c = this.counters;
    const dir = (o: number): DirectionStats => ({ datagrams: c[o]!, dropped: c[o + 1]!, droppedInBurst: c[o + 2]!, delivered: c[o + 3]!, queued: c[o + 4]! });
    return { clients: c[0]!, up: dir(1), down: dir(6) };
  }

  /** Deliver what is in flight (at most 2 s), then stop listening. */
  close(): Promise<void> {
    return this.links.command({ op: 'close', id: this.id });
  }
}

/**
 * Taking over a dead node's pending transactions (issue 13, part 4), once `Leases` elected
 * this node for it.
 *
 * Each node tracks what it accepted. The other nodes hold the same records (applied from the
 * status stream) but do not track them; they only remember which node each still-pending
 * record came from (`PendingOrigins`, in memory: a restarted node resumes every pending record
 * of its store anyway). The taker resumes the dead node's pending records exactly as the
 * restart path resumes its own — `tracker.resume` (watched until confirmed, failed or expired)
 * and `engine.resume` (sent again while the blockhash lives, when the record still carries its
 * wire bytes) — and its settlements are published like its own. Records of the dead node that
 * reach this node only after the takeover (its last events, delivered late) are adopted as they
 * arrive, until the node is live again: a takeover lasts while the dead node's lease stays as
 * it was judged (`Leases.heirOf`), so a node that was only frozen (SIGSTOP, a stopped VM) owns
 * what it sends once it runs again, and is taken over again if it dies again. A dead node that comes back resumes its own pending
 * records too: the duplicates are harmless (applies only move forward, a record is credited once
 * per node, and JetStream drops the repeated event by its msgID).
 *
 * Takeovers chain (issue 19, item 5): every node learns from the takeover keys who took over whom
 * (`heirOf`), so a record's owner is the end of its origin's chain of heirs. When a taker dies in
 * turn, whoever takes it over resumes what it held too (the records of every node whose chain
 * passes through it): every pending record of a dead node is resumed by exactly one live node,
 * whatever died after it.
 */
import type { Engine } from '../delivery/engine.js';
import { isPending, type PendingRecord, type StatusRecord } from '../store/records.js';
import type { Tracker } from '../tracker/tracker.js';
import type { NodeLease } from './leases.js';

/** Origin node of each still-pending record applied from another node. */
export class PendingOrigins {
  private readonly bySignature = new Map<string, string>();

  /** Record what an applied event said about `rec` (terminal records are forgotten). */
  note(rec: StatusRecord, origin: string): void {
    if (isPending(rec)) this.bySignature.set(rec.signature, origin);
    else this.bySignature.delete(rec.signature);
  }

  originOf(signature: string): string | undefined {
    return this.bySignature.get(signature);
  }

  /** Pending records whose origin satisfies `from`. */
  pendingFrom(from: (origin: string) => boolean): Set<string> {
    const out = new Set<string>();
    for (const [sig, origin] of this.bySignature) if (from(origin)) out.add(sig);
    return out;
  }

  get size(): number {
    return this.bySignature.size;
  }
}

export interface TakeoverOptions {
  /** This node's name. */
  node: string;
  tracker: Pick<Tracker, 'resumeSignatures'>;
  engine: Pick<Engine, 'resume'>;
  origins: PendingOrigins;
  /** Who took over `node`'s current incarnation (`Leases.heirOf`; null: nobody, or live again). */
  heirOf(node: string): string | null;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

/** How long late records of an adopted node are gathered before one resume pass, ms. */
const LATE_BATCH_MS = 250;

export class Takeover {
  private readonly late = new Set<string>();
  private lateTimer: NodeJS.Timeout | null = null;
  /** Records resumed by takeovers (for /metrics and tests). */
  resumed = 0;

  constructor(private readonly opts: TakeoverOptions) {}

  /** `Leases.onTakeover`: resume here the pending records the dead node held (its own and its heirloom). */
  takeOver(dead: NodeLease): number {
    const sigs = this.opts.origins.pendingFrom((origin) => this.chainOf(origin).includes(dead.node));
    const { resumed, resent } = this.resume(sigs);
    this.opts.log?.('cluster: took over a dead node', { dead: dead.node, started: dead.started, pending: sigs.size, resumed, resent });
    return resumed;
  }

  /** Every applied event (after `origins.note`): adopt a late pending record of a node this one inherited. */
  applied(rec: StatusRecord, origin: string): void {
    if (origin === this.opts.node || !isPending(rec)) return;
    const chain = this.chainOf(origin);
    if (chain[chain.length - 1] !== this.opts.node) return;
    this.late.add(rec.signature);
    this.lateTimer ??= setTimeout(() => {
      this.lateTimer = null;
      // Still inherited? A frozen node that runs again writes its lease before it answers the
      // requests that waited for it, but its first live copies can arrive here before that lease
      // does: what it sends once live is its own (issue 32).
      const sigs = new Set([...this.late].filter((sig) => this.ownerOf(this.opts.origins.originOf(sig)) === this.opts.node));
      this.late.clear();
      const { resumed, resent } = this.resume(sigs);
      if (resumed > 0) this.opts.log?.('cluster: adopted late records of a node taken over', { resumed, resent, signatures: [...sigs].slice(0, 32) });
    }, LATE_BATCH_MS).unref();
  }

  close(): void {
    if (this.lateTimer) clearTimeout(this.lateTimer);
    this.lateTimer = null;
  }

  /** Who resumes `origin`'s pending records now (undefined: no origin known). */
  private ownerOf(origin: string | undefined): string | undefined {
    if (origin === undefined) return undefined;
    const chain = this.chainOf(origin);
    return chain[chain.length - 1];
  }

  /** `origin`, its heir, the heir's heir, … up to a node nobody took over (the owner now). */
  private chainOf(origin: string): string[] {
    const chain = [origin];
    for (let h = this.opts.heirOf(origin); h !== null && !chain.includes(h); h = this.opts.heirOf(h)) chain.push(h);
    return chain;
  }

  private resume(sigs: Set<string>): { resumed: number; resent: number } {
    if (sigs.size === 0) return { resumed: 0, resent: 0 };
    let resent = 0;
    // By signature, each read as `getStatus` reads it: a record applied a moment ago (a late
    // event, or one just before the takeover) may not be committed yet, and a scan of what is
    // committed would leave it pending here for good, tracked by nobody.
    const resumed = this.opts.tracker.resumeSignatures(sigs, (rec: PendingRecord) => {
      if (this.opts.engine.resume(rec)) resent++;
    });
    this.resumed += resumed;
    return { resumed, resent };
  }
}

/**
 * The PubSub WebSocket (Agave's `rpc_pubsub`): slotSubscribe, slotsUpdatesSubscribe,
 * signatureSubscribe and logsSubscribe with their unsubscribe methods, notifying at each
 * subscription's commitment.
 *
 * Commitment follows the ledger: a transaction is `processed` when it lands, `confirmed` when
 * its slot ends, `finalized` 32 slots later. Signature subscriptions end with their one
 * notification (as Agave's do); subscribing to a signature that already reached the requested
 * commitment notifies at once. Notification contexts carry `slot` only, as Agave's do.
 *
 * slotsUpdates follow what an Agave RPC node that is not the leader reports, in its order, when
 * slot N begins: `firstShredReceived` N (the leader's first shred reaching the node: here, the
 * slot's start), `frozen` and `completed` N − 1, `createdBank` N, `optimisticConfirmation` N − 1
 * (the local ledger confirms a slot when it ends) and `root` N − 1 − FINALITY_DEPTH. The one
 * Agave type never sent is `dead` (no slot here is ever abandoned).
 */
import type { AddressInfo } from 'node:net';
import { WebSocketServer, WebSocket } from 'ws';
import type { Cluster } from './cluster.js';
import { FINALITY_DEPTH, MAX_REQUEST_BODY } from './constants.js';
import { toJson } from './encode.js';
import { handlePayload, respond, type Request } from './jsonrpc.js';
import type { Commitment, TxRecord } from './ledger.js';
import { bool, commitment, config, invalidParams, invalidType, positional, pubkey, u64 } from './rpc-params.js';
import { isBase58Of } from './transaction.js';

const RANK: Record<Commitment, number> = { processed: 0, confirmed: 1, finalized: 2 };

interface Subscription {
  socket: WebSocket;
  id: number;
}

interface SlotSub extends Subscription {
  kind: 'slot';
}

interface SlotsUpdatesSub extends Subscription {
  kind: 'slotsUpdates';
}

interface SignatureSub extends Subscription {
  kind: 'signature';
  signature: string;
  commitment: Commitment;
  /** Also notify `receivedSignature` when a leader accepts it. */
  received: boolean;
}

interface LogsSub extends Subscription {
  kind: 'logs';
  /** null = every transaction. */
  mentions: string | null;
  commitment: Commitment;
}

type Sub = SlotSub | SlotsUpdatesSub | SignatureSub | LogsSub;

export class PubSub {
  private nextId = 0;
  private readonly subs = new Map<number, Sub>();
  private readonly bySignature = new Map<string, Set<number>>();
  private readonly unlisten: () => void;

  private constructor(
    private readonly wss: WebSocketServer,
    readonly port: number,
    private readonly cluster: Cluster,
    /** Offer slotsUpdatesSubscribe (LocalnetOptions.slotsUpdates). */
    private readonly offerSlotsUpdates: boolean,
  ) {
    wss.on('connection', (socket) => {
      socket.on('message', (data, isBinary) => {
        if (isBinary) return;
        const out = handlePayload(data.toString(), (r) => respond(r, this.handler(r.method, socket)));
        if (out !== null) this.send(socket, out);
      });
      socket.on('close', () => this.dropSocket(socket));
      socket.on('error', () => socket.terminate());
    });
    this.unlisten = cluster.listen({
      slot: (s, produced) => this.onSlot(s, produced),
      received: (sig, s) => this.onReceived(sig, s),
      landed: (r) => this.onLanded(r),
    });
  }

  static listen(host: string, port: number, cluster: Cluster, offerSlotsUpdates = true): Promise<PubSub> {
    return new Promise((resolve, reject) => {
      const wss = new WebSocketServer({ host, port, maxPayload: MAX_REQUEST_BODY, perMessageDeflate: false });
      wss.once('error', reject);
      wss.once('listening', () => {
        wss.off('error', reject);
        resolve(new PubSub(wss, (wss.address() as AddressInfo).port, cluster, offerSlotsUpdates));
      });
    });
  }

  private send(socket: WebSocket, value: unknown): void {
    if (socket.readyState === WebSocket.OPEN) socket.send(toJson(value));
  }

  private notify(sub: Subscription, method: string, result: unknown): void {
    this.send(sub.socket, { jsonrpc: '2.0', method, params: { result, subscription: sub.id } });
  }

  private add(sub: Sub): number {
    this.subs.set(sub.id, sub);
    if (sub.kind === 'signature') {
      let ids = this.bySignature.get(sub.signature);
      if (!ids) this.bySignature.set(sub.signature, (ids = new Set()));
      ids.add(sub.id);
    }
    return sub.id;
  }

  private remove(id: number): boolean {
    const sub = this.subs.get(id);
    if (!sub) return false;
    this.subs.delete(id);
    if (sub.kind === 'signature') {
      const ids = this.bySignature.get(sub.signature);
      ids?.delete(id);
      if (ids?.size === 0) this.bySignature.delete(sub.signature);
    }
    return true;
  }

  private dropSocket(socket: WebSocket): void {
    for (const [id, sub] of this.subs) if (sub.socket === socket) this.remove(id);
  }

  private handler(method: string, socket: WebSocket): ((req: Request) => unknown) | undefined {
    const unsubscribe = (kind: Sub['kind']) => (req: Request) => {
      const id = u64(positional(req.params, 1, 1)[0]);
      if (this.subs.get(id)?.kind !== kind || this.subs.get(id)?.socket !== socket) throw invalidParams('Invalid subscription id.');
      return this.remove(id);
    };
    if (!this.offerSlotsUpdates && method.startsWith('slotsUpdates')) return undefined;
    switch (method) {
      case 'slotSubscribe':
        return (req) => (positional(req.params, 0), this.add({ kind: 'slot', socket, id: this.nextId++ }));
      case 'slotUnsubscribe':
        return unsubscribe('slot');
      case 'slotsUpdatesSubscribe':
        return (req) => (positional(req.params, 0), this.add({ kind: 'slotsUpdates', socket, id: this.nextId++ }));
      case 'slotsUpdatesUnsubscribe':
        return unsubscribe('slotsUpdates');
      case 'signatureSubscribe':
        return (req) => this.subscribeSignature(req, socket);
      case 'signatureUnsubscribe':
        return unsubscribe('signature');
      case 'logsSubscribe':
        return (req) => this.subscribeLogs(req, socket);
      case 'logsUnsubscribe':
        return unsubscribe('logs');
      default:
        return undefined;
    }
  }

  private subscribeSignature(req: Request, socket: WebSocket): number {
    const p = positional(req.params, 2, 1);
    if (typeof p[0] !== 'string' || !isBase58Of(p[0], 64)) throw invalidParams('Invalid Request: Invalid signature provided');
    const sig = p[0];
    const c = config(p, 1);
    const sub: SignatureSub = {
      kind: 'signature',
      socket,
      id: this.nextId++,
      signature: sig,
      commitment: commitment(c),
      received: bool(c, 'enableReceivedNotification', false),
    };
    this.add(sub);
    // Already there? Notify right after the subscription id reaches the client.
    const record = this.cluster.ledger.record(sig);
    if (record && RANK[this.cluster.ledger.confirmationStatus(record.slot)] >= RANK[sub.commitment]) {
      queueMicrotask(() => this.signatureDone(sub, record));
    }
    return sub.id;
  }

  private subscribeLogs(req: Request, socket: WebSocket): number {
    const p = positional(req.params, 2, 1);
    const filter = p[0];
    let mentions: string | null;
    if (filter === 'all' || filter === 'allWithVotes') {
      mentions = null;
    } else if (typeof filter === 'object' && filter !== null && Array.isArray((filter as { mentions?: unknown }).mentions)) {
      const list = (filter as { mentions: unknown[] }).mentions;
      if (list.length !== 1) throw invalidParams('Invalid Request: Only 1 address supported');
      mentions = pubkey(list[0]);
    } else if (typeof filter === 'string') {
      throw invalidParams(`Invalid params: unknown variant \`${filter}\`, expected one of \`all\`, \`allWithVotes\`, \`mentions\`.`);
    } else {
      throw invalidType(filter, 'enum RpcTransactionLogsFilter');
    }
    return this.add({ kind: 'logs', socket, id: this.nextId++, mentions, commitment: commitment(config(p, 1)) });
  }

  private signatureDone(sub: SignatureSub, record: TxRecord): void {
    if (!this.subs.has(sub.id)) return;
    this.notify(sub, 'signatureNotification', { context: { slot: record.slot }, value: { err: record.err?.json ?? null } });
    this.remove(sub.id);
  }

  /**
   * Slot `slot` began. A slot its leader skips has no bank: no `slotNotification`, no
   * `firstShredReceived`/`createdBank` for it (as on an Agave RPC node, which never sees one);
   * the slot before it is still frozen, confirmed and rooted on time if it had a block.
   */
  private onSlot(slot: number, produced: boolean): void {
    const { ledger } = this.cluster;
    const parent = ledger.block(slot)?.parent ?? Math.max(0, slot - 1);
    const info = { parent, root: ledger.commitmentSlot('finalized'), slot };
    const [early, late] = this.slotsUpdates(slot, produced, parent);
    this.notifyUpdates(early);
    if (produced) for (const sub of this.subs.values()) if (sub.kind === 'slot') this.notify(sub, 'slotNotification', info);
    this.notifyUpdates(late);
    if (slot >= 1) for (const r of ledger.block(slot - 1)?.transactions ?? []) this.onCommitment(r, 'confirmed');
    if (slot >= 1 + FINALITY_DEPTH) for (const r of ledger.block(slot - 1 - FINALITY_DEPTH)?.transactions ?? []) this.onCommitment(r, 'finalized');
  }

  /**
   * The `slotsUpdatesNotification`s of slot `slot` beginning (see the module comment): those an
   * Agave node sends before its `slotNotification` (the first shred, the previous slot frozen
   * and completed), and those after (the bank created, confirmations, the root).
   */
  private slotsUpdates(slot: number, produced: boolean, parent: number): [Array<Record<string, unknown>>, Array<Record<string, unknown>>] {
    let any = false;
    for (const sub of this.subs.values()) any ||= sub.kind === 'slotsUpdates';
    if (!any) return [[], []];
    const { ledger } = this.cluster;
    const timestamp = Date.now();
    const updates: Array<Record<string, unknown>> = produced ? [{ type: 'firstShredReceived', slot, timestamp }] : [];
    const previous = slot >= 1 ? ledger.block(slot - 1) : undefined;
    if (previous) {
      const txs = previous.transactions;
      const failed = txs.filter((r) => r.err !== null).length;
      // Each transaction is its own entry here.
      const stats = { numTransactionEntries: txs.length, numSuccessfulTransactions: txs.length - failed, numFailedTransactions: failed, maxTransactionsPerEntry: Math.min(1, txs.length) };
      updates.push({ type: 'frozen', slot: slot - 1, timestamp, stats }, { type: 'completed', slot: slot - 1, timestamp });
    }
    const late: Array<Record<string, unknown>> = produced ? [{ type: 'createdBank', slot, parent, timestamp }] : [];
    if (previous) late.push({ type: 'optimisticConfirmation', slot: slot - 1, timestamp });
    if (slot >= 1 + FINALITY_DEPTH && ledger.block(slot - 1 - FINALITY_DEPTH)) late.push({ type: 'root', slot: slot - 1 - FINALITY_DEPTH, timestamp });
    return [updates, late];
  }

  private notifyUpdates(updates: Array<Record<string, unknown>>): void {
    if (updates.length === 0) return;
    for (const sub of this.subs.values()) {
      if (sub.kind === 'slotsUpdates') for (const u of updates) this.notify(sub, 'slotsUpdatesNotification', u);
    }
  }

  /**
   * A transaction landed. In the current slot it is processed; recorded into an earlier slot
   * (a late arrival at that slot's leader) it already has that slot's commitment.
   */
  private onLanded(record: TxRecord): void {
    for (const level of ['processed', 'confirmed', 'finalized'] as const) {
      if (record.slot <= this.cluster.ledger.commitmentSlot(level)) this.onCommitment(record, level);
    }
  }

  private onReceived(sig: string, slot: number): void {
    for (const id of this.bySignature.get(sig) ?? []) {
      const sub = this.subs.get(id);
      if (sub?.kind === 'signature' && sub.received) this.notify(sub, 'signatureNotification', { context: { slot }, value: 'receivedSignature' });
    }
  }

  /** `record` just reached `level`: notify the subscriptions waiting for exactly that level. */
  private onCommitment(record: TxRecord, level: Commitment): void {
    for (const id of [...(this.bySignature.get(record.signature) ?? [])]) {
      const sub = this.subs.get(id);
      if (sub?.kind === 'signature' && sub.commitment === level) this.signatureDone(sub, record);
    }
    for (const sub of this.subs.values()) {
      if (sub.kind !== 'logs' || sub.commitment !== level) continue;
      if (sub.mentions !== null && !record.accountKeys.includes(sub.mentions)) continue;
      this.notify(sub, 'logsNotification', {
        context: { slot: record.slot },
        value: { signature: record.signature, err: record.err?.json ?? null, logs: record.logs },
      });
    }
  }

  /** Close every socket and stop listening. */
  close(): Promise<void> {
    this.unlisten();
    for (const client of this.wss.clients) client.terminate();
    this.subs.clear();
    this.bySignature.clear();
    return new Promise((resolve) => this.wss.close(() => resolve()));
  }
}

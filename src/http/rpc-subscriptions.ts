/**
 * Solana's `signatureSubscribe` for the caller's own transactions and `slotSubscribe`, on a
 * WebSocket at the JSON-RPC paths (`ws://host:port/`, `/v1/rpc`), answered from the service's
 * status records, the changes the tracker publishes and its chain view: with
 * `getLatestBlockhash`, `getEpochInfo` and `getSignatureStatuses` over HTTP (`json-rpc.ts`), web3.js's `sendTransaction` + `confirmTransaction` and kit's
 * `sendAndConfirmTransactionFactory` work against Landfall alone.
 *
 * - The key is read from the upgrade request (`Authorization: Bearer`, `?api-key=`, `?api_key=`);
 *   without a valid one the upgrade is refused with 401. A socket counts as one of the
 *   account's streams (`MAX_STREAMS_PER_ACCOUNT`, shared with `/v1/stream`; 4029 past it).
 * - `signatureSubscribe [signature, config?]` → a subscription id; one `signatureNotification`
 *   (`{context:{slot}, value:{err}}`) once the transaction is confirmed or failed (at once if it
 *   already is), then the subscription ends, as on a node. The tracker settles at `confirmed`,
 *   so a subscription asking `finalized` is told at `confirmed`. A signature not known yet is
 *   watched (clients subscribe before they send, so as not to miss the notification); only this
 *   account's transactions ever notify, so another account's signature waits like one that never
 *   lands. An expired transaction never notifies, as on a node: the caller's block-height check
 *   ends its wait (`getBlockHeight`).
 * - `slotSubscribe []` → a subscription id; a `slotNotification` (`{parent, root, slot}`) each
 *   time the service's chain view moves to a new slot (kit's block-height watch uses it with
 *   `getEpochInfo`). `root` is not tracked: it is given as `slot − 32`, roughly where a root is.
 * - `signatureUnsubscribe [id]`, `slotUnsubscribe [id]` → true; other methods -32601 naming
 *   these. Notifications (no `id`, such as web3.js's `ping` heartbeat) are not answered.
 */
import * as uWS from 'uWebSockets.js';
import type { KeyCache } from '../accounts/key-cache.js';
import type { StatusRecord } from '../store/records.js';
import { RPC_CODES } from '../submission/refusals.js';
import { CLOSE, MAX_BUFFERED_BYTES, MAX_STREAMS_PER_ACCOUNT, upgradeKey, type StatusHub } from './stream.js';
import type { StreamSlots } from './stream-slots.js';

/** A subscribe call is ~150 bytes; nothing legitimate comes near this. */
const MAX_MESSAGE_BYTES = 16 * 1024;
/** Open subscriptions per socket (a bot waits on a few at a time; each costs a map entry). */
export const MAX_SUBSCRIPTIONS = 1024;

interface RpcSocket {
  accountId: string;
  closed: boolean;
  /** `slotSubscribe` ids, and the function that stops the slot feed (while any is open). */
  slotSubs: Set<number>;
  stopSlots: (() => void) | undefined;
  /** Subscription id → signature, and signature → its subscription ids. */
  subs: Map<number, string>;
  bySignature: Map<string, Set<number>>;
  release: (() => void) | undefined;
}

type Id = string | number | null;

/** `signatureNotification`'s result for a settled record, or null while it is not settled. */
function notificationValue(r: StatusRecord): { context: { slot: number }; value: { err: unknown } } | null {
  if (r.status === 'sent') return null;
  return { context: { slot: r.slot ?? 0 }, value: { err: r.status === 'failed' ? (r.err ?? 'UnknownError') : null } };
}

export interface RpcSubscriptionsOptions {
  keys: KeyCache;
  hub: StatusHub;
  slots: StreamSlots;
  /** The account's record of a signature, or undefined when it did not submit it. */
  ownStatus: (accountId: string, signature: string) => StatusRecord | undefined;
  /** The chain view's new slots; returns the function that stops them. */
  watchSlots: (listener: (slot: number) => void) => () => void;
}

/** How far behind the slot `slotNotification` puts the root (Landfall does not track roots). */
const ROOT_DISTANCE = 32;

/** Register the JSON-RPC WebSocket on `paths` of `app`. */
export function registerRpcSubscriptions(app: uWS.TemplatedApp, paths: readonly string[], o: RpcSubscriptionsOptions): void {
  let nextId = 1;
  const send = (ws: uWS.WebSocket<RpcSocket>, message: unknown) => {
    const state = ws.getUserData();
    if (state.closed) return;
    if (ws.getBufferedAmount() > MAX_BUFFERED_BYTES) return void ws.end(CLOSE.slowConsumer, 'slow consumer');
    ws.cork(() => ws.send(JSON.stringify(message)));
  };
  const notify = (ws: uWS.WebSocket<RpcSocket>, id: number, result: unknown) =>
    send(ws, { jsonrpc: '2.0', method: 'signatureNotification', params: { result, subscription: id } });
  const error = (id: Id, code: number, message: string) => ({ jsonrpc: '2.0', error: { code, message }, id });

  const stopSlots = (state: RpcSocket) => {
    state.stopSlots?.();
    state.stopSlots = undefined;
  };

  /** Remove one subscription; false if it was not open. */
  const drop = (state: RpcSocket, id: number): boolean => {
    const sig = state.subs.get(id);
    if (sig === undefined) return false;
    state.subs.delete(id);
    const ids = state.bySignature.get(sig);
    ids?.delete(id);
    if (ids?.size === 0) state.bySignature.delete(sig);
    return true;
  };

  /** The answer to one call (null for a notification, which gets none). */
  const answer = (ws: uWS.WebSocket<RpcSocket>, call: Record<string, unknown>): unknown => {
    const id = (call.id ?? null) as Id;
    if (!('id' in call)) return null;
    const params = Array.isArray(call.params) ? (call.params as unknown[]) : [];
    const state = ws.getUserData();
    switch (call.method) {
      case 'signatureSubscribe': {
        const sig = params[0];
        if (typeof sig !== 'string') return error(id, RPC_CODES.invalidParams, 'Invalid params: expected [signature, config?]');
        if (state.subs.size >= MAX_SUBSCRIPTIONS) return error(id, RPC_CODES.invalidParams, `too many subscriptions on this socket (max ${MAX_SUBSCRIPTIONS})`);
        const sub = nextId++;
        const rec = o.ownStatus(state.accountId, sig);
        const settled = rec && notificationValue(rec);
        if (settled) {
          // Answered first, then notified: the caller knows the id before its notification.
          queueMicrotask(() => notify(ws, sub, settled));
        } else {
          state.subs.set(sub, sig);
          const ids = state.bySignature.get(sig) ?? new Set<number>();
          state.bySignature.set(sig, ids.add(sub));
        }
        return { jsonrpc: '2.0', result: sub, id };
      }
      case 'signatureUnsubscribe': {
        const sub = params[0];
        if (typeof sub !== 'number' || !drop(state, sub)) return error(id, RPC_CODES.invalidParams, 'Invalid subscription id.');
        return { jsonrpc: '2.0', result: true, id };
      }
      case 'slotSubscribe': {
        const sub = nextId++;
        state.slotSubs.add(sub);
        state.stopSlots ??= o.watchSlots((slot) => {
          const result = { parent: Math.max(0, slot - 1), root: Math.max(0, slot - ROOT_DISTANCE), slot };
          for (const s of state.slotSubs) send(ws, { jsonrpc: '2.0', method: 'slotNotification', params: { result, subscription: s } });
        });
        return { jsonrpc: '2.0', result: sub, id };
      }
      case 'slotUnsubscribe': {
        const sub = params[0];
        if (typeof sub !== 'number' || !state.slotSubs.delete(sub)) return error(id, RPC_CODES.invalidParams, 'Invalid subscription id.');
        if (state.slotSubs.size === 0) stopSlots(state);
        return { jsonrpc: '2.0', result: true, id };
      }
      default:
        return error(
          id,
          RPC_CODES.methodNotFound,
          `Method not found: Landfall's WebSocket answers signatureSubscribe (this account's transactions), slotSubscribe and their unsubscribes`,
        );
    }
  };

  const behavior: uWS.WebSocketBehavior<RpcSocket> = {
    maxPayloadLength: MAX_MESSAGE_BYTES,
    maxBackpressure: MAX_BUFFERED_BYTES + 64 * 1024,
    closeOnBackpressureLimit: false,
    idleTimeout: 120,
    sendPingsAutomatically: true,
    upgrade: (res, req, context) => {
      const key = upgradeKey(req);
      const who = key === undefined ? undefined : o.keys.authenticate(key);
      if (!who) {
        res.cork(() => res.writeStatus('401 Unauthorized').writeHeader('content-type', 'application/json').end('{"error":"invalid or missing API key: pass api-key in the query or Authorization: Bearer"}'));
        return;
      }
      const state: RpcSocket = {
        accountId: who.account.id,
        closed: false,
        subs: new Map(),
        bySignature: new Map(),
        slotSubs: new Set(),
        stopSlots: undefined,
        release: undefined,
      };
      res.upgrade(state, req.getHeader('sec-websocket-key'), req.getHeader('sec-websocket-protocol'), req.getHeader('sec-websocket-extensions'), context);
    },
    open: (ws) => {
      const state = ws.getUserData();
      if (!o.slots.tryOpen(state.accountId, MAX_STREAMS_PER_ACCOUNT)) {
        return void ws.end(CLOSE.tooManyStreams, `this account already has ${MAX_STREAMS_PER_ACCOUNT} streams open`);
      }
      const unsubscribe = o.hub.subscribe(state.accountId, (record) => {
        const ids = state.bySignature.get(record.signature);
        const value = ids && notificationValue(record);
        if (!ids || !value) return;
        for (const id of [...ids]) {
          drop(state, id);
          notify(ws, id, value);
        }
      });
      state.release = () => {
        unsubscribe();
        o.slots.close(state.accountId);
      };
    },
    message: (ws, message, isBinary) => {
      let payload: unknown;
      try {
        payload = isBinary ? undefined : JSON.parse(Buffer.from(message).toString('utf8'));
      } catch {
        payload = undefined;
      }
      if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
        return send(ws, error(null, RPC_CODES.parseError, 'Parse error'));
      }
      const reply = answer(ws, payload as Record<string, unknown>);
      if (reply !== null) send(ws, reply);
    },
    close: (ws) => {
      const state = ws.getUserData();
      state.closed = true;
      state.release?.();
      stopSlots(state);
    },
  };
  for (const path of paths) app.ws<RpcSocket>(path, behavior);
}

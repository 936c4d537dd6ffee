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
 *
 * What one account can make a socket cost (issue 33: one starter socket with 45,000 slot
 * subscriptions wrote 112k notifications a second and took other clients' `/ping` p99 from
 * ~2 ms to 111 ms; 10 sockets × 1,024 signature subscriptions of 15 KiB strings held 170 MiB):
 * - opening a socket and every message draw one token of the account's query budget (the HTTP
 *   queries' budget): past it the upgrade is 429, and the first message of a run past it answers
 *   -32053 "Rate limit exceeded" (the rest of the run no answer); a socket that sends
 *   {@link MAX_REFUSED_STREAK} messages in a row past its budget is closed with 4429, so a
 *   flood costs the server a refused take a message, never a parse or a write;
 * - `signatureSubscribe` takes only a signature (base58 of 64 bytes): at most 88 characters kept;
 * - at most {@link MAX_SUBSCRIPTIONS} signature and {@link MAX_SLOT_SUBSCRIPTIONS} slot
 *   subscriptions per socket, {@link MAX_ACCOUNT_SUBSCRIPTIONS} per account (on this thread),
 *   and the account's sockets are counted with its `/v1/stream`s ({@link MAX_STREAMS_PER_ACCOUNT});
 *   so a slot's burst is at most 4 frames per socket, corked into one write;
 * - the key is checked on every message, and a sweep closes the socket (4001) within
 *   {@link REVOCATION_CHECK_MS} of its key's revocation, as `/v1/stream`'s does;
 * - subscription ids are random, not a counter shared by the thread's sockets (which told any
 *   client how many subscriptions the other accounts opened meanwhile).
 */
import { randomInt } from 'node:crypto';
import * as uWS from 'uWebSockets.js';
import type { KeyCache } from '../accounts/key-cache.js';
import { base58Decode } from '../native.js';
import type { AccountRecord, StatusRecord } from '../store/records.js';
import { RPC_CODES } from '../submission/refusals.js';
import { CLOSE, MAX_BUFFERED_BYTES, MAX_STREAMS_PER_ACCOUNT, REVOCATION_CHECK_MS, upgradeKey, type StatusHub } from './stream.js';
import type { StreamSlots } from './stream-slots.js';

/** A subscribe call is ~150 bytes; nothing legitimate comes near this. */
const MAX_MESSAGE_BYTES = 16 * 1024;
/** Open signature subscriptions per socket (a bot waits on a few at a time; each costs a map entry). */
export const MAX_SUBSCRIPTIONS = 1024;
/** Open slot subscriptions per socket (a client needs one; each slot costs a frame per subscription). */
export const MAX_SLOT_SUBSCRIPTIONS = 4;
/** Open subscriptions (both kinds) of one account, all its sockets on this thread together. */
export const MAX_ACCOUNT_SUBSCRIPTIONS = 4096;
/** Messages refused for the budget in a row after which the socket is closed (4429). */
export const MAX_REFUSED_STREAK = 64;

interface RpcSocket {
  accountId: string;
  /** The key the socket was opened with (checked by the revocation sweep, and whenever keys changed). */
  key: string;
  /** Its account as last read, and the key generation it was read under. */
  account: AccountRecord;
  generation: number;
  closed: boolean;
  /** Messages refused for the budget since the last one granted. */
  refusedStreak: number;
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
  /** Take one token of the account's query budget: null if granted, else the refusal's reason. */
  takeQuery: (account: AccountRecord) => string | null;
}

/** True for a transaction signature: base58 of exactly 64 bytes (64 to 88 characters). */
export function isSignature(s: string): boolean {
  if (s.length < 64 || s.length > 88) return false;
  try {
    return base58Decode(s).length === 64;
  } catch {
    return false;
  }
}

/** How far behind the slot `slotNotification` puts the root (Landfall does not track roots). */
const ROOT_DISTANCE = 32;

/** Register the JSON-RPC WebSocket on `paths` of `app`. */
export function registerRpcSubscriptions(app: uWS.TemplatedApp, paths: readonly string[], o: RpcSubscriptionsOptions): void {
  /** Open subscriptions per account on this thread (entries removed at zero). */
  const perAccount = new Map<string, number>();
  const count = (state: RpcSocket, delta: number) => {
    const n = (perAccount.get(state.accountId) ?? 0) + delta;
    if (n <= 0) perAccount.delete(state.accountId);
    else perAccount.set(state.accountId, n);
  };
  /** A fresh subscription id for this socket: random, so it tells nothing of other sockets. */
  const newId = (state: RpcSocket): number => {
    for (;;) {
      const id = randomInt(1, 2 ** 47);
      if (!state.subs.has(id) && !state.slotSubs.has(id)) return id;
    }
  };
  const open = new Set<uWS.WebSocket<RpcSocket>>();
  const endWith = (ws: uWS.WebSocket<RpcSocket>, code: number, reason: string) => {
    if (!ws.getUserData().closed) ws.end(code, reason);
  };
  // Revocation: a key revoked anywhere (this process or the admin CLI) closes its open sockets,
  // as it does `/v1/stream`'s: slot notifications need no call that would notice otherwise.
  let generation = o.keys.generation();
  setInterval(() => {
    if (open.size === 0) return;
    const now = o.keys.generation();
    if (now === generation) return;
    generation = now;
    for (const ws of open) if (!o.keys.authenticate(ws.getUserData().key)) endWith(ws, CLOSE.unauthorized, 'API key revoked');
  }, REVOCATION_CHECK_MS).unref();
  // A plan change (a new budget) reaches open sockets within a second.
  setInterval(() => {
    for (const ws of open) {
      const state = ws.getUserData();
      const who = o.keys.authenticate(state.key);
      if (who) state.account = who.account;
    }
  }, 1_000).unref();

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
    count(state, -1);
    const ids = state.bySignature.get(sig);
    ids?.delete(id);
    if (ids?.size === 0) state.bySignature.delete(sig);
    return true;
  };

  const accountFull = (state: RpcSocket) => (perAccount.get(state.accountId) ?? 0) >= MAX_ACCOUNT_SUBSCRIPTIONS;
  const tooMany = (id: Id, what: string, max: number) => error(id, RPC_CODES.invalidParams, `too many ${what} (max ${max})`);

  /** The answer to one call (null for a notification, which gets none). */
  const answer = (ws: uWS.WebSocket<RpcSocket>, call: Record<string, unknown>): unknown => {
    const id = (call.id ?? null) as Id;
    if (!('id' in call)) return null;
    const params = Array.isArray(call.params) ? (call.params as unknown[]) : [];
    const state = ws.getUserData();
    switch (call.method) {
      case 'signatureSubscribe': {
        const sig = params[0];
        if (typeof sig !== 'string' || !isSignature(sig)) return error(id, RPC_CODES.invalidParams, 'Invalid params: expected [signature, config?], the signature base58 of 64 bytes');
        if (state.subs.size >= MAX_SUBSCRIPTIONS) return tooMany(id, 'signature subscriptions on this socket', MAX_SUBSCRIPTIONS);
        if (accountFull(state)) return tooMany(id, 'subscriptions of this account', MAX_ACCOUNT_SUBSCRIPTIONS);
        const sub = newId(state);
        const rec = o.ownStatus(state.accountId, sig);
        const settled = rec && notificationValue(rec);
        if (settled) {
          // Answered first, then notified: the caller knows the id before its notification.
          queueMicrotask(() => notify(ws, sub, settled));
        } else {
          state.subs.set(sub, sig);
          count(state, 1);
          const ids = state.bySignature.get(sig) ?? new Set<number>();
          state.bySignature.set(sig, ids.add(sub));
          // On an ingress thread the main thread may not forward this account's changes yet (the
          // socket opened a moment ago): read the status again once it does, so a change made in
          // between is not missed.
          void o.hub.forwarded().then(() => {
            if (state.closed || !state.subs.has(sub)) return;
            const now = o.ownStatus(state.accountId, sig);
            const value = now && notificationValue(now);
            if (!value) return;
            drop(state, sub);
            notify(ws, sub, value);
          });
        }
        return { jsonrpc: '2.0', result: sub, id };
      }
      case 'signatureUnsubscribe': {
        const sub = params[0];
        if (typeof sub !== 'number' || !drop(state, sub)) return error(id, RPC_CODES.invalidParams, 'Invalid subscription id.');
        return { jsonrpc: '2.0', result: true, id };
      }
      case 'slotSubscribe': {
        if (state.slotSubs.size >= MAX_SLOT_SUBSCRIPTIONS) return tooMany(id, 'slot subscriptions on this socket', MAX_SLOT_SUBSCRIPTIONS);
        if (accountFull(state)) return tooMany(id, 'subscriptions of this account', MAX_ACCOUNT_SUBSCRIPTIONS);
        const sub = newId(state);
        state.slotSubs.add(sub);
        count(state, 1);
        state.stopSlots ??= o.watchSlots((slot) => {
          if (state.closed) return;
          if (ws.getBufferedAmount() > MAX_BUFFERED_BYTES) return void ws.end(CLOSE.slowConsumer, 'slow consumer');
          // One serialisation per slot, the socket's (at most 4) frames in one corked write.
          const result = JSON.stringify({ parent: Math.max(0, slot - 1), root: Math.max(0, slot - ROOT_DISTANCE), slot });
          ws.cork(() => {
            for (const s of state.slotSubs) ws.send(`{"jsonrpc":"2.0","method":"slotNotification","params":{"result":${result},"subscription":${s}}}`);
          });
        });
        return { jsonrpc: '2.0', result: sub, id };
      }
      case 'slotUnsubscribe': {
        const sub = params[0];
        if (typeof sub !== 'number' || !state.slotSubs.delete(sub)) return error(id, RPC_CODES.invalidParams, 'Invalid subscription id.');
        count(state, -1);
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
      // Opening a socket draws a token too: an account whose budget is spent (its sockets just
      // closed with 4429) is refused here, cheaply, rather than let reopen and flood again.
      const refused = o.takeQuery(who.account);
      if (refused !== null) {
        res.cork(() => res.writeStatus('429 Too Many Requests').writeHeader('retry-after', '1').writeHeader('content-type', 'application/json').end(JSON.stringify({ error: `Rate limit exceeded: ${refused}` })));
        return;
      }
      const state: RpcSocket = {
        accountId: who.account.id,
        account: who.account,
        generation: o.keys.generation(),
        key: key!,
        closed: false,
        refusedStreak: 0,
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
      open.add(ws);
      state.release = () => {
        unsubscribe();
        o.slots.close(state.accountId);
        open.delete(ws);
      };
    },
    message: (ws, message, isBinary) => {
      const state = ws.getUserData();
      // The key again only when some key changed since it was read (a generation load, not a
      // hash): revoked, the socket is closed at once, not at the next sweep. The account (its
      // plan) is read again by the sweep's ticks.
      const generation = o.keys.generation();
      if (generation !== state.generation) {
        const who = o.keys.authenticate(state.key);
        if (!who) return endWith(ws, CLOSE.unauthorized, 'API key revoked');
        state.account = who.account;
        state.generation = generation;
      }
      // Every message draws a token; past the budget only the first of a run is answered (a
      // flood then costs a refused take each, no parse and no write), and a run of
      // MAX_REFUSED_STREAK closes the socket.
      const refused = o.takeQuery(state.account);
      if (refused !== null) {
        if (++state.refusedStreak >= MAX_REFUSED_STREAK) {
          return endWith(ws, CLOSE.rateLimited, `${MAX_REFUSED_STREAK} messages in a row past the query budget`);
        }
        if (state.refusedStreak > 1) return;
        return send(ws, error(null, RPC_CODES.rateLimited, `Rate limit exceeded: ${refused}`));
      }
      state.refusedStreak = 0;
      let payload: unknown;
      try {
        payload = isBinary ? undefined : JSON.parse(Buffer.from(message).toString('utf8'));
      } catch {
        payload = undefined;
      }
      const call = typeof payload === 'object' && payload !== null && !Array.isArray(payload) ? (payload as Record<string, unknown>) : null;
      if (call === null) return send(ws, error(null, RPC_CODES.parseError, 'Parse error'));
      const reply = answer(ws, call);
      if (reply !== null) send(ws, reply);
    },
    close: (ws) => {
      const state = ws.getUserData();
      state.closed = true;
      state.release?.();
      stopSlots(state);
      count(state, -(state.subs.size + state.slotSubs.size));
      state.subs.clear();
      state.bySignature.clear();
      state.slotSubs.clear();
    },
  };
  for (const path of paths) app.ws<RpcSocket>(path, behavior);
}

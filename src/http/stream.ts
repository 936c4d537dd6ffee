/**
 * `/v1/stream`: a WebSocket (uWebSockets.js native) that pushes every status change of the
 * caller's transactions as it happens, so a bot never has to poll `/v1/status`.
 *
 * Protocol (JSON text frames):
 * - Authenticate with `Authorization: Bearer <key>` or `?api-key=` / `?api_key=` on the upgrade
 *   request, or with a first message `{"type":"auth","api_key":"<key>"}` within
 *   {@link AUTH_TIMEOUT_MS}. The server answers `{"type":"ready"}` once pushes are live.
 * - Then `{"type":"status", ...}` for each change: the spec §2.4 record (+ `expired: true` once
 *   the transaction can no longer land, + `tip_lamports` and `submit_slot`), first `sent` when the service accepts a transaction,
 *   then `confirmed` / `failed` / expired. Client messages after `ready` are ignored.
 * - Refusals close the socket with a code in the 4000 range and a human-readable reason
 *   ({@link CLOSE}).
 *
 * Back-pressure: a stream is a live feed, not a queue. Once the kernel's socket buffer is full
 * uWS keeps the rest in user space; a consumer that lets more than {@link MAX_BUFFERED_BYTES}
 * pile up there is closed with 4008 "slow consumer" rather than buffered without bound.
 */
import * as uWS from 'uWebSockets.js';
import { KeyedListeners } from '../client/keyed-listeners.js';
import type { KeyCache } from '../accounts/key-cache.js';
import { bearerKey } from './auth.js';
import type { StreamSlots } from './stream-slots.js';
import type { StatusRecord } from '../store/records.js';

/** Time an unauthenticated socket gets to send its auth message. */
export const AUTH_TIMEOUT_MS = 5_000;
/** Open streams per account (all its keys together). */
export const MAX_STREAMS_PER_ACCOUNT = 10;
/**
 * User-space bytes a stream may have waiting (beyond the kernel's own socket buffer, which on
 * Linux loopback alone holds about 4 MiB) before it counts as a slow consumer: about a thousand
 * status records.
 */
export const MAX_BUFFERED_BYTES = 256 * 1024;
/**
 * uWS's own hard cap, above which it silently drops frames. It sits above our bound with room
 * for the close frame, so a slow consumer that resumes reading still learns why it was closed.
 */
const UWS_MAX_BACKPRESSURE = MAX_BUFFERED_BYTES + 64 * 1024;
/** The auth message is the only thing a client sends; nothing legitimate comes near this. */
export const MAX_MESSAGE_BYTES = 1024;
/**
 * uWS's own cap on a received message. uWS refuses a frame over its cap from the frame header,
 * before reading it, by dropping the TCP connection: the client sees 1006 and no close frame.
 * So uWS's cap sits above {@link MAX_MESSAGE_BYTES} and the `message` handler closes a message
 * between the two with 1009 ("message too big") and a close frame. Past this cap the drop stays
 * (buffering a larger frame to answer it would let any client make the server hold it): 16 KiB,
 * uWS's default, is what a socket may make the server buffer.
 */
export const UWS_MAX_PAYLOAD = 16 * 1024;

/** Close codes (private-use range 4000–4999) and when they are sent. */
export const CLOSE = {
  /** The first message was not `{"type":"auth","api_key":"…"}`. */
  badMessage: 4000,
  /** Missing, invalid or revoked key, or no auth message in time. */
  unauthorized: 4001,
  /** More than {@link MAX_BUFFERED_BYTES} waiting: the client does not read fast enough. */
  slowConsumer: 4008,
  /** The account already has {@link MAX_STREAMS_PER_ACCOUNT} streams open. */
  tooManyStreams: 4029,
  /** A JSON-RPC WebSocket kept calling with its account's query budget spent (`rpc-subscriptions.ts`). */
  rateLimited: 4429,
  /** A message over {@link MAX_MESSAGE_BYTES} (RFC 6455 "message too big"). */
  messageTooBig: 1009,
} as const;

/**
 * Status changes fanned out to the open streams of the account that owns each transaction.
 * `startService` publishes the acceptance (`sent`) and every change the tracker writes; the
 * stream sockets subscribe by account id, so a publish costs one map lookup when nobody listens.
 */
export class StatusHub {
  private readonly listeners = new KeyedListeners<string, StatusRecord>((e) =>
    // One failing socket must not stop the others, nor the tracker that published.
    process.stderr.write(`landfall: status stream listener failed: ${(e as Error)?.stack ?? e}\n`),
  );

  /**
   * Told whenever a stream opens or closes here, with the open streams per account and a sequence
   * number (an ingress thread tells the main thread, which then forwards only those accounts'
   * changes to it, and answers with the number: {@link seenUpTo}).
   */
  onAccountsChange: ((streams: Array<[accountId: string, open: number]>, seq: number) => void) | null = null;
  private readonly accounts = new Map<string, number>();
  /** The last `onAccountsChange` told, and the last the main thread said it applied. */
  private told = 0;
  private seen = 0;
  private readonly waiting: Array<{ seq: number; resolve: () => void }> = [];

  /** Listen to the changes of `accountId`'s transactions; returns the unsubscribe function. */
  subscribe(accountId: string, listener: (record: StatusRecord) => void): () => void {
    const remove = this.listeners.add(accountId, listener);
    this.count(accountId, +1);
    let removed = false;
    return () => {
      if (removed) return;
      removed = true;
      remove();
      this.count(accountId, -1);
    };
  }

  private count(accountId: string, delta: number): void {
    const n = (this.accounts.get(accountId) ?? 0) + delta;
    if (n > 0) this.accounts.set(accountId, n);
    else this.accounts.delete(accountId);
    if (this.onAccountsChange) this.onAccountsChange([...this.accounts], ++this.told);
  }

  /**
   * Resolves once every subscription made so far gets every change: at once where changes are
   * published here directly (the main thread, or no ingress threads); on an ingress thread once
   * the main thread has applied the accounts map that includes them ({@link seenUpTo}). Until
   * then a change made on the main thread is not forwarded here — a stream that said `ready`, or a
   * subscription that read the status, before it could miss that change for good.
   */
  forwarded(): Promise<void> {
    if (this.onAccountsChange === null || this.seen >= this.told) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push({ seq: this.told, resolve }));
  }

  /** The main thread applied the accounts map of `onAccountsChange` call `seq` (and every one before). */
  seenUpTo(seq: number): void {
    this.seen = Math.max(this.seen, seq);
    while (this.waiting.length > 0 && this.waiting[0]!.seq <= this.seen) this.waiting.shift()!.resolve();
  }

  /** Open subscriptions of one account. */
  subscribers(accountId: string): number {
    return this.listeners.count(accountId);
  }

  /** Deliver `record` to its account's listeners. */
  publish(record: StatusRecord): void {
    this.listeners.emit(record.accountId, record);
  }
}

/**
 * How often each thread looks for revoked keys among its open streams: a revocation closes
 * them with 4001 within this (plus one check), on every thread. The look is one LMDB read of the
 * revocation generation; the streams are re-checked only when it changed.
 */
export const REVOCATION_CHECK_MS = 250;

/** Per-socket state. uWS owns the socket; after `close` no method of it may be called. */
interface StreamSocket {
  /** The key from the upgrade request (header or query) or the auth message, once known. */
  key: string | undefined;
  authenticated: boolean;
  closed: boolean;
  authTimer: NodeJS.Timeout | undefined;
  unsubscribe: (() => void) | undefined;
}

export function upgradeKey(req: uWS.HttpRequest): string | undefined {
  const header = bearerKey(req.getHeader('authorization'));
  if (header) return header;
  const query = req.getQuery();
  if (!query) return undefined;
  const params = new URLSearchParams(query);
  return params.get('api-key') ?? params.get('api_key') ?? undefined;
}

/** The one client message: `{"type":"auth","api_key":"…"}`; its key, or null if it is not that. */
function authMessageKey(message: ArrayBuffer, isBinary: boolean): string | null {
  if (isBinary) return null;
  try {
    const m = JSON.parse(Buffer.from(message).toString('utf8')) as unknown;
    if (typeof m !== 'object' || m === null) return null;
    const { type, api_key } = m as Record<string, unknown>;
    return type === 'auth' && typeof api_key === 'string' ? api_key : null;
  } catch {
    return null;
  }
}

/**
 * Register `/v1/stream` on `app`. `view` renders a record as the status endpoint does (plus the
 * tip and the slot at acceptance), so a pushed record holds the fetched one.
 */
export function registerStream(
  app: uWS.TemplatedApp,
  keys: KeyCache,
  hub: StatusHub,
  slots: StreamSlots,
  view: (r: StatusRecord) => Record<string, unknown>,
): void {
  const endWith = (ws: uWS.WebSocket<StreamSocket>, code: number, reason: string) => {
    if (!ws.getUserData().closed) ws.end(code, reason);
  };

  /** Close a socket whose unsent backlog is past the bound; true if it was. */
  const overloaded = (ws: uWS.WebSocket<StreamSocket>): boolean => {
    const buffered = ws.getBufferedAmount();
    if (buffered <= MAX_BUFFERED_BYTES) return false;
    endWith(ws, CLOSE.slowConsumer, `slow consumer: ${buffered} bytes unread (limit ${MAX_BUFFERED_BYTES})`);
    return true;
  };

  // Revocation: a key revoked anywhere (this process or the admin CLI) closes its open streams.
  const open = new Set<uWS.WebSocket<StreamSocket>>();
  let generation = keys.generation();
  const revocations = setInterval(() => {
    if (open.size === 0) return;
    const now = keys.generation();
    if (now === generation) return;
    generation = now;
    for (const ws of open) {
      const state = ws.getUserData();
      if (!state.closed && state.key !== undefined && !keys.authenticate(state.key)) endWith(ws, CLOSE.unauthorized, 'API key revoked');
    }
  }, REVOCATION_CHECK_MS);
  revocations.unref();

  const authorize = (ws: uWS.WebSocket<StreamSocket>, key: string) => {
    const state = ws.getUserData();
    clearTimeout(state.authTimer);
    const who = keys.authenticate(key);
    if (!who) return endWith(ws, CLOSE.unauthorized, 'invalid or revoked API key');
    const accountId = who.account.id;
    // Counted across every ingress thread of the process (one shared counter per account).
    if (!slots.tryOpen(accountId, MAX_STREAMS_PER_ACCOUNT)) {
      return endWith(ws, CLOSE.tooManyStreams, `this account already has ${MAX_STREAMS_PER_ACCOUNT} streams open`);
    }
    state.authenticated = true;
    state.key = key;
    open.add(ws);
    const unsubscribe = hub.subscribe(accountId, (record) => {
      if (state.closed || overloaded(ws)) return;
      const message = JSON.stringify({ type: 'status', ...view(record) });
      // Pushes come from the tracker's callbacks, outside any uWS handler: cork so the frame
      // goes out in one write.
      ws.cork(() => ws.send(message));
    });
    state.unsubscribe = () => {
      unsubscribe();
      slots.close(accountId);
      open.delete(ws);
    };
    // `ready` promises every change from here on: said only once this thread is sure to get them
    // (a client reads the status once after `ready`, and relies on the pushes for the rest).
    void hub.forwarded().then(() => {
      if (!state.closed) ws.cork(() => ws.send('{"type":"ready"}'));
    });
  };

  app.ws<StreamSocket>('/v1/stream', {
    maxPayloadLength: UWS_MAX_PAYLOAD,
    maxBackpressure: UWS_MAX_BACKPRESSURE,
    closeOnBackpressureLimit: false,
    idleTimeout: 120,
    sendPingsAutomatically: true,
    upgrade: (res, req, context) => {
      const state: StreamSocket = { key: upgradeKey(req), authenticated: false, closed: false, authTimer: undefined, unsubscribe: undefined };
      res.upgrade(state, req.getHeader('sec-websocket-key'), req.getHeader('sec-websocket-protocol'), req.getHeader('sec-websocket-extensions'), context);
    },
    open: (ws) => {
      const state = ws.getUserData();
      if (state.key !== undefined) return authorize(ws, state.key);
      state.authTimer = setTimeout(
        () => endWith(ws, CLOSE.unauthorized, `no API key: send {"type":"auth","api_key":"<key>"} within ${AUTH_TIMEOUT_MS / 1000} s or pass api-key in the query`),
        AUTH_TIMEOUT_MS,
      );
    },
    message: (ws, message, isBinary) => {
      if (message.byteLength > MAX_MESSAGE_BYTES) return endWith(ws, CLOSE.messageTooBig, `message of ${message.byteLength} bytes exceeds the ${MAX_MESSAGE_BYTES}-byte limit`);
      if (ws.getUserData().authenticated) return;
      const key = authMessageKey(message, isBinary);
      if (key === null) return endWith(ws, CLOSE.badMessage, 'the first message must be {"type":"auth","api_key":"<key>"}');
      authorize(ws, key);
    },
    // uWS has already queued the pong: a client that pings but never reads fills the buffer too.
    ping: (ws) => {
      overloaded(ws);
    },
    close: (ws) => {
      const state = ws.getUserData();
      state.closed = true;
      clearTimeout(state.authTimer);
      state.unsubscribe?.();
    },
  });
}

/**
 * The client side of `/v1/stream`: one WebSocket carrying every status change of the account's
 * transactions, dispatched by signature so a thousand waiters cost one map lookup per message.
 */
import WebSocket from 'ws';
import { KeyedListeners } from './keyed-listeners.js';
import { LandfallStreamError, type StatusRecord } from './types.js';

type Listener = (record: StatusRecord) => void;

/**
 * A listener that throws is reported as an uncaught exception, as Node's `EventTarget` does,
 * after the other listeners have run: the stream keeps dispatching.
 */
const rethrow = (e: unknown) =>
  queueMicrotask(() => {
    throw e;
  });

export class StatusStream {
  /** Resolves once the server has authenticated the stream and pushes are live. */
  readonly ready: Promise<void>;
  private readonly ws: WebSocket;
  /** Listeners of every record are kept under the key `null`. */
  private readonly listeners = new KeyedListeners<string | null, StatusRecord>(rethrow);
  private readonly closeListeners = new Set<(error: LandfallStreamError) => void>();
  private closedWith: LandfallStreamError | null = null;

  /** `url`: the stream's `ws://` / `wss://` address; the key travels in the Authorization header. */
  constructor(url: string, apiKey: string) {
    this.ws = new WebSocket(url, { headers: { authorization: `Bearer ${apiKey}` }, perMessageDeflate: false });
    this.ready = new Promise((resolve, reject) => {
      this.ws.on('message', (data) => {
        let m: { type?: unknown } & Partial<StatusRecord>;
        try {
          m = JSON.parse(String(data)) as typeof m;
        } catch {
          return; // not ours to interpret; the protocol only sends JSON
        }
        if (m.type === 'ready') resolve();
        else if (m.type === 'status' && typeof m.signature === 'string') this.dispatch(m as StatusRecord & { type: string });
      });
      this.ws.on('close', (code, reason) => {
        const error = new LandfallStreamError(code, String(reason));
        this.closedWith = error;
        reject(error);
        for (const l of this.closeListeners) l(error);
        this.closeListeners.clear();
      });
    });
    // `close` always follows a socket error and carries what a caller needs.
    this.ws.on('error', () => {});
    // A stream nobody awaits must not surface as an unhandled rejection when it closes.
    this.ready.catch(() => {});
  }

  /** Every status change of the account's transactions. Returns the unsubscribe function. */
  onStatus(listener: Listener): () => void {
    return this.listeners.add(null, listener);
  }

  /** The changes of one transaction. Returns the unsubscribe function. */
  onSignature(signature: string, listener: Listener): () => void {
    return this.listeners.add(signature, listener);
  }

  /** Called once when the stream closes (at once if it already has). */
  onClose(listener: (error: LandfallStreamError) => void): () => void {
    if (this.closedWith) {
      listener(this.closedWith);
      return () => {};
    }
    this.closeListeners.add(listener);
    return () => this.closeListeners.delete(listener);
  }

  /** Why the stream closed, or null while it is open (or opening). */
  get closed(): LandfallStreamError | null {
    return this.closedWith;
  }

  close(): void {
    this.ws.close(1000);
  }

  private dispatch(message: StatusRecord & { type: string }): void {
    const { type: _type, ...record } = message;
    this.listeners.emit(null, record);
    this.listeners.emit(record.signature, record);
  }
}

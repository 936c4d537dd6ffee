/**
 * A raw PubSub client (the `ws` package) for tests that check exact frames: it keeps every frame
 * and waits (bounded) for one matching a predicate.
 */
import WebSocket from 'ws';
import { waitFor } from './localnet.js';

export interface Frame {
  jsonrpc: string;
  id?: number;
  result?: unknown;
  error?: { code: number; message: string };
  method?: string;
  params?: { result: unknown; subscription: number };
}

/** A WebSocket client that keeps every frame and can wait for one matching a predicate. */
export class Client {
  readonly frames: Frame[] = [];
  private nextId = 1;
  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (data) => this.frames.push(JSON.parse(data.toString()) as Frame));
  }

  static open(url: string): Promise<Client> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      ws.once('open', () => resolve(new Client(ws)));
      ws.once('error', reject);
    });
  }

  /** Send a request; resolves with its reply frame. */
  async call(method: string, params?: unknown[]): Promise<Frame> {
    const id = this.nextId++;
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, ...(params !== undefined && { params }) }));
    return this.next((f) => f.id === id);
  }

  sendRaw(text: string): void {
    this.ws.send(text);
  }

  next(match: (f: Frame) => boolean, timeoutMs?: number, what = 'a matching WebSocket frame'): Promise<Frame> {
    return waitFor(what, () => this.frames.find(match), timeoutMs);
  }

  notifications(subscription: number): Frame[] {
    return this.frames.filter((f) => f.params?.subscription === subscription);
  }

  close(): void {
    this.ws.close();
  }
}

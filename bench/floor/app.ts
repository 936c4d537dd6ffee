/**
 * The floor: the least a sender built from Landfall's own parts must do per `POST /v1/send`, so the
 * service's CPU per send can be read as a multiple of it (issue "Speed, round two": service ÷ floor).
 *
 * uWebSockets.js → `JSON.parse` → the native `inspect` (base64, parse, ed25519 verify, tips) → the
 * minimum tip → `QuicClient.sendFirst` to the current and next leader (the service's fan-out of 2)
 * → the answer; then, once per slot, every transaction with rounds left is written again to that
 * slot's two leaders in one `sendMany`, 3 rounds (the service's default `max_retries`), never twice
 * in one slot: 2 + 3 × 2 = 8 QUIC writes per send against the sink, as the service does there.
 * Connections to the next 8 leaders are opened ahead, as the service's engine does. The chain view
 * is the service's own `LeaderTracker` (slot, leader schedule, TPU addresses: per slot, not per send).
 *
 * What it leaves out, and the service does: API key hashing and account lookup, token buckets and
 * the in-flight cap, the store (status record, acknowledgement log, trace), confirmation tracking,
 * metrics and logs, worker threads. One thread (the main one) serves HTTP, at the niceness the
 * service gives its request threads (`ingressNice`); first sends go out from the addon's own
 * thread at its default niceness, as the service's do.
 */
import * as uWS from 'uWebSockets.js';
import { inspect, QuicClient, setThreadNice, TipSet } from '../../native/index.js';
import { LeaderTracker } from '../../src/delivery/leaders.js';
import { DEFAULT_CONFIG } from '../../src/config.js';
import { QUIC_QUEUE_PER_PEER } from '../../src/delivery/engine.js';
import { FIRST_SEND_BUDGET_MS, tpuTargets } from '../../src/delivery/first-send.js';

/** The service's defaults: leaders per send (its config's), rebroadcast rounds, leaders pre-warmed each slot. */
const FANOUT = DEFAULT_CONFIG.fanout;
const ROUNDS = 3;
const PREWARM = 8;

export interface FloorOptions {
  rpcUrl: string;
  wsUrl: string;
  tipAddresses: string[];
  /** The one API key (compared as a string: no hash, no lookup). */
  apiKey: string;
  minTipLamports: bigint;
  /** 32-byte QUIC identity seed. */
  identity: Uint8Array;
}

export interface Floor {
  url: string;
  /** Transactions with rebroadcast rounds left. */
  inFlight(): number;
  close(): Promise<void>;
}

interface Flight {
  wire: Buffer;
  roundsLeft: number;
  lastSlot: number;
}

export async function startFloor(opts: FloorOptions): Promise<Floor> {
  const priority = setThreadNice(DEFAULT_CONFIG.ingressNice, "the floor's request thread");
  if (priority.error != null) console.warn(priority.error);
  const tips = new TipSet(opts.tipAddresses);
  const client = new QuicClient({ identity: opts.identity, maxQueuePerPeer: QUIC_QUEUE_PER_PEER });
  const bearer = `Bearer ${opts.apiKey}`;
  let targets: string[] = [];
  let slot = 0;
  let flights: Flight[] = [];

  const onSlot = (s: number): void => {
    slot = s;
    targets = tpuTargets(leaders.upcoming(FANOUT));
    client.prewarm(tpuTargets(leaders.upcoming(PREWARM, () => true, 256)));
    const due: Buffer[] = [];
    const kept: Flight[] = [];
    for (const f of flights) {
      if (f.lastSlot < s) {
        due.push(f.wire);
        f.lastSlot = s;
        f.roundsLeft--;
      }
      if (f.roundsLeft > 0) kept.push(f);
    }
    flights = kept;
    if (due.length > 0 && targets.length > 0) void client.sendMany(targets, due).catch(() => undefined);
  };
  const leaders = new LeaderTracker({ rpcUrl: opts.rpcUrl, wsUrl: opts.wsUrl, onSlot });
  await leaders.ready();
  onSlot(leaders.currentSlot());

  const refuse = (res: uWS.HttpResponse, status: string, message: string): void => {
    res.cork(() => res.writeStatus(status).writeHeader('content-type', 'application/json').end(JSON.stringify({ success: false, error: { message } })));
  };

  const app = uWS.App().post('/v1/send', (res, req) => {
    const authorized = req.getHeader('authorization') === bearer;
    let aborted = false;
    res.onAborted(() => (aborted = true));
    const chunks: Buffer[] = [];
    res.onData((chunk, isLast) => {
      chunks.push(Buffer.from(chunk.slice(0)));
      if (!isLast) return;
      if (!authorized) return refuse(res, '401 Unauthorized', 'Unauthorized');
      let transaction: unknown;
      try {
        transaction = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { transaction?: unknown }).transaction;
      } catch {
        return refuse(res, '400 Bad Request', 'Invalid JSON');
      }
      if (typeof transaction !== 'string') return refuse(res, '400 Bad Request', 'Invalid transaction');
      const v = inspect(transaction, tips);
      if (!v.ok) return refuse(res, '400 Bad Request', `Invalid transaction: ${v.error?.message ?? ''}`);
      const r = v.tx!;
      if (r.tipLamports < opts.minTipLamports) return refuse(res, '402 Payment Required', 'Tip insufficient');
      const wire = r.wire!;
      const sentIn = slot;
      void client.sendFirst(targets, wire, FIRST_SEND_BUDGET_MS).then(
        (sent) => {
          if (aborted) return;
          if (sent.target === null) return refuse(res, '500 Internal Server Error', 'Delivery failed');
          flights.push({ wire, roundsLeft: ROUNDS, lastSlot: sentIn });
          res.cork(() => res.writeHeader('content-type', 'application/json').end(`{"success":true,"signature":"${r.signature}","slot":${sentIn}}`));
        },
        () => aborted || refuse(res, '500 Internal Server Error', 'Delivery failed'),
      );
    });
  });
  const socket = await new Promise<uWS.us_listen_socket>((resolve, reject) =>
    app.listen('127.0.0.1', 0, (s) => (s ? resolve(s) : reject(new Error('floor: could not listen')))),
  );
  const port = uWS.us_socket_local_port(socket);
  return {
    url: `http://127.0.0.1:${port}`,
    inFlight: () => flights.length,
    async close() {
      uWS.us_listen_socket_close(socket);
      leaders.close();
      client.close();
    },
  };
}

/**
 * The peer: `POST /v1/send` as a TypeScript team would write it without Landfall, measured in the
 * same run, with the same load generator and the same transactions.
 *
 * Fastify; the API key's SHA-256 looked up in a `Map`; `@solana/web3.js`
 * `VersionedTransaction.deserialize`; every required signature verified with `node:crypto`
 * Ed25519, its `KeyObject` cached (the last 1,024 keys, as Landfall's native inspection caches
 * its decoded keys); tips found by scanning the instructions in JavaScript
 * (`bench/lib/js-inspect.ts`, the reference the native suite checks against Landfall's parser,
 * written to be fast); the plan's minimum tip; a token bucket per account in a `Map`; the status
 * record written to lmdb-js in Landfall's commit mode — held for a commit window of
 * `COMMIT_WINDOW_MS` (cut short at `MAX_GROUP` writes, the numbers imported from Landfall's
 * `src/store/commit-window.ts`), and the window written as one explicit `transaction`, one
 * commit, with lmdb-js's event-turn batching off, as Landfall opens it (`src/store/tables.ts`);
 * then the response.
 *
 * Where it stops: it does not deliver. A team without a QUIC TPU client would have to build
 * one — there is none in plain Node — so the peer answers once the record is written, and
 * everything Landfall does after that point (leader lookup, the hand-over to the QUIC send pool,
 * the first stream written before it answers, rebroadcasts, confirmation tracking) is work the
 * peer is spared. It also has no chain view, so it cannot refuse an expired blockhash or
 * report a slot (`slot: null`). It writes one record where Landfall writes several (the status
 * record and its acknowledgement-log line, the account's index entry, the trace). Every
 * difference in the work done favours the peer; the library choices (Fastify, web3.js,
 * `node:crypto`) are what the comparison is about.
 */
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { open, type Database, type RootDatabase } from 'lmdb';
import { COMMIT_WINDOW_MS, MAX_GROUP } from '../../src/store/commit-window.js';
import { JsTipSet, jsInspect, nodeCryptoVerifyCached } from '../lib/js-inspect.js';

export interface PeerOptions {
  dataDir: string;
  tipAddresses: string[];
  /** The one account: its API key, id, minimum tip and send rate. */
  account: { apiKey: string; id: string; keyName: string; minTipLamports: bigint; maxTps: number };
}

interface PeerAccount {
  id: string;
  keyName: string;
  minTipLamports: bigint;
  maxTps: number;
}

/** One token bucket per account: refilled by elapsed time, capacity one second of sends. */
class MapRateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  take(account: PeerAccount): boolean {
    const now = performance.now();
    let b = this.buckets.get(account.id);
    if (!b) this.buckets.set(account.id, (b = { tokens: account.maxTps, at: now }));
    b.tokens = Math.min(account.maxTps, b.tokens + ((now - b.at) / 1000) * account.maxTps);
    b.at = now;
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }
}

function fail(reply: FastifyReply, code: number, error: string): FastifyReply {
  return reply.code(code).send({ success: false, error: { code, message: error } });
}

export interface Peer {
  app: FastifyInstance;
  url: string;
  close(): Promise<void>;
}

/**
 * Status writes grouped as Landfall groups them: the first write of a window starts a
 * `COMMIT_WINDOW_MS` timer, `MAX_GROUP` writes cut it short, and the window is one lmdb-js
 * `transaction` (one commit, one sync).
 */
class CommitWindow {
  private writes: Array<[string, unknown]> = [];
  private timer: NodeJS.Timeout | null = null;
  private last: Promise<unknown> = Promise.resolve();
  constructor(
    private readonly root: RootDatabase,
    private readonly db: Database,
  ) {}

  put(key: string, value: unknown): void {
    this.writes.push([key, value]);
    if (this.writes.length >= MAX_GROUP) this.commit();
    else this.timer ??= setTimeout(this.commit, COMMIT_WINDOW_MS);
  }

  readonly commit = (): void => {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const writes = this.writes;
    if (writes.length === 0) return;
    this.writes = [];
    this.last = this.root.transaction(() => {
      for (const [k, v] of writes) this.db.putSync(k, v);
    });
  };

  /** Commit what waits and wait for every commit. */
  async flush(): Promise<void> {
    this.commit();
    await this.last;
  }
}

export async function startPeer(opts: PeerOptions): Promise<Peer> {
  // Event-turn batching off, as Landfall opens its environment: the commit window decides commits.
  const root: RootDatabase = open({ path: opts.dataDir, noSubdir: false, eventTurnBatching: false } as Parameters<typeof open>[0] & { eventTurnBatching: boolean });
  const status: Database = root.openDB({ name: 'status' });
  const window = new CommitWindow(root, status);
  const tips = new JsTipSet(opts.tipAddresses);
  const limiter = new MapRateLimiter();
  const keys = new Map<string, PeerAccount>([
    [createHash('sha256').update(opts.account.apiKey).digest('hex'), opts.account],
  ]);

  const app = Fastify({ logger: false, bodyLimit: 8 * 1024 });
  app.post('/v1/send', async (request, reply) => {
    const auth = request.headers.authorization;
    const account = auth?.startsWith('Bearer ') ? keys.get(createHash('sha256').update(auth.slice(7)).digest('hex')) : undefined;
    if (!account) return fail(reply, 401, 'Unauthorized');
    const body = request.body as { transaction?: unknown } | null;
    if (typeof body?.transaction !== 'string') return fail(reply, 400, 'Invalid transaction');
    const tx = jsInspect(body.transaction, tips, nodeCryptoVerifyCached);
    if (!tx.ok) return fail(reply, 400, `Invalid transaction: ${tx.reason}`);
    if (!tx.tipLamports) return fail(reply, 402, 'Tip required');
    if (tx.tipLamports < account.minTipLamports) return fail(reply, 402, 'Tip insufficient');
    if (!limiter.take(account)) return fail(reply, 429, 'Rate limit exceeded');
    const now = Date.now();
    window.put(tx.signature!, {
      signature: tx.signature,
      accountId: account.id,
      keyName: account.keyName,
      status: 'sent',
      submittedAt: now,
      confirmedAt: null,
      latencyMs: null,
      slot: null,
      expired: false,
      tipLamports: tx.tipLamports.toString(),
      recentBlockhash: tx.recentBlockhash,
      durableNonce: tx.durableNonce,
    });
    return { success: true, signature: tx.signature, slot: null };
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('peer: no TCP address');
  return {
    app,
    url: `http://127.0.0.1:${address.port}`,
    async close() {
      await app.close();
      await window.flush();
      await root.close();
    },
  };
}

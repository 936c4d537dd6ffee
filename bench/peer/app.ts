/**
 * The peer: `POST /v1/send` as a TypeScript team would write it without Landfall, measured in the
 * same run, with the same load generator and the same transactions.
 *
 * Fastify; the API key's SHA-256 looked up in a `Map`; `@solana/web3.js`
 * `VersionedTransaction.deserialize`; every required signature verified with `node:crypto`
 * Ed25519; tips found by scanning the instructions in JavaScript (`bench/lib/js-inspect.ts`, the
 * reference the native suite checks against Landfall's parser, written to be fast); the plan's
 * minimum tip; a token bucket per account in a `Map`; the status record written with an
 * lmdb-js `put` (asynchronous, batched, the same library and write mode Landfall uses); then the
 * response.
 *
 * Where it stops: it does not deliver. A team without a QUIC TPU client would have to build
 * one — there is none in plain Node — so the peer answers once the record is written, and
 * everything Landfall does after that point (leader lookup, the hand-over to the QUIC send pool,
 * the first stream written before it answers, rebroadcasts, confirmation tracking) is work the
 * peer is spared. It also has no chain view, so it cannot refuse an expired blockhash or
 * report a slot (`slot: null`). Every difference favours the peer.
 */
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { open, type Database, type RootDatabase } from 'lmdb';
import { JsTipSet, jsInspect, nodeCryptoVerify } from '../lib/js-inspect.js';

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

export async function startPeer(opts: PeerOptions): Promise<Peer> {
  const root: RootDatabase = open({ path: opts.dataDir, noSubdir: false });
  const status: Database = root.openDB({ name: 'status' });
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
    const tx = jsInspect(body.transaction, tips, nodeCryptoVerify);
    if (!tx.ok) return fail(reply, 400, `Invalid transaction: ${tx.reason}`);
    if (!tx.tipLamports) return fail(reply, 402, 'Tip required');
    if (tx.tipLamports < account.minTipLamports) return fail(reply, 402, 'Tip insufficient');
    if (!limiter.take(account)) return fail(reply, 429, 'Rate limit exceeded');
    const now = Date.now();
    void status.put(tx.signature!, {
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
      await root.close();
    },
  };
}

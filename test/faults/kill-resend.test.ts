/**
 * kill -9 with resend. A real `landfall serve` child process, pointed at a local cluster this
 * test owns (so the cluster keeps running while the service is killed), acknowledges
 * transactions whose first sends never arrive, is killed with SIGKILL right after their records
 * are committed, and is started again on the same data directory: the transactions it had
 * acknowledged must land (confirmed), not just be tracked until they expire.
 *
 * Why the first sends never arrive: every validator drops every datagram (the cluster's
 * `packetLossPct: 100`, real QUIC on loopback) from just before the sends until after the kill.
 * The service still acknowledges them, correctly — the streams were written to connections
 * heard from a moment ago — exactly as it does when a `kill -9` takes the written but not yet
 * transmitted streams with it (the defect: 14 transactions acknowledged in the last 424 ms
 * before a kill never landed). The faults are lifted before the restart, so only a resend can
 * land them; their blockhash is fresh (150 blocks of 100 ms slots), so they can still land.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { Connection, Keypair, LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalnet, type Localnet } from '../../src/localnet/index.js';
import { Store } from '../../src/store/store.js';
import { waitFor } from '../../harness/localnet.js';
import { BIN, serveChild, type ServeChild } from '../../harness/serve-child.js';
import { status } from '../../harness/stack.js';
import { tempDir } from '../../harness/tmp.js';
import { legacyTx, transfer, web3Base58 } from '../../harness/transactions.js';
import { freshMetricsText } from '../../harness/metrics.js';

const N = 10;

const tmp = tempDir();
let net: Localnet;
let service: ServeChild | undefined;
let readonly: Store | undefined;

beforeAll(async () => {
  net = await startLocalnet({ slotMs: 100 });
}, 30_000);

afterAll(async () => {
  await service?.kill();
  await readonly?.close();
  await net?.close();
  tmp.cleanup();
});

/** Start `landfall serve` on the test's cluster; resolves with its URL once it serves. */
async function serve(): Promise<string> {
  service = await serveChild({ dataDir: join(tmp.dir, 'data'), rpcUrl: net.rpcUrl, wsUrl: net.wsUrl, config: { ingressThreads: 1 } });
  return service.url;
}

describe('kill -9 with resend', () => {
  it('transactions acknowledged before a kill -9 and never delivered land after the restart', async () => {
    let url = await serve();
    const connection = new Connection(net.rpcUrl, 'confirmed');
    const created = JSON.parse(
      execFileSync(process.execPath, [BIN, 'accounts', 'create', '--name', 'resend', '--plan', 'whale', '--json', '--data', join(tmp.dir, 'data')], { encoding: 'utf8' }),
    ) as { api_key: string };
    const key = created.api_key;
    const tips = ((await (await fetch(`${url}/v1/tip-addresses`)).json()) as { tip_addresses: string[] }).tip_addresses;
    for (const t of tips) await net.airdrop(t, LAMPORTS_PER_SOL);
    const payer = Keypair.generate();
    await net.airdrop(payer.publicKey, 100n * BigInt(LAMPORTS_PER_SOL));

    let n = 0;
    const build = (blockhash: string) => {
      n++;
      const tx = legacyTx([transfer(payer.publicKey, payer.publicKey, n), transfer(payer.publicKey, new PublicKey(tips[n % tips.length]!), 300_000)], { feePayer: payer, blockhash });
      return { base64: tx.base64, signature: web3Base58(tx.signatures[0]!) };
    };
    const post = async (base64: string) => {
      const r = await fetch(`${url}/v1/send`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify({ transaction: base64 }) });
      return { status: r.status, body: (await r.json()) as any };
    };

    // The whole path works, and the connections to the leaders are warm.
    const warm = build((await connection.getLatestBlockhash('confirmed')).blockhash);
    expect((await post(warm.base64)).status).toBe(200);
    await waitFor('the warm-up transaction confirmed', async () => ((await status({ svc: { url } }, key, warm.signature)).body.status === 'confirmed' ? true : undefined), 20_000);

    // From now on nothing the service sends arrives.
    const { blockhash } = await connection.getLatestBlockhash('confirmed');
    for (const v of net.validators) await net.setFault(v.name, { packetLossPct: 100 });
    const txs = Array.from({ length: N }, () => build(blockhash));
    for (const tx of txs) {
      const r = await post(tx.base64);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    const lastAck = Date.now();
    // Right after their records are committed (the store's durability window), kill -9.
    readonly = Store.open(join(tmp.dir, 'data'), { readOnly: true });
    await waitFor('the records committed', () => (txs.every((tx) => readonly!.getStatus(tx.signature)) ? true : undefined), 5_000);
    const killed = service!.kill();
    const killedAfterMs = Date.now() - lastAck;
    await killed;
    for (const tx of txs) {
      expect(net.receivedBy(tx.signature)).toEqual([]);
      expect(readonly.getStatus(tx.signature)).toMatchObject({ status: 'sent', expired: false });
    }
    for (const v of net.validators) await net.setFault(v.name, {});

    // Restart on the same data directory, the cluster never stopped.
    const restartedAt = Date.now();
    url = await serve();
    for (const tx of txs) {
      await waitFor(
        `${tx.signature} confirmed after the restart`,
        async () => {
          const r = await status({ svc: { url } }, key, tx.signature);
          if (r.body.expired) throw new Error(`${tx.signature} expired instead of landing: ${JSON.stringify(r.body)}`);
          return r.body.status === 'confirmed' ? true : undefined;
        },
        20_000,
      );
      // It landed through the restarted service's resend: the only copy that reached a validator.
      expect(net.receivedBy(tx.signature).some((x) => x.outcome === 'included')).toBe(true);
    }
    const landedAfterMs = Date.now() - restartedAt;
    expect(service!.logLines('resumed pending transactions')[0]).toMatchObject({ pending: N, resent: N });
    const metrics = await freshMetricsText(url);
    expect(metrics).toMatch(new RegExp(`^landfall_resent_after_restart_total ${N}$`, 'm'));
    console.log(`kill -9 ${killedAfterMs} ms after the last of ${N} acknowledgements (none delivered): all ${N} resent on restart and confirmed within ${landedAfterMs} ms of the restart`);
  }, 90_000);
});

/**
 * A resubmission after a restart is still recognised (`native/src/known.rs`, `store/known-load.ts`):
 * a real `landfall serve` child process (with its ingress thread, whose `inspectAdmit` answers the
 * duplicate check from the process's filter of known signatures) accepts a transaction and is
 * killed with SIGKILL at once, so its record reaches LMDB either through its commit or through
 * the acknowledgement log's replay at the next start — the one writer that bypasses the overlay,
 * and so the filter. Started again on the same data directory, once the filter is loaded from
 * LMDB, the same transaction sent again is answered as a resend (its signature, no second record,
 * counted once in usage), while a new one is accepted and counted.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { Connection, Keypair, LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalnet, type Localnet } from '../../src/localnet/index.js';
import { waitFor } from '../../harness/localnet.js';
import { BIN, serveChild, type ServeChild } from '../../harness/serve-child.js';
import { tempDir } from '../../harness/tmp.js';
import { legacyTx, transfer, web3Base58 } from '../../harness/transactions.js';

const TIP = 300_000;

const tmp = tempDir();
const dataDir = join(tmp.dir, 'data');
let net: Localnet;
let service: ServeChild | undefined;

beforeAll(async () => {
  // 400 ms slots: a blockhash stays valid for a minute, longer than the restart takes.
  net = await startLocalnet({ slotMs: 400 });
}, 30_000);

afterAll(async () => {
  await service?.kill();
  await net?.close();
  tmp.cleanup();
});

const serve = () => serveChild({ dataDir, rpcUrl: net.rpcUrl, wsUrl: net.wsUrl });

describe('the filter of known signatures across a restart', () => {
  it('a transaction acknowledged before a kill -9 is answered as a resend after the restart, counted once', async () => {
    service = await serve();
    const bot = JSON.parse(execFileSync(process.execPath, [BIN, 'accounts', 'create', '--name', 'known', '--plan', 'whale', '--json', '--data', dataDir], { encoding: 'utf8' })) as {
      account_id: string;
      api_key: string;
    };
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${bot.api_key}` };
    const tips = ((await (await fetch(`${service.url}/v1/tip-addresses`)).json()) as { tip_addresses: string[] }).tip_addresses;
    for (const t of tips) await net.airdrop(t, LAMPORTS_PER_SOL);
    const payer = Keypair.generate();
    await net.airdrop(payer.publicKey, 10n * BigInt(LAMPORTS_PER_SOL));
    const { blockhash } = await new Connection(net.rpcUrl, 'confirmed').getLatestBlockhash('confirmed');
    const build = (n: number) => {
      const tx = legacyTx([transfer(payer.publicKey, payer.publicKey, n), transfer(payer.publicKey, new PublicKey(tips[n % tips.length]!), TIP)], { feePayer: payer, blockhash });
      return { base64: tx.base64, signature: web3Base58(tx.signatures[0]!) };
    };
    /** `POST /v1/send`, again while refused for a view gone stale (the service or the chain starting: nothing is recorded then). */
    const send = (url: string, base64: string) =>
      waitFor(
        'a send not refused for a stale view',
        async () => {
          const r = await fetch(`${url}/v1/send`, { method: 'POST', headers, body: JSON.stringify({ transaction: base64 }) });
          const body = (await r.json()) as { signature?: string; error?: { code?: string } };
          return r.status >= 500 ? undefined : { status: r.status, body };
        },
        30_000,
      );
    const total = async (url: string) =>
      ((await (await fetch(`${url}/v1/account`, { headers })).json()) as { usage: { transactions_total: number } }).usage.transactions_total;

    const first = build(1);
    expect(await send(service.url, first.base64)).toMatchObject({ status: 200, body: { signature: first.signature } });
    await service.kill();

    service = await serve();
    const url = service.url;
    // The filter answers once its load ended; until then every send asks the store (also right).
    await waitFor('the filter loaded', () => (service!.logLines('known-signature filter loaded').length > 0 ? true : undefined), 30_000);
    expect(await total(url)).toBe(1);
    expect(await send(url, first.base64)).toMatchObject({ status: 200, body: { signature: first.signature } });
    expect(await total(url)).toBe(1);
    const fresh = build(2);
    expect(await send(url, fresh.base64)).toMatchObject({ status: 200, body: { signature: fresh.signature } });
    expect(await total(url)).toBe(2);
    expect((await fetch(`${url}/v1/status/${first.signature}`, { headers })).status).toBe(200);
  }, 90_000);
});

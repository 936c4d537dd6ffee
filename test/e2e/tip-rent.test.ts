/**
 * Tip addresses and rent (issue 22, item 8): a tip below the rent-exempt minimum into an empty
 * tip address fails on chain (`InsufficientFundsForRent`) — the whale plan's minimum (250,000
 * lamports) is below it (890,880). The embedded cluster's tip addresses are funded at start;
 * against any other chain the service checks them at start and warns, or refuses with
 * `tipRentCheck: "refuse"`. Real service, real local cluster, real transactions.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Connection, Keypair, LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, type Config } from '../../src/config.js';
import { startLocalnet, type Localnet } from '../../src/localnet/index.js';
import { startService, type Service } from '../../src/service.js';
import { loadTipAddresses } from '../../src/tips.js';
import { waitFor } from '../../harness/localnet.js';
import { send, settled } from '../../harness/stack.js';
import { tempDir } from '../../harness/tmp.js';
import { legacyTx, transfer } from '../../harness/transactions.js';

const RENT_EXEMPT_ZERO_BYTES = 890_880;

describe('tip addresses on a chain the service does not own', () => {
  let net: Localnet;
  let tmp: ReturnType<typeof tempDir>;
  let config: Config;
  const services: Service[] = [];

  beforeAll(async () => {
    net = await startLocalnet({ slotMs: 100, seed: 'tip-rent' });
    tmp = tempDir();
    config = { ...DEFAULT_CONFIG, port: 0, dataDir: tmp.dir, rpcUrl: net.rpcUrl, wsUrl: net.wsUrl, ingressThreads: 0, logLevel: 'warn', logFile: join(tmp.dir, 'landfall.log') };
  });
  afterAll(async () => {
    for (const s of services) await s.close();
    await net?.close();
    tmp?.cleanup();
  });

  it('tipRentCheck "refuse": the start fails, naming every empty tip address and the minimum', async () => {
    const tips = loadTipAddresses(tmp.dir, null);
    const e = await startService({ ...config, tipRentCheck: 'refuse' }).catch((x: unknown) => x);
    expect(e).toMatchObject({ code: 'CONFIG_INVALID' });
    expect((e as Error).message).toContain(`8 tip addresses are below the rent-exempt minimum of ${RENT_EXEMPT_ZERO_BYTES} lamports`);
    for (const t of tips) expect((e as Error).message).toContain(`${t} (0 lamports)`);
  });

  it('"warn" (the default) starts and logs why; a whale-minimum tip into an empty address fails for rent, and lands once it is funded', async () => {
    const svc = await startService(config);
    services.push(svc);
    const warning = await waitFor('the rent warning in the log', () => {
      const lines = readFileSync(config.logFile!, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
      return lines.find((l) => typeof l.msg === 'string' && l.msg.includes('rent-exempt minimum'));
    });
    expect(warning.tipAddresses).toEqual(svc.tipAddresses);
    expect(warning.msg).toContain('InsufficientFundsForRent');

    const { api_key: key } = svc.accounts.createAccount('rent-bot', 'whale');
    const payer = Keypair.generate();
    await net.airdrop(payer.publicKey, BigInt(LAMPORTS_PER_SOL));
    const connection = new Connection(net.rpcUrl, 'confirmed');
    const tip = new PublicKey(svc.tipAddresses[0]!);
    const whaleMinimum = config.plans.whale.minTipBp * config.lamportsPerPoint;
    const tipTx = async (n: number) =>
      legacyTx([transfer(payer.publicKey, payer.publicKey, n), transfer(payer.publicKey, tip, whaleMinimum)], {
        feePayer: payer,
        blockhash: (await connection.getLatestBlockhash('confirmed')).blockhash,
      });

    const first = await tipTx(1);
    const sent = await send({ svc }, key, first.base64);
    expect(sent.status).toBe(200);
    const failed = await settled({ svc }, key, sent.body.signature);
    expect(failed).toMatchObject({ status: 'failed', err: { InsufficientFundsForRent: { account_index: expect.any(Number) } } });

    await net.airdrop(tip, RENT_EXEMPT_ZERO_BYTES);
    const second = await send({ svc }, key, (await tipTx(2)).base64);
    expect(second.status).toBe(200);
    expect((await settled({ svc }, key, second.body.signature)).status).toBe('confirmed');
  });
});

describe('the embedded cluster', () => {
  it('funds every tip address rent-exempt at start', async () => {
    const tmp = tempDir();
    const svc = await startService({ ...DEFAULT_CONFIG, port: 0, dataDir: tmp.dir, ingressThreads: 0, logLevel: 'warn' }, { localnet: { slotMs: 100, seed: 'tip-rent-embedded' } });
    try {
      const connection = new Connection(svc.rpcUrl, 'confirmed');
      const rentExempt = await connection.getMinimumBalanceForRentExemption(0);
      expect(rentExempt).toBe(RENT_EXEMPT_ZERO_BYTES);
      const accounts = await connection.getMultipleAccountsInfo(svc.tipAddresses.map((t) => new PublicKey(t)));
      for (const a of accounts) expect(a?.lamports).toBeGreaterThanOrEqual(rentExempt);
    } finally {
      await svc.close();
      tmp.cleanup();
    }
  });
});

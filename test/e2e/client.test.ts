/**
 * The typed client (`landfall/client`) against the running service on the local cluster, with
 * real web3.js transactions: tips added by `addTip` (legacy and v0), confirmations pushed over
 * the stream, the polling fallback, typed errors, `Retry-After`, kept-alive connections and the
 * cached tip facts.
 */
import { execFileSync } from 'node:child_process';
import { connect, createServer, type AddressInfo } from 'node:net';
import {
  ComputeBudgetInstruction,
  ComputeBudgetProgram,
  Keypair,
  LAMPORTS_PER_SOL,
  MessageV0,
  PublicKey,
  SystemInstruction,
  SystemProgram,
  Transaction,
  TransactionMessage,
  VersionedTransaction,
} from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addTip,
  computeUnitPriceInstruction,
  DEFAULT_MAX_MICRO_LAMPORTS,
  LandfallApiError,
  LandfallClient,
  LandfallTimeoutError,
  priorityFee,
  type LandfallClientOptions,
} from '../../src/client/index.js';
import { waitFor } from '../../harness/localnet.js';
import { account, blockhash, payer, startStack, type Stack } from '../../harness/stack.js';
import { web3Base58 } from '../../harness/transactions.js';

describe('typed client', () => {
  let s: Stack;
  let from: Keypair;
  const clients: LandfallClient[] = [];
  const client = (key: string, opts: Partial<LandfallClientOptions> = {}) => {
    const c = new LandfallClient({ url: s.svc.url, apiKey: key, ...opts });
    clients.push(c);
    return c;
  };
  let unique = 0;
  /** An unsigned legacy transaction with one self-transfer that makes its signature unique. */
  const legacy = async (fee: Keypair, extra: Parameters<Transaction['add']> = []) => {
    const tx = new Transaction({ feePayer: fee.publicKey, recentBlockhash: await blockhash(s) });
    return tx.add(SystemProgram.transfer({ fromPubkey: fee.publicKey, toPubkey: fee.publicKey, lamports: ++unique }), ...extra);
  };
  /** Wait until the account shows `n` service points. */
  const points = (c: LandfallClient, n: number) =>
    waitFor(`${n} service points`, async () => ((await c.account()).usage.service_points === n ? true : undefined));
  /** Starter plan: 1000 BP at the default 1000 lamports per point. */
  const STARTER_TIP = 1_000_000n;

  beforeAll(async () => {
    s = await startStack({ localnet: { slotMs: 100, seed: 'client-e2e' } });
    from = await payer(s);
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await s?.close();
  });

  it('addTip + send + waitForConfirmation: a legacy Transaction lands, confirmed over the stream', async () => {
    const bot = account(s, 'starter');
    const c = client(bot.key);
    const tx = await addTip(await legacy(from), { client: c });
    // The tip: a System transfer of the plan minimum to one of the service's tip addresses.
    const tipIx = tx.instructions.at(-1)!;
    const tip = SystemInstruction.decodeTransfer(tipIx);
    expect(tip.fromPubkey.equals(from.publicKey)).toBe(true);
    expect(s.svc.tipAddresses).toContain(tip.toPubkey.toBase58());
    expect(tip.lamports).toBe(STARTER_TIP);
    tx.sign(from);

    const sent = await c.send(tx);
    expect(sent).toEqual({ signature: expect.any(String), slot: expect.any(Number) });
    const before = c.stats.requests;
    const rec = await c.waitForConfirmation(sent.signature);
    expect(rec).toMatchObject({ signature: sent.signature, status: 'confirmed', api_key_name: 'default' });
    expect(rec.latency_ms).toBeGreaterThanOrEqual(0);
    // Pushed, not polled: the only request was the one status read made after subscribing.
    expect(c.stats.requests - before).toBe(1);
    // The pushed record is the status record (plus what only the stream carries: tip, submit slot).
    expect(rec).toMatchObject(await c.status(sent.signature));
    // Points are credited by an asynchronous LMDB transaction; the push may come first.
    await points(c, 1000);
  });

  it('addTip rebuilds a v0 VersionedTransaction; signed afterwards, it lands', async () => {
    const bot = account(s, 'starter');
    const c = client(bot.key);
    const message = new TransactionMessage({
      payerKey: from.publicKey,
      recentBlockhash: await blockhash(s),
      instructions: [SystemProgram.transfer({ fromPubkey: from.publicKey, toPubkey: from.publicKey, lamports: ++unique })],
    }).compileToV0Message();
    const tx = await addTip(new VersionedTransaction(message), { client: c, lamports: STARTER_TIP + 5n });
    expect(tx.version).toBe(0);
    expect(tx.message.compiledInstructions).toHaveLength(2);
    tx.sign([from]);
    const { signature } = await c.send(tx);
    expect((await c.waitForConfirmation(signature)).status).toBe('confirmed');
    await points(c, 1000); // floor(1_000_005 / 1000)
  });

  it('addTip refuses what the service would refuse, before signing', async () => {
    const c = client(account(s, 'starter').key);
    const low = await addTip(await legacy(from), { client: c, lamports: STARTER_TIP - 1n }).catch((e: unknown) => e);
    expect(low).toBeInstanceOf(LandfallApiError);
    expect(low).toMatchObject({ status: 402, message: 'Tip insufficient' });
    expect((low as LandfallApiError).reason).toMatch(/999999 lamports is below this account's minimum of 1000 BP/);
    const noPayer = new Transaction({ recentBlockhash: await blockhash(s) });
    await expect(addTip(noPayer, { client: c })).rejects.toThrow(/no feePayer/);
    const viaTable = new VersionedTransaction(
      new MessageV0({
        header: { numRequiredSignatures: 1, numReadonlySignedAccounts: 0, numReadonlyUnsignedAccounts: 0 },
        staticAccountKeys: [from.publicKey],
        recentBlockhash: await blockhash(s),
        compiledInstructions: [],
        addressTableLookups: [{ accountKey: Keypair.generate().publicKey, writableIndexes: [0], readonlyIndexes: [] }],
      }),
    );
    await expect(addTip(viaTable, { client: c })).rejects.toThrow(/addressLookupTableAccounts/);
  });

  it('throws LandfallApiError with the status, the spec message and the reason', async () => {
    const bot = account(s, 'starter');
    const c = client(bot.key);
    const wrong = client('lf_not-a-key');
    const e401 = await wrong.account().catch((e) => e);
    expect(e401).toBeInstanceOf(LandfallApiError);
    expect(e401).toMatchObject({ status: 401, message: 'Unauthorized', reason: 'invalid or revoked API key' });

    const tips = await c.tipAddresses();
    const stingy = await legacy(from, [SystemProgram.transfer({ fromPubkey: from.publicKey, toPubkey: new PublicKey(tips[0]!), lamports: 1000 })]);
    stingy.sign(from);
    const e402 = await c.send(stingy).catch((e) => e);
    expect(e402).toMatchObject({ status: 402, message: 'Tip insufficient' });
    expect(e402.reason).toMatch(/1 BP.*below the starter minimum of 1000 BP/);

    const e404 = await c.status(web3Base58(Keypair.generate().secretKey)).catch((e) => e);
    expect(e404).toMatchObject({ status: 404, message: 'Not found' });
  });

  it('honours Retry-After on 429, and surfaces it when retries are off', async () => {
    const bot = account(s, 'starter'); // 8 tx/s, one second of burst
    const signed = async () => {
      const tx = await addTip(await legacy(from), { client: c });
      tx.sign(from);
      return tx;
    };
    const c = client(bot.key);
    const burst = await Promise.all(Array.from({ length: 20 }, signed));
    const results = await Promise.all(burst.map((tx) => c.send(tx)));
    expect(new Set(results.map((r) => r.signature)).size).toBe(20);
    expect(c.stats.rateLimitRetries).toBeGreaterThan(0);

    const impatient = client(bot.key, { rateLimitRetries: 0 });
    const again = await Promise.all(Array.from({ length: 20 }, signed));
    const outcomes = await Promise.allSettled(again.map((tx) => impatient.send(tx)));
    const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected').map((o) => o.reason);
    expect(refused.length).toBeGreaterThan(0);
    for (const e of refused) {
      expect(e).toBeInstanceOf(LandfallApiError);
      expect(e).toMatchObject({ status: 429, message: 'Rate limit exceeded' });
      expect(e.retryAfterMs).toBeGreaterThanOrEqual(1000);
    }
  });

  it('reuses one kept-alive connection for sequential calls', async () => {
    const c = client(account(s, 'starter').key);
    for (let i = 0; i < 10; i++) await (i % 2 ? c.account() : c.tipAddresses());
    await c.ping();
    expect(c.stats).toMatchObject({ requests: 11, connections: 1 });
  });

  it('caches the tip facts for tipRefreshMs; a refreshed client sees the lower minimum after an upgrade', async () => {
    const bot = account(s, 'starter');
    const cached = client(bot.key); // default: an hour
    expect((await cached.tipInfo()).minTipBp).toBe(1000);
    s.svc.accounts.setPlan(bot.id, 'pro');
    const requests = cached.stats.requests;
    expect((await cached.tipInfo()).minTipBp).toBe(1000);
    expect(cached.stats.requests).toBe(requests);

    const fresh = client(bot.key, { tipRefreshMs: 0 });
    const info = await fresh.tipInfo();
    expect(info).toMatchObject({ minTipBp: 500, minTipLamports: 500_000n });
    expect(info.addresses).toEqual(s.svc.tipAddresses);
    const ix = await fresh.tipInstruction(from.publicKey);
    expect(SystemInstruction.decodeTransfer(ix).lamports).toBe(500_000n);
  });

  it('the stream pushes why a transaction failed: err, err_reason and latency_ms, as the status has them', async () => {
    const c = client(account(s, 'starter').key);
    const poor = await payer(s, 0.05);
    const stream = c.stream();
    await stream.ready;
    const tx = await addTip(
      await legacy(poor, [SystemProgram.transfer({ fromPubkey: poor.publicKey, toPubkey: Keypair.generate().publicKey, lamports: LAMPORTS_PER_SOL })]),
      { client: c },
    );
    tx.sign(poor);
    const pushedFinal = new Promise<Record<string, unknown>>((resolve) => stream.onStatus((r) => r.status !== 'sent' && resolve(r as never)));
    const { signature } = await c.send(tx);
    const pushed = await pushedFinal;
    expect(pushed).toMatchObject({ signature, status: 'failed', err: { InstructionError: [1, { Custom: 1 }] } });
    expect(pushed).toMatchObject(await c.status(signature));
    expect(pushed.latency_ms).toEqual(expect.any(Number));
  });

  it('priority fee: the compute-unit prices of what landed, and a SetComputeUnitPrice of the chosen percentile', async () => {
    const c = client(account(s, 'starter').key);
    // Two accounts paying alike: one account's landings alone could move the guidance by no
    // more than 2x from what the others' say (the others of this file set no price: 0).
    const c2 = client(account(s, 'starter').key);
    for (const microLamports of [1_000, 2_000, 3_000, 4_000]) {
      for (const who of [c, c2]) {
        const tx = await addTip(await legacy(from, [ComputeBudgetProgram.setComputeUnitPrice({ microLamports })]), { client: who });
        tx.sign(from);
        expect((await who.waitForConfirmation((await who.send(tx)).signature)).status).toBe('confirmed');
      }
    }
    // Fewer than 100 landings in the minute, so p99 is the highest.
    await waitFor('the priority fee of the last minute', async () => ((await c.tipFloor()).priority_fee['1m'].micro_lamports_per_cu?.p99 === 4_000 ? true : undefined));
    const floor = await c.tipFloor();
    expect(floor.priority_fee['1m'].landed).toBe(floor.windows['1m'].landed);
    expect(await priorityFee({ client: c, percentile: 99, window: '1m' })).toBe(4_000n);
    expect(await priorityFee({ client: c, percentile: 99, maxMicroLamports: 2_500 })).toBe(2_500n);
    const ix = await computeUnitPriceInstruction({ client: c, percentile: 99, window: '1m' });
    expect(ComputeBudgetInstruction.decodeSetComputeUnitPrice(ix)).toEqual({ microLamports: 4_000n });
    // A spike past the default cap (1,000,000 µL/CU): the helper pays the cap unless told more.
    for (const who of [c, c2]) {
      const tx = await addTip(await legacy(from, [ComputeBudgetProgram.setComputeUnitPrice({ microLamports: 5_000_000 })]), { client: who });
      tx.sign(from);
      expect((await who.waitForConfirmation((await who.send(tx)).signature)).status).toBe('confirmed');
    }
    await waitFor('the spike in the last minute', async () => ((await c.tipFloor()).priority_fee['1m'].micro_lamports_per_cu?.p99 === 5_000_000 ? true : undefined));
    expect(DEFAULT_MAX_MICRO_LAMPORTS).toBe(1_000_000n);
    expect(await priorityFee({ client: c, percentile: 99, window: '1m' })).toBe(1_000_000n);
    expect(ComputeBudgetInstruction.decodeSetComputeUnitPrice(await computeUnitPriceInstruction({ client: c, percentile: 99, window: '1m' }))).toEqual({ microLamports: 1_000_000n });
    expect(await priorityFee({ client: c, percentile: 99, window: '1m', maxMicroLamports: 10_000_000 })).toBe(5_000_000n);
  });

  it('falls back to polling: with the stream off it still resolves, here on a failed transaction', async () => {
    const c = client(account(s, 'starter').key, { stream: false });
    const poor = await payer(s, 0.05);
    const tx = await addTip(
      await legacy(poor, [SystemProgram.transfer({ fromPubkey: poor.publicKey, toPubkey: Keypair.generate().publicKey, lamports: LAMPORTS_PER_SOL })]),
      { client: c },
    );
    tx.sign(poor);
    const { signature } = await c.send(tx);
    const before = c.stats.requests;
    const rec = await c.waitForConfirmation(signature, { pollMs: 50 });
    expect(rec).toMatchObject({ signature, status: 'failed', err: { InstructionError: [1, { Custom: 1 }] } });
    expect(rec.err_reason).toBe('Error processing Instruction 1: custom program error: 0x1');
    expect(rec.latency_ms).toBeGreaterThanOrEqual(0);
    expect(c.stats.requests - before).toBeGreaterThanOrEqual(1);
  });

  /**
   * A loopback TCP proxy to the service that resets (RST) the first `resets` connections it
   * accepts and relays the rest: a real connection reset, as a load balancer restarting gives.
   */
  async function resettingProxy(resets: number): Promise<{ url: string; close: () => void }> {
    const target = new URL(s.svc.url);
    let seen = 0;
    const server = createServer((socket) => {
      if (seen++ < resets) return void socket.resetAndDestroy();
      const upstream = connect(Number(target.port), target.hostname);
      socket.pipe(upstream).pipe(socket);
      socket.on('error', () => upstream.destroy());
      upstream.on('error', () => socket.destroy());
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
  }

  it('retries a reset connection with back-off, and throws the network error once the retries are spent', async () => {
    const bot = account(s, 'starter');
    const flaky = await resettingProxy(2);
    const dead = await resettingProxy(Infinity);
    try {
      const c = client(bot.key, { url: flaky.url, retryBackoffMs: 5 });
      expect((await c.account()).plan).toBe('starter');
      expect(c.stats).toMatchObject({ networkRetries: 2, failovers: 0 });

      const d = client(bot.key, { url: dead.url, retryBackoffMs: 5, networkRetries: 3 });
      await expect(d.account()).rejects.toMatchObject({ code: 'ECONNRESET' });
      expect(d.stats.networkRetries).toBe(3);
    } finally {
      flaky.close();
      dead.close();
    }
  });

  it('fails over between several URLs and stays on the one that answers', async () => {
    const bot = account(s, 'starter');
    const dead = await resettingProxy(Infinity);
    try {
      const c = client(bot.key, { url: [dead.url, s.svc.url], retryBackoffMs: 5 });
      expect((await c.account()).plan).toBe('starter');
      expect(c.url).toBe(`${s.svc.url}/`);
      await c.account();
      expect(c.stats).toMatchObject({ networkRetries: 1, failovers: 1 });
    } finally {
      dead.close();
    }
  });

  it('waitForConfirmation rejects: 401 when the key is refused (stream and polling alike), a timeout when nothing settles', async () => {
    const wrong = client('lf_not-a-key');
    await expect(wrong.waitForConfirmation(web3Base58(Keypair.generate().secretKey))).rejects.toMatchObject({ status: 401 });

    const bot = account(s, 'starter');
    const c = client(bot.key);
    // Signed over a blockhash the cluster never issued: accepted (the client's node may be
    // ahead), never lands.
    const tx = await addTip(await legacy(from), { client: c });
    tx.recentBlockhash = Keypair.generate().publicKey.toBase58();
    tx.sign(from);
    const { signature } = await c.send(tx);
    const e = await c.waitForConfirmation(signature, { timeoutMs: 300 }).catch((x) => x);
    expect(e).toBeInstanceOf(LandfallTimeoutError);
    expect(e.message).toContain(signature);
  });

  it('is importable as landfall/client from the built package', () => {
    const out = execFileSync(
      process.execPath,
      ['--input-type=module', '-e', "const m = await import('landfall/client'); console.log(typeof m.LandfallClient, typeof m.addTip)"],
      { cwd: new URL('../..', import.meta.url), encoding: 'utf8' },
    );
    expect(out.trim()).toBe('function function');
  });
});

/**
 * Micro-benchmark of the ingress thread's own bookkeeping per send, without HTTP or QUIC: what
 * `POST /v1/send` does on its thread between the body and the response — `KeyCache.authenticate`
 * and `SubmissionCore.send` on the real store, accounts, rate buckets and in-flight counter, with a
 * `Delivery` whose first send answers at once — and, apart, the native inspect that precedes it.
 *
 * A/B of two source trees in one process: each tree's modules (and native addon) are imported
 * side by side, each on its own data directory, and blocks of sends alternate between them, so
 * the load the machine happens to carry falls on both alike. CPU is this thread's own time
 * (`/proc/thread-self/schedstat`, ns); the result is the median over blocks, µs per send.
 *
 *   node --import tsx bench/ingress-path.ts <dirA> <dirB> [blocks] [sendsPerBlock]
 * (each tree needs its native addon's `native/index.js` and `.node` in place).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Keypair } from '@solana/web3.js';
import { benchPlans, TIP_LAMPORTS } from './lib/stack.js';
import { TxSigner } from './lib/signed.js';
import { threadCpuNs } from './lib/proc-cpu.js';

interface Variant {
  /** Inspect the next `n` bodies; returns the results. */
  inspect(n: number): unknown[];
  /** Authenticate and send each inspected transaction, one per macrotask. */
  send(results: unknown[]): Promise<void>;
  close(): Promise<void>;
}

async function variant(dir: string, bodies: string[], tipAddresses: string[]): Promise<Variant> {
  const imp = <T>(p: string): Promise<T> => import(pathToFileURL(join(dir, 'src', p)).href) as Promise<T>;
  const { Store } = await imp<typeof import('../src/store/store.js')>('store/store.ts');
  const { Accounts } = await imp<typeof import('../src/accounts/accounts.js')>('accounts/accounts.ts');
  const { KeyCache } = await imp<typeof import('../src/accounts/key-cache.js')>('accounts/key-cache.ts');
  const { InFlight } = await imp<typeof import('../src/accounts/in-flight.js')>('accounts/in-flight.ts');
  const { RateLimiter } = await imp<typeof import('../src/accounts/rate-limiter.js')>('accounts/rate-limiter.ts');
  const { SubmissionCore } = await imp<typeof import('../src/submission/core.js')>('submission/core.ts');
  const { inspectTransaction, TipSet } = await imp<typeof import('../src/native.js')>('native.ts');
  const { DEFAULT_SEND_OPTIONS } = await imp<typeof import('../src/delivery/delivery.js')>('delivery/delivery.ts');
  type InspectResult = ReturnType<typeof inspectTransaction>;

  const tmp = mkdtempSync(join(tmpdir(), 'ingress-path-'));
  const store = Store.open(tmp);
  const plans = benchPlans();
  const accounts = new Accounts(store, { plans, lamportsPerPoint: 1000 });
  const keys = new KeyCache(accounts, store);
  const tips = new TipSet(tipAddresses);
  const created = accounts.createAccount('bench', 'starter');
  // Both shapes of the core's seam, so a tree from before `SendPath` (issue 35) compares too:
  // `chainFacts` and an `accepted` that returns null now; the separate chain reads before.
  const delivery = {
    chainFacts: () => ({ health: { synced: true, slot: 100, slotAgeMs: 10 }, blockhashExpired: false, lastValidBlockHeight: 250 }),
    currentSlot: () => 100,
    isBlockhashExpired: () => false,
    lastValidBlockHeight: () => 250,
    latestBlockhash: () => null,
    watchSlots: () => () => {},
    simulate: async () => null,
    firstSend: async () => ({ slot: 100, reached: 1, held: false, attempts: [] }),
    accepted: () => null,
    health: () => ({ synced: true, slot: 100, slotAgeMs: 10 }),
    close: async () => {},
  };
  const core = new SubmissionCore({
    plans,
    lamportsPerPoint: 1000,
    accounts,
    store,
    limiter: new RateLimiter(plans),
    delivery: delivery as never,
    inFlight: new InFlight(plans, 1_000_000),
  });
  const options = { ...DEFAULT_SEND_OPTIONS, skipPreflight: true };
  let next = 0;
  return {
    inspect(n) {
      const out: InspectResult[] = [];
      for (let i = 0; i < n; i++) out.push(inspectTransaction(bodies[next++]!, tips));
      return out;
    },
    send: (results) =>
      new Promise((resolve, reject) => {
        let i = 0;
        // Each request in its own macrotask, as uWS hands them over.
        const step = (): void => {
          if (i >= results.length) return resolve();
          const r = results[i++] as InspectResult;
          const who = keys.authenticate(created.api_key)!;
          core.send({ key: who.key, account: who.account }, r, options, process.hrtime.bigint()).then(() => setImmediate(step), reject);
        };
        step();
      }),
    async close() {
      await store.close();
      rmSync(tmp, { recursive: true, force: true });
    },
  };
}

const [dirA, dirB, blocksArg, perArg] = process.argv.slice(2);
if (!dirA || !dirB) throw new Error('usage: ingress-path.ts <dirA> <dirB> [blocks] [sendsPerBlock]');
const blocks = Number(blocksArg ?? 20);
const per = Number(perArg ?? 2000);
const WARM_BLOCKS = 2;
const tipAddresses = Array.from({ length: 8 }, () => Keypair.generate().publicKey.toBase58());
const signer = new TxSigner(Keypair.generate(), tipAddresses, TIP_LAMPORTS);
const blockhash = Keypair.generate().publicKey.toBase58();
const count = (blocks + WARM_BLOCKS) * per;
const bodiesA = signer.sign(blockhash, count).map((t) => t.wire.toString('base64'));
const bodiesB = signer.sign(blockhash, count).map((t) => t.wire.toString('base64'));
const variants: Record<'A' | 'B', Variant> = { A: await variant(dirA, bodiesA, tipAddresses), B: await variant(dirB, bodiesB, tipAddresses) };
const samples: Record<'A' | 'B', { inspect: number[]; book: number[] }> = { A: { inspect: [], book: [] }, B: { inspect: [], book: [] } };
for (let b = 0; b < blocks + WARM_BLOCKS; b++) {
  for (const v of (b % 2 === 0 ? ['A', 'B'] : ['B', 'A']) as ('A' | 'B')[]) {
    const t0 = threadCpuNs();
    const results = variants[v].inspect(per);
    const t1 = threadCpuNs();
    await variants[v].send(results);
    const t2 = threadCpuNs();
    if (b < WARM_BLOCKS) continue;
    samples[v].inspect.push((t1 - t0) / 1000 / per);
    samples[v].book.push((t2 - t1) / 1000 / per);
  }
}
for (const v of Object.values(variants)) await v.close();
const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const q = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * p)]!;
for (const v of ['A', 'B'] as const) {
  const s = samples[v];
  console.log(
    `${v} ${v === 'A' ? dirA : dirB}: bookkeeping ${med(s.book).toFixed(2)} µs/send (p25 ${q(s.book, 0.25).toFixed(2)}, p75 ${q(s.book, 0.75).toFixed(2)}), ` +
      `inspect ${med(s.inspect).toFixed(2)} µs/send, over ${s.book.length} blocks of ${per}`,
  );
}
process.exit(0);

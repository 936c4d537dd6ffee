/**
 * The process's filter of known signatures (`native/src/known.rs`, `store/known-load.ts`): the
 * duplicate check of `POST /v1/send` on an ingress thread answered by `inspectAdmit` ("certainly
 * new", so the store is not asked) or left to the store ("maybe known"), and resubmission still
 * recognised wherever the record is: in the overlay right after acceptance, in LMDB after the
 * commit and the overlay's release, written by another process before this one started (a
 * restart: the filter rebuilt from LMDB's keys), and replicated from another node. Real parts:
 * the real store (LMDB) and its commit window, a real `ChainViewReplica` and `ThreadDelivery`,
 * native inspection of real web3.js-signed transactions, a real second process writing the store.
 * Only the first send is a stand-in (no leader is needed for the duplicate check).
 *
 * The filter is process-wide (as in the service, where every ingress thread shares it), so each
 * test uses signatures of its own and asserts only what holds whatever other stores of this
 * process added.
 */
import { Keypair } from '@solana/web3.js';
import { execFileSync } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Accounts } from '../../src/accounts/accounts.js';
import { DEFAULT_PLANS } from '../../src/accounts/plans.js';
import { RateLimiter } from '../../src/accounts/rate-limiter.js';
import { Rpc } from '../../src/chain/rpc.js';
import { ChainViewReplica } from '../../src/delivery/chain-view.js';
import { DEFAULT_SEND_OPTIONS } from '../../src/delivery/delivery.js';
import { ThreadDelivery } from '../../src/delivery/thread-delivery.js';
import { ADMIT_OUT_LEN, inspectAdmit, inspectTransaction, knownAddBatch, knownContains, knownReady, overlay, TipSet } from '../../src/native.js';
import { statusKey } from '../../src/store/status-codec.js';
import { Store } from '../../src/store/store.js';
import { SubmissionCore, type Caller } from '../../src/submission/core.js';
import { randomBlockhash, randomSignature, statusRecord } from '../../harness/records.js';
import { tempDir } from '../../harness/tmp.js';
import { legacyTx, makeTipAddresses, transfer } from '../../harness/transactions.js';

const LPP = 1000;
const MIN_TIP = DEFAULT_PLANS.starter.minTipBp * LPP;
const NO_ROUTE = { first: [], next: [], hold: false };
const LIVE = randomBlockhash();
const ROOT = new URL('../..', import.meta.url).pathname;

let tmp: ReturnType<typeof tempDir>;
let store: Store;
let accounts: Accounts;
let view: ChainViewReplica;
let core: SubmissionCore;
let firstSends: number;
let who: Caller;
const tips = makeTipAddresses(2);
const tipSet = new TipSet(tips.map((t) => t.toBase58()));
const payer = Keypair.generate();
let n = 0;

/** A signed transaction (base64) and its signature. */
function tx(): { base64: string; signature: string; key: Buffer } {
  const { base64 } = legacyTx([transfer(payer.publicKey, payer.publicKey, ++n), transfer(payer.publicKey, tips[0]!, MIN_TIP)], { feePayer: payer, blockhash: LIVE });
  const r = inspectTransaction(base64, tipSet);
  if (!r.ok) throw new Error(r.error.message);
  return { base64, signature: r.tx.signature, key: statusKey(r.tx.signature)! };
}

/** `inspectAdmit`'s answer for `base64`: 1 certainly new, 0 maybe known. */
function filterAnswer(base64: string): number {
  const out = new Float64Array(ADMIT_OUT_LEN);
  expect(inspectAdmit(base64, tipSet, view.admission!, MIN_TIP, -1, out).ok).toBe(true);
  return out[7]!;
}

const send = (base64: string) => core.sendBase64(who, base64, tipSet, DEFAULT_SEND_OPTIONS, process.hrtime.bigint());

/** Open `dir`'s store and load the filter from it, as the service does at start. */
async function openAndLoad(dir: string): Promise<Store> {
  const s = Store.open(dir);
  s.recoverAcknowledged();
  expect(await s.loadKnownSignatures().done).toBeGreaterThanOrEqual(0);
  return s;
}

function wire(s: Store): void {
  store = s;
  accounts = new Accounts(store, { plans: DEFAULT_PLANS, lamportsPerPoint: LPP });
  const auth = accounts.authenticate(accounts.createAccount('known').api_key)!;
  who = { key: auth.key, account: auth.account };
  const delivery = new ThreadDelivery(view, { send: async () => ({ slot: 500 + firstSends++, reached: 1, held: false }) }, new Rpc('http://127.0.0.1:9'), () => undefined);
  core = new SubmissionCore({ plans: DEFAULT_PLANS, lamportsPerPoint: LPP, accounts, store, limiter: new RateLimiter(DEFAULT_PLANS), delivery });
}

beforeEach(async () => {
  tmp = tempDir();
  view = new ChainViewReplica();
  view.apply({ slot: 500, seenAtMs: Date.now(), blockHeight: 1000, leader: 'Leader1111111111111111111111111111111111111', plain: NO_ROUTE, antiMev: NO_ROUTE, blockhashes: [[LIVE, 1100]], staleMs: 5_000, epoch: null });
  firstSends = 0;
  wire(await openAndLoad(tmp.dir));
});
afterEach(async () => {
  vi.restoreAllMocks();
  await store.close();
  tmp.cleanup();
});

describe('the known-signature filter on the send path', () => {
  it('a new signature is certainly new: accepted without asking the store; its resubmission is known at once (the overlay)', async () => {
    const t = tx();
    const asked = vi.spyOn(store, 'hasStatus');
    expect(filterAnswer(t.base64)).toBe(1);
    await send(t.base64);
    expect(asked).not.toHaveBeenCalled();
    expect(accounts.usage(who.account.id).total).toBe(1);
    // Right after acceptance: in the overlay, so maybe known, and the store says known.
    expect(overlay.get(t.key)).not.toBeNull();
    expect(filterAnswer(t.base64)).toBe(0);
    await send(t.base64);
    expect(asked).toHaveBeenCalledTimes(1);
    expect(asked.mock.results[0]!.value).toBe(true);
    expect(firstSends).toBe(2); // delivered again
    expect(accounts.usage(who.account.id).total).toBe(1); // never recorded or counted twice
    expect(store.getStatus(t.signature)!.submitSlot).toBe(500);
  });

  it('a resubmission after the commit and the overlay release is known (from LMDB)', async () => {
    const t = tx();
    await send(t.base64);
    expect(await store.flushed()).toBe(true);
    await vi.waitFor(() => expect(overlay.get(t.key)).toBeNull(), { timeout: 10_000, interval: 20 });
    expect(filterAnswer(t.base64)).toBe(0);
    const asked = vi.spyOn(store, 'hasStatus');
    await send(t.base64);
    expect(asked.mock.results.map((r) => r.value)).toEqual([true]);
    expect(accounts.usage(who.account.id).total).toBe(1);
    expect(store.getStatus(t.signature)!.submitSlot).toBe(500);
  });

  it('after a restart: a record another process committed is known once the filter is loaded from LMDB', async () => {
    const t = tx();
    const dir = tempDir();
    try {
      // Another process (a service that ran before this one) accepts the transaction and commits it.
      const script = [
        `const { Store } = await import(${JSON.stringify(`${ROOT}src/store/store.ts`)});`,
        `const { statusRecord } = await import(${JSON.stringify(`${ROOT}harness/records.ts`)});`,
        `const s = Store.open(process.argv[1]);`,
        `s.insertStatus(statusRecord({ signature: process.argv[2], accountId: process.argv[3], submitSlot: 42 }));`,
        `await s.flushed(); await s.close();`,
      ].join('\n');
      execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, dir.dir, t.signature, who.account.id], { cwd: ROOT, stdio: 'pipe' });
      // This process never saw it.
      expect(knownContains(t.key)).toBe(false);
      const restarted = Store.open(dir.dir);
      try {
        restarted.recoverAcknowledged();
        expect(await restarted.loadKnownSignatures().done).toBe(1);
        expect(knownReady()).toBe(true);
        expect(knownContains(t.key)).toBe(true);
        expect(filterAnswer(t.base64)).toBe(0);
        await store.close();
        wire(restarted);
        const asked = vi.spyOn(store, 'hasStatus');
        await send(t.base64);
        expect(asked.mock.results.map((r) => r.value)).toEqual([true]);
        expect(store.getStatus(t.signature)!.submitSlot).toBe(42); // the earlier record, not a second one
        expect(accounts.usage(who.account.id).total).toBe(0);
      } finally {
        await restarted.close();
      }
    } finally {
      dir.cleanup();
    }
  });

  it("a record replicated from another node (the cluster's updateStatus) makes its signature known", async () => {
    const t = tx();
    expect(filterAnswer(t.base64)).toBe(1);
    expect(await store.updateStatus(statusRecord({ signature: t.signature, accountId: who.account.id, submitSlot: 77 }))).toBe(true);
    expect(filterAnswer(t.base64)).toBe(0);
    const counted = accounts.usage(who.account.id).total;
    await send(t.base64);
    expect(store.getStatus(t.signature)!.submitSlot).toBe(77);
    expect(accounts.usage(who.account.id).total).toBe(counted);
  });

  it('a false positive ("maybe known" without a record) takes the old path and is accepted once', async () => {
    const t = tx();
    knownAddBatch(t.key); // as a colliding signature would leave it
    expect(filterAnswer(t.base64)).toBe(0);
    const asked = vi.spyOn(store, 'hasStatus');
    await send(t.base64);
    expect(asked.mock.results.map((r) => r.value)).toEqual([false]);
    expect(accounts.usage(who.account.id).total).toBe(1);
    expect(store.getStatus(t.signature)!.submitSlot).toBe(500);
  });
});

describe("the store's duplicate check (hasStatus) on the other paths", () => {
  it('answers from the filter once it is loaded: a key it never had is not read from LMDB; a key it has is', async () => {
    // A record put into LMDB behind the overlay after the load (in the service nothing writes
    // status records that way: one process per data directory, the overlay for every write):
    // the filter never had it, so hasStatus says unknown without reading the store. Before this
    // step hasStatus read it and said known; this is what shows the store is not asked.
    const behind = statusKey(randomSignature())!;
    store.status.putSync(behind, Buffer.from('v'));
    expect(knownReady()).toBe(true);
    expect(knownContains(behind)).toBe(false);
    expect(store.hasStatus(behind)).toBe(false);
    // Every record written as the service writes them is known, in the overlay and after it.
    const t = tx();
    await send(t.base64);
    expect(store.hasStatus(t.key)).toBe(true);
    await store.flushed();
    expect(store.hasStatus(t.key)).toBe(true);
    // Not ready (a load running): the store is asked, and finds the record put behind the filter.
    const { loadKnownSignatures } = await import('../../src/store/known-load.js');
    const load = loadKnownSignatures(store.status, (e) => {
      throw e;
    }, 1);
    expect(knownReady()).toBe(false);
    const other = statusKey(randomSignature())!;
    store.status.putSync(other, Buffer.from('v'));
    expect(store.hasStatus(other)).toBe(true);
    expect(await load.done).toBeGreaterThanOrEqual(2);
    // The load read LMDB's keys, so the one put before it began is known now.
    expect(store.hasStatus(behind)).toBe(true);
  });
});

describe('the filter and its load', () => {
  it('every 64-byte overlay put is known before it is readable; a load reads every key in batches and can be stopped', async () => {
    const key = statusKey(randomSignature())!;
    expect(knownContains(key)).toBe(false);
    overlay.put(key, Buffer.from('x'));
    expect(knownContains(key)).toBe(true);

    // Records written into LMDB without the overlay (as the migration and the log replay do).
    const keys = Array.from({ length: 25 }, () => statusKey(randomSignature())!);
    for (const k of keys) store.status.putSync(k, Buffer.from('v'));
    const { loadKnownSignatures } = await import('../../src/store/known-load.js');
    const load = loadKnownSignatures(store.status, (e) => {
      throw e;
    }, 4);
    // The first batch is read at once; the rest after turns of the event loop, "maybe known" meanwhile.
    expect(knownReady()).toBe(false);
    expect(filterAnswer(tx().base64)).toBe(0);
    expect(await load.done).toBeGreaterThanOrEqual(25);
    expect(filterAnswer(tx().base64)).toBe(1);
    expect(knownReady()).toBe(true);
    for (const k of keys) expect(knownContains(k)).toBe(true);

    const stopped = loadKnownSignatures(store.status, (e) => {
      throw e;
    }, 4);
    stopped.stop();
    expect(await stopped.done).toBe(-1);
    expect(knownReady()).toBe(true);
  });
});

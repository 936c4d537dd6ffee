/**
 * `POST /v1/send`'s key lookup folded into its inspection and admission (`inspectAdmitKey`)
 * against the two calls it replaces on an ingress thread, in one process:
 *
 *   node --import tsx bench/admit-key.ts [calls per block] [blocks] [all|crossings]
 *
 * - **two calls**: `KeyCache.authenticate` (the addon's `KeyTable.lookup`: SHA-256 of the key,
 *   the generations, the overlay; the slot's pair) then what `SubmissionCore.sendBase64` does on
 *   an ingress thread — `RateLimiter.sendBucket`, `inspectAdmit`, the verdict and numbers read,
 *   the demand counted, the decision and the facts built;
 * - **one call**: `KeyCache.admitSend` (`inspectAdmitKey`: the lookup, then the same inspection
 *   and admission on the entry's plan facts) and the same reading after it.
 * A real store and key cache (the key entered once, then a hit every call), real web3.js-signed
 * transactions (a pool reused across blocks), every one admitted (a budget that never runs out).
 * CPU time of the process (`process.cpuUsage`) per call, blocks alternated (rotated with the
 * inspection alone), medians. A last pair runs both on transactions whose signature fails
 * (inspection's verdict, then nothing: what is left is the calls' own difference).
 */
import { loadavg } from 'node:os';
import { Accounts } from '../src/accounts/accounts.js';
import { KeyCache } from '../src/accounts/key-cache.js';
import type { RateDecision } from '../src/accounts/rate-limiter.js';
import type { ChainFacts } from '../src/delivery/delivery.js';
import { Admit, ADMIT_KEY_OUT_LEN, inspectAdmit, type InspectResult } from '../src/native.js';
import { Store } from '../src/store/store.js';
import { tempDir } from '../harness/tmp.js';
import { admissionFixture, brokenSignatures, fmt, inspectionAlone, median, pairHeader, rotatedBlocks, tippedPool } from './lib/admission.js';

const calls = Number(process.argv[2] ?? 100_000);
const blocks = Number(process.argv[3] ?? 11);
/** `crossings`: only the last pair (no ed25519: the difference is small and needs many blocks). */
const only = process.argv[4] ?? 'all';
const LPP = 1000;
const { plans: PLANS, limiter, tips, tipSet, hashes, view } = admissionFixture('acc_bench_admit_key');
const tmp = tempDir();
const store = Store.open(tmp.dir);
const accounts = new Accounts(store, { plans: PLANS, lamportsPerPoint: LPP });
const apiKey = accounts.createAccount('bench').api_key;
const keys = new KeyCache(accounts, store);
keys.admitWith((a) => ({ minTipLamports: PLANS[a.plan].minTipBp * LPP, bucket: limiter.sendBucket(a) }));
if (!keys.authenticate(apiKey) || keys.size !== 1) throw new Error('the key was not entered');

const POOL = 2048;
const pool = tippedPool(POOL, tips, hashes);
const broken = brokenSignatures(pool);

let sink = 0;
const out = new Float64Array(ADMIT_KEY_OUT_LEN);

/** After the inspection and admission: what `SubmissionCore.admitted` reads and builds. */
function afterAdmit(r: InspectResult, plan: (typeof PLANS)['starter'], bucket: { index: number }): void {
  if (!r.ok) {
    sink++;
    return;
  }
  const verdict = out[0]!;
  if (verdict !== Admit.ADMITTED && verdict !== Admit.RATE_LIMITED) throw new Error(`refused ${verdict}`);
  limiter.sendDemand(bucket as never, 1);
  const rate: RateDecision = { granted: verdict === Admit.ADMITTED, limit: plan.maxTps, remaining: out[4]!, retryAfterMs: out[5]!, resetMs: out[6]! };
  if (!rate.granted) throw new Error('limited');
  const lastValid = out[3]!;
  const facts: ChainFacts = { health: { synced: true, slot: out[1]!, slotAgeMs: out[2]! }, blockhashExpired: false, lastValidBlockHeight: lastValid < 0 ? null : lastValid };
  sink += facts.health.slot + rate.remaining;
}

function twoCalls(txs: string[]): void {
  for (let i = 0; i < calls; i++) {
    const who = keys.authenticate(apiKey);
    if (who === undefined) throw new Error('401');
    const { account } = who;
    const plan = PLANS[account.plan];
    const bucket = limiter.sendBucket(account);
    const r = inspectAdmit(txs[i % POOL]!, tipSet, view.admission, plan.minTipBp * LPP, bucket.send, out);
    afterAdmit(r, plan, bucket);
  }
}

function oneCall(txs: string[]): void {
  for (let i = 0; i < calls; i++) {
    const hit = keys.admitSend(apiKey, txs[i % POOL]!, tipSet, view.admission, out);
    if (hit === null) throw new Error('not folded');
    afterAdmit(hit.r, PLANS[hit.who.account.plan], hit.bucket);
  }
}

const bareBlock = inspectionAlone(tipSet, calls);

function pair(txs: string[], label: string): void {
  const loadStart = loadavg()[0]!;
  const [two, one, bare] = rotatedBlocks([twoCalls, oneCall, bareBlock], txs, calls, blocks) as [number[], number[], number[]];
  console.log(pairHeader(label, calls, blocks, loadStart));
  console.log(`  two calls (KeyTable.lookup + inspectAdmit): median ${median(two).toFixed(2)} [${fmt(two)}]`);
  console.log(`  one call (inspectAdmitKey):                 median ${median(one).toFixed(2)} [${fmt(one)}]`);
  console.log(`  inspection alone:                           median ${median(bare).toFixed(2)} [${fmt(bare)}]`);
  const paired = two.map((t, i) => t - one[i]!);
  console.log(`  two − one, paired by rotation: median ${median(paired).toFixed(2)} µs [${fmt(paired)}]`);
}

/** The key cache's hit alone (`KeyCache.authenticate`: one `KeyTable.lookup`), the most the fold can save. */
function lookupAlone(): void {
  const run = (): number => {
    const before = process.cpuUsage();
    for (let i = 0; i < calls; i++) sink += keys.authenticate(apiKey) === undefined ? 0 : 1;
    const d = process.cpuUsage(before);
    return (d.user + d.system) / calls;
  };
  run();
  const xs = Array.from({ length: blocks }, run);
  console.log(`the key cache's hit alone (KeyCache.authenticate): median ${median(xs).toFixed(2)} µs [${fmt(xs)}]; load ${loadavg()[0]!.toFixed(2)}`);
}

lookupAlone();
if (only !== 'crossings') {
  pair(pool, 'admitted sends');
  pair(broken, 'signature refused (no admission: the difference left is the calls themselves)');
}
// Refused at its first byte (no ed25519, whose 50–70 µs hide the rest): the crossings themselves.
pair(Array.from({ length: POOL }, () => '!'), 'not base64 (refused before any inspection: the crossings and the lookup alone)');
if (sink === 0) console.log('');
await store.close();
tmp.cleanup();

/**
 * `POST /v1/send`'s inspection, admission and send token: the JavaScript steps against the one
 * native call (`inspectAdmit`), in one process:
 *
 *   node --import tsx bench/inspect-admit.ts [calls per block] [blocks]
 *
 * - **old**: what an ingress thread did until issue 35's admission step — `inspectTransaction`
 *   (the addon's `inspect`, its result reshaped by `toResult`), the chain facts of the thread's
 *   replica (`health()` and two `Map` lookups by the base58 blockhash, as `ThreadDelivery.chainFacts`
 *   read them), the tip and plan-minimum checks, the stale check, and `RateLimiter.takeSend`
 *   (`bucketTakeDetailed`, the decision reshaped);
 * - **new**: `RateLimiter.sendBucket`, `inspectAdmit` on the replica's native facts, the verdict
 *   and numbers read from the `Float64Array`, the demand counted, the decision and the facts the
 *   rest of the path reads built (as `SubmissionCore.sendBase64` does).
 * Real web3.js-signed transactions (a pool reused across blocks: inspection keeps no memory of
 * them), every one admitted (a budget that never runs out). CPU time of the process
 * (`process.cpuUsage`, user + system) per call, blocks alternated, medians. A last pair of lines
 * runs both on transactions whose signature fails (inspection's verdict, then nothing: what is
 * left is the calls' own difference). Each pair also runs the inspection alone
 * (`inspectTransaction`), rotated with the two, so what each spends beyond it can be read.
 */
import { loadavg } from 'node:os';
import { minTipLamports } from '../src/accounts/plans.js';
import type { RateDecision } from '../src/accounts/rate-limiter.js';
import type { ChainFacts } from '../src/delivery/delivery.js';
import { Admit, ADMIT_OUT_LEN, inspectAdmit, inspectTransaction, type VerifiedTransaction } from '../src/native.js';
import { admissionFixture, brokenSignatures, fmt, inspectionAlone, median, pairHeader, rotatedBlocks, tippedPool } from './lib/admission.js';

const calls = Number(process.argv[2] ?? 100_000);
const blocks = Number(process.argv[3] ?? 11);
const LPP = 1000;
// The chain view: 150 live blockhashes, as a replica holds them a minute into a run; the new
// replica (its blockhashes native) and, for the old steps, the replica as it was: a Map.
const { plans: PLANS, account, limiter, tips, tipSet, hashes, snapshot, view } = admissionFixture('acc_bench_inspect_admit');
const oldHashes = new Map<string, number>(snapshot.blockhashes);
const oldChain = {
  health: () => view.health(),
  isBlockhashExpired: (h: string) => {
    const lv = oldHashes.get(h);
    return lv !== undefined && snapshot.blockHeight > lv;
  },
  lastValidBlockHeight: (h: string) => oldHashes.get(h) ?? null,
};

const POOL = 2048;
const pool = tippedPool(POOL, tips, hashes);
const broken = brokenSignatures(pool);

let sink = 0;
function oldBlock(txs: string[]): void {
  for (let i = 0; i < calls; i++) {
    const r = inspectTransaction(txs[i % POOL]!, tipSet);
    if (!r.ok) {
      sink++;
      continue;
    }
    sink += oldSteps(r.tx);
  }
}

/** Today's steps after the inspection: the chain facts, the checks, the send token. */
function oldSteps(tx: VerifiedTransaction): number {
  const blockhash = tx.durableNonce ? null : tx.recentBlockhash;
  const facts: ChainFacts = {
    health: oldChain.health(),
    blockhashExpired: blockhash !== null && oldChain.isBlockhashExpired(blockhash),
    lastValidBlockHeight: blockhash === null ? null : oldChain.lastValidBlockHeight(blockhash),
  };
  if (facts.blockhashExpired || tx.tipLamports === 0n) throw new Error('refused');
  if (tx.tipLamports < minTipLamports(PLANS[account.plan], LPP)) throw new Error('refused');
  if (!facts.health.synced) throw new Error('stale');
  const rate = limiter.takeSend(account, 1);
  if (!rate.granted) throw new Error('limited');
  return facts.health.slot + rate.remaining;
}

const out = new Float64Array(ADMIT_OUT_LEN);
function newBlock(txs: string[]): void {
  for (let i = 0; i < calls; i++) {
    const plan = PLANS[account.plan];
    const bucket = limiter.sendBucket(account);
    const r = inspectAdmit(txs[i % POOL]!, tipSet, view.admission, plan.minTipBp * LPP, bucket.send, out);
    if (!r.ok) {
      sink++;
      continue;
    }
    const verdict = out[0]!;
    if (verdict !== Admit.ADMITTED && verdict !== Admit.RATE_LIMITED) throw new Error('refused');
    limiter.sendDemand(bucket, 1);
    const rate: RateDecision = { granted: verdict === Admit.ADMITTED, limit: plan.maxTps, remaining: out[4]!, retryAfterMs: out[5]!, resetMs: out[6]! };
    if (!rate.granted) throw new Error('limited');
    const lastValid = out[3]!;
    const facts: ChainFacts = { health: { synced: true, slot: out[1]!, slotAgeMs: out[2]! }, blockhashExpired: false, lastValidBlockHeight: lastValid < 0 ? null : lastValid };
    sink += facts.health.slot + rate.remaining;
  }
}

const bareBlock = inspectionAlone(tipSet, calls);

function pair(txs: string[], label: string): void {
  const loadStart = loadavg()[0]!;
  const [old, neu, bare] = rotatedBlocks([oldBlock, newBlock, bareBlock], txs, calls, blocks) as [number[], number[], number[]];
  console.log(pairHeader(label, calls, blocks, loadStart));
  console.log(`  old (inspect + chain facts + checks + takeSend): median ${median(old).toFixed(2)} [${fmt(old)}]`);
  console.log(`  new (inspectAdmit):                              median ${median(neu).toFixed(2)} [${fmt(neu)}]`);
  console.log(`  inspection alone:                                median ${median(bare).toFixed(2)} [${fmt(bare)}]`);
  // Paired within each rotation (the three blocks ran back to back): the machine's drift cancels.
  const paired = old.map((o, i) => o - neu[i]!);
  console.log(`  old − new, paired by rotation: median ${median(paired).toFixed(2)} µs [${fmt(paired)}]`);
  console.log(`  saved: ${(median(old) - median(neu)).toFixed(2)} µs a send (${((1 - median(neu) / median(old)) * 100).toFixed(1)} %); beyond the inspection alone: old ${(median(old) - median(bare)).toFixed(2)}, new ${(median(neu) - median(bare)).toFixed(2)}`);
}

/**
 * The old steps without the inspection, on transactions inspected beforehand: what the JavaScript
 * admission and take cost a send (the most the one call can save), free of ed25519's spread.
 */
function admissionAlone(): void {
  const inspected = pool.map((b) => inspectTransaction(b, tipSet)).flatMap((r) => (r.ok ? [r.tx] : []));
  const run = (): number => {
    const before = process.cpuUsage();
    for (let i = 0; i < calls; i++) {
      sink += oldSteps(inspected[i % inspected.length]!);
    }
    const d = process.cpuUsage(before);
    return (d.user + d.system) / calls;
  };
  run();
  const xs = Array.from({ length: blocks }, run);
  console.log(`the old steps after the inspection alone (chain facts, checks, takeSend): median ${median(xs).toFixed(2)} µs [${fmt(xs)}]; load ${loadavg()[0]!.toFixed(2)}`);
}

admissionAlone();
pair(pool, 'admitted sends');
pair(broken, 'signature refused (no admission: the difference left is the calls themselves)');
if (sink === 0) console.log('');

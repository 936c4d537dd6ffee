/**
 * The duplicate check of an accepted `POST /v1/send` on an ingress thread, before and after the
 * filter of known signatures (`native/src/known.rs`), in one process:
 *
 *   node --import tsx bench/known-signatures.ts [calls per block] [blocks] [records in the store]
 *
 * - **old**: `inspectAdmit`, then `Store.hasStatus` of the signature's bytes (a view into the
 *   wire, as `SubmissionCore.deliver` makes it): the overlay's `overlayGet`, lmdb-js
 *   `getBinaryFast`, and on the miss `resetReadTxn` and `getBinaryFast` again;
 * - **new**: `inspectAdmit`, whose `out[7]` answers "certainly new", then `hasStatus` only for
 *   "maybe known" (the filter's false positives: about 1 % at most here).
 * Real web3.js-signed transactions, every one new (their signatures are not in the store) and
 * admitted (a budget that never runs out); a real LMDB store holding `records` status records
 * (random keys, 120-byte values), the filter loaded from it as the service loads it. CPU time of
 * the process (`process.cpuUsage`, user + system) per call, blocks alternated, medians. Then the
 * two duplicate checks alone, on the same signatures: `hasStatus` against the filter's answer
 * as one more addon call (`knownContains`: the filter's work plus a crossing, which inside
 * `inspectAdmit` it does not pay).
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { DEFAULT_PLANS } from '../src/accounts/plans.js';
import { Store } from '../src/store/store.js';
import { recordBytesIn } from '../src/store/status-codec.js';
import { ADMIT_OUT_LEN, inspectAdmit, inspectTransaction, knownContains, knownStats } from '../src/native.js';
import { admissionFixture, tippedPool } from './lib/admission.js';
import { tempDir } from '../harness/tmp.js';

const calls = Number(process.argv[2] ?? 100_000);
const blocks = Number(process.argv[3] ?? 5);
const records = Number(process.argv[4] ?? 100_000);
const LPP = 1000;
const { account, limiter, tips, tipSet, hashes, view } = admissionFixture('acc_bench_known_signatures');

const tmp = tempDir();
const store = Store.open(tmp.dir);
// The store's records, written straight into LMDB (as a previous process left them).
for (let done = 0; done < records; ) {
  const n = Math.min(10_000, records - done);
  store.root.transactionSync(() => {
    for (let i = 0; i < n; i++) store.status.putSync(randomBytes(64), randomBytes(120));
  });
  done += n;
}
const loadStart = process.cpuUsage();
const loaded = await store.loadKnownSignatures().done;
const loadCpu = process.cpuUsage(loadStart);
const [layers = 0, keys = 0, bytes = 0] = knownStats();
console.log(
  `store: ${records} records; filter loaded ${loaded} keys in ${((loadCpu.user + loadCpu.system) / 1000).toFixed(0)} ms of CPU ` +
    `(${(((loadCpu.user + loadCpu.system) / Math.max(loaded, 1)) * 1000).toFixed(0)} ns a key): ${layers} layer(s), ${keys} keys, ${(bytes / 1024).toFixed(0)} KiB`,
);

const POOL = 2048;
const pool = tippedPool(POOL, tips, hashes);
const sigKeys = pool.map((b) => {
  const r = inspectTransaction(b, tipSet);
  if (!r.ok) throw new Error(r.error.message);
  return recordBytesIn(r.tx.wire!, r.tx.signatureOffset, r.tx.blockhashOffset).signature;
});
const fp = sigKeys.filter((k) => knownContains(k)).length;
console.log(`the pool's ${POOL} new signatures: ${fp} read "maybe known" (false positives)`);

let sink = 0;
const out = new Float64Array(ADMIT_OUT_LEN);
function admit(i: number) {
  const bucket = limiter.sendBucket(account);
  const r = inspectAdmit(pool[i % POOL]!, tipSet, view.admission, DEFAULT_PLANS.starter.minTipBp * LPP, bucket.send, out);
  if (!r.ok || out[0] !== 0) throw new Error('refused');
  limiter.sendDemand(bucket, 1);
  return r.tx;
}
function oldBlock(): void {
  for (let i = 0; i < calls; i++) {
    const tx = admit(i);
    const bytes = recordBytesIn(tx.wire!, tx.signatureOffset, tx.blockhashOffset);
    if (store.hasStatus(bytes.signature)) throw new Error('known');
    sink += out[1]!;
  }
}
function newBlock(): void {
  for (let i = 0; i < calls; i++) {
    const tx = admit(i);
    const certainlyNew = out[7] === 1;
    const bytes = recordBytesIn(tx.wire!, tx.signatureOffset, tx.blockhashOffset);
    if (!certainlyNew && store.hasStatus(bytes.signature)) throw new Error('known');
    sink += out[1]!;
  }
}
function oldCheck(): void {
  for (let i = 0; i < calls; i++) sink += store.hasStatus(sigKeys[i % POOL]!) ? 1 : 0;
}
function newCheck(): void {
  for (let i = 0; i < calls; i++) sink += knownContains(sigKeys[i % POOL]!) ? 1 : 0;
}

function measure(run: () => void): number {
  const before = process.cpuUsage();
  run();
  const d = process.cpuUsage(before);
  return (d.user + d.system) / calls;
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (xs: number[]): string => xs.map((x) => x.toFixed(2)).join(', ');

function pair(label: string, a: [string, () => void], b: [string, () => void]): void {
  const load0 = loadavg()[0]!;
  measure(a[1]); // warm-up (JIT), not counted
  measure(b[1]);
  const xa: number[] = [];
  const xb: number[] = [];
  for (let k = 0; k < blocks; k++) {
    // Alternated: each runs first in turn.
    if (k % 2 === 0) {
      xa.push(measure(a[1]));
      xb.push(measure(b[1]));
    } else {
      xb.push(measure(b[1]));
      xa.push(measure(a[1]));
    }
  }
  const paired = xa.map((x, i) => x - xb[i]!);
  console.log(`${label}: CPU µs per call, ${calls} calls a block, ${blocks} alternated blocks; load ${load0.toFixed(2)} → ${loadavg()[0]!.toFixed(2)}`);
  console.log(`  ${a[0]}: median ${median(xa).toFixed(2)} [${fmt(xa)}]`);
  console.log(`  ${b[0]}: median ${median(xb).toFixed(2)} [${fmt(xb)}]`);
  console.log(`  difference, paired: median ${median(paired).toFixed(2)} µs [${fmt(paired)}]`);
}

pair('the duplicate check alone', ['old (hasStatus: overlay + 2 LMDB reads + resetReadTxn)', oldCheck], ['the filter (knownContains, one addon call)', newCheck]);
pair('an accepted send up to the duplicate check', ['old (inspectAdmit + hasStatus)', oldBlock], ['new (inspectAdmit answering it)', newBlock]);
if (sink === -1) console.log(sink);
await store.close();
tmp.cleanup();

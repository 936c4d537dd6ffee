/**
 * Benchmark suite "native": the native transaction core against its baseline and against the
 * JavaScript a Node service would otherwise run.
 *
 * Scenarios (one tinybench `Bench` each, every implementation run in 4 interleaved rounds; every
 * implementation gets the same inputs, in the same order, and every result is checked and consumed):
 *   1. inspect one transaction — landfall `inspectTransaction`, a bare native ed25519 verify of the
 *      same signature (the floor), web3.js + tweetnacl, web3.js + node:crypto;
 *   2. batch of 100 — `inspectTransactions` (one ed25519 batch) against 100 × `inspectTransaction`;
 *   3. token bucket take — the native lock-free bucket against a JS `Map` bucket.
 *
 * Inputs: a pool of 512 distinct signed transactions (random fee payer, priority fee, transfer,
 * tip to one of 8 tip addresses). `BENCH_TIME_MS` shortens or lengthens the time per task.
 */
import { Bench, type FnReturnedObject, type Task } from 'tinybench';
import * as addon from '../native/index.js';
import {
  TipSet,
  base58Encode as nativeBase58,
  buckets,
  ed25519Verify,
  inspectTransaction,
  inspectTransactions,
  type InspectResult,
} from '../src/native.js';
import { base58Encode } from './lib/base58.js';
import { JsTipSet, jsInspect, naclVerify, nodeCryptoVerify, type JsInspection } from './lib/js-inspect.js';
import {
  fmtNs,
  fmtOps,
  fmtRatio,
  finishMachineInfo,
  machineInfo,
  machineLine,
  mdTable,
  pooledStats,
  samplesOf,
  target,
  targetsTable,
  type Suite,
  type SuiteResult,
  type Target,
  type TaskStats,
  warnIfBusy,
} from './lib/suite.js';
import { TIP_ADDRESS_COUNT, buildPool, type Pool, type TxFixture } from './lib/transactions.js';

// ---- configuration --------------------------------------------------------------------------

const POOL_SIZE = 512; // a power of two: `i & MASK` cycles through the pool
const MASK = POOL_SIZE - 1;
const BATCH_SIZE = 100;
/** A bucket take costs about as much as reading the timer (~50 ns): time takes in groups. */
const BUCKET_CALLS_PER_SAMPLE = 1000;
const BUCKET_SLOT = buckets.slots - 1;
/** Never configured in this process: `take` returns -Infinity before reading the clock. */
const UNCONFIGURED_SLOT = buckets.slots - 2;
/** 1 token per ns (the finest the GCRA interval allows) and the largest burst: never refuses. */
const BUCKET_RATE = 1e9;
const BUCKET_CAPACITY = 16_777_215;

function timeBudgetMs(): number {
  const env = Number(process.env['BENCH_TIME_MS']);
  return Number.isFinite(env) && env > 0 ? env : 4000;
}

// ---- result shape ---------------------------------------------------------------------------

export interface ImplResult extends TaskStats {
  id: string;
  /** Calls made during warmup and measurement, and how many returned the expected verdict. */
  calls: number;
  valid: number;
}

export interface BatchImplResult extends ImplResult {
  /** The call's cost divided over its transactions. */
  perTransaction: { meanNs: number; p50Ns: number; p99Ns: number; txPerSec: number };
}

export interface Scenario<I extends ImplResult = ImplResult> {
  title: string;
  description: string;
  /** Implementation id of the row every ratio in the table is relative to. */
  reference: string;
  implementations: I[];
}

export interface NativeResult extends SuiteResult {
  suite: 'native';
  durationSec: number;
  config: {
    poolSize: number;
    tipAddresses: number;
    batchSize: number;
    bucketCallsPerSample: number;
    /** Measured time per implementation, split over `rounds` interleaved rounds. */
    timeMsPerTask: number;
    rounds: number;
    warmupMsPerRound: number;
    minIterationsPerRound: number;
    timestampProvider: string;
  };
  scenarios: {
    inspect: Scenario;
    batch: Scenario<BatchImplResult>;
    bucket: Scenario;
  };
  ratios: Record<string, { value: number; meaning: string }>;
  targets: Target[];
}

// ---- harness --------------------------------------------------------------------------------

/** Where results go so nothing is optimised away, and where each call's verdict is counted. */
class Sink {
  calls = 0;
  valid = 0;
  acc = 0;
}
/** Exported so the accumulated values escape the module (and any dead-code analysis). */
export const sinks = new Map<string, Sink>();

function sink(id: string): Sink {
  const s = new Sink();
  sinks.set(id, s);
  return s;
}

interface Impl {
  id: string;
  label: string;
  fn: () => unknown;
  perSample?: number;
}

/** Rounds per scenario: each implementation is added this many times, in a rotated order. */
const ROUNDS = 4;

/**
 * Run one scenario in one tinybench `Bench`. Each implementation appears as `ROUNDS` tasks of a
 * quarter of the time budget, the order rotated every round (a b c, b c a, c a b, …), and its
 * samples are pooled afterwards (see `pooledStats`): on a shared machine a slow spell then lands
 * on every implementation, instead of on whichever one a single sequential pass was running.
 */
async function runScenario(name: string, timeMs: number, impls: Impl[]): Promise<Map<string, ImplResult>> {
  console.log(`\n${name}`);
  const bench = new Bench({
    name,
    time: timeMs / ROUNDS,
    iterations: 16,
    warmup: true,
    warmupTime: warmupMsPerRound(timeMs),
    warmupIterations: 8,
    retainSamples: true,
    throws: true,
  });
  bench.addEventListener('warning', (evt) => {
    console.warn(`  warning: ${evt.task.name}: timer saturation (${evt.reason ?? 'unknown'})`);
  });
  const taskName = (impl: Impl, round: number): string => `${impl.label} · round ${round + 1}`;
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < impls.length; k++) {
      const impl = impls[(k + round) % impls.length]!;
      bench.add(taskName(impl, round), impl.fn);
    }
  }
  await bench.run();

  const out = new Map<string, ImplResult>();
  for (const impl of impls) {
    const rounds = Array.from({ length: ROUNDS }, (_, round) => {
      const task: Task | undefined = bench.getTask(taskName(impl, round));
      if (!task) throw new Error(`task ${taskName(impl, round)} missing`);
      return samplesOf(task);
    });
    const s = sinks.get(impl.id);
    if (!s) throw new Error(`no sink for ${impl.id}`);
    if (s.valid !== s.calls) {
      throw new Error(`${impl.label}: ${s.calls - s.valid} of ${s.calls} calls returned a wrong verdict`);
    }
    const stats = pooledStats(impl.label, rounds, impl.perSample ?? 1);
    out.set(impl.id, { id: impl.id, ...stats, calls: s.calls, valid: s.valid });
  }
  console.table(
    [...out.values()].map((r) => ({
      implementation: r.name,
      mean: fmtNs(r.meanNs),
      p50: fmtNs(r.p50Ns),
      p99: fmtNs(r.p99Ns),
      'ops/s': fmtOps(r.opsPerSec),
      'rme %': r.rmePercent.toFixed(2),
      samples: r.samples,
      'round means': r.roundMeansNs.map(fmtNs).join(', '),
    })),
  );
  return out;
}

function warmupMsPerRound(timeMs: number): number {
  return Math.min(150, timeMs / ROUNDS / 4);
}

function get<V>(m: Map<string, V>, id: string): V {
  const v = m.get(id);
  if (v === undefined) throw new Error(`missing result ${id}`);
  return v;
}

// ---- correctness check before timing --------------------------------------------------------

function sameAsExpected(fx: TxFixture, r: InspectResult): boolean {
  if (!r.ok) return false;
  const e = fx.expected;
  return (
    r.tx.signature === nativeBase58(e.signature) &&
    r.tx.feePayer === e.feePayer &&
    r.tx.tipLamports === e.tipLamports &&
    r.tx.tipTransfers === 1 &&
    r.tx.tipAccount === e.tipAccount &&
    r.tx.computeUnitPrice === e.computeUnitPrice
  );
}

function jsSameAsNative(js: JsInspection, r: InspectResult): boolean {
  if (!r.ok || !js.ok) return false;
  return (
    js.signature === r.tx.signature &&
    js.feePayer === r.tx.feePayer &&
    js.recentBlockhash === r.tx.recentBlockhash &&
    js.tipLamports === r.tx.tipLamports &&
    js.tipTransfers === r.tx.tipTransfers &&
    js.tipAccount === r.tx.tipAccount &&
    js.transfersViaLookup === r.tx.transfersViaLookup &&
    js.durableNonce === r.tx.durableNonce &&
    js.computeUnitPrice === r.tx.computeUnitPrice &&
    js.computeUnitLimit === r.tx.computeUnitLimit &&
    js.size === r.tx.size
  );
}

/** Every implementation must agree on every input before any of them is timed. */
function checkAgreement(pool: Pool, tips: TipSet, jsTips: JsTipSet, batches: string[][]): void {
  for (const [i, fx] of pool.txs.entries()) {
    const r = inspectTransaction(fx.base64, tips);
    if (!sameAsExpected(fx, r)) throw new Error(`inspectTransaction disagrees on pool[${i}]: ${JSON.stringify(r)}`);
    if (!ed25519Verify(fx.message, fx.signature, fx.publicKey)) throw new Error(`ed25519Verify rejects pool[${i}]`);
    if (!jsSameAsNative(jsInspect(fx.base64, jsTips, naclVerify), r)) throw new Error(`web3+nacl disagrees on pool[${i}]`);
    if (!jsSameAsNative(jsInspect(fx.base64, jsTips, nodeCryptoVerify), r)) {
      throw new Error(`web3+node:crypto disagrees on pool[${i}]`);
    }
    if (base58Encode(fx.signature) !== nativeBase58(fx.signature)) throw new Error('JS base58 differs from native');
  }
  // A corrupted signature must be refused by everyone (the verify really runs).
  const bad = Buffer.from(pool.txs[0]!.wire);
  bad[10] = bad[10]! ^ 0xff;
  const b64 = bad.toString('base64');
  if (inspectTransaction(b64, tips).ok) throw new Error('inspectTransaction accepted a bad signature');
  if (jsInspect(b64, jsTips, naclVerify).ok || jsInspect(b64, jsTips, nodeCryptoVerify).ok) {
    throw new Error('JS reference accepted a bad signature');
  }
  for (const batch of batches) {
    const rs = inspectTransactions(batch, tips);
    if (rs.length !== batch.length) throw new Error('batch length differs');
    for (const [j, r] of rs.entries()) {
      const single = inspectTransaction(batch[j]!, tips);
      if (!r.ok || !single.ok || r.tx.signature !== single.tx.signature || r.tx.tipLamports !== single.tx.tipLamports) {
        throw new Error('inspectTransactions disagrees with inspectTransaction');
      }
    }
  }
}

// ---- the suite ------------------------------------------------------------------------------

async function run(): Promise<NativeResult> {
  const started = performance.now();
  const machine = machineInfo();
  warnIfBusy(machine);
  const timeMs = timeBudgetMs();
  console.log(`native: building ${POOL_SIZE} signed transactions…`);
  const pool = buildPool(POOL_SIZE);
  const tips = new TipSet(pool.tipAddresses);
  const jsTips = new JsTipSet(pool.tipAddresses);
  const b64 = pool.txs.map((t) => t.base64);
  const messages = pool.txs.map((t) => t.message);
  const signatures = pool.txs.map((t) => t.signature);
  const publicKeys = pool.txs.map((t) => t.publicKey);
  // Windows of 100 over the pool, wrapping: the same batches for both batch implementations.
  const batchCount = POOL_SIZE / 4;
  const batches = Array.from({ length: batchCount }, (_, k) =>
    Array.from({ length: BATCH_SIZE }, (_, j) => b64[(k * BATCH_SIZE + j) & MASK]!),
  );
  checkAgreement(pool, tips, jsTips, batches);
  console.log('native: all implementations agree on every input');

  // 1. inspect one transaction ------------------------------------------------------------
  const s1a = sink('landfall');
  const s1b = sink('bareVerify');
  const s1c = sink('web3Nacl');
  const s1d = sink('web3NodeCrypto');
  let i1a = 0;
  let i1b = 0;
  let i1c = 0;
  let i1d = 0;
  const inspect = await runScenario('inspect one transaction', timeMs, [
    {
      id: 'landfall',
      label: 'landfall inspectTransaction',
      fn: () => {
        const r = inspectTransaction(b64[i1a++ & MASK]!, tips);
        s1a.calls++;
        if (r.ok && r.tx.tipTransfers === 1) {
          s1a.valid++;
          s1a.acc += r.tx.size;
        }
      },
    },
    {
      id: 'bareVerify',
      label: 'bare ed25519Verify (Rust)',
      fn: () => {
        const j = i1b++ & MASK;
        const ok = ed25519Verify(messages[j]!, signatures[j]!, publicKeys[j]!);
        s1b.calls++;
        if (ok) s1b.valid++;
      },
    },
    {
      id: 'web3Nacl',
      label: 'web3.js + tweetnacl',
      fn: () => {
        const r = jsInspect(b64[i1c++ & MASK]!, jsTips, naclVerify);
        s1c.calls++;
        if (r.ok && r.tipTransfers === 1) {
          s1c.valid++;
          s1c.acc += r.size ?? 0;
        }
      },
    },
    {
      id: 'web3NodeCrypto',
      label: 'web3.js + node:crypto',
      fn: () => {
        const r = jsInspect(b64[i1d++ & MASK]!, jsTips, nodeCryptoVerify);
        s1d.calls++;
        if (r.ok && r.tipTransfers === 1) {
          s1d.valid++;
          s1d.acc += r.size ?? 0;
        }
      },
    },
  ]);

  // 2. batch of 100 -------------------------------------------------------------------------
  const s2a = sink('landfallBatch');
  const s2b = sink('landfallLoop');
  let i2a = 0;
  let i2b = 0;
  const batchRaw = await runScenario(`batch of ${BATCH_SIZE}`, timeMs, [
    {
      id: 'landfallBatch',
      label: `landfall inspectTransactions (${BATCH_SIZE})`,
      fn: () => {
        const rs = inspectTransactions(batches[i2a++ % batchCount]!, tips);
        s2a.calls++;
        let good = 0;
        for (const r of rs) if (r.ok && r.tx.tipTransfers === 1) good++;
        if (good === BATCH_SIZE) s2a.valid++;
        s2a.acc += good;
      },
    },
    {
      id: 'landfallLoop',
      label: `${BATCH_SIZE} × landfall inspectTransaction`,
      fn: () => {
        const batch = batches[i2b++ % batchCount]!;
        s2b.calls++;
        let good = 0;
        for (const tx of batch) {
          const r = inspectTransaction(tx, tips);
          if (r.ok && r.tx.tipTransfers === 1) good++;
        }
        if (good === BATCH_SIZE) s2b.valid++;
        s2b.acc += good;
      },
    },
  ]);
  const perTx = (r: ImplResult): BatchImplResult => ({
    ...r,
    perTransaction: {
      meanNs: r.meanNs / BATCH_SIZE,
      p50Ns: r.p50Ns / BATCH_SIZE,
      p99Ns: r.p99Ns / BATCH_SIZE,
      txPerSec: r.opsPerSec * BATCH_SIZE,
    },
  });

  // 3. token bucket take ----------------------------------------------------------------------
  buckets.configure(BUCKET_SLOT, BUCKET_RATE, BUCKET_CAPACITY);
  buckets.reset(BUCKET_SLOT);
  const jsBuckets = new JsTokenBuckets(BUCKET_RATE, BUCKET_CAPACITY);
  const account = pool.txs[0]!.expected.feePayer;
  const s3a = sink('nativeBucket');
  const s3b = sink('jsMapBucket');
  const s3c = sink('napiFloor');
  const n = BUCKET_CALLS_PER_SAMPLE;
  const now = (): number => performance.now();
  // The three loops are written out on purpose: a shared helper taking the call as a function
  // would add an indirect call inside a ~50 ns measurement.
  const bucket = await runScenario('token bucket take', timeMs, [
    {
      id: 'nativeBucket',
      label: 'landfall buckets.take (native)',
      perSample: n,
      fn: (): FnReturnedObject => {
        let granted = 0;
        let acc = 0;
        const t0 = now();
        for (let k = 0; k < n; k++) {
          const r = buckets.take(BUCKET_SLOT, 1);
          if (r >= 0) granted++;
          acc += r;
        }
        const dt = now() - t0;
        s3a.calls += n;
        s3a.valid += granted;
        s3a.acc += acc;
        return { overriddenDuration: dt / n, overriddenIterationCost: dt };
      },
    },
    {
      id: 'jsMapBucket',
      label: 'JS Map token bucket',
      perSample: n,
      fn: (): FnReturnedObject => {
        let granted = 0;
        let acc = 0;
        const t0 = now();
        for (let k = 0; k < n; k++) {
          const r = jsBuckets.take(account, 1);
          if (r >= 0) granted++;
          acc += r;
        }
        const dt = now() - t0;
        s3b.calls += n;
        s3b.valid += granted;
        s3b.acc += acc;
        return { overriddenDuration: dt / n, overriddenIterationCost: dt };
      },
    },
    {
      // Diagnostic: the cost of crossing into the addon and back with the same signature and
      // return type, minus the bucket work (an unconfigured slot answers before reading the clock).
      id: 'napiFloor',
      label: 'N-API call floor (take on an unconfigured slot)',
      perSample: n,
      fn: (): FnReturnedObject => {
        let refused = 0;
        const t0 = now();
        for (let k = 0; k < n; k++) {
          if (buckets.take(UNCONFIGURED_SLOT, 1) === Number.NEGATIVE_INFINITY) refused++;
        }
        const dt = now() - t0;
        s3c.calls += n;
        s3c.valid += refused;
        return { overriddenDuration: dt / n, overriddenIterationCost: dt };
      },
    },
  ]);

  // ---- assemble -------------------------------------------------------------------------------
  const landfall = get(inspect, 'landfall');
  const bare = get(inspect, 'bareVerify');
  const web3Nacl = get(inspect, 'web3Nacl');
  const web3Crypto = get(inspect, 'web3NodeCrypto');
  const batchImpl = perTx(get(batchRaw, 'landfallBatch'));
  const loopImpl = perTx(get(batchRaw, 'landfallLoop'));
  const nativeBucket = get(bucket, 'nativeBucket');
  const jsBucket = get(bucket, 'jsMapBucket');
  const napiFloor = get(bucket, 'napiFloor');

  // The take itself, measured inside Rust (1e6 takes per call, median of 5 calls), so the
  // lock-free CAS can be told apart from the N-API call that reaches it.
  const rustTakeNs = [...Array(5)]
    .map(() => addon.bucketTakeCostNs(BUCKET_SLOT, 1_000_000))
    .sort((a, b) => a - b)[2]!;

  const ratios: NativeResult['ratios'] = {
    inspectOverBareVerify: {
      value: landfall.meanNs / bare.meanNs,
      meaning: 'mean time of inspectTransaction / mean time of a bare ed25519 verify of the same signature',
    },
    web3NodeCryptoOverInspect: {
      value: web3Crypto.meanNs / landfall.meanNs,
      meaning: 'how many times faster inspectTransaction is than web3.js + node:crypto (mean time ratio)',
    },
    web3NaclOverInspect: {
      value: web3Nacl.meanNs / landfall.meanNs,
      meaning: 'how many times faster inspectTransaction is than web3.js + tweetnacl (mean time ratio)',
    },
    batchPerTxOverLoopPerTx: {
      value: batchImpl.perTransaction.meanNs / loopImpl.perTransaction.meanNs,
      meaning: `per-transaction mean of inspectTransactions(${BATCH_SIZE}) / per-transaction mean of ${BATCH_SIZE} × inspectTransaction`,
    },
    batchPerTxOverSingleInspect: {
      value: batchImpl.perTransaction.meanNs / landfall.meanNs,
      meaning: `per-transaction mean of inspectTransactions(${BATCH_SIZE}) / mean of one inspectTransaction (scenario 1)`,
    },
    jsBucketOverNative: {
      value: jsBucket.meanNs / nativeBucket.meanNs,
      meaning: 'mean time of the JS Map bucket take / mean time of the native take',
    },
    napiFloorOverNativeBucket: {
      value: napiFloor.meanNs / nativeBucket.meanNs,
      meaning: 'share of the native take spent crossing N-API (take on an unconfigured slot / real take)',
    },
  };

  const targets: Target[] = [
    target('inspect-vs-bare-verify', 'inspect ≤ 1.2 × bare verify (mean time)', ratios['inspectOverBareVerify']!.value, '×', '<=', 1.2),
    target('inspect-vs-web3-node-crypto', 'inspect ≥ 3 × faster than web3.js + node:crypto', ratios['web3NodeCryptoOverInspect']!.value, '×', '>=', 3),
    target('batch-per-tx', `batch per-transaction cost ≤ 0.6 × single inspect (${BATCH_SIZE} × inspectTransaction, same batches)`, ratios['batchPerTxOverLoopPerTx']!.value, '×', '<=', 0.6),
    target('bucket-take', 'native bucket take ≤ 100 ns (mean, called from JS)', nativeBucket.meanNs, 'ns', '<=', 100),
    target('bucket-take-in-rust', 'native bucket take ≤ 100 ns (the take alone, measured inside Rust)', rustTakeNs, 'ns', '<=', 100),
  ];

  return {
    suite: 'native',
    machine: finishMachineInfo(machine),
    durationSec: Math.round((performance.now() - started) / 100) / 10,
    config: {
      poolSize: POOL_SIZE,
      tipAddresses: TIP_ADDRESS_COUNT,
      batchSize: BATCH_SIZE,
      bucketCallsPerSample: BUCKET_CALLS_PER_SAMPLE,
      timeMsPerTask: timeMs,
      rounds: ROUNDS,
      warmupMsPerRound: warmupMsPerRound(timeMs),
      minIterationsPerRound: 16,
      timestampProvider: 'performance.now',
    },
    scenarios: {
      inspect: {
        title: 'Inspect one transaction',
        description:
          `One signed transaction (base64; priority fee + transfer + tip), cycling through ${POOL_SIZE} distinct ones. ` +
          'Bare verify gets the message, signature and key already extracted: the floor for any implementation.',
        reference: 'landfall',
        implementations: [landfall, bare, web3Nacl, web3Crypto],
      },
      batch: {
        title: `Batch of ${BATCH_SIZE}`,
        description: `${BATCH_SIZE} base64 transactions per call (the same windows of the pool for both); per-transaction = call ÷ ${BATCH_SIZE}.`,
        reference: 'landfallLoop',
        implementations: [batchImpl, loopImpl],
      },
      bucket: {
        title: 'Token bucket take',
        description:
          `One take of 1 token from a bucket that always grants (rate ${BUCKET_RATE.toExponential()}/s), single thread; ` +
          `timed in groups of ${BUCKET_CALLS_PER_SAMPLE} calls, so p50/p99 are of group means.`,
        reference: 'nativeBucket',
        implementations: [nativeBucket, jsBucket, napiFloor],
      },
    },
    ratios,
    targets,
  };
}

/** The plain JavaScript bucket: `Map<accountId, {tokens, last}>`, continuous refill. */
export class JsTokenBuckets {
  private readonly map = new Map<string, { tokens: number; last: number }>();
  constructor(
    private readonly rate: number,
    private readonly capacity: number,
  ) {}
  /** Same contract as the native take: whole tokens left (≥ 0), or −seconds to wait. */
  take(account: string, n: number): number {
    const now = performance.now();
    let b = this.map.get(account);
    if (b === undefined) {
      b = { tokens: this.capacity, last: now };
      this.map.set(account, b);
    }
    const tokens = Math.min(this.capacity, b.tokens + ((now - b.last) * this.rate) / 1000);
    b.last = now;
    if (tokens >= n) {
      b.tokens = tokens - n;
      return Math.floor(b.tokens);
    }
    b.tokens = tokens;
    return -((n - tokens) / this.rate);
  }
}

// ---- docs block -----------------------------------------------------------------------------

const LABELS: Record<string, string> = {
  landfall: 'landfall `inspectTransaction` (decode + parse + verify + tips)',
  bareVerify: 'bare ed25519 verify in Rust (`ed25519Verify`, pre-extracted)',
  web3Nacl: '`@solana/web3.js` deserialize + tweetnacl verify + JS tip scan',
  web3NodeCrypto: '`@solana/web3.js` deserialize + `node:crypto` verify + JS tip scan',
  landfallBatch: `landfall \`inspectTransactions\` (${BATCH_SIZE}, one ed25519 batch)`,
  landfallLoop: `${BATCH_SIZE} × landfall \`inspectTransaction\``,
  nativeBucket: 'landfall `buckets.take` (native, lock-free)',
  jsMapBucket: 'JS `Map` token bucket (`performance.now()` refill)',
  napiFloor: 'diagnostic: N-API call floor (`buckets.take` on an unconfigured slot, no bucket work)',
};
const label = (id: string): string => LABELS[id] ?? id;

function refOf<I extends ImplResult>(s: Scenario<I>): I {
  const r = s.implementations.find((i) => i.id === s.reference);
  if (!r) throw new Error(`reference ${s.reference} missing`);
  return r;
}

function readmeTable(r: NativeResult): string {
  const out: string[] = [machineLine(r.machine), ''];
  const { inspect, batch, bucket } = r.scenarios;

  const simple = (s: Scenario, refName: string): void => {
    const ref = refOf(s);
    out.push(`**${s.title}.** ${s.description}`, '');
    out.push(
      mdTable(
        ['implementation', 'mean', 'p50', 'p99', 'ops/s', `time vs ${refName}`],
        s.implementations.map((i) => [
          label(i.id),
          fmtNs(i.meanNs),
          fmtNs(i.p50Ns),
          fmtNs(i.p99Ns),
          fmtOps(i.opsPerSec),
          fmtRatio(i.meanNs / ref.meanNs),
        ]),
      ),
      '',
    );
  };
  simple(inspect, 'landfall');

  const loop = refOf(batch);
  out.push(`**${batch.title}.** ${batch.description}`, '');
  out.push(
    mdTable(
      ['implementation', 'mean per call', 'mean per tx', 'p99 per tx', 'tx/s', 'per-tx time vs single'],
      batch.implementations.map((i) => [
        label(i.id),
        fmtNs(i.meanNs),
        fmtNs(i.perTransaction.meanNs),
        fmtNs(i.perTransaction.p99Ns),
        fmtOps(i.perTransaction.txPerSec),
        fmtRatio(i.perTransaction.meanNs / loop.perTransaction.meanNs),
      ]),
    ),
    '',
  );

  simple(bucket, 'native');

  const floor = bucket.implementations.find((i) => i.id === 'napiFloor');
  const take = refOf(bucket);
  if (floor) {
    out.push(
      `The N-API call floor (same call, an unconfigured slot: no clock read, no bucket work) is ${fmtNs(floor.meanNs)}, ` +
        `${Math.round((100 * floor.meanNs) / take.meanNs)} % of a native take on this machine.`,
      '',
    );
  }

  out.push('**Targets**', '');
  out.push(targetsTable(r.targets, (v, unit) => (unit === 'ns' ? fmtNs(v) : `${v.toFixed(2)}${unit}`)));
  out.push(
    '',
    `Every call's verdict is checked (${Object.values(r.scenarios)
      .flatMap((s: Scenario) => s.implementations)
      .reduce((a, i) => a + i.calls, 0)
      .toLocaleString('en-US')} calls, all valid); raw numbers: \`bench/results/native.json\`; run: \`npm run bench -- native\` (${r.durationSec} s).`,
  );
  return out.join('\n');
}

export const suite: Suite<NativeResult> = {
  name: 'native',
  title: 'Performance (native core)',
  run,
  readmeTable,
};

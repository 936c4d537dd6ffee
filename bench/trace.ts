/**
 * Benchmark suite "trace": what the per-transaction delivery trace (`GET /v1/status/{sig}/trace`,
 * issue 14 item 2) costs a send, measured on the real code with real parts.
 *
 *   npm run bench -- trace
 *
 * The send bench (`npm run bench -- send`) measures whole sends; on a shared 2-core machine its
 * run-to-run noise (tens of µs per send) is larger than what the trace adds, so this suite
 * measures the trace's own work, per accepted transaction, as CPU time (`process.cpuUsage`: every
 * thread of the process, so LMDB's commit threads count too), in rounds of `TXS` transactions:
 *
 * - ingress thread: packing the first send's two attempts (`packAttempt`), and what they add to
 *   the accepted hand-off message (`v8.serialize` on the ingress thread, `deserialize` on the
 *   main one, as `postMessage` does): batches of 100 accepted transactions as the worker posts
 *   them, with and without their packed attempts; the difference per transaction;
 * - main thread: `TraceBook.open` with those attempts, three rebroadcast rounds to two leaders
 *   as the native flight table hands them over when the flight ends (`keptRounds` of its packed
 *   form, appended to the trace), `end` (encode + the write in the status records' grouped
 *   commit), and the commit itself (`Store.flushed`), to a real LMDB store in a temporary
 *   directory. The rounds' attempts themselves are appended natively, off this thread.
 *
 * Inputs: real signatures and leader identities (random 64 / 32 bytes, base58), a sink-bench-like
 * transaction: first send written to one leader and pending at the other, three rounds written
 * to both.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import v8 from 'node:v8';
import { DEFAULT_SEND_OPTIONS, type Accepted } from '../src/delivery/delivery.js';
import type { Leader } from '../src/delivery/chain-view.js';
import { keptRounds } from '../src/delivery/rebroadcast.js';
import { packAttempt, type PackedAttempts } from '../src/delivery/trace.js';
import { TraceBook, type LiveTrace } from '../src/delivery/trace-book.js';
import { base58Encode } from '../src/native.js';
import { Store } from '../src/store/store.js';
import { encodeTrace } from '../src/store/trace-codec.js';
import { statusRecord } from '../harness/records.js';
import { finishMachineInfo, machineInfo, machineLine, mdTable, warnIfBusy, type MachineInfo, type Suite, type SuiteResult } from './lib/suite.js';

const TXS = 20_000;
const ROUNDS = 5;
const REBROADCASTS = 3;

export interface TraceResult extends SuiteResult {
  suite: 'trace';
  machine: MachineInfo;
  transactions: number;
  rounds: number;
  /** Median over the rounds, µs of CPU per transaction. */
  ingressUs: number;
  mainUs: number;
  /** Every round's figures, for the spread. */
  ingressRoundsUs: number[];
  mainRoundsUs: number[];
  /** Bytes of the stored value of one such trace. */
  storedBytes: number;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function cpuUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

const leaders: Leader[] = [0, 1].map((i) => ({ slot: 100 + 4 * i, identity: base58Encode(randomBytes(32)), tpuQuic: `10.0.0.${i + 7}:8009` }));
/**
 * Three rounds to both leaders, all written (outcome word 1), as the native table packs them
 * (`at_us, slot, round, word, leader, tpu`; names: the two identities, then the two addresses).
 */
function packedRounds(): Float64Array {
  const packed: number[] = [0, 0];
  for (let r = 1; r <= REBROADCASTS; r++) for (let k = 0; k < 2; k++) packed.push(1000 * r, 100 + r, r, 1, k, 2 + k);
  return new Float64Array(packed);
}
const names = [...leaders.map((l) => l.identity), ...leaders.map((l) => l.tpuQuic!)];

/** The main thread's part of a flight's end: its rounds appended to its trace. */
function appendRounds(t: LiveTrace, kept: Float64Array): void {
  const r = keptRounds(kept, names);
  for (const a of r.attempts) t.push(a);
  t.addOmitted(r.omitted);
}

function accepted(firstAttempts: PackedAttempts): Accepted {
  const record = statusRecord({ submittedAt: Date.now(), submitSlot: 100, lastValidBlockHeight: 250 });
  return { record, wire: Buffer.alloc(0), options: DEFAULT_SEND_OPTIONS, receivedAt: process.hrtime.bigint(), sentSlot: 100, held: false, firstAttempts };
}

/** Accepted transactions per hand-off message (one per event-loop turn of a busy worker). */
const BATCH = 100;

/** CPU µs to clone `batches` there and back, as `postMessage` does. */
function cloneUs(batches: Accepted[][]): number {
  const t0 = cpuUs();
  for (const b of batches) v8.deserialize(v8.serialize(b));
  return cpuUs() - t0;
}

/** The ingress thread's part: pack, and the attempts' share of the hand-off message's clone. */
function ingressRound(): { us: number; packed: PackedAttempts[] } {
  const packed: PackedAttempts[] = [];
  const t0 = cpuUs();
  for (let i = 0; i < TXS; i++) {
    const p: PackedAttempts = [];
    packAttempt(p, leaders[0]!.tpuQuic!, 'written', null, 180 + (i & 63));
    packAttempt(p, leaders[1]!.tpuQuic!, 'pending', null, 150);
    packed.push(p);
  }
  const packUs = cpuUs() - t0;
  // The same messages with and without the attempts (wire bytes as large as the sends').
  const withAttempts: Accepted[][] = [];
  const without: Accepted[][] = [];
  for (let i = 0; i < TXS; i += BATCH) {
    const batch = packed.slice(i, i + BATCH).map((p) => ({ ...accepted(p), wire: randomBytes(200) }));
    withAttempts.push(batch);
    without.push(batch.map(({ firstAttempts: _, ...a }) => a));
  }
  const added = cloneUs(withAttempts) - cloneUs(without);
  return { us: (packUs + Math.max(0, added)) / TXS, packed };
}

/** The main thread's part, up to the commit. Transactions are prepared outside the timing. */
async function mainRound(store: Store, packed: PackedAttempts[]): Promise<number> {
  const book = new TraceBook((tpu) => leaders.find((l) => l.tpuQuic === tpu)?.identity ?? null);
  book.store = store;
  const txs = packed.map(accepted);
  const kept = txs.map(packedRounds);
  const t0 = cpuUs();
  for (let i = 0; i < txs.length; i++) {
    const t = book.open(txs[i]!, null);
    appendRounds(t, kept[i]!);
    book.end(t);
  }
  await store.flushed();
  return (cpuUs() - t0) / TXS;
}

export const suite: Suite<TraceResult> = {
  name: 'trace',
  title: 'Performance (delivery trace)',
  async run() {
    const machine = machineInfo();
    warnIfBusy(machine);
    const dir = mkdtempSync(join(tmpdir(), 'landfall-bench-trace-'));
    const store = Store.open(dir);
    const ingressRoundsUs: number[] = [];
    const mainRoundsUs: number[] = [];
    try {
      for (let r = 0; r < ROUNDS; r++) {
        const ingress = ingressRound();
        ingressRoundsUs.push(ingress.us);
        mainRoundsUs.push(await mainRound(store, ingress.packed));
        console.log(`  round ${r + 1}: ingress ${ingress.us.toFixed(2)} µs, main ${mainRoundsUs[r]!.toFixed(2)} µs CPU per transaction`);
      }
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
    const sample = accepted([]);
    const book = new TraceBook(() => null);
    const t = book.open({ ...sample, firstAttempts: ingressRound().packed[0] }, null);
    appendRounds(t, packedRounds());
    return {
      suite: 'trace',
      machine: finishMachineInfo(machine),
      transactions: TXS,
      rounds: ROUNDS,
      ingressUs: median(ingressRoundsUs),
      mainUs: median(mainRoundsUs),
      ingressRoundsUs,
      mainRoundsUs,
      storedBytes: encodeTrace(t).length,
    };
  },
  readmeTable(r) {
    const us = (v: number) => `${v.toFixed(2)} µs`;
    const spread = (xs: number[]) => `${us(Math.min(...xs))} – ${us(Math.max(...xs))}`;
    return [
      machineLine(r.machine, 'process.cpuUsage'),
      '',
      mdTable(
        ['part of a send', 'CPU per transaction (median)', 'rounds (min – max)'],
        [
          ['ingress thread: pack the first send\'s 2 attempts + their clone in the hand-off message', us(r.ingressUs), spread(r.ingressRoundsUs)],
          [`main thread: open, ${REBROADCASTS} rounds × 2 leaders, encode + grouped write, commit`, us(r.mainUs), spread(r.mainRoundsUs)],
        ],
      ),
      '',
      `${r.rounds} rounds of ${r.transactions.toLocaleString('en-US')} transactions each; a trace of a first send and ${REBROADCASTS} rounds to 2 leaders stores ${r.storedBytes} B. Run: \`npm run bench -- trace\`.`,
    ].join('\n');
  },
};

/**
 * Child process: one core's worth of ed25519 verification, the physical limit of the send path
 * (every transaction carries at least one signature to verify). The suite runs one of these per
 * core at the same time and adds their rates up.
 *
 * The loop calls the addon's bare `ed25519Verify` (`verify_strict`, what `inspectTransaction`
 * runs) on signatures already extracted from real web3.js transactions, so nothing but the
 * curve arithmetic and one N-API call is counted, and checks every verdict.
 *
 * `inspect` is the send suite's yardstick for CPU per send: the CPU time of one native
 * `inspectTransaction` (base64 decode, parse, ed25519 verify, tip scan) on the suite's own
 * request transactions, in a process doing nothing else.
 */
import { performance } from 'node:perf_hooks';
import { ed25519Verify, inspectTransaction, TipSet } from '../../src/native.js';
import { serveChild } from '../lib/child.js';
import { buildPool, type TxFixture } from '../lib/transactions.js';

/** Distinct signatures cycled through (a power of two: `i & MASK`). */
const FIXTURES = 256;
const MASK = FIXTURES - 1;
/** Verifications between clock reads. */
const CHUNK = 256;

let fixtures: TxFixture[] = [];

serveChild({
  prepare() {
    fixtures = buildPool(FIXTURES).txs;
  },
  /** Verify for `durationMs`; the count and the time actually spent. */
  spin({ durationMs }: { durationMs: number }) {
    let count = 0;
    const t0 = performance.now();
    const end = t0 + durationMs;
    let now = t0;
    while (now < end) {
      for (let k = 0; k < CHUNK; k++) {
        const fx = fixtures[(count + k) & MASK]!;
        if (!ed25519Verify(fx.message, fx.signature, fx.publicKey)) throw new Error('a valid signature was rejected');
      }
      count += CHUNK;
      now = performance.now();
    }
    return { count, elapsedMs: now - t0 };
  },
  /**
   * `inspectTransaction` over `base64` (cycled) for `durationMs`: calls, wall time and this
   * process's CPU time (µs; `process.cpuUsage`, every thread, though only this one works). Every
   * verdict must be valid with a tip of `tipLamports`.
   */
  inspect({ base64, tipAddresses, tipLamports, durationMs }: { base64: string[]; tipAddresses: string[]; tipLamports: number; durationMs: number }) {
    const tips = new TipSet(tipAddresses);
    const want = BigInt(tipLamports);
    let count = 0;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const end = t0 + durationMs;
    let now = t0;
    while (now < end) {
      for (let k = 0; k < CHUNK; k++) {
        const r = inspectTransaction(base64[(count + k) % base64.length]!, tips);
        if (!r.ok || r.tx.tipLamports !== want) throw new Error(`inspectTransaction: unexpected verdict ${JSON.stringify(r, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}`);
      }
      count += CHUNK;
      now = performance.now();
    }
    const cpu = process.cpuUsage(cpu0);
    return { calls: count, wallMs: now - t0, cpuUs: cpu.user + cpu.system };
  },
});

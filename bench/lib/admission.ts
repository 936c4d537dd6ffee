/**
 * What the in-process admission benches share: a plan table whose send budget never refuses,
 * eight tip addresses, and an ingress thread's chain view holding 150 live blockhashes, as a
 * replica holds them a minute into a run.
 */
import { DEFAULT_PLANS, type PlanTable } from '../../src/accounts/plans.js';
import { RateLimiter } from '../../src/accounts/rate-limiter.js';
import { ChainViewReplica, type ChainSnapshot } from '../../src/delivery/chain-view.js';
import { inspectTransaction, TipSet } from '../../src/native.js';
import { loadavg } from 'node:os';
import type { AccountRecord } from '../../src/store/store.js';
import { Keypair, type PublicKey } from '@solana/web3.js';
import { randomBlockhash } from '../../harness/records.js';
import { legacyTx, makeTipAddresses, transfer } from '../../harness/transactions.js';

export function admissionFixture(accountId: string) {
  const plans: PlanTable = { ...DEFAULT_PLANS, starter: { ...DEFAULT_PLANS.starter, maxTps: 1_000_000 } };
  const tips = makeTipAddresses(8);
  const hashes = Array.from({ length: 150 }, () => randomBlockhash());
  const snapshot: ChainSnapshot = {
    slot: 301_234_567,
    seenAtMs: Date.now(),
    blockHeight: 280_000_000,
    leader: 'Leader1111111111111111111111111111111111111',
    plain: { first: [], next: [], hold: false },
    antiMev: { first: [], next: [], hold: false },
    blockhashes: hashes.map((h, i) => [h, 280_000_001 + i]),
    staleMs: 1e12,
    epoch: null,
  };
  const view = new ChainViewReplica();
  view.apply(snapshot);
  return {
    plans,
    account: { id: accountId, plan: 'starter' } as AccountRecord,
    limiter: new RateLimiter(plans),
    tips,
    tipSet: new TipSet(tips.map((t) => t.toBase58())),
    hashes,
    snapshot,
    view,
  };
}

/**
 * `count` signed transactions (base64) of one payer, each a distinct self-transfer and a tip of
 * 1,000,000 lamports to one of `tips`, over the live `hashes` in turn: all admitted.
 */
export function tippedPool(count: number, tips: PublicKey[], hashes: string[]): string[] {
  const payer = Keypair.generate();
  return Array.from(
    { length: count },
    (_, i) =>
      legacyTx([transfer(payer.publicKey, payer.publicKey, i + 1), transfer(payer.publicKey, tips[i % tips.length]!, 1_000_000)], {
        feePayer: payer,
        blockhash: hashes[i % hashes.length]!,
      }).base64,
  );
}

/** `pool` with each transaction's last signature byte flipped: inspection refuses every one (no admission). */
export function brokenSignatures(pool: string[]): string[] {
  return pool.map((b) => {
    const w = Buffer.from(b, 'base64');
    w[w.length - 1]! ^= 0xff;
    return w.toString('base64');
  });
}

export const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
export const fmt = (xs: number[]): string => xs.map((x) => x.toFixed(2)).join(', ');

/** CPU µs of the process (`process.cpuUsage`, user + system) per call of `run(txs)`, which makes `calls` calls. */
export function cpuPerCall(run: (txs: string[]) => void, txs: string[], calls: number): number {
  const before = process.cpuUsage();
  run(txs);
  const d = process.cpuUsage(before);
  return (d.user + d.system) / calls;
}

/**
 * Each of `runs` once as a warm-up (the JIT; not counted), then `blocks` rotations in which each
 * runs first, second, … in turn, so the machine's drift falls on all alike and the blocks of one
 * rotation can be paired. CPU µs per call, one array per run, in `runs`' order.
 */
export function rotatedBlocks(runs: Array<(txs: string[]) => void>, txs: string[], calls: number, blocks: number): number[][] {
  for (const run of runs) cpuPerCall(run, txs, calls);
  const out = runs.map((): number[] => []);
  for (let b = 0; b < blocks; b++) {
    for (let k = 0; k < runs.length; k++) {
      const i = (b + k) % runs.length;
      out[i]!.push(cpuPerCall(runs[i]!, txs, calls));
    }
  }
  return out;
}

/** A block of the inspection alone (`inspectTransaction`) over `txs` in turn: what the variants spend beyond it. */
export function inspectionAlone(tipSet: TipSet, calls: number): (txs: string[]) => void {
  return (txs) => {
    let ok = 0;
    for (let i = 0; i < calls; i++) ok += inspectTransaction(txs[i % txs.length]!, tipSet).ok ? 1 : 0;
    if (ok < 0) throw new Error('unreachable'); // keeps the result live
  };
}

/** A pair's first line: what was measured, how, and the load at its start and now. */
export function pairHeader(label: string, calls: number, blocks: number, loadStart: number): string {
  return `${label}: CPU µs per call (process.cpuUsage), ${calls} calls a block, ${blocks} alternated blocks; load ${loadStart.toFixed(2)} → ${loadavg()[0]!.toFixed(2)}`;
}

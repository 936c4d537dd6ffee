/**
 * Benchmark suite "agave": Landfall raced against the validator's own send path on a real Agave
 * test validator (`solana-test-validator` 4.2.2, 400 ms slots, one node leading every slot).
 *
 * Per scenario (`SCENARIOS`: a steady stream, then a burst), one stream of tipped web3.js transactions, alternating: even ones
 * through Landfall (`POST /v1/send` of a `landfall serve --rpc … --ws …` child: QUIC straight to the
 * leader's TPU, rebroadcast every slot), odd ones through the validator's JSON-RPC
 * `sendTransaction` (`skipPreflight: true`, Agave's send-transaction service; its default retry).
 * Same shape (self-transfer + tip to a Landfall tip address), same payers (round robin), same run.
 *
 * Measured the same way for both, by the bench itself on the validator: the slot at submission is
 * the latest `slotSubscribe` slot when the request is made; the landing slot and the time the
 * bench learns of it come from `signatureSubscribe` at `confirmed` (subscribed before the send),
 * the slot then checked with `getSignatureStatuses`. Reported per path: landed %, slots from
 * submission to landing (p50/p90/p99/max) and wall-clock latency from the request to the
 * confirmed notification (p50/p90/p99).
 */
import { Connection, Keypair, type PublicKey } from '@solana/web3.js';
import { PubSub } from '../src/chain/pubsub.js';
import { startAgaveValidator, findAgaveValidator, AGAVE_VERSION } from '../harness/agave.js';
import { fundTipsAndPayer, startLandfallServe } from '../test/agave/landfall.js';
import { legacyTx, transfer, web3Base58 } from '../harness/transactions.js';
import { finishMachineInfo, machineInfo, machineLine, mdTable, warnIfBusy, type Suite, type SuiteResult } from './lib/suite.js';

/** A steady stream a bot might send, then a burst (Landfall's half, 50/s, within the whale plan's 150/s). */
const SCENARIOS = [
  { name: 'steady', transactions: 600, rate: 20 },
  { name: 'burst', transactions: 1000, rate: 100 },
] as const;
const PAYERS = 8;
const TIP = 300_000;
/** A blockhash lives 150 blocks (60 s at 400 ms): after this every transaction has landed or never will. */
const SETTLE_TIMEOUT_MS = 75_000;

type Path = 'landfall' | 'agave-rpc';

interface PathStats {
  sent: number;
  /** Requests the path refused (HTTP/JSON-RPC error): counted as not landed. */
  refused: number;
  landed: number;
  failedOnChain: number;
  landedPercent: number;
  /** Landed, but the confirmed notification never came (slot from getSignatureStatuses, no latency). */
  notificationsMissed: number;
  slots: { p50: number; p90: number; p99: number; max: number; mean: number; histogram: Record<string, number> };
  latencyMs: { p50: number; p90: number; p99: number; mean: number };
}

export interface ScenarioResult {
  name: string;
  transactions: number;
  rate: number;
  paths: Record<Path, PathStats>;
}

export interface AgaveRaceResult extends SuiteResult {
  suite: 'agave';
  config: { payers: number; tipLamports: number; validator: string; slotMs: number };
  durationSec: number;
  scenarios: ScenarioResult[];
}

interface Sample {
  path: Path;
  signature: string;
  submitSlot: number;
  sentAt: number;
  ok: boolean;
  landedSlot: number | null;
  landedAt: number | null;
  err: unknown;
}

function q(sorted: number[], p: number): number {
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

function stats(samples: Sample[]): PathStats {
  const landed = samples.filter((s) => s.landedSlot !== null);
  const ok = landed.filter((s) => s.err === null);
  const slots = ok.map((s) => s.landedSlot! - s.submitSlot).sort((a, b) => a - b);
  const lat = ok.filter((s) => s.landedAt !== null).map((s) => s.landedAt! - s.sentAt).sort((a, b) => a - b);
  const histogram: Record<string, number> = {};
  for (const d of slots) histogram[String(d)] = (histogram[String(d)] ?? 0) + 1;
  const mean = (xs: number[]) => (xs.length === 0 ? Number.NaN : Math.round((xs.reduce((a, b) => a + b, 0) / xs.length) * 100) / 100);
  return {
    sent: samples.length,
    refused: samples.filter((s) => !s.ok).length,
    landed: ok.length,
    failedOnChain: landed.length - ok.length,
    landedPercent: Math.round((10_000 * ok.length) / samples.length) / 100,
    notificationsMissed: ok.filter((s) => s.landedAt === null).length,
    slots: { p50: q(slots, 0.5), p90: q(slots, 0.9), p99: q(slots, 0.99), max: slots.at(-1) ?? Number.NaN, mean: mean(slots), histogram },
    latencyMs: { p50: q(lat, 0.5), p90: q(lat, 0.9), p99: q(lat, 0.99), mean: mean(lat) },
  };
}

async function run(): Promise<AgaveRaceResult> {
  const binary = findAgaveValidator();
  if (!binary) throw new Error('no solana-test-validator found (LANDFALL_AGAVE_VALIDATOR, .cache/agave or PATH); `npm run test:agave` builds one');
  const machine = machineInfo();
  warnIfBusy(machine);
  const t0 = performance.now();
  const agave = await startAgaveValidator({ binary });
  const lf = await startLandfallServe(agave.rpcUrl, agave.wsUrl);
  const connection = new Connection(agave.rpcUrl, 'confirmed');
  // The project's own PubSub client (web3.js's reconnects forever once the validator is stopped).
  const pubsub = new PubSub(agave.wsUrl);
  try {
    const payers: Keypair[] = [];
    for (let i = 0; i < PAYERS; i++) payers.push(await fundTipsAndPayer(connection, i === 0 ? lf.tips : [], 100));
    const key = lf.account('whale').key;
    // A young chain (no root yet) may still move a confirmed transaction to another slot: start after the first root.
    const rootBy = performance.now() + 60_000;
    while ((await connection.getSlot('finalized')) < 1) {
      if (performance.now() > rootBy) throw new Error('the validator made no root within 60 s');
      await new Promise((r) => setTimeout(r, 250));
    }
    let slot = await connection.getSlot('processed');
    pubsub.subscribe('slotSubscribe', [], (r) => (slot = Math.max(slot, (r as { slot: number }).slot)));
    let unique = 0;
    const scenarios: ScenarioResult[] = [];
    for (const sc of SCENARIOS) {
      const { blockhash } = await connection.getLatestBlockhash('confirmed');
      const build = (i: number) => {
        const payer = payers[i % PAYERS]!;
        const tip: PublicKey = lf.tips[i % lf.tips.length]!;
        const tx = legacyTx([transfer(payer.publicKey, payer.publicKey, ++unique), transfer(payer.publicKey, tip, TIP)], { feePayer: payer, blockhash });
        return { bytes: tx.bytes, base64: tx.base64, signature: web3Base58(tx.signatures[0]!) };
      };
      const samples: Sample[] = [];
      const sendOne = async (i: number) => {
        const tx = build(i);
        const path: Path = i % 2 === 0 ? 'landfall' : 'agave-rpc';
        const s: Sample = { path, signature: tx.signature, submitSlot: 0, sentAt: 0, ok: false, landedSlot: null, landedAt: null, err: null };
        samples.push(s);
        pubsub.subscribe('signatureSubscribe', [tx.signature, { commitment: 'confirmed' }], (r, ctxSlot) => {
          s.landedAt ??= performance.now();
          s.landedSlot ??= ctxSlot ?? null;
          s.err = (r as { value?: { err?: unknown } }).value?.err ?? null;
        });
        s.submitSlot = slot;
        s.sentAt = performance.now();
        try {
          if (path === 'landfall') {
            const r = await fetch(`${lf.svc.url}/v1/send`, {
              method: 'POST',
              headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
              body: JSON.stringify({ transaction: tx.base64 }),
            });
            s.ok = r.status === 200;
            await r.arrayBuffer();
          } else {
            s.ok = (await connection.sendRawTransaction(tx.bytes, { skipPreflight: true })) === tx.signature;
          }
        } catch {
          s.ok = false;
        }
      };
      // Open loop: one send every 1000/rate ms, not waiting for the previous one.
      const inFlight: Promise<void>[] = [];
      const start = performance.now();
      for (let i = 0; i < sc.transactions; i++) {
        const wait = start + (i * 1000) / sc.rate - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        inFlight.push(sendOne(i));
      }
      await Promise.all(inFlight);
      const deadline = performance.now() + SETTLE_TIMEOUT_MS;
      while (performance.now() < deadline && samples.some((s) => s.ok && s.landedSlot === null)) await new Promise((r) => setTimeout(r, 250));
      // The notification's context slot checked against the validator's own status (with history).
      for (let i = 0; i < samples.length; i += 256) {
        const batch = samples.slice(i, i + 256);
        const { value } = await connection.getSignatureStatuses(batch.map((s) => s.signature), { searchTransactionHistory: true });
        batch.forEach((s, j) => {
          const st = value[j];
          if (!st) return;
          // A landing whose notification was missed keeps its slot; its latency stays unknown (landedAt null).
          s.landedSlot = st.slot;
          s.err = st.err ?? null;
        });
      }
      const by = (p: Path) => stats(samples.filter((s) => s.path === p));
      scenarios.push({ name: sc.name, transactions: sc.transactions, rate: sc.rate, paths: { landfall: by('landfall'), 'agave-rpc': by('agave-rpc') } });
    }
    return {
      suite: 'agave',
      machine: finishMachineInfo(machine),
      config: { payers: PAYERS, tipLamports: TIP, validator: `solana-test-validator ${AGAVE_VERSION}`, slotMs: 400 },
      durationSec: Math.round((performance.now() - t0) / 100) / 10,
      scenarios,
    };
  } finally {
    pubsub.close();
    await lf.stop();
    await agave.stop();
  }
}

function readmeTable(r: AgaveRaceResult): string {
  const fmt = (x: number) => (Number.isNaN(x) ? '—' : String(Math.round(x)));
  const rows = r.scenarios.flatMap((sc) =>
    (['landfall', 'agave-rpc'] as const).map((path) => {
      const p = sc.paths[path];
      return [
        `${sc.name}: ${sc.transactions} at ${sc.rate}/s`,
        path === 'landfall' ? 'Landfall `/v1/send`' : 'validator RPC `sendTransaction`',
        `${p.landed}/${p.sent} (${p.landedPercent} %)`,
        `${p.slots.p50} / ${p.slots.p90} / ${p.slots.p99} (max ${p.slots.max}, mean ${p.slots.mean})`,
        `${fmt(p.latencyMs.p50)} / ${fmt(p.latencyMs.p90)} / ${fmt(p.latencyMs.p99)} ms`,
        JSON.stringify(p.slots.histogram),
      ];
    }),
  );
  return [
    `One stream per scenario, alternating between the two paths, on ${r.config.validator} (one node, leader of every slot, ${r.config.slotMs} ms slots). ` +
      'Slots from submission (the latest `slotSubscribe` slot when the request was made) to the landing slot; wall-clock time from the request to the ' +
      '`signatureSubscribe` confirmed notification.',
    '',
    mdTable(['scenario', 'path', 'landed', 'slots to land p50 / p90 / p99', 'latency p50 / p90 / p99', 'slots: count'], rows),
    '',
    machineLine(r.machine, `\`npm run bench -- agave\`, ${r.durationSec} s`),
  ].join('\n');
}

export const suite: Suite<AgaveRaceResult> = {
  name: 'agave',
  title: 'Against a real Agave validator: the send race',
  run,
  readmeTable,
};

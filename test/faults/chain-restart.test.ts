/**
 * Defects 4 and 5 of issue 12, against the real service (real LMDB, an ingress thread, the
 * native QUIC client) and a real chain: the local cluster in a child process, killed with
 * SIGKILL under load and started again on the same RPC and WebSocket ports.
 *
 * Defect 4, "delivered while the chain is dead": with the chain node killed, sends kept getting
 * `200` for ~10 s (written into the buffers of connections whose peers were gone), then `500`
 * took up to 4.1 s. The promises now (docs/failure-behaviour.md):
 * - a send is acknowledged only when written on a leader connection heard from within the
 *   alive window (1.5 s), so no `200` for a request made later than that after the chain died;
 * - once the chain view is stale (no slot for `staleMs`, 2 s), every send is refused at once:
 *   `500 Delivery failed`, a reason naming the last slot and its age, `Retry-After: 1`;
 * - no send waits longer than the first-send budget (500 ms) for its answer, whatever the
 *   leaders do.
 * Defect 5, "chain view does not recover": `/health` stayed 503 for 33 s after the chain came
 * back, because slots below the last one seen were ignored. Now a stale view takes the new
 * chain's slot, refetches the TPU addresses and the leader window at once, and `/health` is 200
 * again within RECOVERED_WITHIN_MS of the chain answering; sends land on the new chain.
 */
import { Keypair, LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_CONFIG, type Config } from '../../src/config.js';
import { FIRST_SEND_BUDGET_MS } from '../../src/delivery/first-send.js';
import { startService, type Service } from '../../src/service.js';
import { startChildLocalnet, type ChildLocalnet } from '../../harness/child-localnet.js';
import { rpc, waitFor } from '../../harness/localnet.js';
import { fetchMetric } from '../../harness/metrics.js';
import { tempDir } from '../../harness/tmp.js';
import { legacyTx, transfer, web3Base58 } from '../../harness/transactions.js';

/** The QUIC client's alive window (native/src/quic/config.rs, `ClientConfig::alive_window`). */
const ALIVE_WINDOW_MS = 1_500;
/** A request's whole answer: the first-send budget plus HTTP, auth, inspect and record on a shared 2-core machine. */
const ANSWER_WITHIN_MS = FIRST_SEND_BUDGET_MS + 500;
/** The promise of docs/failure-behaviour.md: `/health` 200 again this soon after the chain answers. */
const RECOVERED_WITHIN_MS = 2_000;
/** One request every this many ms (50/s: inside the whale plan's 150/s). */
const PACE_MS = 20;
const SEED = 'chain-restart';

const tmp = tempDir();
let chain: ChildLocalnet | null = null;
let svc: Service;
let key: string;
let payer: Keypair;

beforeAll(async () => {
  chain = await startChildLocalnet({ seed: SEED, slotMs: 100 });
  // 'fatal': the hundreds of 500s this test provokes are each logged at 'error'.
  const config: Config = { ...DEFAULT_CONFIG, port: 0, dataDir: tmp.dir, rpcUrl: chain.rpcUrl, wsUrl: chain.wsUrl, logLevel: 'fatal' };
  svc = await startService(config);
  key = svc.accounts.createAccount('bot-chain-restart', 'whale').api_key;
  payer = await fund(chain);
}, 60_000);

afterAll(async () => {
  await svc?.close();
  await chain?.kill();
  tmp.cleanup();
});

/** Airdrops through the chain's RPC: the service's tip addresses (rent) and a new payer; resolves once all landed. */
async function fund(c: ChildLocalnet): Promise<Keypair> {
  const kp = Keypair.generate();
  const wanted: Array<[string, number]> = [...svc.tipAddresses.map((t): [string, number] => [t, LAMPORTS_PER_SOL]), [kp.publicKey.toBase58(), 100 * LAMPORTS_PER_SOL]];
  for (const [address, lamports] of wanted) {
    const r = await rpc(c.rpcUrl, 'requestAirdrop', [address, lamports]);
    expect(r.error).toBeUndefined();
  }
  for (const [address] of wanted) {
    await waitFor(`airdrop to ${address}`, async () => ((await rpc(c.rpcUrl, 'getBalance', [address])).result as { value: number }).value > 0 ? true : undefined);
  }
  return kp;
}

let unique = 0;

/** A tipped self-transfer signed over `blockhash` (every one distinct), by `from` (default: the funded payer). */
function tippedTx(blockhash: string, from: Keypair = payer): { base64: string; signature: string } {
  const tip = new PublicKey(svc.tipAddresses[unique % svc.tipAddresses.length]!);
  const tx = legacyTx([transfer(from.publicKey, from.publicKey, ++unique), transfer(from.publicKey, tip, 300_000)], { feePayer: from, blockhash });
  return { base64: tx.base64, signature: web3Base58(tx.signatures[0]!) };
}

interface Answer {
  start: number;
  end: number;
  status: number;
  reason: string | null;
  retryAfter: string | null;
}

/** POST /v1/send; a request not answered within ANSWER_WITHIN_MS fails the test (the promise's bound). */
async function timedSend(base64: string): Promise<Answer> {
  const start = Date.now();
  const r = await fetch(`${svc.url}/v1/send`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ transaction: base64 }),
    signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
  }).catch((e: Error) => {
    throw new Error(`a send was not answered within ${ANSWER_WITHIN_MS} ms (started ${start}): ${e.message}`);
  });
  const body = (await r.json()) as { error?: { reason?: string } };
  return { start, end: Date.now(), status: r.status, reason: body.error?.reason ?? null, retryAfter: r.headers.get('retry-after') };
}

async function health(): Promise<number> {
  return (await fetch(`${svc.url}/health`)).status;
}

it('kills the chain under load: no 200 once the service can know, an immediate 500 naming the stale view, every answer bounded; then the chain restarts on the same ports and the service recovers', async () => {
  const first = chain!;
  expect(await health()).toBe(200);
  const blockhash = ((await rpc(first.rpcUrl, 'getLatestBlockhash', [{ commitment: 'confirmed' }])).result as { value: { blockhash: string } }).value.blockhash;
  const staleMs = svc.engine.leaders.staleMs;
  // Three transactions that cannot land (their payer has no lamports: validators drop them), so
  // they are still pending when the chain dies; their rebroadcast rounds are over long before.
  const broke = Keypair.generate();
  const stuck = [0, 1, 2].map(() => tippedTx(blockhash, broke));
  for (const t of stuck) expect((await timedSend(t.base64)).status).toBe(200);

  // Load: one send every PACE_MS, from a second before the kill to staleMs + 1.5 s after it, and
  // on until 40 sends have started after the view went stale (a loaded machine paces slower:
  // once only 24 in those 1.5 s), for at most 15 s more.
  const answers: Promise<Answer>[] = [];
  let killedAt = Infinity;
  let startedAfterStale = 0;
  const loadEnds = (): number => killedAt + staleMs + 1_500;
  const load = (async () => {
    while (Date.now() < loadEnds() || (startedAfterStale < 40 && Date.now() < loadEnds() + 15_000)) {
      if (Date.now() > svc.engine.leaders.slotSeenAtMs() + staleMs + 50) startedAfterStale++;
      answers.push(timedSend(tippedTx(blockhash).base64));
      await new Promise((r) => setTimeout(r, PACE_MS));
    }
  })();
  await new Promise((r) => setTimeout(r, 1_000));
  killedAt = await first.kill();
  chain = null;
  await load;
  const all = await Promise.all(answers);

  // The last slot the service saw (every thread's view is stamped with the main thread's time).
  const lastSlotSeenAt = svc.engine.leaders.slotSeenAtMs();
  expect(lastSlotSeenAt).toBeLessThanOrEqual(killedAt + 500); // a notification already on its way may arrive after the exit
  const ok = all.filter((a) => a.status === 200);
  expect(all.filter((a) => a.end < killedAt && a.status === 200).length).toBeGreaterThan(20); // the load was real

  // Defect 4: no acknowledgement once no leader connection can have been heard from.
  for (const a of ok) expect(a.start).toBeLessThanOrEqual(killedAt + ALIVE_WINDOW_MS);
  // Once the view is stale: refused at once, naming the stale view, with Retry-After.
  const afterStale = all.filter((a) => a.start > lastSlotSeenAt + staleMs);
  expect(afterStale.length).toBeGreaterThan(30);
  for (const a of afterStale) {
    expect(a.status).toBe(500);
    expect(a.reason).toMatch(/^chain view stale: last slot \d+ was seen \d+ ms ago/);
    expect(a.retryAfter).toBe('1');
  }
  // Between the kill and the stale view, anything not acknowledged is a 500 too (never a 2xx
  // the service cannot vouch for, never a hang: every answer came within ANSWER_WITHIN_MS).
  for (const a of all) expect([200, 500]).toContain(a.status);
  expect(await health()).toBe(503);

  const lastOk = Math.max(...ok.map((a) => a.start));
  const firstStale = Math.min(...all.filter((a) => a.reason?.startsWith('chain view stale')).map((a) => a.start));
  const slowest = Math.max(...all.map((a) => a.end - a.start));
  console.log(
    `chain killed: last 200 for a request started ${lastOk - killedAt} ms after the kill; first stale refusal ${firstStale - killedAt} ms after it ` +
      `(last slot seen ${killedAt - lastSlotSeenAt} ms before the exit); slowest answer ${slowest} ms of ${all.length}`,
  );

  // Defect 5: the chain restarts on the same RPC/WebSocket ports (new QUIC ports, slots from 0).
  const second = await startChildLocalnet({ seed: SEED, slotMs: 100, rpcPort: first.rpcPort });
  chain = second;
  expect(second.rpcUrl).toBe(first.rpcUrl);
  const recoveredAt = await waitFor('/health 200 after the restart', async () => ((await health()) === 200 ? Date.now() : undefined), RECOVERED_WITHIN_MS);
  console.log(`chain restarted: /health 200 ${recoveredAt - second.upAt} ms after the new chain answered`);
  // The view is the new chain's: its slot (lower than the old one) and its TPU addresses.
  // Read side by side until they agree within 5 slots: on a loaded machine the two reads can be
  // more than 5 short slots apart (seen: 6), so one pair is not enough (bounded: 10 s).
  await waitFor(
    "the service's slot within 5 of the new chain's",
    async () => {
      const newSlot = (await rpc(second.rpcUrl, 'getSlot')).result as number;
      return Math.abs(svc.engine.leaders.currentSlot() - newSlot) <= 5 ? true : undefined;
    },
    10_000,
  );
  for (const v of second.validators) expect(svc.engine.leaders.tpuOf(v.identity)).toBe(v.tpuQuic);

  // The chain came back at a lower slot: what landed in the slots it lost is gone, so the service
  // sends every transaction still pending again, with its rounds afresh (docs/failure-behaviour.md).
  // The three stuck ones are among them: each one's trace shows a write to a leader
  // of the new chain (its QUIC ports are new), made after the restart.
  expect(await fetchMetric(svc.url, 'landfall_chain_rollbacks_total')).toBe(1);
  expect(await fetchMetric(svc.url, 'landfall_resent_after_rollback_total')).toBeGreaterThanOrEqual(stuck.length);
  const newTpus = new Set(second.validators.map((v) => v.tpuQuic));
  for (const t of stuck) {
    await waitFor(
      `${t.signature} written to a leader of the new chain`,
      async () => {
        const r = await fetch(`${svc.url}/v1/status/${t.signature}/trace`, { headers: { authorization: `Bearer ${key}` } });
        const trace = (await r.json()) as { attempts: Array<{ tpu: string | null; outcome: string }> };
        return trace.attempts.some((a) => a.tpu !== null && newTpus.has(a.tpu) && a.outcome === 'written') ? true : undefined;
      },
      5_000,
    );
  }

  // Sends land on the new chain.
  payer = await fund(second);
  const fresh = ((await rpc(second.rpcUrl, 'getLatestBlockhash', [{ commitment: 'confirmed' }])).result as { value: { blockhash: string } }).value.blockhash;
  const tx = tippedTx(fresh);
  // The first send to the new chain dials its validators' new ports. On a starved machine (the CI
  // rehearsal with stress-ng: once) the dial and handshake can outlast the 500 ms first-send
  // deadline, an honest 500 "no leader accepted": the same transaction is sent again, at most
  // three times; any other refusal fails at once.
  const firstSends: Answer[] = [];
  for (let i = 0; i < 3; i++) {
    const a = await timedSend(tx.base64);
    firstSends.push(a);
    if (a.status !== 500 || !a.reason?.includes('no leader accepted')) break;
  }
  const sent = firstSends.at(-1)!;
  if (firstSends.length > 1) console.log(`first sends to the new chain: ${firstSends.map((a) => `${a.status} ${a.reason ?? ''}`).join('; ')}`);
  expect(sent.status, JSON.stringify(firstSends)).toBe(200);
  const landed = await waitFor(
    'the transaction confirmed on the new chain',
    async () => {
      const r = await fetch(`${svc.url}/v1/status/${tx.signature}`, { headers: { authorization: `Bearer ${key}` } });
      const body = (await r.json()) as { status: string; slot: number | null };
      return body.status === 'sent' ? undefined : body;
    },
    20_000,
  );
  expect(landed.status).toBe('confirmed');
  const onChain = (await rpc(second.rpcUrl, 'getSignatureStatuses', [[tx.signature]])).result as { value: Array<{ slot: number; err: unknown } | null> };
  expect(onChain.value[0]).not.toBeNull();
  expect(onChain.value[0]!.err).toBeNull();
  expect(landed.slot).toBe(onChain.value[0]!.slot);
}, 120_000);

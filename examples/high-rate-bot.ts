/**
 * Many sends in flight at once, within the account's rate: a bot that keeps `IN_FLIGHT` sends
 * open, and when Landfall answers 429 (the plan's send rate, or the cap on transactions in flight)
 * waits the `Retry-After` it was given and sends the same transaction again: every Landfall send
 * is keyed by its signature, so a resend never delivers or counts twice. Every outcome arrives on
 * the status stream, opened before the first send: no status read per transaction, so the
 * query budget (twice the send rate) is not what limits the bot.
 *
 *   npm start                                                    # terminal 1: the service and a local cluster
 *   export LANDFALL_KEY=$(npx landfall accounts create --name my-bot --json | node -pe 'JSON.parse(require("fs").readFileSync(0)).api_key')
 *   npx tsx examples/high-rate-bot.ts                            # --url, --rpc, --key: see settings.ts
 *
 * The client retries a 429 itself (`rateLimitRetries`, 3 by default, when the wait is at most
 * `maxRetryAfterMs`); this example turns that off to show the loop a bot owns when it wants to
 * decide itself (drop a stale transaction instead of resending it, say).
 */
import { Connection, Keypair, LAMPORTS_PER_SOL, SystemProgram, Transaction } from '@solana/web3.js';
import { LandfallApiError, LandfallClient, addTip } from 'landfall/client';
import { settings } from './settings.js';

/** Transactions to send, and how many may wait for Landfall's answer at once. */
const COUNT = 40;
const IN_FLIGHT = 16;

const { url, rpcUrl, apiKey } = settings();
const chain = new Connection(rpcUrl, 'confirmed');
const landfall = new LandfallClient({ url, apiKey, rateLimitRetries: 0 });

// 1. Fund a payer: 1 SOL pays 40 plan-minimum tips (0.001 SOL each on the starter plan) and fees.
const payer = Keypair.generate();
const airdrop = await chain.requestAirdrop(payer.publicKey, LAMPORTS_PER_SOL);
await chain.confirmTransaction({ signature: airdrop, ...(await chain.getLatestBlockhash()) });
console.log(`payer ${payer.publicKey.toBase58()} funded with 1 SOL`);

// 2. COUNT distinct transactions (a transfer of i lamports to itself), each with Landfall's tip.
const { blockhash, lastValidBlockHeight } = await chain.getLatestBlockhash();
const txs: Transaction[] = [];
for (let i = 1; i <= COUNT; i++) {
  const tx = new Transaction({ feePayer: payer.publicKey, blockhash, lastValidBlockHeight }).add(
    SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: payer.publicKey, lamports: i }),
  );
  await addTip(tx, { client: landfall }); // the tip addresses and minimum are fetched once, cached
  tx.sign(payer);
  txs.push(tx);
}

// 3. The account's status stream, open before the first send so no outcome is missed.
const outcomes = new Map<string, string>();
let allSettled = (): void => {};
const settled = new Promise<void>((resolve) => (allSettled = resolve));
const stream = landfall.stream();
stream.onStatus((r) => {
  if (r.status === 'sent' && !r.expired) return; // not final yet
  outcomes.set(r.signature, r.expired ? 'expired' : r.status);
  if (outcomes.size === COUNT) allSettled();
});
await stream.ready;

// 4. Send them, IN_FLIGHT at a time. A 429 puts the transaction back after its Retry-After.
const queue = [...txs];
const signatures: string[] = [];
let waitedOut = 0;
let open = 0;
let most = 0;
async function worker(): Promise<void> {
  for (let tx = queue.shift(); tx; tx = queue.shift()) {
    let retryAfterMs = 0;
    open++;
    most = Math.max(most, open);
    try {
      signatures.push((await landfall.send(tx)).signature);
    } catch (e) {
      if (!(e instanceof LandfallApiError) || e.status !== 429) throw e;
      waitedOut++;
      retryAfterMs = e.retryAfterMs ?? 1000;
      queue.push(tx);
    } finally {
      open--;
    }
    if (retryAfterMs > 0) await new Promise((r) => setTimeout(r, retryAfterMs));
  }
}
await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
console.log(`sent ${signatures.length} transactions, at most ${most} in flight, ${waitedOut} refusals with 429 waited out and sent again`);

// 5. Every outcome, as the stream pushes them (at most a minute: a blockhash lives about as long).
const timer = setTimeout(allSettled, 60_000);
await settled;
clearTimeout(timer);
const confirmed = signatures.filter((s) => outcomes.get(s) === 'confirmed').length;
console.log(`confirmed ${confirmed} of ${signatures.length}`);
landfall.close();
if (confirmed !== COUNT) process.exitCode = 1;

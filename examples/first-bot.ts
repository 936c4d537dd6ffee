/**
 * A first bot with @solana/web3.js and Landfall's typed client: get SOL from the faucet, build a
 * transfer, add Landfall's tip, send it through Landfall, wait for the confirmation Landfall
 * pushes, and print the delivery trace (every attempt to put it in front of a leader).
 *
 *   npm start                                                    # terminal 1: the service and a local cluster
 *   export LANDFALL_KEY=$(npx landfall accounts create --name my-bot --json | node -pe 'JSON.parse(require("fs").readFileSync(0)).api_key')
 *   npx tsx examples/first-bot.ts                                # --url, --rpc, --key: see settings.ts
 */
import { Connection, Keypair, LAMPORTS_PER_SOL, SystemProgram, Transaction } from '@solana/web3.js';
import { LandfallClient, addTip } from 'landfall/client';
import { settings, traceLines } from './settings.js';

const { url, rpcUrl, apiKey } = settings();
const chain = new Connection(rpcUrl, 'confirmed');
const landfall = new LandfallClient({ url, apiKey });

// 1. A wallet with 1 SOL from the faucet (the local cluster's, or devnet's).
const payer = Keypair.generate();
const airdrop = await chain.requestAirdrop(payer.publicKey, LAMPORTS_PER_SOL);
await chain.confirmTransaction({ signature: airdrop, ...(await chain.getLatestBlockhash()) });
console.log(`payer ${payer.publicKey.toBase58()} funded with 1 SOL`);

// 2. The transaction: 0.01 SOL to a fresh address, plus Landfall's tip (the plan minimum to one
//    of its tip addresses). Sign after adding the tip: it changes the message.
const { blockhash, lastValidBlockHeight } = await chain.getLatestBlockhash();
const tx = new Transaction({ feePayer: payer.publicKey, blockhash, lastValidBlockHeight }).add(
  SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: Keypair.generate().publicKey, lamports: LAMPORTS_PER_SOL / 100 }),
);
await addTip(tx, { client: landfall });
tx.sign(payer);

// 3. Send it through Landfall and wait for the outcome its tracker pushes over /v1/stream.
const { signature, slot } = await landfall.send(tx);
console.log(`sent ${signature} in slot ${slot}`);
const status = await landfall.waitForConfirmation(signature);
console.log(`status ${status.status}: slot ${status.slot}, ${status.latency_ms} ms after Landfall received it`);

// 4. What Landfall did with it.
for (const line of traceLines(await landfall.trace(signature))) console.log(line);
landfall.close();
if (status.status !== 'confirmed') process.exitCode = 1;

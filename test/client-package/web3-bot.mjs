// A bot in its own project: `landfall-client` from its packed tarball, @solana/web3.js from the
// registry (its own copy, not Landfall's). Lands one tipped transfer and prints what it saw.
// Env: LANDFALL_URLS (comma-separated, tried in order), LANDFALL_KEY, RPC_URL, PAYER (JSON secret key).
import { Connection, Keypair, SystemProgram, Transaction } from '@solana/web3.js';
import { LandfallApiError, LandfallClient, addTip } from 'landfall-client';

const payer = Keypair.fromSecretKey(Uint8Array.from(JSON.parse(process.env.PAYER)));
const client = new LandfallClient({ url: process.env.LANDFALL_URLS.split(','), apiKey: process.env.LANDFALL_KEY, retryBackoffMs: 10 });
const connection = new Connection(process.env.RPC_URL, 'confirmed');

const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash();
const tx = new Transaction({ feePayer: payer.publicKey, blockhash, lastValidBlockHeight }).add(
  SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: payer.publicKey, lamports: 1 }),
);
await addTip(tx, { client });
tx.sign(payer);
const { signature } = await client.send(tx);
const record = await client.waitForConfirmation(signature);

// A tip below the plan minimum: the service's typed refusal, before anything is sent.
let lowTip;
try {
  await addTip(new Transaction({ feePayer: payer.publicKey, blockhash, lastValidBlockHeight }), { client, lamports: 1 });
} catch (e) {
  lowTip = { typed: e instanceof LandfallApiError, status: e.status, message: e.message };
}
client.close();
console.log(JSON.stringify({ signature, status: record.status, url: client.url, stats: client.stats, lowTip }));

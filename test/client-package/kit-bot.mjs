// The same bot with @solana/kit: `landfall-client/kit`'s addTip on a kit message, the signed kit
// transaction sent as it is. Env as web3-bot.mjs.
import {
  appendTransactionMessageInstruction,
  createKeyPairSignerFromBytes,
  createSolanaRpc,
  createTransactionMessage,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from '@solana/kit';
import { LandfallClient } from 'landfall-client';
import { addTip, tipInstruction } from 'landfall-client/kit';

const payer = await createKeyPairSignerFromBytes(Uint8Array.from(JSON.parse(process.env.PAYER)));
const client = new LandfallClient({ url: process.env.LANDFALL_URLS.split(','), apiKey: process.env.LANDFALL_KEY, retryBackoffMs: 10 });
const { value: latest } = await createSolanaRpc(process.env.RPC_URL).getLatestBlockhash({ commitment: 'confirmed' }).send();

// A message with one instruction of the bot's own (a second tip-sized self-transfer here), then the tip.
const own = await tipInstruction(client, payer);
const message = await addTip(
  pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(payer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(latest, m),
    (m) => appendTransactionMessageInstruction(own, m),
  ),
  { client },
);
const tx = await signTransactionMessageWithSigners(message);
const { signature } = await client.send(tx);
const record = await client.waitForConfirmation(signature);
client.close();
console.log(JSON.stringify({ signature, status: record.status, url: client.url, stats: client.stats, instructions: message.instructions.length }));

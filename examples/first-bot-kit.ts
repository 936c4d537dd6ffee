/**
 * The same first bot with @solana/kit and no Landfall library: kit's own RPC client sends
 * through Landfall's JSON-RPC endpoint (`sendTransaction`, as to any Solana RPC node), and the
 * status and the delivery trace come from Landfall's REST API with fetch.
 *
 *   npm start                                                    # terminal 1: the service and a local cluster
 *   export LANDFALL_KEY=$(npx landfall accounts create --name my-bot --json | node -pe 'JSON.parse(require("fs").readFileSync(0)).api_key')
 *   npx tsx examples/first-bot-kit.ts                            # --url, --rpc, --key: see settings.ts
 */
import {
  AccountRole,
  address,
  appendTransactionMessageInstructions,
  createSolanaRpc,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  getSignatureFromTransaction,
  lamports,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
  type Address,
  type Instruction,
  type Signature,
  type TransactionSigner,
} from '@solana/kit';
import { settings, traceLines, type Trace } from './settings.js';

const { url, rpcUrl, apiKey } = settings();
const chain = createSolanaRpc(rpcUrl);
const landfallRpc = createSolanaRpc(`${url}/?api-key=${apiKey}`);
const SYSTEM_PROGRAM = address('11111111111111111111111111111111');
const LAMPORTS_PER_SOL = 1_000_000_000n;

/** A System Program transfer (instruction 2: u32 LE tag, u64 LE lamports). */
function transfer(from: TransactionSigner, to: Address, amount: bigint): Instruction {
  const data = new Uint8Array(12);
  const view = new DataView(data.buffer);
  view.setUint32(0, 2, true);
  view.setBigUint64(4, amount, true);
  return {
    programAddress: SYSTEM_PROGRAM,
    accounts: [
      { address: from.address, role: AccountRole.WRITABLE_SIGNER, signer: from },
      { address: to, role: AccountRole.WRITABLE },
    ],
    data,
  } as Instruction;
}

/** GET a Landfall REST resource with the key; its JSON, or an error with Landfall's reason. */
async function landfall<T>(path: string): Promise<T> {
  const r = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${apiKey}` } });
  const body = (await r.json()) as T & { error?: { message: string; reason: string } };
  if (!r.ok) throw new Error(`${path}: ${r.status} ${body.error?.message}: ${body.error?.reason}`);
  return body;
}

/** Poll until the chain has confirmed `signature` (the airdrop). */
async function chainConfirmed(signature: Signature): Promise<void> {
  for (;;) {
    const { value } = await chain.getSignatureStatuses([signature]).send();
    if (value[0]?.confirmationStatus === 'confirmed' || value[0]?.confirmationStatus === 'finalized') return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

// 1. A wallet with 1 SOL from the faucet.
const payer = await generateKeyPairSigner();
await chainConfirmed(await chain.requestAirdrop(payer.address, lamports(LAMPORTS_PER_SOL)).send());
console.log(`payer ${payer.address} funded with 1 SOL`);

// 2. The transaction: 0.01 SOL to a fresh address, plus the plan's minimum tip to one of
//    Landfall's tip addresses (`/v1/account` gives the minimum in points and the conversion).
const account = await landfall<{ plan: string; limits: { min_tip_bp: number }; lamports_per_point: number }>('/v1/account');
const { tip_addresses } = await landfall<{ tip_addresses: string[] }>('/v1/tip-addresses');
const tip = BigInt(account.limits.min_tip_bp) * BigInt(account.lamports_per_point);
const tipAddress = address(tip_addresses[Math.floor(Math.random() * tip_addresses.length)]!);
const recipient = (await generateKeyPairSigner()).address;
const { value: lifetime } = await chain.getLatestBlockhash().send();
const message = pipe(
  createTransactionMessage({ version: 0 }),
  (m) => setTransactionMessageFeePayerSigner(payer, m),
  (m) => setTransactionMessageLifetimeUsingBlockhash(lifetime, m),
  (m) => appendTransactionMessageInstructions([transfer(payer, recipient, LAMPORTS_PER_SOL / 100n), transfer(payer, tipAddress, tip)], m),
);
const signed = await signTransactionMessageWithSigners(message);
console.log(`tip ${tip} lamports (${account.plan} plan minimum) to ${tipAddress}`);

// 3. Send it through Landfall's JSON-RPC, then poll its status until the tracker settles it.
const signature = await landfallRpc.sendTransaction(getBase64EncodedWireTransaction(signed), { encoding: 'base64', skipPreflight: true }).send();
if (signature !== getSignatureFromTransaction(signed)) throw new Error(`Landfall answered ${signature}, not the transaction's signature`);
console.log(`sent ${signature}`);
type Status = { status: string; slot: number | null; latency_ms: number | null; expired?: boolean };
let status = await landfall<Status>(`/v1/status/${signature}`);
while (status.status === 'sent' && !status.expired) {
  await new Promise((r) => setTimeout(r, 400));
  status = await landfall<Status>(`/v1/status/${signature}`);
}
console.log(`status ${status.status}: slot ${status.slot}, ${status.latency_ms} ms after Landfall received it`);

// 4. What Landfall did with it.
for (const line of traceLines(await landfall<Trace>(`/v1/status/${signature}/trace`))) console.log(line);
if (status.status !== 'confirmed') process.exitCode = 1;

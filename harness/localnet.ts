/**
 * Helpers for tests that drive the local cluster as a client would drive mainnet: raw JSON-RPC
 * calls, bounded waiting, finding the current leader's QUIC TPU through RPC, and delivering a
 * transaction to it with the native QUIC client.
 */
import { Connection, Keypair, LAMPORTS_PER_SOL, type ContactInfo, type PublicKey, type SignatureStatus } from '@solana/web3.js';
import type { Localnet, Receipt } from '../src/localnet/index.js';
import { QuicClient } from '../src/localnet/quic.js';
import { legacyTx, transfer, web3Base58, type BuiltTx } from './transactions.js';

export { QuicClient };

/** A JSON-RPC reply as it came over the wire. */
export interface RpcReply {
  jsonrpc: string;
  id: unknown;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

/** POST `body` to `url`; status, content type and text as received. */
export async function post(
  url: string,
  body: string,
  headers: Record<string, string> = { 'Content-Type': 'application/json' },
): Promise<{ status: number; type: string | null; text: string }> {
  const res = await fetch(url, { method: 'POST', headers, body });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

/** One JSON-RPC call; the whole reply object. */
export async function rpc(url: string, method: string, params?: unknown[]): Promise<RpcReply> {
  const res = await post(url, JSON.stringify({ jsonrpc: '2.0', id: 1, method, ...(params !== undefined && { params }) }));
  if (res.status !== 200) throw new Error(`${method}: HTTP ${res.status} ${res.text}`);
  return JSON.parse(res.text) as RpcReply;
}

/**
 * Poll `probe` until it returns a value other than undefined; fail after `timeoutMs` with `what`.
 * Every wait in these tests is bounded by this.
 */
export async function waitFor<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Wait until the processed slot reaches `slot`. */
export function waitForSlot(connection: Connection, slot: number, timeoutMs?: number): Promise<number> {
  return waitFor(
    `slot ${slot}`,
    async () => {
      const s = await connection.getSlot('processed');
      return s >= slot ? s : undefined;
    },
    timeoutMs,
  );
}

/** Wait for the first slot of a leader window (slot % 4 === 0): a whole window to deliver in. */
export async function windowStart(connection: Connection): Promise<number> {
  const now = await connection.getSlot('processed');
  return waitForSlot(connection, Math.ceil((now + 1) / 4) * 4);
}

/** `tpuQuic` of node `identity` per getClusterNodes (web3.js keeps the field, its type omits it). */
export async function tpuQuicOf(connection: Connection, identity: PublicKey | string): Promise<string> {
  const id = typeof identity === 'string' ? identity : identity.toBase58();
  const nodes = (await connection.getClusterNodes()) as (ContactInfo & { tpuQuic?: string | null })[];
  const node = nodes.find((n) => n.pubkey === id);
  if (!node?.tpuQuic) throw new Error(`no tpuQuic for ${id} in getClusterNodes`);
  return node.tpuQuic;
}

/** The leader of `slot` and its QUIC TPU, found over RPC as a sender would. */
export async function leaderOf(connection: Connection, slot: number): Promise<{ identity: string; tpuQuic: string }> {
  const [leader] = await connection.getSlotLeaders(slot, 1);
  return { identity: leader!.toBase58(), tpuQuic: await tpuQuicOf(connection, leader!) };
}

/** Wait until `signature` is confirmed (or finalized); its status, as getSignatureStatuses gives it. */
export function confirmed(connection: Connection, signature: string): Promise<SignatureStatus> {
  return waitFor(`${signature} confirmed`, async () => {
    const [s] = (await connection.getSignatureStatuses([signature])).value;
    return s?.confirmationStatus === 'confirmed' || s?.confirmationStatus === 'finalized' ? s : undefined;
  });
}

/** A funded fresh keypair (airdrop confirmed). */
export async function fundedKeypair(connection: Connection, sol = 10): Promise<Keypair> {
  const kp = Keypair.generate();
  await confirmed(connection, await connection.requestAirdrop(kp.publicKey, sol * LAMPORTS_PER_SOL));
  return kp;
}

/** A signed transfer of `lamports` from `from` to `to` with `blockhash`. */
export function transferTx(from: Keypair, to: PublicKey, lamports: number, blockhash: string): BuiltTx & { signature: string } {
  const tx = legacyTx([transfer(from.publicKey, to, lamports)], { feePayer: from, blockhash });
  return { ...tx, signature: web3Base58(tx.signatures[0]!) };
}

/**
 * Send `tx` over QUIC to the leader of the current window, at the window's start, and wait
 * until that validator has settled it. Returns its receipt. Should the window have passed before
 * the transaction arrived (a starved test machine), it is sent again to the next window's leader,
 * as any sender would: at most `attempts` times.
 */
export async function deliverToLeader(
  net: Localnet,
  connection: Connection,
  client: QuicClient,
  tx: BuiltTx & { signature: string },
  attempts = 5,
): Promise<Receipt> {
  for (let attempt = 1; ; attempt++) {
    const seen = net.receivedBy(tx.signature).length;
    const slot = await windowStart(connection);
    const { tpuQuic } = await leaderOf(connection, slot);
    const [outcome] = await client.send([tpuQuic], Buffer.from(tx.bytes));
    if (!outcome?.ok) throw new Error(`QUIC send to ${tpuQuic} failed: ${JSON.stringify(outcome)}`);
    const receipt = await waitFor(`${tx.signature} settled`, () => {
      const r = net.receivedBy(tx.signature)[seen];
      return r && r.outcome !== 'held' ? r : undefined;
    });
    if (receipt.outcome !== 'dropped-not-leader' || attempt >= attempts) return receipt;
  }
}

/**
 * The whole service on the local cluster, as a bot sees it: a running `startService` pointed at
 * a local cluster the test owns (so the service can be stopped and restarted under it), an
 * account with a key, and a funded payer. Transactions are real web3.js transactions.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Connection, Keypair, LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import { DEFAULT_CONFIG, type Config } from '../src/config.js';
import { startLocalnet, type Localnet, type LocalnetOptions } from '../src/localnet/index.js';
import { startService, type Service, type ServiceOptions } from '../src/service.js';
import { loadTipAddresses } from '../src/tips.js';
import type { PlanName } from '../src/accounts/plans.js';
import { waitFor } from './localnet.js';
import { tempDir } from './tmp.js';
import { legacyTx, transfer, web3Base58, type BuiltTx } from './transactions.js';

export interface Stack {
  net: Localnet;
  svc: Service;
  connection: Connection;
  dir: string;
  config: Config;
  tips: PublicKey[];
  /** Stop the service (the cluster keeps running). */
  stop(): Promise<void>;
  /** Start it again on the same data directory and cluster. */
  start(): Promise<Service>;
  close(): Promise<void>;
}

export interface StackOptions {
  localnet?: LocalnetOptions;
  config?: Partial<Config>;
  /** Validators (by name) written to the anti-MEV blocklist. */
  block?: string[];
  /** Given to `startService` (each start). */
  service?: ServiceOptions;
}

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const tmp = tempDir();
  const net = await startLocalnet({ slotMs: 100, ...opts.localnet });
  const blocklistPath = join(tmp.dir, 'blocklist.txt');
  const blocked = net.validators.filter((v) => opts.block?.includes(v.name)).map((v) => `${v.identity}  # ${v.name}`);
  writeFileSync(blocklistPath, blocked.join('\n') + '\n');
  const config: Config = {
    ...DEFAULT_CONFIG,
    port: 0,
    dataDir: tmp.dir,
    rpcUrl: net.rpcUrl,
    wsUrl: net.wsUrl,
    blocklistPath,
    // Request lines of every e2e test would bury vitest's output; logs.test.ts turns them on.
    logLevel: 'warn',
    ...opts.config,
  };
  // Funded before the start, as an operator would (the service checks they are rent-exempt).
  for (const t of loadTipAddresses(config.dataDir, config.tipAddresses)) await net.airdrop(t, LAMPORTS_PER_SOL);
  let svc = await startService(config, opts.service);
  const stack: Stack = {
    net,
    get svc() {
      return svc;
    },
    connection: new Connection(net.rpcUrl, 'confirmed'),
    dir: tmp.dir,
    config,
    tips: svc.tipAddresses.map((t) => new PublicKey(t)),
    stop: () => svc.close(),
    async start() {
      svc = await startService(config, opts.service);
      return svc;
    },
    async close() {
      await svc.close();
      await net.close();
      tmp.cleanup();
    },
  };
  return stack;
}

/** A new account on `plan` with one key. */
export function account(s: Stack, plan: PlanName = 'whale'): { id: string; key: string } {
  const c = s.svc.accounts.createAccount(`bot-${Math.random().toString(36).slice(2)}`, plan);
  return { id: c.account_id, key: c.api_key };
}

/** A keypair holding `sol` SOL (landed). */
export async function payer(s: Stack, sol = 100): Promise<Keypair> {
  const kp = Keypair.generate();
  await s.net.airdrop(kp.publicKey, BigInt(Math.round(sol * LAMPORTS_PER_SOL)));
  return kp;
}

/** What the transaction helpers below need: a connection to the chain and the service's tip addresses. */
export interface TipTarget {
  connection: Connection;
  tips: PublicKey[];
}

export async function blockhash(s: Pick<TipTarget, 'connection'>): Promise<string> {
  return (await s.connection.getLatestBlockhash('confirmed')).blockhash;
}

let unique = 0;

/**
 * A tipped transaction: `extra` instructions first, then a self-transfer of a counter value (so
 * two otherwise equal transactions never share a signature), then the tip to a tip address.
 */
export async function tipped(
  s: TipTarget,
  from: Keypair,
  tipLamports: number,
  opts: { extra?: ReturnType<typeof transfer>[]; blockhash?: string } = {},
): Promise<BuiltTx & { signature: string }> {
  const tip = s.tips[Math.floor(Math.random() * s.tips.length)]!;
  const tx = legacyTx([...(opts.extra ?? []), transfer(from.publicKey, from.publicKey, ++unique), transfer(from.publicKey, tip, tipLamports)], {
    feePayer: from,
    blockhash: opts.blockhash ?? (await blockhash(s)),
  });
  return { ...tx, signature: web3Base58(tx.signatures[0]!) };
}

/** What the request helpers below need: the service's URL (a Stack, or a `landfall serve` child). */
export interface Endpoint {
  svc: { url: string };
}

export async function send(s: Endpoint, key: string, base64: string, options?: Record<string, unknown>) {
  const r = await fetch(`${s.svc.url}/v1/send`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ transaction: base64, ...(options && { options }) }),
  });
  return { status: r.status, body: (await r.json()) as any };
}

export async function sendBatch(s: Endpoint, key: string, transactions: string[]) {
  const r = await fetch(`${s.svc.url}/v1/send/batch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ transactions }),
  });
  return { status: r.status, body: (await r.json()) as any };
}

export async function status(s: Endpoint, key: string, signature: string) {
  const r = await fetch(`${s.svc.url}/v1/status/${signature}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: r.status, body: (await r.json()) as any };
}

/** `GET /health` (its details: the test stacks set no metrics token). */
export async function health(s: Endpoint) {
  const r = await fetch(`${s.svc.url}/health`);
  return { status: r.status, body: (await r.json()) as any };
}

export async function accountView(s: Endpoint, key: string) {
  const r = await fetch(`${s.svc.url}/v1/account?api-key=${key}`);
  return (await r.json()) as any;
}

/** Poll the status endpoint every 50 ms (inside any plan's query budget) until `done(record)`. */
export async function settled(s: Endpoint, key: string, signature: string, done: (r: any) => boolean = (r) => r.status !== 'sent', timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await status(s, key, signature);
    if (r.status === 200 && done(r.body)) return r.body;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: status of ${signature} is ${JSON.stringify(r.body)}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

/** Wait for the next slot boundary of the cluster. */
export function nextSlot(s: Stack): Promise<number> {
  const now = s.net.slot();
  return waitFor(`slot ${now + 1}`, () => (s.net.slot() > now ? s.net.slot() : undefined));
}

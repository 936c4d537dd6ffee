/**
 * An embedded Solana cluster for tests, benchmarks, `landfall serve` without a chain node, and
 * `landfall localnet`: validators with real QUIC TPU servers, a slot clock and leader schedule,
 * transactions executed by LiteSVM, and JSON-RPC + PubSub WebSocket endpoints with Agave's
 * shapes. Code that talks to it over RPC, WebSocket and QUIC is the code that talks to mainnet.
 *
 * @example
 * const net = await startLocalnet({ slotMs: 100 });
 * const connection = new Connection(net.rpcUrl, 'confirmed'); // web3.js finds the WebSocket at port + 1
 * await connection.requestAirdrop(payer.publicKey, 2 * LAMPORTS_PER_SOL);
 * // … send over QUIC to the leader's tpuQuic (getClusterNodes / getSlotLeaders) …
 * await net.close();
 *
 * `startLocalnet({ sink: true })` is the same cluster whose validators only count what arrives
 * over QUIC (`arrivals`, or JSON-RPC `getArrivalCounts` from another process): benchmarks of a
 * sender use it so LiteSVM does not share the sender's cores.
 */
import { LandfallError } from '../errors.js';
import { Cluster, resolveClusterOptions, type Arrivals, type ClusterOptions } from './cluster.js';
import type { Fault } from './faults.js';
import type { LinkSettings, LinkStats } from './link.js';
import type { LoadSettings } from './block-space.js';
import { PubSub } from './pubsub.js';
import type { Counters, Receipt } from './receive-log.js';
import type { ServerStats } from './quic.js';
import type { RpcEnv } from './rpc-methods.js';
import { RpcServer } from './rpc-server.js';
import { SendService } from './send-service.js';
import type { ValidatorInfo } from './validator.js';

export type { Arrivals } from './cluster.js';
export type { Fault } from './faults.js';
export { readFaultsFile } from './faults.js';
export type { LinkSettings, LinkStats, DirectionStats } from './link.js';
export { parseLink, parseDuration } from './link.js';
export type { LoadSettings } from './block-space.js';
export { DEFAULT_BLOCK_COMPUTE_UNITS, priceAndCost } from './block-space.js';
export type { Counters, Outcome, Receipt } from './receive-log.js';
export type { ValidatorInfo } from './validator.js';
export type { ServerStats } from './quic.js';

export interface LocalnetOptions extends ClusterOptions {
  /** JSON-RPC port (default 0: any free port); the WebSocket listens on the next one, as Agave's does. */
  rpcPort?: number;
  /** How often the RPC node re-sends a pending `sendTransaction` (default 2000 ms, Agave's). */
  sendRetryMs?: number;
  /**
   * Offer `slotsUpdatesSubscribe` (default true). false: the PubSub answers it -32601 Method not
   * found, as RPC providers that do not offer it do (clients must fall back to `slotSubscribe`).
   */
  slotsUpdates?: boolean;
}

export interface Localnet {
  readonly rpcUrl: string;
  readonly wsUrl: string;
  /** The validators as they are now (addresses change when a downed one comes back on a new port). */
  readonly validators: ValidatorInfo[];
  /** Identity of the RPC node (it forwards `sendTransaction` over QUIC as this peer). */
  readonly rpcIdentity: string;
  /** The faucet's address (fee payer of every airdrop). */
  readonly faucet: string;
  readonly slotMs: number;
  /** Sink mode: validators count what arrives over QUIC and execute nothing (`LocalnetOptions.sink`). */
  readonly sink: boolean;
  /** The current (processed) slot. */
  slot(): number;
  leaderAt(slot: number): ValidatorInfo;
  /** When `slot` begins by the schedule, ms since the Unix epoch (the clock of `Receipt.arrivalMs`). */
  slotStartMs(slot: number): number;
  /** Replace validator `name`'s faults (`{}` clears them). */
  setFault(name: string, fault: Fault): Promise<void>;
  /**
   * Change a link while running: validator `name`'s (its `link` fault), or with `name` null the
   * cluster's link to every validator. Settings as an object or `"rtt=80ms,loss=10%"`; with
   * `forMs` the previous setting comes back after that long (a 5-second loss burst).
   */
  setLink(name: string | null, settings: LinkSettings | string, forMs?: number): Promise<void>;
  /** The link's counters of validator `name` (datagrams each way, dropped, delivered; null while down or in sink mode). */
  linkStats(name: string): LinkStats | null;
  /**
   * Set the background competing load filling blocks (null: none): a rate, the compute-unit
   * prices it draws from, the units each asks for. Its payers are funded on first use.
   */
  setLoad(load: LoadSettings | null): void;
  /** Compute units used in the block of `slot` (recent slots only) and the block's limit. */
  blockSpace(slot: number): { used: number; limit: number } | undefined;
  /** The block height at `slot`'s bank (slots with no block — skipped — do not count). */
  blockHeight(slot?: number): number;
  /** Where `signature` arrived over QUIC, in arrival order. */
  receivedBy(signature: string): Receipt[];
  /** Everything validator `name` received, in arrival order. */
  receivedAt(name: string): Receipt[];
  /** Outcome counts, cluster-wide or for one validator (all zero in sink mode: nothing is decoded). */
  counters(validator?: string): Counters;
  /** What arrived over QUIC, cluster-wide or at one validator, decoded or not (in sink mode, all there is). */
  arrivals(validator?: string): Arrivals;
  /** The QUIC server's own counters of validator `name` (null while it is down). */
  serverStats(name: string): ServerStats | null;
  /** Transfer from the faucet; resolves with the signature once it landed (processed). */
  airdrop(address: string | { toBase58(): string }, lamports: number | bigint): Promise<string>;
  /** Stop the clock, close every server and socket. The process can exit afterwards. */
  close(): Promise<void>;
}

/** Attempts to find a free port pair (P, P + 1) when the RPC port is left to the system. */
const PORT_PAIR_ATTEMPTS = 20;

/** What to do about a port of the local cluster that another process holds: the settings that move it. */
const MOVE_PORT =
  'choose another with `landfall serve --localnet-rpc-port N` (or `landfall localnet --rpc-port N`, or localnet.rpcPort in the configuration; the WebSocket takes N + 1), or 0 for any free pair';

/** A taken port as a message that says which one and how to move it (a raw `listen EADDRINUSE` did not). */
function listenRefusal(what: string, host: string, port: number, e: unknown): LandfallError {
  const inUse = (e as NodeJS.ErrnoException).code === 'EADDRINUSE';
  return new LandfallError(
    'CONFIG_INVALID',
    inUse
      ? `localnet: port ${port} (${what}) on ${host} is in use by another process (another landfall serve, landfall localnet or solana-test-validator?): ${MOVE_PORT}`
      : `localnet: cannot listen for ${what} on ${host}:${port}: ${(e as Error).message}`,
  );
}

async function listenPair(host: string, rpcPort: number, cluster: Cluster, slotsUpdates: boolean, env: () => RpcEnv): Promise<[RpcServer, PubSub]> {
  for (let attempt = 1; ; attempt++) {
    let rpc: RpcServer;
    try {
      rpc = await RpcServer.listen(host, rpcPort, env);
    } catch (e) {
      throw listenRefusal('JSON-RPC', host, rpcPort, e);
    }
    try {
      if (rpc.port === 65535) throw Object.assign(new Error('no port above 65535'), { code: 'EADDRINUSE' });
      return [rpc, await PubSub.listen(host, rpc.port + 1, cluster, slotsUpdates)];
    } catch (e) {
      await rpc.close();
      const inUse = (e as NodeJS.ErrnoException).code === 'EADDRINUSE';
      if (rpcPort !== 0 || !inUse || attempt >= PORT_PAIR_ATTEMPTS) {
        throw listenRefusal('WebSocket', host, rpc.port + 1, e);
      }
    }
  }
}

/** Start a local cluster (see the module comment). Throws `CONFIG_INVALID` for bad options. */
export async function startLocalnet(options: LocalnetOptions = {}): Promise<Localnet> {
  const opts = resolveClusterOptions(options);
  const rpcPort = options.rpcPort ?? 0;
  if (!Number.isInteger(rpcPort) || rpcPort < 0 || rpcPort > 65534) {
    throw new LandfallError('CONFIG_INVALID', `localnet rpcPort must be an integer from 0 to 65534 (got ${String(options.rpcPort)})`);
  }
  const retryMs = options.sendRetryMs ?? 2000;
  if (!Number.isInteger(retryMs) || retryMs < 10) {
    throw new LandfallError('CONFIG_INVALID', `localnet sendRetryMs must be an integer ≥ 10 (got ${String(options.sendRetryMs)})`);
  }

  const slotsUpdates = options.slotsUpdates ?? true;
  if (typeof slotsUpdates !== 'boolean') {
    throw new LandfallError('CONFIG_INVALID', `localnet slotsUpdates must be true or false (got ${String(options.slotsUpdates)})`);
  }

  const cluster = new Cluster(opts);
  await cluster.start();
  let sender: SendService | null = null;
  try {
    sender = new SendService(cluster, retryMs);
    const send = sender;
    let addresses = { rpc: '', pubsub: '' };
    const [rpc, pubsub] = await listenPair(opts.host, rpcPort, cluster, slotsUpdates, () => ({
      cluster,
      sender: send,
      rpcAddress: addresses.rpc,
      pubsubAddress: addresses.pubsub,
    }));
    addresses = { rpc: `${opts.host}:${rpc.port}`, pubsub: `${opts.host}:${pubsub.port}` };

    let closing: Promise<void> | null = null;
    return {
      rpcUrl: `http://${opts.host}:${rpc.port}`,
      wsUrl: `ws://${opts.host}:${pubsub.port}`,
      get validators() {
        return cluster.infos();
      },
      rpcIdentity: cluster.rpcIdentity.address,
      faucet: cluster.faucet.address,
      slotMs: opts.slotMs,
      sink: opts.sink,
      slot: () => cluster.slot,
      leaderAt: (slot) => cluster.leaderAt(slot).info(),
      slotStartMs: (slot) => cluster.slotStartMs(slot),
      setFault: (name, fault) => cluster.setFault(name, fault),
      setLink: (name, settings, forMs) => cluster.setLink(name ?? undefined, settings, forMs),
      linkStats: (name) => cluster.linkStats(name),
      setLoad: (load) => cluster.setLoad(load),
      blockSpace: (slot) => cluster.blockSpace(slot),
      blockHeight: (slot) => cluster.ledger.blockHeight(slot ?? cluster.slot),
      receivedBy: (signature) => cluster.log.receivedBy(signature),
      receivedAt: (name) => cluster.log.receivedAt(cluster.validator(name).name),
      counters: (validator) => cluster.log.counters(validator === undefined ? undefined : cluster.validator(validator).name),
      arrivals: (validator) => cluster.arrivals(validator),
      serverStats: (name) => cluster.validator(name).stats(),
      airdrop: async (address, lamports) => {
        const signature = cluster.airdrop(typeof address === 'string' ? address : address.toBase58(), lamports);
        await cluster.whenLanded(signature); // at once, unless the current slot is being skipped
        return signature;
      },
      close: () =>
        (closing ??= (async () => {
          await Promise.all([pubsub.close(), rpc.close(), send.close()]);
          await cluster.close();
        })()),
    };
  } catch (e) {
    await sender?.close();
    await cluster.close();
    throw e;
  }
}

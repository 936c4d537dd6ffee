/**
 * The chain a service started by the CLI delivers to: the node the configuration names, or, when
 * it names none, the embedded local test cluster, started here with its tip addresses funded (as
 * an operator funds them on a real chain). The service is handed the URLs and knows only "a chain
 * at these URLs".
 */
import { mkdirSync } from 'node:fs';
import type { Config } from '../config.js';
import { ensurePortFree } from '../http/server.js';
import { startLocalnet, type Localnet, type LocalnetOptions } from '../localnet/index.js';
import { startService, type Service, type ServiceOptions } from '../service.js';
import { setQuicFirstSendNice, setQuicThreads } from '../native.js';
import { loadTipAddresses } from '../tips.js';

/** Lamports airdropped to each tip address on the local cluster, so any tip leaves it rent-exempt. */
const LOCALNET_TIP_FUNDING = 1_000_000_000;

/** Logged by the service when it serves on the embedded cluster. */
export const LOCALNET_WARNING = 'no chain configured (rpcUrl): transactions go to the embedded local test cluster, not to Solana';

export interface ServiceOnChain {
  service: Service;
  /** The embedded cluster, when the configuration named no chain. */
  localnet: Localnet | null;
  /** Stop the service, then the embedded cluster. */
  close(): Promise<void>;
}

/**
 * Start the service on the configured chain, or on an embedded local cluster when none is
 * configured (`rpcUrl` unset).
 * @param localnet options for the embedded cluster over `config.localnet` (tests: faster slots, a seed)
 */
export async function startServiceOnChain(config: Config, opts: ServiceOptions & { localnet?: LocalnetOptions } = {}): Promise<ServiceOnChain> {
  const { localnet: localnetOptions, ...serviceOptions } = opts;
  if (config.rpcUrl !== null) {
    const service = await startService(config, serviceOptions);
    return { service, localnet: null, close: () => service.close() };
  }
  // A port in use is refused before anything starts, the cluster included.
  await ensurePortFree(config.host, config.port);
  // The embedded cluster's validators start the QUIC runtime the service then shares, and its
  // own client the first sends' thread (the service says what priority that got).
  setQuicThreads(config.quicThreads);
  setQuicFirstSendNice(config.quicFirstSendNice);
  if (config.adminPort !== null) await ensurePortFree(config.adminHost, config.adminPort);
  const net = await startLocalnet({ ...config.localnet, ...localnetOptions });
  try {
    // Created as the store creates it (0700: it will hold key hashes), before the tip keys go in.
    mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
    for (const tip of loadTipAddresses(config.dataDir, config.tipAddresses)) await net.airdrop(tip, LOCALNET_TIP_FUNDING);
    const service = await startService({ ...config, rpcUrl: net.rpcUrl, wsUrl: net.wsUrl }, { ...serviceOptions, chainWarning: LOCALNET_WARNING });
    return {
      service,
      localnet: net,
      async close() {
        await service.close();
        await net.close();
      },
    };
  } catch (e) {
    await net.close();
    throw e;
  }
}

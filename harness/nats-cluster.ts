/**
 * A cluster of real `nats-server` processes with JetStream, joined by routes, on loopback with
 * free ports and temporary store directories (`src/cluster/nats-servers.ts`, with the pinned
 * binary from scripts/nats-server.mjs). Each server keeps its ports and store across
 * stop/restart, as a restarted server would.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { ensureNatsServer } from '../scripts/nats-server.mjs';
import { freePort, startNatsServers, type NatsServers } from '../src/cluster/nats-servers.js';
import { tempDir } from './tmp.js';

export { freePort };

export interface NatsCluster extends NatsServers {
  /** Stop every server and remove the store directories. */
  close(): Promise<void>;
}

/** How long a new cluster may take to elect its JetStream meta leader. */
const JETSTREAM_READY_MS = 60_000;

/**
 * Start `n` servers (JetStream, every server routed to every other), each reading `configFile`
 * if given. Without a config file (no credentials needed), resolves once JetStream answers: each
 * server says "ready" before the cluster has elected its JetStream meta leader, and on a starved
 * machine (a CI run beside `stress-ng`) the election outlasted the CLI's own 20 s of retries.
 */
export async function startNatsCluster(n: number, configFile?: string, extraArgs: string[] = [], routesOf?: (i: number, routePorts: number[]) => string): Promise<NatsCluster> {
  const tmp = tempDir('landfall-nats-');
  try {
    const servers = await startNatsServers(n, ensureNatsServer(), tmp.dir, configFile, extraArgs, routesOf);
    if (configFile === undefined) await jetStreamAnswering(servers.urls).catch(async (e: unknown) => {
      await servers.close();
      throw e;
    });
    return {
      ...servers,
      async close() {
        await servers.close();
        tmp.cleanup();
      },
    };
  } catch (e) {
    tmp.cleanup();
    throw e;
  }
}

/** Resolves once the cluster's JetStream answers an account-info request (its meta leader is elected). */
async function jetStreamAnswering(urls: string[]): Promise<void> {
  const nc = await connect({ servers: urls, timeout: 5_000 });
  try {
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    const deadline = Date.now() + JETSTREAM_READY_MS;
    for (;;) {
      try {
        await jsm.getAccountInfo();
        return;
      } catch (e) {
        if (Date.now() > deadline) throw new Error(`JetStream did not answer within ${JETSTREAM_READY_MS} ms of the servers being ready: ${(e as Error).message}`);
        await sleep(250);
      }
    }
  } finally {
    await nc.close();
  }
}

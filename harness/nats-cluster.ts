/**
 * A cluster of real `nats-server` processes with JetStream, joined by routes, on loopback with
 * free ports and temporary store directories (`src/cluster/nats-servers.ts`, with the pinned
 * binary from scripts/nats-server.mjs). Each server keeps its ports and store across
 * stop/restart, as a restarted server would.
 */
import { ensureNatsServer } from '../scripts/nats-server.mjs';
import { freePort, startNatsServers, type NatsServers } from '../src/cluster/nats-servers.js';
import { tempDir } from './tmp.js';

export { freePort };

export interface NatsCluster extends NatsServers {
  /** Stop every server and remove the store directories. */
  close(): Promise<void>;
}

/** Start `n` servers (JetStream, every server routed to every other), each reading `configFile` if given. */
export async function startNatsCluster(n: number, configFile?: string): Promise<NatsCluster> {
  const tmp = tempDir('landfall-nats-');
  try {
    const servers = await startNatsServers(n, ensureNatsServer(), tmp.dir, configFile);
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

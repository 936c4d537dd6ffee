/**
 * A TCP proxy on loopback that a test can cut (issue 32): a node given the proxies' URLs instead
 * of the servers' reaches NATS only through them, so cutting them cuts the node off NATS while it
 * still serves its clients — no root, no network namespace. A cut is a black hole, as a network
 * partition is: nothing is forwarded either way and nothing is closed (the client notices by its
 * own pings, as it would), connections made during the cut are held unanswered. Healing closes
 * what the cut held (their streams lost bytes) and forwards new connections again.
 */
import { connect, createServer, type Socket } from 'node:net';

export interface TcpProxy {
  /** nats://127.0.0.1:<port> of the proxy. */
  readonly url: string;
  /** Where connections go (a port on 127.0.0.1); set before the first connection. */
  target: number;
  cut(): void;
  heal(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target = 0): Promise<TcpProxy> {
  const pairs = new Set<{ client: Socket; upstream: Socket | null }>();
  let cut = false;
  const server = createServer((client) => {
    const pair: { client: Socket; upstream: Socket | null } = { client, upstream: null };
    pairs.add(pair);
    client.on('error', () => {});
    client.on('close', () => {
      pair.upstream?.destroy();
      pairs.delete(pair);
    });
    if (cut) {
      client.pause(); // held: a connection into the partition is never answered
      return;
    }
    const upstream = connect(proxy.target, '127.0.0.1');
    pair.upstream = upstream;
    upstream.on('error', () => client.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const proxy: TcpProxy = {
    url: `nats://127.0.0.1:${port}`,
    target,
    cut() {
      cut = true;
      for (const { client, upstream } of pairs) {
        client.unpipe();
        upstream?.unpipe();
        client.pause();
        upstream?.pause();
      }
    },
    heal() {
      cut = false;
      for (const { client, upstream } of [...pairs]) {
        client.destroy();
        upstream?.destroy();
      }
      pairs.clear();
    },
    async close() {
      proxy.heal();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}

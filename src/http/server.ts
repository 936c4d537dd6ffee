/**
 * Listening: start a uWS app on host:port and return a handle that closes it, and make sure no
 * other process holds the port first.
 */
import { createServer } from 'node:net';
import * as uWS from 'uWebSockets.js';
import { LandfallError } from '../errors.js';

export interface RunningServer {
  port: number;
  close(): void;
}

/** Listen with `app`; resolves once listening (port 0 picks a free port). */
export function listen(app: uWS.TemplatedApp, host: string, port: number): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    app.listen(host, port, (socket) => {
      if (!socket) {
        reject(new Error(`cannot listen on ${host}:${port} (is the port in use by another process?)`));
        return;
      }
      resolve({
        port: uWS.us_socket_local_port(socket as unknown as uWS.us_socket),
        close: () => uWS.us_listen_socket_close(socket),
      });
    });
  });
}

/** True for a host only this machine reaches (what `/metrics` is served open on). */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

/**
 * Refuse a port another process listens on. uWS binds with SO_REUSEPORT (the ingress threads
 * share one port that way), so a second service on a taken port would bind without error and the
 * kernel would split the clients between the two. A probe bound *without* SO_REUSEPORT fails
 * with EADDRINUSE whenever any socket holds the port (with SO_REUSEPORT or not, any program),
 * so it runs before the service's own sockets bind. Port 0 (the OS picks one) needs no probe.
 */
export function ensurePortFree(host: string, port: number): Promise<void> {
  if (port === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (e: NodeJS.ErrnoException) => {
      const why = e.code === 'EADDRINUSE' ? `port ${port} is in use by another process` : `cannot listen on ${host}:${port}: ${e.message}`;
      reject(new LandfallError('CONFIG_INVALID', why));
    });
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/**
 * Listening: start a uWS app on host:port and return a handle that closes it, and make sure no
 * other process holds the port first.
 */
import { createServer, isIPv4, isIPv6 } from 'node:net';
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

/**
 * True for a host only this machine reaches (what `/metrics` is served open on), decided on the
 * parsed address, not its spelling: `127.0.0.0/8`, `::1`, an IPv4-mapped `::ffff:127.x.y.z`, and
 * the name `localhost`. Any other name is not loopback, whatever it resolves to (it once was by
 * prefix, so `127.internal.corp` counted).
 */
export function isLoopback(host: string): boolean {
  const h = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (h.toLowerCase() === 'localhost') return true;
  if (isIPv4(h)) return h.split('.')[0] === '127';
  if (!isIPv6(h)) return false;
  const lower = h.toLowerCase();
  const mapped = /^(?:0{0,4}:){0,5}:?ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower.replace(/^::/, ''));
  if (mapped) return isIPv4(mapped[1]!) && mapped[1]!.split('.')[0] === '127';
  // Expand to eight groups and compare with ::1.
  const [head, tail] = lower.includes('::') ? lower.split('::') : [lower, undefined];
  const a = head === '' ? [] : head!.split(':');
  const b = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? a : [...a, ...Array<string>(8 - a.length - b.length).fill('0'), ...b];
  return groups.length === 8 && groups.slice(0, 7).every((g) => parseInt(g, 16) === 0) && parseInt(groups[7]!, 16) === 1;
}

/**
 * True when a request's `Host` header names this machine (a loopback address or `localhost`,
 * with any port), or is absent. What is served open on loopback is served only to such requests:
 * a page on another site that rebinds its name to 127.0.0.1 (DNS rebinding) makes the browser
 * send that name, not a loopback one.
 */
export function isLoopbackHostHeader(header: string): boolean {
  if (header === '') return true;
  const name = header.startsWith('[') ? header.slice(0, header.indexOf(']') + 1) : header.replace(/:\d*$/, '');
  return isLoopback(name);
}

/** A host as it is written in a URL: an IPv6 address in brackets. */
export function urlHost(host: string): string {
  return isIPv6(host) ? `[${host}]` : host;
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

/**
 * Listening: start a uWS app on host:port and return a handle that closes it.
 */
import * as uWS from 'uWebSockets.js';
import type { Config } from '../config.js';
import { errorBody } from './errors.js';

export interface RunningServer {
  port: number;
  close(): void;
}

/** Listen with `app`; resolves once listening (port 0 picks a free port). */
export function listen(app: uWS.TemplatedApp, host: string, port: number): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    app.listen(host, port, (socket) => {
      if (!socket) {
        reject(new Error(`cannot listen on ${host}:${port}`));
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
 * The health-only server `landfall serve` runs until the delivery engine and local cluster
 * exist (see README "What works"): `GET /health`, `GET /ping`, JSON 404 elsewhere.
 */
export function startServer(config: Pick<Config, 'host' | 'port'>): Promise<RunningServer> {
  const startedAt = Date.now();
  const app = uWS.App();
  const json = (res: uWS.HttpResponse, status: string, body: string): void => {
    res.cork(() => res.writeStatus(status).writeHeader('content-type', 'application/json').end(body));
  };
  app.get('/health', (res) => json(res, '200 OK', JSON.stringify({ status: 'ok', uptime_s: Math.round((Date.now() - startedAt) / 1000) })));
  app.get('/ping', (res) => {
    res.cork(() => res.writeStatus('200 OK').writeHeader('content-type', 'text/plain').end('pong'));
  });
  app.any('/*', (res, req) => json(res, '404 Not Found', errorBody(404, 'Not found', `no route ${req.getCaseSensitiveMethod()} ${req.getUrl()}`)));
  return listen(app, config.host, config.port);
}

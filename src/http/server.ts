/**
 * The HTTP front door (uWebSockets.js). At this stage: `GET /health`, `GET /ping`, and JSON
 * 404/405 for everything else. The API routes arrive with the HTTP API issue.
 */
import * as uWS from 'uWebSockets.js';
import type { Config } from '../config.js';

export interface RunningServer {
  port: number;
  close(): void;
}

const JSON_TYPE = 'application/json';

function sendJson(res: uWS.HttpResponse, status: string, body: unknown): void {
  res.cork(() => {
    res.writeStatus(status).writeHeader('content-type', JSON_TYPE).end(JSON.stringify(body));
  });
}

function errorBody(code: number, message: string, reason: string) {
  return { success: false, error: { code, message, reason } };
}

/** Start the server; resolves once it listens (port 0 picks a free port). */
export function startServer(config: Pick<Config, 'host' | 'port'>): Promise<RunningServer> {
  const startedAt = Date.now();
  const app = uWS.App();
  app.get('/health', (res) => {
    sendJson(res, '200 OK', { status: 'ok', uptime_s: Math.round((Date.now() - startedAt) / 1000) });
  });
  app.get('/ping', (res) => {
    res.cork(() => res.writeStatus('200 OK').writeHeader('content-type', 'text/plain').end('pong'));
  });
  app.any('/health', (res) => sendJson(res, '405 Method Not Allowed', errorBody(405, 'Method not allowed', 'use GET')));
  app.any('/ping', (res) => sendJson(res, '405 Method Not Allowed', errorBody(405, 'Method not allowed', 'use GET')));
  app.any('/*', (res, req) => {
    const path = req.getUrl();
    sendJson(res, '404 Not Found', errorBody(404, 'Not found', `no route ${req.getCaseSensitiveMethod()} ${path}`));
  });
  return new Promise((resolve, reject) => {
    app.listen(config.host, config.port, (socket) => {
      if (!socket) {
        reject(new Error(`cannot listen on ${config.host}:${config.port}`));
        return;
      }
      resolve({
        port: uWS.us_socket_local_port(socket as unknown as uWS.us_socket),
        close: () => uWS.us_listen_socket_close(socket),
      });
    });
  });
}

/**
 * The admin listener (`adminPort`): `/metrics` and `/health` with its details, on a port of
 * their own, so the API port can face clients while scrapes and probes stay on a private
 * address. It runs on the main thread, which holds the engine's health and gathers every ingress
 * thread's metrics itself. With `metricsToken` set, the token is required here too.
 */
import * as uWS from 'uWebSockets.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { NOT_FOUND, operationRoutes, route, type OperationsSources } from './api.js';
import { Refusal } from '../submission/refusals.js';

/** Build the admin app: `GET /health`, `GET /metrics`, a 405 for their other methods, 404 elsewhere. */
export function buildAdminApp(telemetry: Telemetry, sources: OperationsSources): uWS.TemplatedApp {
  const app = uWS.App();
  const ops = operationRoutes(sources);
  for (const r of [ops.health, ops.metrics]) {
    app.get(r.pattern, route(telemetry, r));
    app.any(
      r.pattern,
      route(telemetry, {
        pattern: r.pattern,
        body: null,
        handler: () => {
          throw new Refusal('REQUEST_METHOD', 'use GET', { headers: { Allow: 'GET' } });
        },
      }),
    );
  }
  app.any('/*', route(telemetry, NOT_FOUND));
  return app;
}

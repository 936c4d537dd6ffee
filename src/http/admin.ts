/**
 * The admin listener (`adminPort`): `/metrics` and `/health` with its details (and the dashboard), on a port of
 * their own, so the API port can face clients while scrapes and probes stay on a private
 * address. It runs on the main thread, which holds the engine's health and gathers every ingress
 * thread's metrics itself. With `metricsToken` set, the token is required here too.
 */
import * as uWS from 'uWebSockets.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { NOT_FOUND, operationRoutes, refuseOtherMethods, route, type OperationsSources } from './api.js';
import { dashboardRoutes } from './dashboard.js';

/**
 * Build the admin app: `GET /health`, `GET /metrics`, the dashboard (its operator view reads
 * these two, same origin), a 405 for their other methods, 404 elsewhere.
 */
export function buildAdminApp(telemetry: Telemetry, sources: OperationsSources): uWS.TemplatedApp {
  const app = uWS.App();
  const ops = operationRoutes(sources);
  const routes = [ops.health, ops.metrics, ...dashboardRoutes()];
  for (const r of routes) app.get(r.pattern, route(telemetry, r));
  refuseOtherMethods(app, telemetry, routes);
  app.any('/*', route(telemetry, NOT_FOUND));
  return app;
}

/**
 * The dashboard (`dashboard/` at the package root: one HTML page, one script, one stylesheet,
 * plain files with nothing fetched from elsewhere), served under `/dashboard/` by the API and by
 * the admin listener; `GET /` sends a browser there (`POST /` stays JSON-RPC).
 *
 * The files are read once, when the app is built, and answered from memory. The page holds keys
 * only in its tab's sessionStorage and sends them as headers (never in a URL): the headers here
 * forbid framing, sniffing, referrers and any script, style or connection not from this origin.
 */
import { readFileSync } from 'node:fs';
import type { Handler } from './types.js';

/** A dashboard route, in the shape of the API's `RouteSpec` (GET, no body). */
export interface DashboardRoute {
  method: 'get';
  pattern: string;
  body: null;
  handler: Handler;
}

/** Where the assets live, from `src/http/` and from `dist/http/` alike. */
const ASSET_DIR = new URL('../../dashboard/', import.meta.url);

const ASSETS: ReadonlyArray<{ file: string; path: string; contentType: string }> = [
  { file: 'index.html', path: '/dashboard/', contentType: 'text/html; charset=utf-8' },
  { file: 'app.js', path: '/dashboard/app.js', contentType: 'text/javascript; charset=utf-8' },
  { file: 'app.css', path: '/dashboard/app.css', contentType: 'text/css; charset=utf-8' },
];

export const DASHBOARD_PATH = '/dashboard/';

/** Sent with every dashboard file. `connect-src 'self'` covers the page's own `/v1/stream` WebSocket. */
const HEADERS: Record<string, string> = {
  'Content-Security-Policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  // Small files, read at start: a browser asks again after a restart (an upgrade) instead of mixing versions.
  'Cache-Control': 'no-cache',
};

function asset(file: string, contentType: string): Handler {
  const reply = { status: 200, body: readFileSync(new URL(file, ASSET_DIR), 'utf8'), contentType, headers: HEADERS };
  return () => reply;
}

/** `GET /` → 302 to the dashboard. */
const toDashboard: Handler = () => ({ status: 302, body: '', contentType: 'text/plain', headers: { Location: DASHBOARD_PATH } });

/** The dashboard's routes: its files, `/dashboard` without the slash, and `GET /`. */
export function dashboardRoutes(): DashboardRoute[] {
  return [
    ...ASSETS.map((a): DashboardRoute => ({ method: 'get', pattern: a.path, body: null, handler: asset(a.file, a.contentType) })),
    { method: 'get', pattern: '/dashboard', body: null, handler: toDashboard },
    { method: 'get', pattern: '/', body: null, handler: toDashboard },
  ];
}

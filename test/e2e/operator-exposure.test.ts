/**
 * What `landfall serve` shows an operator's terminal and log, and what it serves to whoever is not
 * the operator (issue 33): the built CLI in a child process, on a local cluster the test owns.
 * - The chain node's URL is shown without the provider key it carries (query, path token).
 * - `/health` on a non-loopback listener without metricsToken tells liveness only (API and admin
 *   port), and a non-loopback adminHost is warned of.
 * - On loopback, what is open (`/metrics`, `/health`'s details) is served only to a request whose
 *   Host names this machine (DNS rebinding).
 * - Wrong metrics tokens are throttled.
 * - An IPv6 listen address is printed in brackets.
 */
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalnet, type Localnet } from '../../src/localnet/index.js';
import { waitFor } from '../../harness/localnet.js';
import { serveChild, type ServeChild } from '../../harness/serve-child.js';
import { tempDir } from '../../harness/tmp.js';

const tmp = tempDir();
let net: Localnet;
const children: ServeChild[] = [];

beforeAll(async () => {
  net = await startLocalnet({ slotMs: 100 });
}, 30_000);
afterAll(async () => {
  for (const c of children) await c.kill();
  await net?.close();
  tmp.cleanup();
});

async function serve(name: string, o: { rpcUrl?: string; wsUrl?: string; config?: Record<string, unknown> } = {}): Promise<ServeChild> {
  const c = await serveChild({ dataDir: join(tmp.dir, name), rpcUrl: o.rpcUrl ?? net.rpcUrl, wsUrl: o.wsUrl ?? net.wsUrl, config: { ingressThreads: 1, ...o.config } });
  children.push(c);
  return c;
}

describe('landfall serve, as others see it', () => {
  it("the chain URL's provider key (query, path token) is in neither the banner nor the serving line", async () => {
    const PATH_TOKEN = 'pAthT0kenSecret4242';
    const QUERY_KEY = 'qUeryKeySecret9191';
    const c = await serve('redact', { rpcUrl: `${net.rpcUrl}/${PATH_TOKEN}?api-key=${QUERY_KEY}`, wsUrl: `${net.wsUrl}/?api-key=${QUERY_KEY}` });
    const serving = await waitFor('the serving line', () => c.logLines('serving')[0]);
    expect(serving.rpc).toBe(`${new URL(net.rpcUrl).origin}/***?api-key=***`);
    expect(c.output()).toMatch(/chain node http:\/\/127\.0\.0\.1:\d+\/\*\*\*\?api-key=\*\*\*/);
    expect(c.output()).not.toContain(PATH_TOKEN);
    expect(c.output()).not.toContain(QUERY_KEY);
  }, 60_000);
});

/** GET with an exact Host header (fetch may not set one). */
function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('what is served to whom', () => {
  it('on a non-loopback listener without metricsToken, /health is liveness only (API and admin port); a non-loopback adminHost is warned of', async () => {
    const c = await serve('exposed', { config: { host: '0.0.0.0', adminPort: 0, adminHost: '0.0.0.0' } });
    const serving = await waitFor('the serving line', () => c.logLines('serving')[0]);
    const port = new URL(c.url).port;
    const adminPort = new URL(String(serving.admin)).port;
    for (const p of [port, adminPort]) {
      const r = await get(`http://127.0.0.1:${p}/health`);
      expect(JSON.parse(r.body)).toEqual({ status: expect.stringMatching(/^(ok|unsynced)$/) });
    }
    const warned = await waitFor('the adminHost warning', () => c.logLines('adminHost is not a loopback address: the admin listener (the dashboard, /health) is reachable from the network; /metrics and /health details need metricsToken there')[0]);
    expect(warned).toMatchObject({ level: 'warn', adminHost: '0.0.0.0', metricsToken: false });
  }, 60_000);

  it("on loopback, /metrics and /health's details only for a Host that names this machine; wrong metrics tokens are throttled; IPv6 in brackets", async () => {
    const c = await serve('loopback-v6', { config: { host: '::1' } });
    expect(c.url).toMatch(/^http:\/\/\[::1\]:\d+$/);
    expect(c.output()).toContain(`landfall listening on ${c.url}`);
    for (const host of ['localhost', `[::1]:${new URL(c.url).port}`, '127.0.0.1']) {
      expect((await get(`${c.url}/metrics`, { host })).status).toBe(200);
      expect(JSON.parse((await get(`${c.url}/health`, { host })).body)).toHaveProperty('uptime_s');
    }
    for (const host of ['evil.example', 'evil.example:8080', '127.0.0.1.nip.io']) {
      const m = await get(`${c.url}/metrics`, { host });
      expect(m.status).toBe(404);
      expect(m.body).toMatch(/served only to requests for a loopback host/);
      expect(Object.keys(JSON.parse((await get(`${c.url}/health`, { host })).body))).toEqual(['status']);
    }

    const TOKEN = 'metrics-token-0123456789abcdef';
    const t = await serve('token', { config: { metricsToken: TOKEN } });
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) statuses.push((await get(`${t.url}/metrics`, { authorization: `Bearer wrong-${i}` })).status);
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
    expect(statuses).toContain(429);
    // While throttled, even the right token is not read (so /health is no oracle either). The
    // bucket refills with time only (the right token takes nothing from it), so when the right
    // token is refused at /metrics, it was throttled at the /health request just before it too.
    // On a loaded machine one request can take long enough for a token to come back: drained
    // again until such a pair is seen.
    const right = { authorization: `Bearer ${TOKEN}` };
    let throttledPair: { health: string[] } | undefined;
    for (let i = 0; i < 10 && throttledPair === undefined; i++) {
      await Promise.all(Array.from({ length: 20 }, (_, j) => get(`${t.url}/metrics`, { authorization: `Bearer wrong-${i}-${j}` })));
      const health = Object.keys(JSON.parse((await get(`${t.url}/health`, right)).body));
      if ((await get(`${t.url}/metrics`, right)).status === 429) throttledPair = { health };
    }
    expect(throttledPair?.health).toEqual(['status']);
    // ... and is again once the bucket refills.
    await waitFor('the token accepted again', async () => ((await get(`${t.url}/metrics`, { authorization: `Bearer ${TOKEN}` })).status === 200 ? true : undefined));
  }, 60_000);
});

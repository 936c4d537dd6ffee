/**
 * What `landfall serve` shows an operator's terminal and log, and what it serves to whoever is not
 * the operator (issue 33): the built CLI in a child process, on a local cluster the test owns.
 * - The chain node's URL is shown without the provider key it carries (query, path token).
 */
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

/**
 * A port already taken refuses the start, for real: a second service on the first one's port
 * (whose ingress threads bind with SO_REUSEPORT, so the second would bind too and the kernel would
 * split clients between the two), and a port another program holds (a plain node:net server,
 * without SO_REUSEPORT). The first service keeps answering alone.
 */
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService } from '../../src/service.js';
import { startStack, type Stack } from '../../harness/stack.js';
import { tempDir } from '../../harness/tmp.js';

let s: Stack;
const dirs: Array<ReturnType<typeof tempDir>> = [];

beforeAll(async () => {
  s = await startStack({ config: { ingressThreads: 2 } });
});
afterAll(async () => {
  await s?.close();
  for (const d of dirs) d.cleanup();
});

/** A second service's configuration: its own data directory, the first one's chain, `port`. */
function second(port: number, ingressThreads: number) {
  const d = tempDir();
  dirs.push(d);
  return { ...s.config, dataDir: d.dir, port, ingressThreads };
}

function listenPlain(): Promise<Server> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => resolve(srv));
  });
}

describe('a port in use', () => {
  it('a second service on the port of a running one refuses to start, with ingress threads or without', async () => {
    const port = s.svc.port;
    for (const threads of [2, 1, 0]) {
      await expect(startService(second(port, threads))).rejects.toThrow(`port ${port} is in use by another process`);
    }
    // Only the first service answers: its uptime, every time (two services would alternate).
    const h = await (await fetch(`${s.svc.url}/health`)).json();
    expect(h.status).toBe('ok');
  });

  it('a port another program holds: the same message, not "cannot listen"', async () => {
    const other = await listenPlain();
    const { port } = other.address() as { port: number };
    try {
      for (const threads of [1, 0]) await expect(startService(second(port, threads))).rejects.toThrow(`port ${port} is in use by another process`);
      // The admin listener's port too.
      await expect(startService({ ...second(0, 1), adminPort: port })).rejects.toThrow(`port ${port} is in use by another process`);
    } finally {
      await new Promise((r) => other.close(r));
    }
  });
});

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
import { serveChild } from '../../harness/serve-child.js';
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { BIN } from '../../harness/serve-child.js';

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

describe('a data directory in use', () => {
  it('a second service on the data directory of a running one refuses, naming its pid; once that one is gone, it starts', { timeout: 60_000 }, async () => {
    const d = tempDir();
    dirs.push(d);
    const dataDir = join(d.dir, 'data');
    const child = await serveChild({ dataDir, rpcUrl: s.config.rpcUrl!, wsUrl: s.config.wsUrl ?? undefined, config: { ingressThreads: 0, logLevel: 'warn' } });
    try {
      const pid = child.proc.pid!;
      await expect(startService({ ...s.config, dataDir, port: 0, ingressThreads: 0 })).rejects.toThrow(
        `the data directory ${dataDir} is in use by another Landfall service (pid ${pid})`,
      );
      // The running one is untouched: it still serves, and its lock is still there.
      expect((await fetch(`${child.url}/health`)).status).toBe(200);
      expect(existsSync(join(dataDir, 'service.lock'))).toBe(true);
    } finally {
      await child.kill();
    }
    // Killed (no chance to release it): the lock of a process that is gone is taken over.
    const next = await startService({ ...s.config, dataDir, port: 0, ingressThreads: 0 });
    try {
      expect((await fetch(`${next.url}/health`)).status).toBe(200);
      // In the same process, a second service on it refuses too.
      await expect(startService({ ...s.config, dataDir, port: 0, ingressThreads: 0 })).rejects.toThrow('is in use by another service in this process');
    } finally {
      await next.close();
    }
    // Closed: released.
    expect(existsSync(join(dataDir, 'service.lock'))).toBe(false);
  });
});

describe("the embedded cluster's port in use", () => {
  it('`landfall serve` with its JSON-RPC port taken says which port and names --localnet-rpc-port, not a raw EADDRINUSE', { timeout: 60_000 }, async () => {
    const other = await listenPlain();
    const { port } = other.address() as { port: number };
    const d = tempDir();
    dirs.push(d);
    try {
      const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const p = execFile(process.execPath, [BIN, 'serve', '--port', '0', '--data', join(d.dir, 'data'), '--localnet-rpc-port', String(port)], (_e, _out, err) =>
          resolve({ code: p.exitCode, stderr: err }),
        );
      });
      expect(code).not.toBe(0);
      expect(stderr).toContain(`port ${port} (JSON-RPC) on 127.0.0.1 is in use by another process`);
      expect(stderr).toContain('--localnet-rpc-port N');
      expect(stderr).not.toContain('listen EADDRINUSE');
    } finally {
      await new Promise((r) => other.close(r));
    }
  });
});

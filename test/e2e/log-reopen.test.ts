/**
 * logrotate's `create` mode against a real `landfall serve` with an ingress thread: the log file
 * is renamed, SIGHUP is sent, and the lines written after it go to a new file of the old name,
 * with an ingress thread serving and with the main thread serving, while the process keeps
 * serving (SIGHUP's default would have ended it).
 */
import { existsSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../harness/localnet.js';
import { logLines } from '../../harness/log-lines.js';
import { serveChild, type ServeChild } from '../../harness/serve-child.js';
import { startLocalnet, type Localnet } from '../../src/localnet/index.js';
import { tempDir } from '../../harness/tmp.js';

const tmp = tempDir();
let net: Localnet;
let service: ServeChild;
let logFile: string;

beforeAll(async () => {
  net = await startLocalnet({ slotMs: 100, seed: 'log-reopen' });
});
afterAll(async () => {
  await service?.kill();
  await net?.close();
  tmp.cleanup();
});

/** A refused request (a line of its own whatever logSuccesses says), with an id to find it by. */
async function refused(id: string): Promise<void> {
  const r = await fetch(`${service.url}/nope`, { headers: { 'x-request-id': id } });
  expect(r.status).toBe(404);
  await r.arrayBuffer();
}

const linesOf = (file: string) => (existsSync(file) ? logLines(readFileSync(file, 'utf8')) : []);

// With an ingress thread (the SIGHUP reaches it as a message) and without (the main thread serves).
describe.each([1, 0])('SIGHUP after logrotate, ingressThreads %i', (ingressThreads) => {
  it('reopens the log by its name; the renamed file keeps what came before; the service keeps serving', { timeout: 60_000 }, async () => {
    await service?.kill();
    logFile = join(tmp.dir, `log-${ingressThreads}`, 'landfall.log');
    service = await serveChild({ dataDir: join(tmp.dir, `data-${ingressThreads}`), rpcUrl: net.rpcUrl, wsUrl: net.wsUrl, config: { ingressThreads, logFile, logLevel: 'info' } });
    await refused('before-rotate');
    await waitFor('the line before the rotation', () => (linesOf(logFile).some((l) => l.req === 'before-rotate') ? true : undefined));

    const rotated = `${logFile}.1`;
    renameSync(logFile, rotated);
    service.proc.kill('SIGHUP');
    // Ask until a line lands in the new file (the SIGHUP reaches an ingress thread as a message:
    // lines written before it go to the old one).
    let n = 0;
    const id = await waitFor('a line in the reopened file', async () => {
      const mine = `after-rotate-${n++}`;
      await refused(mine);
      await new Promise((r) => setTimeout(r, 200)); // the sink's flush interval is shorter
      return linesOf(logFile).some((l) => l.req === mine) ? mine : undefined;
    });
    expect(service.proc.exitCode).toBeNull();
    expect(service.proc.signalCode).toBeNull();
    expect(linesOf(rotated).some((l) => l.req === 'before-rotate')).toBe(true);
    expect(linesOf(rotated).some((l) => l.req === id)).toBe(false);
    expect(linesOf(logFile).some((l) => l.req === 'before-rotate')).toBe(false);
    // A second SIGHUP with nothing renamed: the same file goes on.
    service.proc.kill('SIGHUP');
    await refused('after-second-hup');
    await waitFor('the line after a second SIGHUP', () => (linesOf(logFile).some((l) => l.req === 'after-second-hup') ? true : undefined));
    expect((await fetch(`${service.url}/health`)).status).toBe(200);
  });
});

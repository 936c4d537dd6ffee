/**
 * kill -9 of a process writing status records: the store opens cleanly, and the only records
 * missing are those written in the last commit window before the kill.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { COMMIT_WINDOW_MS, Store } from '../../src/store/store.js';
import { tempDir } from '../../harness/tmp.js';

const WRITER = fileURLToPath(new URL('./fixtures/store-writer.mjs', import.meta.url));
/** The window, plus the commit itself and a loaded machine's late timers. */
const BOUND_MS = COMMIT_WINDOW_MS + 150;

let tmp: ReturnType<typeof tempDir>;
afterEach(() => tmp.cleanup());

it('a kill -9 loses at most the last commit window of status writes', async () => {
  tmp = tempDir();
  const child = spawn(process.execPath, [WRITER, tmp.dir, '400'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const acked: { signature: string; at: number }[] = [];
  let ready!: () => void;
  const started = new Promise<void>((r) => (ready = r));
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line === 'ready') ready();
      else {
        const [signature, at] = line.split(' ');
        acked.push({ signature: signature!, at: Number(at) });
      }
    }
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  await Promise.race([started, exited.then(() => Promise.reject(new Error('the writer exited before it was ready')))]);
  await new Promise((r) => setTimeout(r, 1500));
  const killAt = Date.now();
  child.kill('SIGKILL');
  await exited;
  expect(acked.length).toBeGreaterThan(200);

  const store = Store.open(tmp.dir);
  try {
    const missing = acked.filter((a) => store.getStatus(a.signature) === undefined);
    const window = missing.length === 0 ? 0 : killAt - Math.min(...missing.map((m) => m.at));
    console.log(`kill -9 after ${acked.length} writes: ${missing.length} missing, the oldest written ${window} ms before the kill`);
    for (const m of missing) expect(killAt - m.at).toBeLessThanOrEqual(BOUND_MS);
    // Nothing older than the window is missing, and whatever survived is whole.
    for (const a of acked) if (killAt - a.at > BOUND_MS) expect(store.getStatus(a.signature)?.accountId).toBe('acc_crash');
  } finally {
    await store.close();
  }
});

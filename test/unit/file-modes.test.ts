/**
 * What the service writes to disk is for its own user only (issue 33 item 9): the log file is
 * created 0600 (its lines name accounts, signatures and client addresses) and one found wider is
 * narrowed; a data directory that already exists open to others is narrowed to 0700. Real files,
 * the real LogSink and the real LMDB store.
 */
import { chmodSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/store.js';
import { LogHealth, LogSink } from '../../src/telemetry/log-sink.js';
import { tempDir } from '../../harness/tmp.js';

let tmp: ReturnType<typeof tempDir>;
const mode = (p: string) => statSync(p).mode & 0o777;

beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

describe('file modes', () => {
  it('a new log file is 0600 in a new 0700 directory; an existing 0644 log file is narrowed to 0600', async () => {
    const file = join(tmp.dir, 'logs', 'landfall.log');
    const sink = new LogSink(file, new LogHealth());
    sink.write('{"msg":"one"}\n');
    await sink.end();
    expect(mode(file)).toBe(0o600);
    expect(mode(join(tmp.dir, 'logs'))).toBe(0o700);
    const old = join(tmp.dir, 'old.log');
    writeFileSync(old, '{"msg":"before"}\n');
    chmodSync(old, 0o644);
    const again = new LogSink(old, new LogHealth());
    await again.end();
    expect(mode(old)).toBe(0o600);
  });

  it('an existing data directory at 0755 is narrowed to 0700 when the store opens it', async () => {
    const dir = join(tmp.dir, 'data');
    mkdirSync(dir);
    chmodSync(dir, 0o755);
    let store = Store.open(dir);
    await store.close();
    expect(mode(dir)).toBe(0o700);
    // And a store created earlier whose directory was widened since.
    chmodSync(dir, 0o755);
    store = Store.open(dir);
    await store.close();
    expect(mode(dir)).toBe(0o700);
  });
});

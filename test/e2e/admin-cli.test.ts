/**
 * The admin CLI as an operator runs it (issue 33, smaller items): the built `bin/landfall.js` in
 * a child process.
 * - `accounts list` shows control characters in names escaped, never raw to the terminal.
 * - Pointed at a server that accepts TCP and never answers (not NATS, or NATS behind a dead
 *   proxy), it says it cannot connect and exits, rather than hanging after the message.
 */
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN } from '../../harness/serve-child.js';
import { tempDir } from '../../harness/tmp.js';

const run = promisify(execFile);
const tmp = tempDir();
afterAll(() => tmp.cleanup());

describe('landfall accounts', () => {
  it('list escapes control characters in names (an escape sequence is shown, not run)', async () => {
    const data = join(tmp.dir, 'data');
    mkdirSync(data);
    const name = 'bot\x1b[2J\x1b]0;pwned\x07\u202eevil';
    await run(process.execPath, [BIN, 'accounts', 'create', '--name', name, '--data', data]);
    const { stdout } = await run(process.execPath, [BIN, 'accounts', 'list', '--data', data]);
    expect(stdout).toContain('bot\\x1b[2J\\x1b]0;pwned\\x07\\u202eevil');
    expect(stdout).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f\u202e]/);
    // --json gives the stored name exactly (JSON escapes it).
    const json = await run(process.execPath, [BIN, 'accounts', 'list', '--json', '--data', data]);
    expect(JSON.parse(json.stdout)[0].name).toBe(name);
  });

  it('exits with a message when the NATS address accepts TCP and never answers', async () => {
    const held: Socket[] = [];
    const server = createServer((s) => void held.push(s));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      // Bounded by the test's own timeout, not asserted in time: it must end, with code 2.
      const err = await run(process.execPath, [BIN, 'accounts', 'list', '--nats', `nats://127.0.0.1:${port}`], { timeout: 50_000 }).then(
        () => null,
        (e: { code: number | null; signal: string | null; stderr: string }) => e,
      );
      expect(err).toMatchObject({ code: 2, signal: null });
      expect(err!.stderr).toMatch(/^landfall: cannot connect to NATS at nats:\/\/127\.0\.0\.1:\d+: timeout/);
    } finally {
      for (const s of held) s.destroy();
      server.close();
    }
  }, 60_000);
});

/**
 * The OpenAPI document and the server agree: schemathesis (property-based, installed by the
 * project into a git-ignored venv, see harness/schemathesis.ts) generates requests from
 * `GET /v1/openapi.json`, valid and invalid, sends them to a real running service (real LMDB,
 * local cluster, an ingress thread) and checks every response: no 5xx, every status, content type,
 * header and body as documented, schema-invalid input refused, schema-valid input accepted
 * (with the few protocol-level exceptions in test/schemathesis/schemathesis.toml), 405 with Allow
 * for other methods, 401 where a key is needed and missing. Bounded: a fixed number of examples
 * per operation and a fixed seed, so a run takes well under a minute and is reproducible.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, startStack, type Stack } from '../../harness/stack.js';
import { runSchemathesis, schemathesis, type StRun } from '../../harness/schemathesis.js';
import { tempDir } from '../../harness/tmp.js';

/** Test cases per operation and phase, and the seed (printed by schemathesis on a failure). */
const EXAMPLES = '25';
const SEED = '20261123';
const RUN_LIMIT_MS = 180_000;

let s: Stack;
let tmp: ReturnType<typeof tempDir>;

beforeAll(async () => {
  schemathesis(); // the first run installs it (a minute or two); later runs reuse the venv
  tmp = tempDir();
  s = await startStack({ localnet: { slotMs: 100, seed: 'schemathesis' }, config: { ingressThreads: 1 } });
}, 600_000);
afterAll(async () => {
  await s?.close();
  tmp?.cleanup();
});

const common = ['--max-examples', EXAMPLES, '--seed', SEED, '--workers', '1', '--request-timeout', '10'];

/** Every operation was tested, and cases were generated: a run that tests nothing must not pass. */
function expectFullRun(r: StRun): void {
  const selected = /Selected: (\d+)\/(\d+)/.exec(r.output);
  const tested = /Tested: (\d+)/.exec(r.output);
  const generated = /(\d+) generated/.exec(r.output);
  expect(selected, r.output).not.toBeNull();
  expect(Number(tested?.[1]), r.output).toBe(Number(selected![2]));
  expect(Number(generated?.[1]), r.output).toBeGreaterThan(100);
}

describe('schemathesis against the running service', () => {
  it('without a key: every response conforms, nothing is a 5xx', { timeout: RUN_LIMIT_MS + 10_000 }, async () => {
    const r = await runSchemathesis(`${s.svc.url}/v1/openapi.json`, common, RUN_LIMIT_MS);
    expect(r.code, r.output).toBe(0);
    expectFullRun(r);
  });

  it('with a key: every response conforms, nothing is a 5xx', { timeout: RUN_LIMIT_MS + 10_000 }, async () => {
    const { key } = account(s, 'whale');
    const r = await runSchemathesis(`${s.svc.url}/v1/openapi.json`, [...common, '--header', `Authorization: Bearer ${key}`], RUN_LIMIT_MS);
    expect(r.code, r.output).toBe(0);
    expectFullRun(r);
    // Its report never prints the key (schemathesis filters Authorization); neither do we.
    expect(r.output).not.toContain(key);
  });

  it('fails when the document and the server disagree (the harness can fail)', { timeout: RUN_LIMIT_MS + 10_000 }, async () => {
    // The served document with one documented status taken away: the 404 of the status endpoint.
    const doc = (await (await fetch(`${s.svc.url}/v1/openapi.json`)).json()) as any;
    delete doc.paths['/v1/status/{signature}'].get.responses['404'];
    const file = join(tmp.dir, 'openapi-without-404.json');
    writeFileSync(file, JSON.stringify(doc));
    const { key } = account(s, 'whale');
    const r = await runSchemathesis(
      file,
      ['--url', s.svc.url, '--include-path', '/v1/status/{signature}', '--max-examples', '5', '--seed', SEED, '--workers', '1', '--header', `Authorization: Bearer ${key}`],
      RUN_LIMIT_MS,
    );
    expect(r.code, r.output).not.toBe(0);
    expect(r.output).toMatch(/Undocumented status code/);
  });
});

/**
 * The operations settings of the configuration (`metricsToken`, `adminPort`, `adminHost`): from
 * the file, the environment and flags, and a clear error naming the setting for a bad value.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, loadConfig } from '../../src/config.js';
import { tempDir } from '../helpers/tmp.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

describe('metricsToken, adminPort, adminHost', () => {
  it('default: no token, no admin listener (the API port serves /metrics, open)', () => {
    const c = loadConfig({}, {});
    expect([c.metricsToken, c.adminPort, c.adminHost]).toEqual([null, null, '127.0.0.1']);
    expect([DEFAULT_CONFIG.metricsToken, DEFAULT_CONFIG.adminPort]).toEqual([null, null]);
  });

  it('from the environment, a config file and flags', () => {
    const env = { LANDFALL_METRICS_TOKEN: 'a-long-enough-token', LANDFALL_ADMIN_PORT: '9100' };
    expect(loadConfig({}, env)).toMatchObject({ metricsToken: 'a-long-enough-token', adminPort: 9100 });
    const file = join(tmp.dir, 'c.json');
    writeFileSync(file, JSON.stringify({ metricsToken: 'x'.repeat(16), adminPort: 0, adminHost: '10.0.0.5' }));
    expect(loadConfig({ config: file }, {})).toMatchObject({ metricsToken: 'x'.repeat(16), adminPort: 0, adminHost: '10.0.0.5' });
    expect(loadConfig({ config: file, adminPort: 9200 }, {}).adminPort).toBe(9200);
  });

  it('a bad value is an error naming the setting', () => {
    expect(() => loadConfig({}, { LANDFALL_METRICS_TOKEN: 'short' })).toThrow('metricsToken must be 16 to 256 visible ASCII characters (no spaces)');
    expect(() => loadConfig({ metricsToken: 'sixteen chars with spaces' }, {})).toThrow(/metricsToken must be/);
    expect(() => loadConfig({}, { LANDFALL_ADMIN_PORT: 'nine' })).toThrow('adminPort must be an integer port 0..65535, got "nine"');
    expect(() => loadConfig({ adminPort: 70000 }, {})).toThrow(/adminPort must be an integer port/);
    expect(() => loadConfig({ adminHost: '' }, {})).toThrow(/adminHost must be a non-empty string/);
  });
});

describe('tracker.push, tracker.poll', () => {
  it('default: both sources on; a file turns one off, the other stays on', () => {
    expect(loadConfig({}, {}).tracker).toEqual({ push: true, poll: true });
    const file = join(tmp.dir, 'tracker.json');
    writeFileSync(file, JSON.stringify({ tracker: { poll: false } }));
    expect(loadConfig({ config: file }, {}).tracker).toEqual({ push: true, poll: false });
    expect(loadConfig({ tracker: { push: false } }, {}).tracker).toEqual({ push: false, poll: true });
  });

  it('a bad value, or both off, is an error naming the setting', () => {
    expect(() => loadConfig({ tracker: { push: false, poll: false } }, {})).toThrow('tracker.push and tracker.poll cannot both be false');
    expect(() => loadConfig({ tracker: { push: 'no' } }, {})).toThrow('tracker.push must be true or false, got "no"');
    expect(() => loadConfig({ tracker: true }, {})).toThrow(/tracker must be an object/);
  });
});

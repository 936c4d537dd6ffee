/**
 * The operations settings of the configuration (`metricsToken`, `adminPort`, `adminHost`, `nats`): from
 * the file, the environment and flags, and a clear error naming the setting for a bad value (a
 * secret never quoted in it).
 */
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, loadConfig } from '../../src/config.js';
import { tempDir } from '../../harness/tmp.js';

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
    writeFileSync(file, JSON.stringify({ metricsToken: 'x'.repeat(16), adminPort: 0, adminHost: '10.0.0.5' }), { mode: 0o600 });
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

describe('quicThreads', () => {
  it('default 1; from the environment, a config file and flags', () => {
    expect(loadConfig({}, {}).quicThreads).toBe(1);
    expect(loadConfig({}, { LANDFALL_QUIC_THREADS: '3' }).quicThreads).toBe(3);
    const file = join(tmp.dir, 'q.json');
    writeFileSync(file, JSON.stringify({ quicThreads: 2 }));
    expect(loadConfig({ config: file }, {}).quicThreads).toBe(2);
  });

  it('a bad value is an error naming the setting', () => {
    expect(() => loadConfig({}, { LANDFALL_QUIC_THREADS: '0' })).toThrow('quicThreads must be a positive integer, got 0');
    expect(() => loadConfig({}, { LANDFALL_QUIC_THREADS: 'two' })).toThrow('quicThreads must be an integer 0..64, got "two"');
    const file = join(tmp.dir, 'q-bad.json');
    writeFileSync(file, JSON.stringify({ quicThreads: 65 }));
    expect(() => loadConfig({ config: file }, {})).toThrow('quicThreads must be an integer 0..64, got 65');
  });
});

describe.each([
  ['quicFirstSendNice', 'LANDFALL_QUIC_FIRST_SEND_NICE', -10],
  ['ingressNice', 'LANDFALL_INGRESS_NICE', -5],
] as const)('%s', (name, env, dflt) => {
  it(`default ${dflt}; from the environment and a config file; 0 and the ends of the range are taken`, () => {
    expect(loadConfig({}, {})[name]).toBe(dflt);
    expect(loadConfig({}, { [env]: '0' })[name]).toBe(0);
    expect(loadConfig({}, { [env]: '-20' })[name]).toBe(-20);
    const file = join(tmp.dir, 'nice.json');
    writeFileSync(file, JSON.stringify({ [name]: 19 }));
    expect(loadConfig({ config: file }, {})[name]).toBe(19);
  });

  it('a value outside -20..19, a fraction or an empty variable is an error naming the setting', () => {
    for (const bad of ['-21', '20', '1.5', '', 'high']) {
      expect(() => loadConfig({}, { [env]: bad })).toThrow(`${name} must be an integer -20..19, got ${JSON.stringify(bad)}`);
    }
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

describe('nats (several nodes, issue 13)', () => {
  it('default: none (a single node)', () => {
    expect(loadConfig({}, {}).nats).toBeNull();
    expect(DEFAULT_CONFIG.nats).toBeNull();
  });

  it('from flags, the environment and the config file; replicas default to min(3, servers)', () => {
    expect(loadConfig({ nats: 'nats://a:4222,nats://b:4222', nodeName: 'east-1' }, {}).nats).toEqual({ servers: ['nats://a:4222', 'nats://b:4222'], node: 'east-1', replicas: 2 });
    const env = { LANDFALL_NATS: 'nats://a:4222,nats://b:4222,nats://c:4222,nats://d:4222', LANDFALL_NODE: 'west_2', LANDFALL_NATS_REPLICAS: '5' };
    expect(loadConfig({}, env).nats).toEqual({ servers: ['nats://a:4222', 'nats://b:4222', 'nats://c:4222', 'nats://d:4222'], node: 'west_2', replicas: 5 });
    const file = join(tmp.dir, 'nats.json');
    writeFileSync(file, JSON.stringify({ nats: { servers: ['tls://a:4222'], node: 'eu-1' } }));
    // tls:// makes TLS required (issue 20): never a plaintext connection to that server.
    expect(loadConfig({ config: file }, {}).nats).toEqual({ servers: ['tls://a:4222'], node: 'eu-1', replicas: 1, tls: { caFile: null, certFile: null, keyFile: null } });
    // A flag beats the file; without a name, the host's (made a valid token).
    expect(loadConfig({ config: file, nodeName: 'eu-2', natsReplicas: '1' }, {}).nats!.node).toBe('eu-2');
    expect(loadConfig({ nats: 'nats://a:4222' }, {}).nats!.node).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
  });

  it('a bad value is an error naming the setting', () => {
    const bad = (flags: Parameters<typeof loadConfig>[0], message: RegExp) => expect(() => loadConfig(flags, {})).toThrow(message);
    bad({ nats: 'http://a:4222' }, /nats\.servers must use nats: or tls:/);
    bad({ nats: 'not a url' }, /nats\.servers must be a URL/);
    bad({ nats: [] }, /nats\.servers must be 1 to 32/);
    bad({ nats: 'nats://a:4222', nodeName: 'east 1' }, /node name must be 1-64 letters/);
    bad({ nats: 'nats://a:4222', nodeName: 'a.b' }, /node name/);
    bad({ nats: 'nats://a:4222', natsReplicas: '0' }, /replicas must be an integer 1\.\.5/);
    bad({ nats: 'nats://a:4222', natsReplicas: 'three' }, /replicas/);
    bad({ nodeName: 'east-1' }, /need nats servers/);
  });
});

describe('localnet.rpcPort (the embedded cluster)', () => {
  it('default 0 (any free pair); from the config file, or the --localnet-rpc-port flag over it', () => {
    expect(loadConfig({}, {}).localnet).toEqual({ validators: 4, slotMs: 400, rpcPort: 0 });
    const file = join(tmp.dir, 'localnet.json');
    writeFileSync(file, JSON.stringify({ localnet: { slotMs: 100, rpcPort: 18899 } }));
    expect(loadConfig({ config: file }, {}).localnet).toEqual({ validators: 4, slotMs: 100, rpcPort: 18899 });
    expect(loadConfig({ config: file, localnetRpcPort: '28899' }, {}).localnet.rpcPort).toBe(28899);
  });

  it('a bad value is an error naming the setting', () => {
    expect(() => loadConfig({ localnetRpcPort: 'eighty' }, {})).toThrow('localnet.rpcPort must be an integer port 0..65535, got "eighty"');
    expect(() => loadConfig({ localnetRpcPort: '70000' }, {})).toThrow('localnet.rpcPort must be an integer port');
  });
});

describe('nats credentials and TLS (issue 20)', () => {
  const pem = join(tmp.dir, 'file.pem');
  writeFileSync(pem, 'not read by the configuration, only checked readable', { mode: 0o600 });

  it('user and password from a URL are taken out of it (every URL the same, or none)', () => {
    const c = loadConfig({ nats: 'nats://svc:p%40ss@a:4222,nats://b:4222', nodeName: 'n1' }, {}).nats!;
    expect(c.servers).toEqual(['nats://a:4222', 'nats://b:4222']);
    expect(c.auth).toEqual({ kind: 'user', user: 'svc', password: 'p@ss' });
    expect(loadConfig({ nats: 'nats://s3cret-token@a:4222' }, {}).nats!.auth).toEqual({ kind: 'token', token: 's3cret-token' });
  });

  it('from the environment, flags and the config file; a TLS file makes TLS required', () => {
    const env = { LANDFALL_NATS: 'nats://a:4222', LANDFALL_NATS_USER: 'node-1', LANDFALL_NATS_PASSWORD: 'pw', LANDFALL_NATS_TLS_CA: pem };
    expect(loadConfig({}, env).nats).toMatchObject({ servers: ['nats://a:4222'], auth: { kind: 'user', user: 'node-1', password: 'pw' }, tls: { caFile: pem, certFile: null, keyFile: null } });
    expect(loadConfig({ nats: 'nats://a:4222', natsNkey: pem }, {}).nats!.auth).toEqual({ kind: 'nkey', file: pem });
    expect(loadConfig({ nats: 'nats://a:4222' }, { LANDFALL_NATS_CREDS: pem }).nats!.auth).toEqual({ kind: 'creds', file: pem });
    expect(loadConfig({ nats: 'nats://a:4222' }, { LANDFALL_NATS_TOKEN: 't0ken' }).nats!.auth).toEqual({ kind: 'token', token: 't0ken' });
    const file = join(tmp.dir, 'nats-auth.json');
    writeFileSync(file, JSON.stringify({ nats: { servers: 'nats://a:4222', user: 'u', password: 'p', tls: { caFile: pem, certFile: pem, keyFile: pem } } }), { mode: 0o600 });
    expect(loadConfig({ config: file }, {}).nats).toMatchObject({ auth: { kind: 'user', user: 'u', password: 'p' }, tls: { caFile: pem, certFile: pem, keyFile: pem } });
    expect(loadConfig({ nats: 'nats://a:4222' }, {}).nats).not.toHaveProperty('tls');
  });

  it('a world-readable nkey seed, credentials file, TLS key or config file with a secret is refused, saying how to fix it', () => {
    const open = join(tmp.dir, 'open.nk');
    writeFileSync(open, 'SUAseed', { mode: 0o644 });
    chmodSync(open, 0o644);
    const refused = /holds a secret and is readable by every user of this machine \(mode 0644\): run `chmod o-r .*open\.nk` \(or chmod 600\)/;
    expect(() => loadConfig({ nats: 'nats://a:4222', natsNkey: open }, {})).toThrow(refused);
    expect(() => loadConfig({ nats: 'nats://a:4222' }, { LANDFALL_NATS_CREDS: open })).toThrow(refused);
    expect(() => loadConfig({ nats: 'nats://a:4222', natsTlsKey: open, natsTlsCert: pem }, {})).toThrow(refused);
    // A CA or a certificate is public: no such check.
    expect(loadConfig({ nats: 'nats://a:4222', natsTlsCa: open }, {}).nats!.tls!.caFile).toBe(open);
    // Group-readable is a deliberate choice, allowed.
    chmodSync(open, 0o640);
    expect(loadConfig({ nats: 'nats://a:4222', natsNkey: open }, {}).nats!.auth).toEqual({ kind: 'nkey', file: open });
    for (const [secret, body] of [
      ['nats.password', { nats: { servers: 'nats://a:4222', user: 'u', password: 'hunter2' } }],
      ['nats.token', { nats: { servers: 'nats://a:4222', token: 'hunter2' } }],
      ['credentials in nats.servers', { nats: 'nats://u:hunter2@a:4222' }],
      ['metricsToken', { metricsToken: 'hunter2hunter2hunter2' }],
    ] as const) {
      const file = join(tmp.dir, 'open-config.json');
      writeFileSync(file, JSON.stringify(body));
      chmodSync(file, 0o644);
      let err: Error | null = null;
      try {
        loadConfig({ config: file }, {});
      } catch (e) {
        err = e as Error;
      }
      expect(err?.message).toMatch(new RegExp(`config file .* holds a secret \\(${secret.replace(/\./g, '\\.')}\\) and is readable by every user`));
      expect(err?.message).not.toMatch(/hunter2/);
      chmodSync(file, 0o600);
      expect(() => loadConfig({ config: file }, {})).not.toThrow();
    }
  });

  it('a bad or ambiguous setting is an error that never quotes a secret', () => {
    const bad = (flags: Parameters<typeof loadConfig>[0], env: NodeJS.ProcessEnv, message: RegExp) => {
      let err: Error | null = null;
      try {
        loadConfig(flags, env);
      } catch (e) {
        err = e as Error;
      }
      expect(err?.message).toMatch(message);
      expect(err?.message).not.toMatch(/hunter2/);
    };
    bad({ nats: 'http://u:hunter2@a:4222' }, {}, /nats\.servers must use nats: or tls:, got "http:\/\/\*\*\*@a:4222"/);
    bad({ nats: 'nats://u:hunter2@a:4222,nats://v:hunter2x@b:4222' }, {}, /carry different credentials/);
    bad({ nats: 'nats://u:hunter2%zz@a:4222' }, {}, /the credentials in "nats:\/\/\*\*\*@a:4222" are not valid percent-encoding/);
    bad({ nats: 'nats:u:hunter2@a:4222' }, {}, /nats\.servers must name a host, got "nats:\*\*\*@a:4222"/);
    bad({ nats: 'nats://u:hunter2@a:4222' }, { LANDFALL_NATS_TOKEN: 'hunter2' }, /more than one way \(a token, credentials in a server URL\)/);
    bad({ nats: 'nats://a:4222' }, { LANDFALL_NATS_PASSWORD: 'hunter2' }, /a NATS password needs a user/);
    bad({ nats: 'nats://a:4222', natsUser: 'u' }, {}, /a NATS user needs a password/);
    bad({ nats: 'nats://a:4222', natsCreds: join(tmp.dir, 'missing.creds') }, {}, /nats\.credsFile: cannot read .*missing\.creds: ENOENT/);
    bad({ nats: 'nats://a:4222', natsTlsCert: pem }, {}, /needs both nats\.tls\.certFile and nats\.tls\.keyFile/);
    bad({ natsUser: 'u' }, { LANDFALL_NATS_PASSWORD: 'hunter2' }, /natsUser is set, but NATS settings need nats servers/);
    // A misspelt security setting is an error, not a connection made without it.
    bad({ nats: { servers: 'nats://a:4222', credFile: pem } }, {}, /unknown setting nats\.credFile \(known: servers, node, replicas, user, password, token, credsFile, nkeyFile, tls\)/);
    bad({ nats: { servers: 'tls://a:4222', tls: { ca: pem } } }, {}, /unknown setting nats\.tls\.ca \(known: caFile, certFile, keyFile\)/);
  });
});

describe('ackReplication (issue 32)', () => {
  it('default local; quorum from the environment, a config file or a flag, with nats', () => {
    expect(loadConfig({}, {}).ackReplication).toBe('local');
    expect(loadConfig({}, { LANDFALL_NATS: 'nats://a:4222', LANDFALL_ACK_REPLICATION: 'quorum' }).ackReplication).toBe('quorum');
    const file = join(tmp.dir, 'ack.json');
    writeFileSync(file, JSON.stringify({ nats: 'nats://a:4222', ackReplication: 'quorum' }));
    expect(loadConfig({ config: file }, {}).ackReplication).toBe('quorum');
    expect(loadConfig({ config: file, ackReplication: 'local' }, {}).ackReplication).toBe('local');
    expect(loadConfig({ nats: 'nats://a:4222', ackReplication: 'quorum' }, {}).ackReplication).toBe('quorum');
  });

  it('a bad value, or quorum without nats, is an error naming the setting', () => {
    expect(() => loadConfig({}, { LANDFALL_ACK_REPLICATION: 'majority' })).toThrow('ackReplication must be one of local, quorum, got "majority"');
    expect(() => loadConfig({ nats: 'nats://a:4222', ackReplication: 1 }, {})).toThrow('ackReplication must be one of local, quorum, got 1');
    expect(() => loadConfig({}, { LANDFALL_ACK_REPLICATION: 'quorum' })).toThrow('ackReplication "quorum" needs a cluster: set nats (or LANDFALL_NATS), or use "local" on a single node');
  });
});

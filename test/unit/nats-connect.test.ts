/**
 * What a node and the admin CLI hand the NATS client (issue 20, part 1): the one way of
 * authenticating the configuration names, the credentials and nkey seed files read at each
 * attempt (a rotated file is used without a restart), TLS required whenever configured, and
 * refusals worded for an operator. Real servers (TLS, users, operator mode for a credentials
 * file) are in test/cluster/trust.test.ts.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createUser, fromPublic } from '@nats-io/nkeys';
import { AuthorizationError, type Auth, type ConnectionOptions } from '@nats-io/transport-node';
import { afterAll, describe, expect, it } from 'vitest';
import { natsConnectOptions, natsErrorReason } from '../../src/cluster/nats-connect.js';
import { tempDir } from '../../harness/tmp.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

const base = { servers: ['tls://a:4222'], node: 'n1', replicas: 1 };
const NONCE = 'a-server-nonce';
const authOf = (o: ConnectionOptions): Auth => (o.authenticator as (nonce?: string) => Auth)(NONCE);

/** A fresh user nkey: its seed file and public key. */
function nkeyFile(name: string): { file: string; publicKey: string; seed: string } {
  const kp = createUser();
  const seed = new TextDecoder().decode(kp.getSeed());
  const file = join(tmp.dir, name);
  writeFileSync(file, `${seed}\n`);
  return { file, publicKey: kp.getPublicKey(), seed };
}

/** The nonce signature in `auth` verifies with `publicKey`. */
function signedBy(auth: Auth, publicKey: string): boolean {
  const { nkey, sig } = auth as { nkey: string; sig: string };
  return nkey === publicKey && fromPublic(publicKey).verify(new TextEncoder().encode(NONCE), Buffer.from(sig, 'base64url'));
}

describe('natsConnectOptions', () => {
  it('user and password, or a token, as the client takes them; no TLS unless configured', () => {
    expect(natsConnectOptions({ ...base, auth: { kind: 'user', user: 'u', password: 'p' } })).toEqual({ servers: base.servers, user: 'u', pass: 'p' });
    expect(natsConnectOptions({ ...base, auth: { kind: 'token', token: 't' } })).toEqual({ servers: base.servers, token: 't' });
    expect(natsConnectOptions(base)).toEqual({ servers: base.servers });
  });

  it('TLS configured is TLS required: an empty object at least, the files given', () => {
    expect(natsConnectOptions({ ...base, tls: { caFile: null, certFile: null, keyFile: null } }).tls).toEqual({});
    expect(natsConnectOptions({ ...base, tls: { caFile: '/ca.pem', certFile: '/c.pem', keyFile: '/k.pem' } }).tls).toEqual({ caFile: '/ca.pem', certFile: '/c.pem', keyFile: '/k.pem' });
  });

  it('an nkey seed file signs the server nonce, read again at each attempt (a rotated seed is used)', () => {
    const first = nkeyFile('node.nk');
    const o = natsConnectOptions({ ...base, auth: { kind: 'nkey', file: first.file } });
    expect(signedBy(authOf(o), first.publicKey)).toBe(true);
    const rotated = createUser();
    writeFileSync(first.file, new TextDecoder().decode(rotated.getSeed()));
    expect(signedBy(authOf(o), rotated.getPublicKey())).toBe(true);
  });

  it('a credentials file gives its JWT and signs the nonce with its seed, read again at each attempt', () => {
    const key = nkeyFile('unused.nk');
    const creds = join(tmp.dir, 'node.creds');
    const write = (jwt: string) =>
      writeFileSync(creds, `-----BEGIN NATS USER JWT-----\n${jwt}\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\n${key.seed}\n------END USER NKEY SEED------\n`);
    write('eyJ0eXAiOiJKV1QifQ.first.sig');
    const o = natsConnectOptions({ ...base, auth: { kind: 'creds', file: creds } });
    expect((authOf(o) as { jwt: string }).jwt).toBe('eyJ0eXAiOiJKV1QifQ.first.sig');
    expect(signedBy(authOf(o), key.publicKey)).toBe(true);
    write('eyJ0eXAiOiJKV1QifQ.second.sig');
    expect((authOf(o) as { jwt: string }).jwt).toBe('eyJ0eXAiOiJKV1QifQ.second.sig');
  });
});

describe('natsErrorReason', () => {
  it('names the cause an operator must fix', () => {
    expect(natsErrorReason(new AuthorizationError('Authorization Violation'))).toMatch(/^authorization refused by the NATS server/);
    expect(natsErrorReason(new Error("server does not support 'tls'"))).toMatch(/does not offer TLS.*not connecting in plaintext/);
    expect(natsErrorReason(new Error('self-signed certificate in certificate chain'))).toMatch(/^TLS failed \(check the CA and client certificate\)/);
    expect(natsErrorReason(new Error('Permissions Violation for Publish to "lf.status.x"'))).toMatch(/^permission refused by the NATS server/);
    expect(natsErrorReason(new Error('connection refused'))).toBe('connection refused');
    // TLS without a client certificate against a server that requires one: its handshake times out.
    const tlsNoCert = { ...base, tls: { caFile: '/ca.pem', certFile: null, keyFile: null } };
    expect(natsErrorReason(new Error('timeout'), tlsNoCert)).toMatch(/requires a client certificate.*check nats\.tls\.certFile/);
    expect(natsErrorReason(new Error('timeout'), base)).toBe('timeout');
  });
});

/**
 * A NATS deployment closed to strangers, for the trust-boundary tests (issue 20, part 1): a
 * throwaway CA with a server and a client certificate (made with `openssl`), and a nats-server
 * config with users, each node allowed to publish only on its own subjects and only the admin
 * user allowed to write the accounts bucket — the permissions `docs/trust-boundary.md` shows.
 * And a server in operator mode (JWTs), for a client with a credentials file.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createAccount, createOperator, createUser, type KeyPair } from '@nats-io/nkeys';

export interface TlsFiles {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

const openssl = (args: string[]): void => void execFileSync('openssl', args, { stdio: 'pipe' });

/** A CA (`name`), a server certificate for 127.0.0.1/localhost and a client certificate it signed. */
export function makeTlsFiles(dir: string, name = 'landfall-test-ca'): TlsFiles {
  const f = (n: string) => join(dir, `${name}-${n}`);
  const files: TlsFiles = { ca: f('ca.pem'), serverCert: f('server.pem'), serverKey: f('server-key.pem'), clientCert: f('client.pem'), clientKey: f('client-key.pem') };
  const caKey = f('ca-key.pem');
  openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', caKey, '-out', files.ca, '-days', '2', '-subj', `/CN=${name}`]);
  const sign = (cert: string, key: string, cn: string, ext: string) => {
    const csr = `${cert}.csr`;
    const extFile = `${cert}.ext`;
    writeFileSync(extFile, ext);
    openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', csr, '-subj', `/CN=${cn}`]);
    openssl(['x509', '-req', '-in', csr, '-CA', files.ca, '-CAkey', caKey, '-CAcreateserial', '-out', cert, '-days', '2', '-extfile', extFile]);
  };
  sign(files.serverCert, files.serverKey, 'nats-server', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  sign(files.clientCert, files.clientKey, 'landfall-node', 'extendedKeyUsage=clientAuth\n');
  return files;
}

/** A nats-server permissions block: what a user may publish and subscribe to. */
export interface Permissions {
  publish: string[];
  subscribe: string[];
}

/**
 * What node `node` needs: its own status and demand subjects, the JetStream API of the status
 * stream (its own durable consumer) and of the two buckets (read the accounts; write only its
 * own lease and takeover claims in `landfall-nodes`), and replies on `_INBOX.>`.
 */
export function nodePermissions(node: string): Permissions {
  return {
    publish: [
      `lf.status.${node}`,
      `lf.live.${node}`,
      `lf.live-replay.${node}`,
      `lf.demand.${node}`,
      '$JS.API.INFO',
      '$JS.API.STREAM.INFO.LANDFALL_STATUS',
      '$JS.API.STREAM.INFO.KV_landfall-accounts',
      '$JS.API.STREAM.INFO.KV_landfall-nodes',
      '$JS.API.STREAM.CREATE.LANDFALL_STATUS',
      '$JS.API.STREAM.UPDATE.LANDFALL_STATUS',
      '$JS.API.STREAM.CREATE.KV_landfall-accounts',
      '$JS.API.STREAM.CREATE.KV_landfall-nodes',
      `$JS.API.CONSUMER.INFO.LANDFALL_STATUS.node-${node}`,
      `$JS.API.CONSUMER.CREATE.LANDFALL_STATUS.node-${node}`,
      `$JS.API.CONSUMER.DURABLE.CREATE.LANDFALL_STATUS.node-${node}`,
      `$JS.API.CONSUMER.MSG.NEXT.LANDFALL_STATUS.node-${node}`,
      `$JS.ACK.LANDFALL_STATUS.node-${node}.>`,
      '$JS.API.CONSUMER.*.KV_landfall-accounts.>',
      '$JS.API.CONSUMER.*.KV_landfall-nodes.>',
      // The leases' watch of two filters (node.*, takeover.>) creates its consumer on the stream's own subject.
      '$JS.API.CONSUMER.CREATE.KV_landfall-nodes',
      '$JS.API.DIRECT.GET.KV_landfall-nodes.>',
      '$JS.API.STREAM.MSG.GET.KV_landfall-nodes',
      '$JS.FC.>',
      `$KV.landfall-nodes.node.${node}`,
      '$KV.landfall-nodes.takeover.>',
    ],
    subscribe: ['lf.demand.*', 'lf.live.*', 'lf.live-replay.*', '_INBOX.>'],
  };
}

/** What the admin CLI needs: the accounts bucket, read and write; nothing of the nodes. */
export function adminPermissions(): Permissions {
  return {
    publish: [
      '$JS.API.INFO',
      '$JS.API.STREAM.INFO.KV_landfall-accounts',
      '$JS.API.STREAM.CREATE.KV_landfall-accounts',
      '$JS.API.STREAM.MSG.GET.KV_landfall-accounts',
      '$JS.API.DIRECT.GET.KV_landfall-accounts.>',
      '$JS.API.CONSUMER.*.KV_landfall-accounts.>',
      '$JS.FC.>',
      '$KV.landfall-accounts.>',
    ],
    subscribe: ['_INBOX.>'],
  };
}

export interface NatsUser {
  /** A user with a password, or an nkey user (its public key, `U…`). */
  user?: string;
  password?: string;
  nkey?: string;
  permissions?: Permissions;
}

/** The nats-server config text: users (with permissions), and TLS requiring client certificates. */
export function natsServerConfig(o: { users: NatsUser[]; tls?: TlsFiles }): string {
  const q = JSON.stringify;
  const perms = (p: Permissions) => `permissions: { publish: { allow: ${q(p.publish)} }, subscribe: { allow: ${q(p.subscribe)} } }`;
  const user = (u: NatsUser) =>
    '    { ' +
    [u.user !== undefined && `user: ${q(u.user)}`, u.password !== undefined && `password: ${q(u.password)}`, u.nkey !== undefined && `nkey: ${q(u.nkey)}`, u.permissions && perms(u.permissions)].filter(Boolean).join(', ') +
    ' }';
  const tls = o.tls
    ? `tls {\n  cert_file: ${q(o.tls.serverCert)}\n  key_file: ${q(o.tls.serverKey)}\n  ca_file: ${q(o.tls.ca)}\n  verify: true\n}\n`
    : '';
  return `${tls}authorization {\n  users: [\n${o.users.map(user).join('\n')}\n  ]\n}\n`;
}

/** A NATS JWT: `claims` for `sub`, signed by `issuer` (what `nsc` writes). */
function natsJwt(issuer: KeyPair, sub: string, name: string, nats: object): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const signed = `${part({ typ: 'JWT', alg: 'ed25519-nkey' })}.${part({ jti: sub.slice(0, 16), iat: Math.floor(Date.now() / 1000), iss: issuer.getPublicKey(), name, sub, nats: { ...nats, version: 2 } })}`;
  return `${signed}.${Buffer.from(issuer.sign(new TextEncoder().encode(signed))).toString('base64url')}`;
}

/**
 * Operator mode in `dir`: an operator, a system account, an account with JetStream and one user
 * of it. Returns the server config text (accounts preloaded, no resolver service) and the user's
 * credentials file (its JWT and nkey seed, as `nsc generate creds` writes it).
 */
export function operatorMode(dir: string): { serverConfig: string; credsFile: string } {
  const [operator, system, account, user] = [createOperator(), createAccount(), createAccount(), createUser()];
  const limits = { subs: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1 };
  const accountJwt = natsJwt(operator, account.getPublicKey(), 'landfall', { type: 'account', limits: { ...limits, mem_storage: -1, disk_storage: -1, streams: -1, consumer: -1 } });
  const systemJwt = natsJwt(operator, system.getPublicKey(), 'SYS', { type: 'account', limits });
  const userJwt = natsJwt(account, user.getPublicKey(), 'admin', { type: 'user', pub: {}, sub: {}, subs: -1, data: -1, payload: -1 });
  const credsFile = join(dir, 'admin.creds');
  const seed = new TextDecoder().decode(user.getSeed());
  writeFileSync(credsFile, `-----BEGIN NATS USER JWT-----\n${userJwt}\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\n${seed}\n------END USER NKEY SEED------\n`, { mode: 0o600 });
  const serverConfig =
    `operator: "${natsJwt(operator, operator.getPublicKey(), 'test-operator', { type: 'operator', system_account: system.getPublicKey() })}"\n` +
    `system_account: ${system.getPublicKey()}\nresolver: MEMORY\n` +
    `resolver_preload: {\n  ${account.getPublicKey()}: "${accountJwt}"\n  ${system.getPublicKey()}: "${systemJwt}"\n}\n`;
  return { serverConfig, credsFile };
}

/**
 * Issue 20, part 1: NATS that only our nodes can write. One real nats-server with JetStream,
 * TLS that requires client certificates (a throwaway CA made with openssl) and users with
 * permissions (`harness/nats-secure.ts`, the ones `docs/trust-boundary.md` shows): node a
 * (an nkey), node b (user and password), the admin (user and password, given in the URL), and
 * `loose`, a user allowed to publish on any node's subject (a deployment without per-node
 * permissions). Landfall nodes are child processes on one local Solana cluster.
 * - nodes with credentials and TLS work end to end (an accepted send replicates);
 * - a client without credentials, or with a wrong password, is refused and changes nothing,
 *   and the password is never printed; a refused node retries and joins once the server
 *   allows it;
 * - `tls://` against a plain server fails clearly instead of connecting in plaintext; a token
 *   in the URL works; a credentials file works against a server in operator mode (JWTs);
 * - a node cannot publish on another node's subject; an event whose origin is not its subject's
 *   node is dropped (and counted) by every node.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jetstream } from '@nats-io/jetstream';
import { createUser } from '@nats-io/nkeys';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Connection } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeEvent, encodeMessage } from '../../src/cluster/status-events.js';
import { statusSubject } from '../../src/cluster/link.js';
import type { StatusRecord } from '../../src/store/records.js';
import { startChildLocalnet, type ChildLocalnet } from '../../harness/child-localnet.js';
import { accountOn, SendLoad, statusOn, type ClusterEnv } from '../../harness/cluster-load.js';
import { LANDFALL_BIN, startClusterNodes, type ClusterNode, type ClusterNodes } from '../../harness/cluster-nodes.js';
import { fundedKeypair, waitFor } from '../../harness/localnet.js';
import { fetchMetric } from '../../harness/metrics.js';
import { startNatsCluster, type NatsCluster } from '../../harness/nats-cluster.js';
import { adminPermissions, makeTlsFiles, natsServerConfig, nodePermissions, operatorMode, type NatsUser, type TlsFiles } from '../../harness/nats-secure.js';
import { statusRecord } from '../../harness/records.js';
import { tempDir } from '../../harness/tmp.js';
import { makeTipAddresses } from '../../harness/transactions.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const secret = (what: string) => `${what}-${randomBytes(12).toString('hex')}`;
const PASSWORD = { b: secret('pw-b'), c: secret('pw-c'), admin: secret('pw-admin'), loose: secret('pw-loose') };

const tmp = tempDir('landfall-trust-');
let tls: TlsFiles;
let tlsArgs: string[];
let nkeySeedFile: string;
let nkeyPublic: string;
let serverConfig: string;
let nats: NatsCluster;
/** tls://127.0.0.1:port of the secure server. */
let url: string;
let chain: ChildLocalnet;
let cluster: ClusterNodes;
let env: ClusterEnv;

/** The users of the secure server; `withC` adds node c (the server then reloads). */
function writeServerConfig(withC: boolean): void {
  const users: NatsUser[] = [
    { nkey: nkeyPublic, permissions: nodePermissions('a') },
    { user: 'b', password: PASSWORD.b, permissions: nodePermissions('b') },
    { user: 'admin', password: PASSWORD.admin, permissions: adminPermissions() },
    { user: 'loose', password: PASSWORD.loose, permissions: { publish: ['lf.status.>', '$JS.API.INFO'], subscribe: ['_INBOX.>'] } },
  ];
  if (withC) users.push({ user: 'c', password: PASSWORD.c, permissions: nodePermissions('c') });
  writeFileSync(serverConfig, natsServerConfig({ users, tls }));
}

/** `landfall <args>` as a child process: its exit code and output (never throws). */
function landfall(args: string[], extraEnv: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [LANDFALL_BIN, ...args], { cwd: ROOT, env: { ...process.env, ...extraEnv } }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** The admin CLI on the secure server, with the admin's credentials in the URL. */
const admin = (...args: string[]) => landfall([...args, '--nats', url.replace('tls://', `tls://admin:${PASSWORD.admin}@`), '--nats-replicas', '1', ...tlsArgs]);

/** A raw NATS client on the secure server as `user`. */
const rawClient = (user: string, pass: string): Promise<NatsConnection> =>
  connect({ servers: url, user, pass, tls: { caFile: tls.ca, certFile: tls.clientCert, keyFile: tls.clientKey }, timeout: 5_000 });

/** A status message of one event from `origin`, on a new record of the test's account. */
function eventMessage(origin: string, over: Partial<StatusRecord> = {}): { data: Uint8Array; signature: string } {
  const record = statusRecord({ accountId: env.accountId, submittedAt: Date.now(), ...over });
  return { data: encodeMessage([encodeEvent({ origin, ts: Date.now(), record, resend: null })]), signature: record.signature };
}

/** A confirmed record with a 10^12-lamport tip: 10^9 points, were it applied. */
const WHALE_TIP = { status: 'confirmed' as const, tipLamports: 1_000_000_000_000n, confirmedAt: Date.now(), slot: 1 };

beforeAll(async () => {
  tls = makeTlsFiles(tmp.dir);
  tlsArgs = ['--nats-tls-ca', tls.ca, '--nats-tls-cert', tls.clientCert, '--nats-tls-key', tls.clientKey];
  const kp = createUser();
  nkeySeedFile = join(tmp.dir, 'node-a.nk');
  writeFileSync(nkeySeedFile, new TextDecoder().decode(kp.getSeed()), { mode: 0o600 });
  nkeyPublic = kp.getPublicKey();
  serverConfig = join(tmp.dir, 'nats-server.conf');
  writeServerConfig(false);
  nats = await startNatsCluster(1, serverConfig);
  url = nats.urls[0]!.replace('nats://', 'tls://');
  chain = await startChildLocalnet({ seed: 'cluster-trust', slotMs: 100 });
  const tips = makeTipAddresses(8);
  const credentials: Record<string, { args?: string[]; env?: Record<string, string> }> = {
    a: { args: ['--nats-nkey', nkeySeedFile] },
    b: { args: ['--nats-user', 'b'], env: { LANDFALL_NATS_PASSWORD: PASSWORD.b } },
    c: { args: ['--nats-user', 'c'], env: { LANDFALL_NATS_PASSWORD: PASSWORD.c } },
  };
  cluster = await startClusterNodes(['a', 'b'], {
    nats: [url],
    rpcUrl: chain.rpcUrl,
    wsUrl: chain.wsUrl,
    replicas: 1,
    config: { tipAddresses: tips.map((t) => t.toBase58()) },
    nodeArgs: (name) => ({ ...credentials[name], args: [...(credentials[name]?.args ?? []), ...tlsArgs] }),
  });
  const created = await admin('accounts', 'create', '--name', 'trusted', '--plan', 'whale', '--json');
  expect(created.code, created.stderr).toBe(0);
  const { account_id, api_key } = JSON.parse(created.stdout) as { account_id: string; api_key: string };
  for (const n of cluster.nodes) await waitFor(`${n.name} to know the key`, async () => ((await accountOn(n, api_key)).status === 200 ? true : undefined), 20_000);
  const connection = new Connection(chain.rpcUrl, 'confirmed');
  env = { chain, nats, cluster, connection, tips, accountId: account_id, key: api_key, payer: await fundedKeypair(connection, 50), close: async () => {} };
}, 120_000);

afterAll(async () => {
  await cluster?.close();
  await chain?.kill();
  await nats?.close();
  tmp.cleanup();
});

const node = (name: string): ClusterNode => cluster.nodes.find((n) => n.name === name)!;
const refusedAttempts = (n: ClusterNode): Promise<number> => fetchMetric(n.url, 'landfall_cluster_nats_refused_attempts');
const points = async (n: ClusterNode): Promise<number> => (await accountOn(n, env.key)).body.usage.service_points as number;
/** The nodes running now (node c is stopped after its test). */
const live = (): ClusterNode[] => cluster.nodes.filter((n) => n.running());
const pointsEverywhere = (): Promise<number[]> => Promise.all(live().map(points));

describe('NATS that only our nodes can write', () => {
  it('nodes with credentials (an nkey; a user and password) and TLS work end to end: an accepted send replicates', async () => {
    for (const n of cluster.nodes) {
      const h = await waitFor(`${n.name} to see both nodes`, async () => {
        const h = (await n.health()).cluster;
        return h?.nodes.length === 2 ? h : undefined;
      }, 20_000);
      expect(h).toEqual({ node: n.name, nats: 'up', mode: 'clustered', nodes: ['a', 'b'], budget: 'shared', replication_backlog: 0 });
    }
    const load = new SendLoad(env, [node('a')], { workers: 1 });
    const ack = await waitFor('a send accepted on a', () => load.acks[0], 20_000);
    await load.stop();
    const onB = await waitFor('the send readable on b', async () => {
      const r = await statusOn(node('b'), env.key, ack.signature);
      return r.status === 200 ? r.body : undefined;
    }, 20_000);
    expect(onB.signature).toBe(ack.signature);
  }, 60_000);

  it('a client without credentials, or with a wrong password, is refused, changes nothing and never sees the password printed', async () => {
    const before = await admin('accounts', 'list', '--json');
    expect(before.code, before.stderr).toBe(0);

    const anonymous = await landfall(['accounts', 'create', '--name', 'intruder', '--nats', url, '--nats-replicas', '1', ...tlsArgs]);
    expect(anonymous.code).not.toBe(0);
    expect(anonymous.stderr).toMatch(/authorization refused by the NATS server/);

    const wrong = secret('wrong');
    const wrongUrl = url.replace('tls://', `tls://admin:${wrong}@`);
    const refused = await landfall(['accounts', 'create', '--name', 'intruder', '--nats', wrongUrl, '--nats-replicas', '1', ...tlsArgs]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/authorization refused by the NATS server/);
    expect(refused.stdout + refused.stderr).not.toContain(wrong);

    // The right password but no client certificate: TLS refuses it before any credential.
    const noCert = await landfall(['accounts', 'list', '--nats', url.replace('tls://', `tls://admin:${PASSWORD.admin}@`), '--nats-replicas', '1', '--nats-tls-ca', tls.ca]);
    expect(noCert.code).not.toBe(0);
    expect(noCert.stderr).toMatch(/requires a client certificate/);
    expect(noCert.stdout + noCert.stderr).not.toContain(PASSWORD.admin);

    const after = await admin('accounts', 'list', '--json');
    expect(after.stdout).toBe(before.stdout);
  }, 60_000);

  it('a node refused by NATS says why in /health and the log, retries with back-off, and joins once the server allows it', async () => {
    const startedAt = Date.now();
    const c = await cluster.add('c');
    const refused = await waitFor('c to say why it is degraded', async () => {
      const h = (await c.health()).cluster;
      return h?.nats_error ? h : undefined;
    }, 20_000);
    expect(refused).toMatchObject({ node: 'c', nats: 'down', mode: 'degraded' });
    expect(refused.nats_error).toMatch(/authorization refused by the NATS server/);
    // The log line (written asynchronously: wait for it, bounded).
    await waitFor('the refusal logged', () => (/cluster: cannot connect to NATS, retrying/.test(c.output()) ? true : undefined), 5_000);
    expect(c.output()).not.toContain(PASSWORD.c);
    // It retries: a second refused attempt (after the back-off's first second).
    await waitFor('c to be refused again', async () => ((await refusedAttempts(c)) >= 2 ? true : undefined), 20_000);

    writeServerConfig(true);
    nats.reload(0);
    const allowedAt = Date.now();
    const joined = await waitFor('c to join once allowed', async () => {
      const h = (await c.health()).cluster;
      return h?.mode === 'clustered' && h.nodes.length === 3 ? h : undefined;
    }, 60_000);
    console.log(`node c: refused for ${allowedAt - startedAt} ms, joined the cluster ${Date.now() - allowedAt} ms after the server allowed it`);
    expect(joined.nats_error).toBeUndefined();
    expect((await accountOn(c, env.key)).status).toBe(200); // it mirrored the accounts bucket

    // Credentials revoked while connected (the server drops c), then restored: c is refused at
    // its reconnects, says so, keeps retrying rather than closing the link for good, and rejoins.
    writeServerConfig(false);
    nats.reload(0);
    const revoked = await waitFor('c to be refused at its reconnects', async () => {
      const h = (await c.health()).cluster;
      return h?.nats_error ? h : undefined;
    }, 20_000);
    expect(revoked).toMatchObject({ nats: 'down', mode: 'degraded' });
    expect(revoked.nats_error).toMatch(/authorization refused by the NATS server/);
    // More than two refusals in a row: the NATS client by itself closes the connection for good
    // at the second (its default), which left a node degraded until restarted.
    const before = await refusedAttempts(c);
    await waitFor('c refused three more times', async () => ((await refusedAttempts(c)) >= before + 3 ? true : undefined), 30_000);
    writeServerConfig(true);
    nats.reload(0);
    const restoredAt = Date.now();
    await waitFor('c to rejoin once allowed again', async () => ((await c.health()).cluster?.mode === 'clustered' ? true : undefined), 60_000);
    console.log(`node c: rejoined ${Date.now() - restoredAt} ms after its credentials were restored`);
    await c.kill();
  }, 90_000);

  it('tls:// against a server without TLS fails clearly instead of connecting in plaintext; a token in the URL works', async () => {
    const token = secret('token');
    const plainConfig = join(tmp.dir, 'plain.conf');
    writeFileSync(plainConfig, `authorization { token: ${JSON.stringify(token)} }\n`);
    const plain = await startNatsCluster(1, plainConfig);
    try {
      const host = plain.urls[0]!.slice('nats://'.length);
      const ok = await landfall(['accounts', 'list', '--nats', `nats://${token}@${host}`, '--nats-replicas', '1']);
      expect(ok.code, ok.stderr).toBe(0);
      expect(ok.stdout).toContain('(no accounts)');
      const tlsRequired = await landfall(['accounts', 'list', '--nats', `tls://${token}@${host}`, '--nats-replicas', '1']);
      expect(tlsRequired.code).not.toBe(0);
      expect(tlsRequired.stderr).toMatch(/does not offer TLS.*not connecting in plaintext/);
      expect(tlsRequired.stdout + tlsRequired.stderr).not.toContain(token);
    } finally {
      await plain.close();
    }
  }, 60_000);

  it('a credentials file (operator mode: JWT and nkey seed) works; without it the same server refuses', async () => {
    const dir = join(tmp.dir, 'operator');
    mkdirSync(dir);
    const { serverConfig: text, credsFile } = operatorMode(dir);
    writeFileSync(join(dir, 'server.conf'), text);
    const server = await startNatsCluster(1, join(dir, 'server.conf'));
    try {
      const created = await landfall(['accounts', 'create', '--name', 'via-creds', '--json', '--nats', server.urls[0]!, '--nats-replicas', '1', '--nats-creds', credsFile]);
      expect(created.code, created.stderr).toBe(0);
      const { account_id } = JSON.parse(created.stdout) as { account_id: string };
      const listed = await landfall(['accounts', 'list', '--json', '--nats', server.urls[0]!, '--nats-replicas', '1'], { LANDFALL_NATS_CREDS: credsFile });
      expect((JSON.parse(listed.stdout) as { account_id: string }[]).map((a) => a.account_id)).toEqual([account_id]);
      const anonymous = await landfall(['accounts', 'list', '--nats', server.urls[0]!, '--nats-replicas', '1']);
      expect(anonymous.code).not.toBe(0);
      expect(anonymous.stderr).toMatch(/authorization refused by the NATS server/);
    } finally {
      await server.close();
    }
  }, 60_000);

  it("a node cannot publish on another node's subject: the forged record reaches no node", async () => {
    const before = await pointsEverywhere();
    const forged = eventMessage('a', WHALE_TIP);
    const marker = eventMessage('b');
    const nc = await rawClient('b', PASSWORD.b);
    try {
      const js = jetstream(nc);
      await expect(js.publish(statusSubject('a'), forged.data, { timeout: 3_000 })).rejects.toThrow(/permission/i);
      // Then b's own, legitimate event: once every node has it, the forged one, sent first on
      // the same stream, would have been applied too had the server taken it.
      await js.publish(statusSubject('b'), marker.data, { timeout: 3_000 });
    } finally {
      await nc.close();
    }
    for (const n of live()) {
      await waitFor(`b's own event on ${n.name}`, async () => ((await statusOn(n, env.key, marker.signature)).status === 200 ? true : undefined), 10_000);
      expect((await statusOn(n, env.key, forged.signature)).status).toBe(404);
    }
    expect(await pointsEverywhere()).toEqual(before);
  }, 60_000);

  it('an event whose origin is not the node of its subject is dropped and counted by every node', async () => {
    const before = await pointsEverywhere();
    const forged = eventMessage('a', WHALE_TIP);
    const own = eventMessage('loose');
    const nc = await rawClient('loose', PASSWORD.loose);
    try {
      // `loose` may publish on any node's subject (no per-node permissions): it claims a's origin
      // on its own subject, then sends an event of its own that matches its subject.
      await nc.request(statusSubject('loose'), forged.data, { timeout: 3_000 });
      await nc.request(statusSubject('loose'), own.data, { timeout: 3_000 });
    } finally {
      await nc.close();
    }
    for (const n of live()) {
      await waitFor(`the later event on ${n.name}`, async () => ((await statusOn(n, env.key, own.signature)).status === 200 ? true : undefined), 10_000);
      expect((await statusOn(n, env.key, forged.signature)).status).toBe(404);
      expect(await fetchMetric(n.url, 'landfall_cluster_forged_events_total')).toBe(1);
      await waitFor(`the drop logged by ${n.name}`, () => (/status events whose origin is not their subject dropped/.test(n.output()) ? true : undefined), 5_000);
    }
    expect(await pointsEverywhere()).toEqual(before);
  }, 60_000);
});

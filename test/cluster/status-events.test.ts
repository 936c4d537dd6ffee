/**
 * The rules of the cluster's status events and accounts bucket, on a real LMDB store and a real
 * nats-server (one, JetStream):
 * - the event codec round-trips a record with its resend tail, and refuses what it cannot read;
 * - applying is forward only and derives usage and points exactly once per node;
 * - the admin CLI's bucket operations refuse bad input with a clear error and change nothing;
 *   the mirror skips an unreadable entry and goes on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { Accounts } from '../../src/accounts/accounts.js';
import { DEFAULT_PLANS } from '../../src/accounts/plans.js';
import { AccountsMirror, KvAdmin, openKvAdmin } from '../../src/cluster/accounts-kv.js';
import { Link } from '../../src/cluster/link.js';
import { decodeEvent, decodeMessage, encodeEvent, encodeMessage, LINGER_MS, MESSAGE_EVENTS, StatusEvents } from '../../src/cluster/status-events.js';
import { LandfallError } from '../../src/errors.js';
import { base58Encode, utcDay } from '../../src/native.js';
import { randomBytes } from 'node:crypto';
import type { StatusRecord } from '../../src/store/records.js';
import { Store } from '../../src/store/store.js';
import { waitFor } from '../../harness/localnet.js';
import { startNatsCluster, type NatsCluster } from '../../harness/nats-cluster.js';
import { statusRecord } from '../../harness/records.js';
import { tempDir } from '../../harness/tmp.js';

const quiet = { info: () => {}, warn: () => {} };
const ACCOUNT = 'acc_7YzZ5xkWQ3rPm2hT9vLn';

describe('status events', () => {
  const tmp = tempDir();
  const store = Store.open(tmp.dir);
  const accounts = new Accounts(store, { plans: { ...DEFAULT_PLANS, growth: { ...DEFAULT_PLANS.growth, thresholdBp: 1_500 } }, lamportsPerPoint: 1000 });
  // A link that is never started: applying needs only this node's name.
  const link = new Link({ servers: ['nats://127.0.0.1:4222'], node: 'here', replicas: 1 }, { retentionMs: 86_400_000, log: quiet });
  const local: StatusRecord[] = [];
  const events = new StatusEvents({ link, store, accounts, log: quiet, registry: new Registry(), publishLocal: (r) => local.push(r) });
  const now = Date.now();
  store.mirrorAccountSync({ id: ACCOUNT, name: 'bot', plan: 'starter', memberSince: now - 1000, planUpgradedAt: now - 1000 }, 1);

  afterAll(async () => {
    await store.close();
    tmp.cleanup();
  });

  it('round-trips an event with its resend tail and refuses what it cannot read', () => {
    const record = statusRecord({ tipLamports: 123_456_789n });
    const resend = { wire: Buffer.alloc(300, 7), antiMev: true, maxRetries: 5 };
    const back = decodeEvent(encodeEvent({ origin: 'east-1', ts: 1234.5, record, resend }));
    expect(back).toEqual({ origin: 'east-1', ts: 1234.5, record, resend });
    const data = encodeEvent({ origin: 'east-1', ts: 1, record, resend: null });
    expect(decodeEvent(data)!.resend).toBeNull();
    expect(decodeEvent(new Uint8Array(0))).toBeNull();
    expect(decodeEvent(data.subarray(0, 80))).toBeNull();
    expect(decodeEvent(Uint8Array.from([9, ...data.subarray(1)]))).toBeNull();
    expect(decodeEvent(Buffer.from('{"not":"an event"}'))).toBeNull();
  });

  it('encodes the same bytes from the wire as from the record (the hot path reads key and blockhash in place)', () => {
    const signature = randomBytes(64);
    const blockhash = randomBytes(32);
    // The wire layout does not matter here, only that the views point into one buffer.
    const wire = Buffer.concat([Buffer.from([1]), signature, Buffer.alloc(40, 9), blockhash]);
    const record = statusRecord({ signature: base58Encode(signature), recentBlockhash: base58Encode(blockhash) });
    const e = { origin: 'east-1', ts: 99, record, resend: { wire, antiMev: false, maxRetries: 2 } };
    const inPlace = encodeEvent(e, { signature: wire.subarray(1, 65), blockhash: wire.subarray(105, 137) });
    expect(Buffer.from(inPlace).equals(Buffer.from(encodeEvent(e)))).toBe(true);
    expect(decodeEvent(inPlace)).toEqual(e);
  });

  it('packs events into one message and reads them back, refusing a damaged one', () => {
    const events = [1, 2, 3].map((i) => ({ origin: `n${i}`, ts: i, record: statusRecord(), resend: i === 2 ? { wire: Buffer.alloc(i * 100, i), antiMev: false, maxRetries: i } : null }));
    const message = encodeMessage(events.map((e) => encodeEvent(e)));
    expect(decodeMessage(message)).toEqual(events);
    expect(decodeMessage(encodeEvent(events[0]!))).toEqual([events[0]]); // one bare event
    expect(decodeMessage(encodeMessage([]))).toEqual([]);
    expect(decodeMessage(message.subarray(0, message.length - 1))).toBeNull();
    expect(decodeMessage(Buffer.concat([message, Buffer.from([0])]))).toBeNull();
    expect(decodeMessage(Uint8Array.from([2, 0, 1, 0xff, 0xff, 0xff, 0xff]))).toBeNull();
    expect(decodeMessage(Uint8Array.from([7]))).toBeNull();
  });

  it('applies forward only, counting usage on the first insert and points on the first confirmation', async () => {
    const usage0 = accounts.usage(ACCOUNT);
    const sent = statusRecord({ accountId: ACCOUNT, submittedAt: now, tipLamports: 1_000_999n });
    const resend = { wire: Buffer.alloc(200, 1), antiMev: false, maxRetries: 3 };
    expect(await events.applyEvent({ origin: 'there', ts: now, record: sent, resend })).toBe(true);
    expect(store.getStatus(sent.signature)).toEqual(sent);
    expect([...store.pendingEntries()].find((r) => r.signature === sent.signature)?.resend).toEqual(resend);
    expect(accounts.usage(ACCOUNT)).toEqual({ total: usage0.total + 1, today: usage0.today + 1 });
    // The same acceptance again (a redelivery, a re-publish): nothing.
    expect(events.applyEvent({ origin: 'there', ts: now, record: sent, resend })).toBeNull();
    expect(accounts.usage(ACCOUNT).total).toBe(usage0.total + 1);

    const confirmedAt = now + 400;
    const confirmed: StatusRecord = { ...sent, status: 'confirmed', confirmedAt, latencyMs: 400, slot: 77 };
    expect(await events.applyEvent({ origin: 'there', ts: confirmedAt, record: confirmed, resend: null })).toBe(true);
    expect(store.getStatus(sent.signature)).toEqual(confirmed);
    let a = store.getAccount(ACCOUNT)!;
    expect(a.points).toBe(1000);
    // Confirmed again, or an older state arriving late: the record and the points stay.
    expect(events.applyEvent({ origin: 'other', ts: confirmedAt, record: { ...confirmed, slot: 78 }, resend: null })).toBeNull();
    expect(events.applyEvent({ origin: 'there', ts: now, record: sent, resend })).toBeNull();
    expect(events.applyEvent({ origin: 'there', ts: now, record: { ...sent, expired: true }, resend: null })).toBeNull();
    expect(store.getStatus(sent.signature)).toEqual(confirmed);
    await new Promise((r) => setTimeout(r, 50));
    expect(store.getAccount(ACCOUNT)!.points).toBe(1000);

    // A confirmation whose acceptance never came: inserted, counted and credited at once; the
    // upgrade it causes is dated by the record's confirmedAt (the same on every node).
    const late: StatusRecord = { ...statusRecord({ accountId: ACCOUNT, submittedAt: now, tipLamports: 600_000n }), status: 'confirmed', confirmedAt: now + 900, latencyMs: 900, slot: 80 };
    expect(await events.applyEvent({ origin: 'there', ts: now + 900, record: late, resend: null })).toBe(true);
    await waitFor('the credit', () => (store.getAccount(ACCOUNT)!.points === 1600 ? true : undefined), 5_000);
    a = store.getAccount(ACCOUNT)!;
    expect({ plan: a.plan, planUpgradedAt: a.planUpgradedAt }).toEqual({ plan: 'growth', planUpgradedAt: now + 900 });
    expect(accounts.usage(ACCOUNT).total).toBe(usage0.total + 2);

    // An acceptance of an earlier day counts in the total, not in today's.
    const yesterday = statusRecord({ accountId: ACCOUNT, submittedAt: (utcDay(now) - 1) * 86_400_000 + 5 });
    const before = accounts.usage(ACCOUNT);
    await events.applyEvent({ origin: 'there', ts: yesterday.submittedAt, record: yesterday, resend: null });
    expect(accounts.usage(ACCOUNT)).toEqual({ total: before.total + 1, today: before.today });
    // Every write went to /v1/stream.
    expect(local.map((r) => r.signature)).toEqual([sent.signature, sent.signature, late.signature, yesterday.signature]);
  });
});

describe('accounts bucket', () => {
  let nats: NatsCluster;
  let admin: KvAdmin;
  let closeAdmin: () => Promise<void>;
  const tmp = tempDir();
  let store: Store;
  let link: Link;
  let mirror: AccountsMirror;

  beforeAll(async () => {
    nats = await startNatsCluster(1);
    ({ admin, close: closeAdmin } = await openKvAdmin({ servers: nats.urls, node: 'admin', replicas: 1 }));
    store = Store.open(tmp.dir);
    link = new Link({ servers: nats.urls, node: 'here', replicas: 1 }, { retentionMs: 86_400_000, log: quiet });
    mirror = new AccountsMirror(link, store, quiet);
    mirror.start();
    link.start();
  }, 30_000);

  afterAll(async () => {
    mirror?.close();
    await link?.close();
    await closeAdmin?.();
    await store?.close();
    await nats?.close();
    tmp.cleanup();
  });

  it('refuses bad input with a clear error and changes nothing', async () => {
    const c = await admin.createAccount('bot', 'starter');
    const refused = async (p: Promise<unknown>, message: RegExp) => {
      const e = await p.then(() => null, (e: unknown) => e);
      expect(e).toBeInstanceOf(LandfallError);
      expect((e as Error).message).toMatch(message);
    };
    await refused(admin.createAccount('x', 'diamond'), /unknown plan "diamond"/);
    await refused(admin.createAccount('', 'starter'), /account name/);
    await refused(admin.createKey(c.account_id, 'default'), /already has a key named "default"/);
    await refused(admin.createKey(c.account_id, 'bad/name'), /key name/);
    await refused(admin.createKey('acc_nope', 'k'), /no account acc_nope/);
    await refused(admin.createKey('acc.*>', 'k'), /no account/);
    await refused(admin.revokeKey(c.account_id, 'nope'), /no live key named "nope"/);
    await refused(admin.setPlan(c.account_id, 'diamond'), /unknown plan/);
    await refused(admin.setPlan('acc_nope', 'pro'), /no account acc_nope/);
    expect((await admin.listAccounts()).map((a) => a.id)).toEqual([c.account_id]);
    expect((await admin.listKeys(c.account_id)).map((k) => k.name)).toEqual(['default']);
    await admin.revokeKey(c.account_id, 'default');
    await refused(admin.revokeKey(c.account_id, 'default'), /no live key/);
  });

  it('mirrors the bucket, skipping an entry it cannot read', async () => {
    await link.accounts!.put('acc.acc_garbage', new TextEncoder().encode('{not json'));
    await link.accounts!.put('key.00', new TextEncoder().encode('{}'));
    const c = await admin.createAccount('mirrored', 'pro');
    await waitFor('the mirror', () => (store.getAccount(c.account_id)?.plan === 'pro' ? true : undefined), 10_000);
    expect(store.getAccount('acc_garbage')).toBeUndefined();
    const gen = store.keysGeneration();
    await admin.revokeKey(c.account_id, 'default');
    await waitFor('the revocation', () => (store.keysGeneration() > gen ? true : undefined), 10_000);
    expect(store.listKeys(c.account_id)[0]!.revokedAt).not.toBeNull();
  });
});

describe('publishing', () => {
  let nats: NatsCluster;
  const tmp = tempDir();
  let store: Store;
  let link: Link;
  let events: StatusEvents;
  const registry = new Registry();

  beforeAll(async () => {
    nats = await startNatsCluster(1);
    store = Store.open(tmp.dir);
    const accounts = new Accounts(store, { plans: DEFAULT_PLANS, lamportsPerPoint: 1000 });
    link = new Link({ servers: nats.urls, node: 'trickle', replicas: 1 }, { retentionMs: 86_400_000, log: quiet });
    events = new StatusEvents({ link, store, accounts, log: quiet, registry, publishLocal: () => {} });
    events.start();
    link.start();
    await waitFor('the link to be ready', () => (link.ready && link.up ? true : undefined), 20_000);
  }, 30_000);

  afterAll(async () => {
    await events?.close();
    await link?.close();
    await store?.close();
    await nats?.close();
    tmp.cleanup();
  });

  it('a steady trickle of events shares messages: they wait for company even while a publish is in flight', async () => {
    // One event about every millisecond: more arrive during each ack's round trip, and a publisher
    // that sent whatever arrived meanwhile made a message every round trip (78 for these 1,000 in
    // ~1.2 s on a quiet machine, where the bound below was 58; 23 with the linger).
    const N = 1000;
    const start = Date.now();
    for (let i = 0; i < N; i++) {
      events.accepted(statusRecord(), null);
      await new Promise((r) => setTimeout(r, 1));
    }
    await waitFor('every event acknowledged by JetStream', () => (events.published === N ? true : undefined), 20_000);
    const elapsed = Date.now() - start;
    const messages = (await registry.getSingleMetric('landfall_cluster_status_messages_total')!.get()).values[0]!.value;
    // A publishing round starts after a LINGER_MS wait for company (at most one per LINGER_MS of
    // the run, plus the first), or at once with a whole message's worth waiting (at most
    // N / MESSAGE_EVENTS such rounds); a round makes whole messages and at most one short one.
    const rounds = Math.ceil(elapsed / LINGER_MS) + 1 + Math.ceil(N / MESSAGE_EVENTS);
    expect(messages).toBeGreaterThan(1);
    expect(messages).toBeLessThanOrEqual(rounds + Math.ceil(N / MESSAGE_EVENTS));
  }, 40_000);
});

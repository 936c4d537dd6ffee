/**
 * Accounts, keys and plans across nodes (issue 13, part 2): the KV bucket `landfall-accounts`
 * is the source of truth; every node mirrors it into its local LMDB, which the hot path reads.
 *
 * Keys of the bucket (every token a valid KV/subject token):
 * - `acc.<id>`: the admin-managed account fields, {@link KvAccount} (points are NOT here: each
 *   node derives them from the confirmations it applies, see `status-events.ts`);
 * - `key.<sha256 hex>`: the `KeyRecord` of an API key, under its hash (never the key itself);
 *   a revocation is a put with `revokedAt` set;
 * - `kname.<id>.<hex of the key name>`: the hash of the account's key of that name, created with
 *   KV create (compare-and-set on "absent"), so a name is taken once per account.
 *
 * The mirror watches the whole bucket from the start (last values, then live) and writes each
 * entry with the store's sync methods: a revoked key bumps the key generation in the same LMDB
 * transaction, so every ingress thread's key cache drops it at its next request; a plan change
 * is read by the next request's account read. After a reconnect the watch is started again
 * (every apply is idempotent).
 */
import { randomBytes } from 'node:crypto';
import { Bucket, type KV, type KvEntry } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { checkKeyName, checkNewAccount } from '../accounts/accounts.js';
import { generateApiKey, hashApiKey } from '../accounts/api-keys.js';
import { assertPlanName, isPlanName, type PlanName } from '../accounts/plans.js';
import { LandfallError } from '../errors.js';
import { base58Encode } from '../native.js';
import type { NatsConfig } from '../config.js';
import type { KeyRecord, Store } from '../store/store.js';
import { openAccountsBucket, type Link, type LinkLog } from './link.js';
import { natsConnectOptions, natsErrorReason } from './nats-connect.js';

/** The value of `acc.<id>`. */
export interface KvAccount {
  id: string;
  name: string;
  plan: PlanName;
  memberSince: number;
  /** When `plan` was last set by an administrator (the mirrored plan_upgraded_at). */
  planSetAt: number;
}

/** How long the admin CLI waits for JetStream to answer. */
const ADMIN_READY_MS = 20_000;
const enc = (v: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(v));
const hexName = (name: string): string => Buffer.from(name, 'utf8').toString('hex');

function parseAccount(e: KvEntry): KvAccount | null {
  try {
    const a = e.json<KvAccount>();
    return typeof a.id === 'string' && typeof a.name === 'string' && isPlanName(a.plan) && Number.isFinite(a.memberSince) && Number.isFinite(a.planSetAt) ? a : null;
  } catch {
    return null;
  }
}

function parseKey(e: KvEntry): KeyRecord | null {
  try {
    const k = e.json<KeyRecord>();
    return typeof k.accountId === 'string' && typeof k.name === 'string' && Number.isFinite(k.createdAt) && (k.revokedAt === null || Number.isFinite(k.revokedAt)) ? k : null;
  } catch {
    return null;
  }
}

/** Mirrors the accounts bucket into the local store. */
export class AccountsMirror {
  private stopWatch: (() => void) | null = null;
  private syncedResolve!: () => void;
  /** Resolves once the bucket's values at the first watch are in the local store. */
  readonly synced = new Promise<void>((r) => (this.syncedResolve = r));
  /** Entries applied (for tests and /metrics). */
  applied = 0;

  constructor(
    private readonly link: Link,
    private readonly store: Store,
    private readonly log: LinkLog,
  ) {}

  start(): void {
    this.link.onReady(() => void this.watch());
    this.link.onChange((up) => {
      if (up && this.link.ready) void this.watch();
    });
  }

  close(): void {
    this.stopWatch?.();
    this.stopWatch = null;
  }

  private async watch(): Promise<void> {
    this.close();
    const kv = this.link.accounts!;
    try {
      const st = await kv.status();
      if (st.values === 0) this.syncedResolve();
      const iter = await kv.watch();
      this.stopWatch = () => iter.stop();
      for await (const e of iter) {
        this.apply(e);
        if (e.isUpdate || e.delta === 0) this.syncedResolve();
      }
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'cluster: accounts watch failed (restarted at the next reconnect)');
    }
  }

  /** Write one bucket entry into the local store (a bad entry is logged and skipped). */
  apply(e: KvEntry): void {
    if (e.operation !== 'PUT') return;
    try {
      if (e.key.startsWith('acc.')) {
        const a = parseAccount(e);
        if (!a) throw new Error('not an account');
        this.store.mirrorAccountSync({ id: a.id, name: a.name, plan: a.plan, memberSince: a.memberSince, planUpgradedAt: a.planSetAt }, e.revision);
      } else if (e.key.startsWith('key.')) {
        const k = parseKey(e);
        const hash = Buffer.from(e.key.slice(4), 'hex');
        if (!k || hash.length !== 32) throw new Error('not a key record');
        this.store.mirrorKeySync(hash, k);
      } else return;
      this.applied++;
    } catch (err) {
      this.log.warn({ key: e.key, err: (err as Error).message }, 'cluster: accounts entry not mirrored');
    }
  }
}

// ---- the admin CLI's KV mode (`landfall accounts|keys … --nats URL`) ----------------------

/** Administration on the bucket itself: what every node then mirrors. */
export class KvAdmin {
  constructor(
    private readonly kv: KV,
    private readonly now: () => number = Date.now,
  ) {}

  async createAccount(name: string, plan: string = 'starter', keyName = 'default'): Promise<{ account_id: string; api_key: string; key_name: string }> {
    checkNewAccount(name, plan, keyName);
    const id = 'acc_' + base58Encode(randomBytes(12));
    const t = this.now();
    await this.kv.create(`acc.${id}`, enc({ id, name, plan, memberSince: t, planSetAt: t } satisfies KvAccount));
    return this.createKey(id, keyName);
  }

  async createKey(accountId: string, name: string): Promise<{ account_id: string; api_key: string; key_name: string }> {
    await this.mustGet(accountId);
    checkKeyName(name);
    const apiKey = generateApiKey();
    const hex = hashApiKey(apiKey).toString('hex');
    try {
      await this.kv.create(`kname.${accountId}.${hexName(name)}`, enc(hex));
    } catch {
      throw new LandfallError('CONFIG_INVALID', `account ${accountId} already has a key named ${JSON.stringify(name)}`);
    }
    await this.kv.put(`key.${hex}`, enc({ accountId, name, createdAt: this.now(), revokedAt: null } satisfies KeyRecord));
    return { account_id: accountId, api_key: apiKey, key_name: name };
  }

  async revokeKey(accountId: string, name: string): Promise<void> {
    await this.mustGet(accountId);
    const ref = await this.kv.get(`kname.${accountId}.${hexName(name)}`);
    const e = ref?.operation === 'PUT' ? await this.kv.get(`key.${ref.json<string>()}`) : null;
    const k = e?.operation === 'PUT' ? parseKey(e) : null;
    if (!e || !k || k.revokedAt !== null) throw new LandfallError('CONFIG_INVALID', `account ${accountId} has no live key named ${JSON.stringify(name)}`);
    await this.kv.update(e.key, enc({ ...k, revokedAt: this.now() }), e.revision);
  }

  async setPlan(accountId: string, plan: string): Promise<KvAccount> {
    assertPlanName(plan);
    await this.mustGet(accountId);
    const e = await this.kv.get(`acc.${accountId}`);
    const a = e?.operation === 'PUT' ? parseAccount(e) : null;
    if (!e || !a) throw new LandfallError('CONFIG_INVALID', `no account ${accountId}`);
    const next: KvAccount = { ...a, plan, planSetAt: this.now() };
    // Compare-and-set on the revision read: two administrators never overwrite each other unseen.
    await this.kv.update(e.key, enc(next), e.revision);
    return next;
  }

  async listAccounts(): Promise<KvAccount[]> {
    const out: KvAccount[] = [];
    for await (const k of await this.kv.keys('acc.*')) {
      const e = await this.kv.get(k);
      const a = e?.operation === 'PUT' ? parseAccount(e) : null;
      if (a) out.push(a);
    }
    return out.sort((x, y) => x.memberSince - y.memberSince);
  }

  async listKeys(accountId: string): Promise<KeyRecord[]> {
    await this.mustGet(accountId);
    const out: KeyRecord[] = [];
    for await (const k of await this.kv.keys(`kname.${accountId}.*`)) {
      const ref = await this.kv.get(k);
      const e = ref?.operation === 'PUT' ? await this.kv.get(`key.${ref.json<string>()}`) : null;
      const rec = e?.operation === 'PUT' ? parseKey(e) : null;
      if (rec) out.push(rec);
    }
    return out;
  }

  /** The bucket's record of an account (a clear error if there is none). */
  account(accountId: string): Promise<KvAccount> {
    return this.mustGet(accountId);
  }

  private async mustGet(accountId: string): Promise<KvAccount> {
    if (!/^[A-Za-z0-9_]{1,64}$/.test(accountId)) throw new LandfallError('CONFIG_INVALID', `no account ${accountId}`);
    const e = await this.kv.get(`acc.${accountId}`);
    const a = e?.operation === 'PUT' ? parseAccount(e) : null;
    if (!a) throw new LandfallError('CONFIG_INVALID', `no account ${accountId}`);
    return a;
  }
}

/**
 * The admin CLI's connection: one attempt (a clear error within seconds if NATS is unreachable,
 * rather than waiting for ever as a node does), the bucket created if it is the first use.
 */
export async function openKvAdmin(nats: NatsConfig): Promise<{ admin: KvAdmin; close: () => Promise<void> }> {
  let nc: NatsConnection;
  try {
    nc = await connect({ ...natsConnectOptions(nats), name: 'landfall-admin', timeout: 5_000 });
  } catch (e) {
    throw new LandfallError('CONFIG_INVALID', `cannot connect to NATS at ${nats.servers.join(',')}: ${natsErrorReason(e, nats)}`);
  }
  // A cluster just started may still be electing its JetStream leader: try for a while.
  const deadline = Date.now() + ADMIN_READY_MS;
  for (;;) {
    try {
      const kv = await openAccountsBucket(nc, nats.replicas);
      // Read through the stream leader, not a direct get that any replica may answer: a replica
      // a few ms behind said "no account" for the account this CLI had just created (a CI run of
      // the replication test). Nodes never read the bucket this way: they watch it.
      if (kv instanceof Bucket) kv.direct = false;
      return { admin: new KvAdmin(kv), close: () => nc.close() };
    } catch (e) {
      if (Date.now() > deadline) {
        await nc.close();
        throw new LandfallError('CONFIG_INVALID', `NATS at ${nats.servers.join(',')} has no JetStream answering: ${natsErrorReason(e, nats)}`);
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

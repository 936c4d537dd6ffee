/**
 * `landfall accounts …` and `landfall keys …`: administration straight on the LMDB store.
 * Safe while the server runs (LMDB is multi-process); the server reads accounts and keys from
 * the store on every request, so changes take effect on the next request.
 *
 * With `--nats URLS` (or `LANDFALL_NATS`, or `nats` in the config file) the commands write to
 * the cluster's accounts bucket instead (`src/cluster/accounts-kv.ts`), which every node
 * mirrors into its own store within a second; no data directory is touched. Points and usage
 * are each node's (`/v1/account` on any node, or `accounts show` on a node's data directory).
 */
import { existsSync } from 'node:fs';
import { Accounts, isoNoZone, type CreatedAccount } from '../accounts/accounts.js';
import { loadConfig, type NatsConfig } from '../config.js';
import { NATS_CLI_OPTIONS, natsFlagsOf } from '../config-nats.js';
import { LandfallError } from '../errors.js';
import { Store } from '../store/store.js';
import { parseOptions } from './args.js';

type Out = (s: string) => void;

const ADMIN_OPTIONS = {
  data: { type: 'string' },
  config: { type: 'string' },
  json: { type: 'boolean' },
  name: { type: 'string' },
  plan: { type: 'string' },
  account: { type: 'string' },
  ...NATS_CLI_OPTIONS,
} as const;

interface AccountRow {
  account_id: string;
  name: string;
  plan: string;
  /** null: the cluster's bucket holds no points (each node derives them). */
  points: number | null;
  member_since: string;
}

type KeyRow = { name: string; created_at: string; revoked_at: string | null };

/** What the commands do, on a data directory or on the cluster's accounts bucket. */
interface AdminOps {
  createAccount(name: string, plan: string): Promise<CreatedAccount>;
  createKey(accountId: string, name: string): Promise<CreatedAccount>;
  revokeKey(accountId: string, name: string): Promise<void>;
  setPlan(accountId: string, plan: string): Promise<{ id: string; plan: string }>;
  list(): Promise<AccountRow[]>;
  show(accountId: string): Promise<object>;
  listKeys(accountId: string): Promise<KeyRow[]>;
  close(): Promise<void>;
}

/**
 * The store of an existing data directory. A path that does not exist is an error, never a new
 * empty store: a typo (`--data /typo`) would otherwise list "(no accounts)" or create an account
 * no service ever reads.
 */
function openExistingStore(dataDir: string): Store {
  if (!existsSync(dataDir)) {
    throw new LandfallError('CONFIG_INVALID', `data directory ${dataDir} does not exist: pass the --data of the service (\`landfall serve --data DIR\` creates it)`);
  }
  return Store.open(dataDir);
}

function storeOps(dataDir: string, config: ReturnType<typeof loadConfig>): AdminOps {
  const store = openExistingStore(dataDir);
  const a = new Accounts(store, { plans: config.plans, lamportsPerPoint: config.lamportsPerPoint });
  const run = <T>(fn: () => T) => new Promise<T>((resolve) => resolve(fn()));
  return {
    createAccount: (name, plan) => run(() => a.createAccount(name, plan as never)),
    createKey: (id, name) => run(() => a.createKey(id, name)),
    revokeKey: (id, name) => run(() => a.revokeKey(id, name)),
    setPlan: (id, plan) => run(() => a.setPlan(id, plan)),
    list: () => run(() => a.list().map((r) => ({ account_id: r.id, name: r.name, plan: r.plan, points: r.points, member_since: isoNoZone(r.memberSince) }))),
    show: (id) =>
      run(() => {
        const rec = a.get(id);
        if (!rec) throw new LandfallError('CONFIG_INVALID', `no account ${id}`);
        return { account_id: rec.id, name: rec.name, ...a.view(rec), keys: a.listKeys(id) };
      }),
    listKeys: (id) => run(() => a.listKeys(id)),
    close: () => store.close(),
  };
}

async function kvOps(nats: NatsConfig): Promise<AdminOps> {
  const { openKvAdmin } = await import('../cluster/accounts-kv.js');
  const { admin, close } = await openKvAdmin(nats);
  const keyRows = (keys: { name: string; createdAt: number; revokedAt: number | null }[]): KeyRow[] =>
    keys.map((k) => ({ name: k.name, created_at: isoNoZone(k.createdAt), revoked_at: k.revokedAt === null ? null : isoNoZone(k.revokedAt) }));
  return {
    createAccount: (name, plan) => admin.createAccount(name, plan),
    createKey: (id, name) => admin.createKey(id, name),
    revokeKey: (id, name) => admin.revokeKey(id, name),
    setPlan: (id, plan) => admin.setPlan(id, plan),
    list: async () => (await admin.listAccounts()).map((r) => ({ account_id: r.id, name: r.name, plan: r.plan, points: null, member_since: isoNoZone(r.memberSince) })),
    show: async (id) => {
      const a = await admin.account(id);
      return { account_id: a.id, name: a.name, plan: a.plan, plan_set_at: isoNoZone(a.planSetAt), member_since: isoNoZone(a.memberSince), keys: keyRows(await admin.listKeys(id)) };
    },
    listKeys: async (id) => keyRows(await admin.listKeys(id)),
    close,
  };
}

async function withOps(argv: string[], fn: (ops: AdminOps, v: ReturnType<typeof parse>) => Promise<number>): Promise<number> {
  const v = parse(argv);
  const config = loadConfig({ dataDir: v.values.data, config: v.values.config, ...natsFlagsOf(v.values) });
  const ops = config.nats !== null ? await kvOps(config.nats) : storeOps(config.dataDir, config);
  try {
    return await fn(ops, v);
  } finally {
    await ops.close();
  }
}

function parse(argv: string[]) {
  return parseOptions({ args: argv, options: ADMIN_OPTIONS, allowPositionals: true });
}

/**
 * A name as the terminal may show it: control characters (C0, DEL, C1 — escape sequences that
 * could move the cursor, rewrite earlier lines or retitle the window) and the backslash written
 * as `\xNN` / `\\`, so a list shows exactly what is stored and nothing acts on the terminal.
 */
export function printable(name: string): string {
  return name.replace(/[\\\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) =>
    c === '\\' ? '\\\\' : c.charCodeAt(0) <= 0xff ? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}` : `\\u${c.charCodeAt(0).toString(16)}`,
  );
}

function need(v: string | undefined, what: string): string {
  if (!v) throw new LandfallError('CONFIG_INVALID', `missing ${what}`);
  return v;
}

/** `landfall accounts <create|list|show|set-plan>` */
export function accountsCommand(argv: string[], out: Out): Promise<number> {
  const [sub, ...rest] = argv;
  return withOps(rest, async (ops, { values, positionals }) => {
    switch (sub) {
      case 'create': {
        const created = await ops.createAccount(need(values.name, '--name'), values.plan ?? 'starter');
        out(
          values.json
            ? JSON.stringify(created)
            : `account ${created.account_id} created\n` +
                `api key (${created.key_name}): ${created.api_key}\n` +
                `this key is shown only now: store it safely.`,
        );
        return 0;
      }
      case 'list': {
        const rows = await ops.list();
        const points = (p: number | null) => (p === null ? '' : `${String(p).padStart(12)} BP  `);
        out(values.json ? JSON.stringify(rows) : rows.map((r) => `${r.account_id}  ${r.plan.padEnd(7)}  ${points(r.points)}${printable(r.name)}`).join('\n') || '(no accounts)');
        return 0;
      }
      case 'show': {
        const s = await ops.show(need(positionals[0], 'account id'));
        out(JSON.stringify(s, null, values.json ? 0 : 2));
        return 0;
      }
      case 'set-plan': {
        const rec = await ops.setPlan(need(positionals[0], 'account id'), need(positionals[1] ?? values.plan, 'plan'));
        out(values.json ? JSON.stringify({ account_id: rec.id, plan: rec.plan }) : `account ${rec.id} is now on ${rec.plan}`);
        return 0;
      }
      default:
        throw new LandfallError('CONFIG_INVALID', `unknown subcommand 'accounts ${sub ?? ''}' (create, list, show, set-plan)`);
    }
  });
}

/** `landfall keys <create|revoke|list>` */
export function keysCommand(argv: string[], out: Out): Promise<number> {
  const [sub, ...rest] = argv;
  return withOps(rest, async (ops, { values }) => {
    const account = need(values.account, '--account');
    switch (sub) {
      case 'create': {
        const k = await ops.createKey(account, need(values.name, '--name'));
        out(values.json ? JSON.stringify(k) : `api key (${k.key_name}) for ${k.account_id}: ${k.api_key}\nthis key is shown only now: store it safely.`);
        return 0;
      }
      case 'revoke': {
        const name = need(values.name, '--name');
        await ops.revokeKey(account, name);
        out(values.json ? JSON.stringify({ account_id: account, key_name: name, revoked: true }) : `key ${name} of ${account} revoked`);
        return 0;
      }
      case 'list': {
        const keys = await ops.listKeys(account);
        out(values.json ? JSON.stringify(keys) : keys.map((k) => `${k.name.padEnd(20)} created ${k.created_at}${k.revoked_at ? `  revoked ${k.revoked_at}` : ''}`).join('\n'));
        return 0;
      }
      default:
        throw new LandfallError('CONFIG_INVALID', `unknown subcommand 'keys ${sub ?? ''}' (create, revoke, list)`);
    }
  });
}

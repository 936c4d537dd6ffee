/**
 * `landfall accounts …` and `landfall keys …`: administration straight on the LMDB store.
 * Safe while the server runs (LMDB is multi-process); the server reads accounts and keys from
 * the store on every request, so changes take effect on the next request.
 */
import { parseArgs } from 'node:util';
import { Accounts, isoNoZone } from '../accounts/accounts.js';
import { loadConfig } from '../config.js';
import { LandfallError } from '../errors.js';
import { Store } from '../store/store.js';

type Out = (s: string) => void;

const ADMIN_OPTIONS = {
  data: { type: 'string' },
  config: { type: 'string' },
  json: { type: 'boolean' },
  name: { type: 'string' },
  plan: { type: 'string' },
  account: { type: 'string' },
} as const;

function withAccounts<T>(argv: string[], fn: (a: Accounts, v: ReturnType<typeof parse>) => T): T {
  const v = parse(argv);
  const config = loadConfig({ dataDir: v.values.data, config: v.values.config });
  const store = Store.open(config.dataDir);
  try {
    return fn(new Accounts(store, { plans: config.plans, lamportsPerPoint: config.lamportsPerPoint }), v);
  } finally {
    void store.close();
  }
}

function parse(argv: string[]) {
  return parseArgs({ args: argv, options: ADMIN_OPTIONS, allowPositionals: true, strict: true });
}

function need(v: string | undefined, what: string): string {
  if (!v) throw new LandfallError('CONFIG_INVALID', `missing ${what}`);
  return v;
}

function accountSummary(a: Accounts, id: string) {
  const rec = a.get(id);
  if (!rec) throw new LandfallError('CONFIG_INVALID', `no account ${id}`);
  return { account_id: rec.id, name: rec.name, ...a.view(rec), keys: a.listKeys(id) };
}

/** `landfall accounts <create|list|show|set-plan>` */
export function accountsCommand(argv: string[], out: Out): number {
  const [sub, ...rest] = argv;
  return withAccounts(rest, (a, { values, positionals }) => {
    switch (sub) {
      case 'create': {
        const created = a.createAccount(need(values.name, '--name'), (values.plan ?? 'starter') as never);
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
        const rows = a.list().map((r) => ({ account_id: r.id, name: r.name, plan: r.plan, points: r.points, member_since: isoNoZone(r.memberSince) }));
        out(values.json ? JSON.stringify(rows) : rows.map((r) => `${r.account_id}  ${r.plan.padEnd(7)}  ${String(r.points).padStart(12)} BP  ${r.name}`).join('\n') || '(no accounts)');
        return 0;
      }
      case 'show': {
        const s = accountSummary(a, need(positionals[0], 'account id'));
        out(JSON.stringify(s, null, values.json ? 0 : 2));
        return 0;
      }
      case 'set-plan': {
        const rec = a.setPlan(need(positionals[0], 'account id'), need(positionals[1] ?? values.plan, 'plan'));
        out(values.json ? JSON.stringify({ account_id: rec.id, plan: rec.plan }) : `account ${rec.id} is now on ${rec.plan}`);
        return 0;
      }
      default:
        throw new LandfallError('CONFIG_INVALID', `unknown subcommand 'accounts ${sub ?? ''}' (create, list, show, set-plan)`);
    }
  });
}

/** `landfall keys <create|revoke|list>` */
export function keysCommand(argv: string[], out: Out): number {
  const [sub, ...rest] = argv;
  return withAccounts(rest, (a, { values }) => {
    const account = need(values.account, '--account');
    switch (sub) {
      case 'create': {
        const k = a.createKey(account, need(values.name, '--name'));
        out(values.json ? JSON.stringify(k) : `api key (${k.key_name}) for ${k.account_id}: ${k.api_key}\nthis key is shown only now: store it safely.`);
        return 0;
      }
      case 'revoke': {
        const name = need(values.name, '--name');
        a.revokeKey(account, name);
        out(values.json ? JSON.stringify({ account_id: account, key_name: name, revoked: true }) : `key ${name} of ${account} revoked`);
        return 0;
      }
      case 'list': {
        const keys = a.listKeys(account);
        out(values.json ? JSON.stringify(keys) : keys.map((k) => `${k.name.padEnd(20)} created ${k.created_at}${k.revoked_at ? `  revoked ${k.revoked_at}` : ''}`).join('\n'));
        return 0;
      }
      default:
        throw new LandfallError('CONFIG_INVALID', `unknown subcommand 'keys ${sub ?? ''}' (create, revoke, list)`);
    }
  });
}

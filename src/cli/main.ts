/**
 * `landfall` command line: `serve`, `accounts`, `keys`, `localnet`, `demo`, `cluster-demo`
 * (usage texts in `usage.ts`), and `--version`.
 */
import { readFileSync } from 'node:fs';
import { loadConfig } from '../config.js';
import { NATS_CLI_OPTIONS, natsFlagsOf } from '../config-nats.js';
import { LandfallError } from '../errors.js';
import type { Service } from '../service.js';
// Each command loads only what it uses (dynamic imports below): `landfall accounts create` used to
// load the whole service (uWS, NATS, web3.js, the local cluster) first, 2.0 s before its first
// line on the development machine, against 0.6 s for the admin module alone.
import type { ServiceOnChain } from './chain.js';
import { COMMAND_USAGE, isCommand, USAGE, wantsHelp } from './usage.js';
import { parseOptions } from './args.js';
import { redactUrlSecrets } from '../chain/redact-url.js';

async function serve(argv: string[]): Promise<void> {
  const { values } = parseOptions({
    args: argv,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      data: { type: 'string' },
      config: { type: 'string' },
      rpc: { type: 'string' },
      ws: { type: 'string' },
      'node-name': { type: 'string' },
      ...NATS_CLI_OPTIONS,
      'localnet-rpc-port': { type: 'string' },
    },
    strict: true,
  });
  const config = loadConfig({
    port: values.port,
    host: values.host,
    dataDir: values.data,
    config: values.config,
    rpcUrl: values.rpc,
    wsUrl: values.ws,
    nodeName: values['node-name'],
    ...natsFlagsOf(values),
    localnetRpcPort: values['localnet-rpc-port'],
  });
  const { startServiceOnChain } = await import('./chain.js');
  const running = await startServiceOnChain(config);
  process.stdout.write(banner(running));
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void running.close().finally(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  // logrotate's convention: after it renames the log file, SIGHUP makes every thread open it again
  // by its name (instead of writing on into the renamed one). Not a stop, as SIGHUP's default is.
  process.on('SIGHUP', () => running.service.reopenLog());
}

function banner({ service: s, localnet }: ServiceOnChain): string {
  const chain = localnet
    ? `EMBEDDED LOCAL TEST CLUSTER, NOT SOLANA\n` +
      `  !!! No setting names a chain (--rpc, rpcUrl, LANDFALL_RPC_URL), so this process runs a local test\n` +
      `  !!! cluster and every transaction goes there: nothing reaches mainnet, devnet or testnet.\n` +
      `  !!! Pass --rpc URL (or rpcUrl in the config file) to deliver to a real chain.\n` +
      `    RPC  ${s.rpcUrl}\n    WS   ${s.wsUrl}\n` +
      localnet.validators.map((v) => `    validator ${v.name}  ${v.identity}  tpuQuic ${v.tpuQuic}\n`).join('')
    : `chain node ${redactUrlSecrets(s.rpcUrl)} (ws ${redactUrlSecrets(s.wsUrl)})\n`;
  return (
    `landfall listening on ${s.url}\n` +
    `  chain: ${chain}` +
    `  QUIC identity: ${s.engine.identity}\n` +
    `  tip addresses (GET /v1/tip-addresses):\n${s.tipAddresses.map((t) => `    ${t}\n`).join('')}` +
    `  create an API key:  npx landfall accounts create --name my-bot ${adminTarget(s.config)}
` +
    `  then:               curl -s ${s.url}/v1/account?api-key=<key>
` +
    `  dashboard:          ${s.url}/  (operator view: ${s.adminUrl ?? s.url}/dashboard/#operator)
`
  );
}

/**
 * Where the admin CLI must write for this service to see it: a clustered node mirrors the
 * cluster's accounts bucket (a key written into its data directory would be overwritten), a
 * single node reads its data directory.
 */
function adminTarget(config: Service['config']): string {
  return config.nats !== null ? `--nats ${config.nats.servers.join(',')}` : `--data ${config.dataDir}`;
}

/** The version in package.json, read from the installed package (src/ and dist/ sit at the same depth). */
export function version(): string {
  return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  // Help is answered before any parsing: `--help` / `-h` after a command is its usage, exit 0,
  // whatever else the line holds (a newcomer adds it to a command that just failed).
  if (command !== undefined && isCommand(command) && wantsHelp(rest)) {
    process.stdout.write(COMMAND_USAGE[command]);
    return 0;
  }
  if (command === 'help' && rest[0] !== undefined) {
    if (!isCommand(rest[0])) {
      process.stderr.write(`landfall: unknown command '${rest[0]}'\n${USAGE}`);
      return 1;
    }
    process.stdout.write(COMMAND_USAGE[rest[0]]);
    return 0;
  }
  try {
    switch (command) {
      case 'serve':
        await serve(rest);
        return 0;
      case 'accounts':
        return await (await import('./admin.js')).accountsCommand(rest, (s) => process.stdout.write(s + '\n'));
      case 'keys':
        return await (await import('./admin.js')).keysCommand(rest, (s) => process.stdout.write(s + '\n'));
      case 'localnet':
        return await (await import('./localnet.js')).localnetCommand(rest, (s) => process.stdout.write(s));
      case 'localnet-link':
        return await (await import('./localnet.js')).localnetLinkCommand(rest, (s) => process.stdout.write(s));
      case 'cluster-demo': {
        // Loaded only for this command: a single node never imports anything of src/cluster.
        const { clusterDemoCommand } = await import('./cluster-demo.js');
        return await clusterDemoCommand(rest, (s) => process.stdout.write(s));
      }
      case 'demo':
        return await (await import('./demo.js')).demoCommand(rest, (s) => process.stdout.write(s), process.stdout.isTTY === true);
      case '--version':
      case '-v':
      case 'version':
        process.stdout.write(`landfall ${version()}\n`);
        return 0;
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        process.stdout.write(USAGE);
        return command === undefined ? 1 : 0;
      default:
        process.stderr.write(`landfall: unknown command '${command}'\n${USAGE}`);
        return 1;
    }
  } catch (e) {
    const msg = e instanceof LandfallError ? e.message : (e as Error).message;
    process.stderr.write(`landfall: ${msg}\n`);
    return 2;
  }
}

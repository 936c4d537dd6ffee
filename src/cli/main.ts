/**
 * `landfall` command line. At this stage: `landfall serve [--port N] [--host H] [--data DIR]
 * [--config FILE]`.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { LandfallError } from '../errors.js';
import { startServer } from '../http/server.js';
import { accountsCommand, keysCommand } from './admin.js';
import { localnetCommand } from './localnet.js';

const USAGE = `usage: landfall <command> [options]

commands:
  serve                           start the HTTP service [--port 8080] [--host 127.0.0.1] [--data ./data] [--config FILE]
  accounts create --name NAME     create an account and its first key [--plan starter] [--data DIR] [--json]
  accounts list | show ID | set-plan ID PLAN
  keys create --account ID --name NAME   add a key (shown once) [--json]
  keys revoke --account ID --name NAME
  keys list --account ID
  localnet                        run the local cluster [--validators 4] [--slot-ms 400] [--rpc-port 8899] [--faults FILE] [--seed S]
`;

async function serve(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      data: { type: 'string' },
      config: { type: 'string' },
    },
    strict: true,
  });
  const config = loadConfig({ port: values.port, host: values.host, dataDir: values.data, config: values.config });
  const server = await startServer(config);
  process.stdout.write(
    `landfall listening on http://${config.host}:${server.port}\n` +
      `  GET /health  liveness\n  GET /ping    keep-alive\n` +
      `  (send/status/account API: not yet built — see README "What works")\n`,
  );
  const stop = () => {
    server.close();
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'serve':
        await serve(rest);
        return 0;
      case 'accounts':
        return accountsCommand(rest, (s) => process.stdout.write(s + '\n'));
      case 'keys':
        return keysCommand(rest, (s) => process.stdout.write(s + '\n'));
      case 'localnet':
        return await localnetCommand(rest, (s) => process.stdout.write(s));
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

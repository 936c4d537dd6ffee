/**
 * Where the examples find Landfall, the chain and the API key: flags, else the environment,
 * else what `npm start` prints (the service on :8080, the embedded cluster's RPC on :8899).
 *
 *   --url URL   LANDFALL_URL      Landfall's HTTP address (default http://127.0.0.1:8080)
 *   --rpc URL   LANDFALL_RPC_URL  the chain's JSON-RPC, for the airdrop and the blockhash (default http://127.0.0.1:8899)
 *   --key KEY   LANDFALL_KEY      an API key (npx landfall accounts create --name my-bot)
 */
import { parseArgs } from 'node:util';

export interface Settings {
  url: string;
  rpcUrl: string;
  apiKey: string;
}

export function settings(argv: string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env): Settings {
  const { values } = parseArgs({ args: argv, options: { url: { type: 'string' }, rpc: { type: 'string' }, key: { type: 'string' } }, strict: true });
  const apiKey = values.key ?? env.LANDFALL_KEY;
  if (!apiKey) {
    throw new Error('no API key: pass --key KEY or set LANDFALL_KEY (create one with: npx landfall accounts create --name my-bot)');
  }
  return {
    url: values.url ?? env.LANDFALL_URL ?? 'http://127.0.0.1:8080',
    rpcUrl: values.rpc ?? env.LANDFALL_RPC_URL ?? 'http://127.0.0.1:8899',
    apiKey,
  };
}

/** One line per delivery attempt of a trace, as `landfall demo` prints them. */
export function traceLines(trace: Trace): string[] {
  return [
    `trace: ${trace.final_state} (${trace.cause})`,
    ...trace.attempts.map((a) => `  round ${a.round}  slot ${a.slot}  leader ${a.leader ?? '?'} ${a.tpu ?? ''}  ${a.outcome}${a.reason ? ` (${a.reason})` : ''}`),
  ];
}

/** The fields of `GET /v1/status/{signature}/trace` the examples print. */
export interface Trace {
  final_state: string;
  cause: string;
  attempts: { round: number; slot: number; leader: string | null; tpu: string | null; outcome: string; reason: string | null }[];
}

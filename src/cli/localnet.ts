/**
 * `landfall localnet [--validators 4] [--slot-ms 400] [--rpc-port 8899] [--faults FILE] [--seed S] [--sink]`:
 * run the embedded local cluster in the foreground until SIGINT/SIGTERM, printing where to reach
 * it (JSON-RPC, WebSocket, each validator's QUIC TPU). `--sink`: validators count what arrives
 * and execute nothing (JSON-RPC `getArrivalCounts` reads the counts).
 */
import { parseArgs } from 'node:util';
import { LandfallError } from '../errors.js';
import { readFaultsFile, startLocalnet, type Localnet } from '../localnet/index.js';

/** A whole-number flag, or a clear error naming it. */
function intFlag(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value)) throw new LandfallError('CONFIG_INVALID', `--${name} must be a whole number (got '${value}')`);
  return Number(value);
}

export function describe(net: Localnet): string {
  const lines = [
    `local cluster: ${net.validators.length} validators, ${net.slotMs} ms slots` +
      (net.sink ? ', sink (QUIC arrivals counted, nothing executed; JSON-RPC getArrivalCounts)' : ''),
    `  RPC        ${net.rpcUrl}`,
    `  WebSocket  ${net.wsUrl}`,
    `  faucet     ${net.faucet}  (requestAirdrop)`,
    `  validators (leaders in turn, 4 slots each):`,
    ...net.validators.map(
      (v) => `    ${v.name}  ${v.identity}  tpuQuic ${v.tpuQuic}${v.down ? '  [down]' : ''}${v.sandwicher ? '  [sandwicher]' : ''}`,
    ),
  ];
  return lines.join('\n') + '\n';
}

/** Resolves with the exit code once the cluster was stopped by a signal. */
export async function localnetCommand(argv: string[], out: (s: string) => void): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      validators: { type: 'string' },
      'slot-ms': { type: 'string' },
      'rpc-port': { type: 'string' },
      faults: { type: 'string' },
      seed: { type: 'string' },
      sink: { type: 'boolean' },
    },
    strict: true,
  });
  const faults = values.faults === undefined ? undefined : readFaultsFile(values.faults);
  const net = await startLocalnet({
    validators: intFlag('validators', values.validators, 4),
    slotMs: intFlag('slot-ms', values['slot-ms'], 400),
    rpcPort: intFlag('rpc-port', values['rpc-port'], 8899),
    ...(faults !== undefined && { faults }),
    ...(values.seed !== undefined && { seed: values.seed }),
    ...(values.sink === true && { sink: true }),
  });
  out(describe(net) + 'Ctrl-C to stop.\n');
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  const arrived = net.arrivals();
  await net.close();
  out(`local cluster stopped${net.sink ? ` (sink: ${arrived.received} transactions received, ${arrived.atLeader} at the leader)` : ''}\n`);
  return 0;
}

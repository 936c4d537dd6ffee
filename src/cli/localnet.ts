/**
 * `landfall localnet [--validators 4] [--slot-ms 400] [--rpc-port 8899] [--faults FILE] [--link SPEC] [--seed S] [--sink]
 * [--max-streams-per-100ms N] [--max-connections-per-peer N] [--max-connections-per-ip-per-minute N]`:
 * run the embedded local cluster in the foreground until SIGINT/SIGTERM, printing where to reach
 * it (JSON-RPC, WebSocket, each validator's QUIC TPU) and the QUIC limits its validators enforce.
 * `--sink`: validators count what arrives and execute nothing (JSON-RPC `getArrivalCounts` reads
 * the counts). The QUIC limits default to Agave's for an unstaked peer, per client IP: a load
 * test whose every connection comes from one address raises them (usage in `usage.ts`).
 */
import { LandfallError } from '../errors.js';
import { parseDuration, parseLink, readFaultsFile, startLocalnet, type Localnet } from '../localnet/index.js';
import { QUIC_DEFAULTS } from './usage.js';
import { parseOptions } from './args.js';

/** The QUIC limits a run was started with (a flag's value, or Agave's default the server applies). */
export interface QuicLimits {
  maxStreamsPer100ms: number;
  maxConnectionsPerPeer: number;
  maxConnectionsPerIpPerMinute: number;
}

/** A whole-number flag, or a clear error naming it. */
function intFlag(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value)) throw new LandfallError('CONFIG_INVALID', `--${name} must be a whole number (got '${value}')`);
  return Number(value);
}

/** `--load-fees 0,1000,100000`: the competing load's compute-unit prices (default 1000). */
function feesFlag(value: string | undefined): number[] {
  if (value === undefined) return [1000];
  const prices = value.split(',').map((p) => p.trim());
  if (prices.some((p) => !/^\d+$/.test(p))) throw new LandfallError('CONFIG_INVALID', `--load-fees must be whole micro-lamport prices separated by commas (got '${value}')`);
  return prices.map(Number);
}

/** 0 means no limit for the two rate limits; the connection cap has no such value. */
const limit = (n: number, unit: string) => (n === 0 ? `no limit on ${unit}` : `${n} ${unit}`);

export function describe(net: Localnet, limits?: QuicLimits): string {
  const lines = [
    `local cluster: ${net.validators.length} validators, ${net.slotMs} ms slots` +
      (net.sink ? ', sink (QUIC arrivals counted, nothing executed; JSON-RPC getArrivalCounts)' : ''),
    `  RPC        ${net.rpcUrl}`,
    `  WebSocket  ${net.wsUrl}`,
    `  faucet     ${net.faucet}  (requestAirdrop)`,
    `  validators (leaders in turn, 4 slots each):`,
    ...net.validators.map(
      (v) =>
        `    ${v.name}  ${v.identity}  tpuQuic ${v.tpuQuic}${v.down ? '  [down]' : ''}${v.sandwicher ? '  [sandwicher]' : ''}` +
        `${v.link !== 'clean' && v.link !== 'direct' ? `  [link ${v.link}]` : ''}${v.skipSlots ? '  [skips its slots]' : ''}` +
        `${v.lateStartMs > 0 ? `  [starts its blocks ${v.lateStartMs} ms late]` : ''}`,
    ),
    ...(limits === undefined
      ? []
      : [
          `  QUIC limits per client IP: ${limit(limits.maxStreamsPer100ms, 'streams per 100 ms')}, ` +
            `${limits.maxConnectionsPerPeer} connections, ${limit(limits.maxConnectionsPerIpPerMinute, 'new connections per minute')}`,
        ]),
  ];
  return lines.join('\n') + '\n';
}

/** Resolves at the first SIGINT (Ctrl-C) or SIGTERM. */
export function untilStopped(): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

/** Resolves with the exit code once the cluster was stopped by a signal. */
export async function localnetCommand(argv: string[], out: (s: string) => void): Promise<number> {
  const { values } = parseOptions({
    args: argv,
    options: {
      validators: { type: 'string' },
      'slot-ms': { type: 'string' },
      'rpc-port': { type: 'string' },
      faults: { type: 'string' },
      link: { type: 'string' },
      'block-cu': { type: 'string' },
      load: { type: 'string' },
      'load-fees': { type: 'string' },
      seed: { type: 'string' },
      sink: { type: 'boolean' },
      'max-streams-per-100ms': { type: 'string' },
      'max-connections-per-peer': { type: 'string' },
      'max-connections-per-ip-per-minute': { type: 'string' },
    },
    strict: true,
  });
  const limits: QuicLimits = {
    maxStreamsPer100ms: intFlag('max-streams-per-100ms', values['max-streams-per-100ms'], QUIC_DEFAULTS.streamsPer100ms),
    maxConnectionsPerPeer: intFlag('max-connections-per-peer', values['max-connections-per-peer'], QUIC_DEFAULTS.connectionsPerPeer),
    maxConnectionsPerIpPerMinute: intFlag('max-connections-per-ip-per-minute', values['max-connections-per-ip-per-minute'], QUIC_DEFAULTS.connectionsPerIpPerMinute),
  };
  const faults = values.faults === undefined ? undefined : readFaultsFile(values.faults);
  const net = await startLocalnet({
    validators: intFlag('validators', values.validators, 4),
    slotMs: intFlag('slot-ms', values['slot-ms'], 400),
    rpcPort: intFlag('rpc-port', values['rpc-port'], 8899),
    ...(faults !== undefined && { faults }),
    ...(values.link !== undefined && { link: parseLink(values.link, '--link') }),
    ...(values['block-cu'] !== undefined && { blockComputeUnits: intFlag('block-cu', values['block-cu'], 0) }),
    ...(values.load !== undefined && { load: { tps: intFlag('load', values.load, 0), prices: feesFlag(values['load-fees']) } }),
    ...(values.seed !== undefined && { seed: values.seed }),
    ...(values.sink === true && { sink: true }),
    ...limits,
  });
  const load = values.load === undefined ? '' : `  competing load: ${values.load} transactions/s at ${feesFlag(values['load-fees']).join(', ')} micro-lamports per CU\n`;
  out(describe(net, limits) + load + 'Ctrl-C to stop.\n');
  await untilStopped();
  const arrived = net.arrivals();
  await net.close();
  out(`local cluster stopped${net.sink ? ` (sink: ${arrived.received} transactions received, ${arrived.atLeader} at the leader)` : ''}\n`);
  return 0;
}

/**
 * `landfall localnet-link [--rpc URL] [--validator NAME] [--for DURATION] SPEC`: change the link of
 * a running cluster (its JSON-RPC `setLink`), e.g. a 5-second loss burst from a shell.
 */
export async function localnetLinkCommand(argv: string[], out: (s: string) => void): Promise<number> {
  const { values, positionals } = parseOptions({
    args: argv,
    options: { rpc: { type: 'string' }, validator: { type: 'string' }, for: { type: 'string' } },
    strict: true,
    allowPositionals: true,
  });
  if (positionals.length !== 1) throw new LandfallError('CONFIG_INVALID', "localnet-link takes one SPEC, e.g. 'rtt=150ms,loss=10%' ('' for a clean link)");
  const spec = positionals[0]!;
  parseLink(spec, 'SPEC'); // a clear error here rather than the cluster's
  const forMs = values.for === undefined ? undefined : parseDuration(values.for, '--for');
  const url = values.rpc ?? 'http://127.0.0.1:8899';
  let reply: { result?: { validators: { name: string; link: string }[] }; error?: { message: string } };
  try {
    const r = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'setLink', params: [values.validator ?? null, spec, ...(forMs === undefined ? [] : [{ forMs }])] }),
    });
    reply = (await r.json()) as typeof reply;
  } catch (e) {
    throw new LandfallError('CONFIG_INVALID', `cannot reach the local cluster at ${url}: ${(e as Error).message}`);
  }
  if (reply.error) throw new LandfallError('CONFIG_INVALID', `setLink refused: ${reply.error.message}`);
  for (const v of reply.result!.validators) out(`${v.name}  ${v.link}\n`);
  if (forMs !== undefined) out(`(for ${forMs} ms, then back to the previous setting)\n`);
  return 0;
}

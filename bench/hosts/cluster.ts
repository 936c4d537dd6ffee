/**
 * Child process: the local cluster the benchmarked service delivers to. It runs apart from the
 * server so LiteSVM executing the landed transactions never runs on the server's event loop.
 * Started with `sink: true`, its validators only count what arrives (`arrivals` in `stats`).
 */
import { startLocalnet, type Localnet, type LocalnetOptions } from '../../src/localnet/index.js';
import { serveChild } from '../lib/child.js';
import { cpuMs, memory } from '../lib/process-stats.js';

let net: Localnet | null = null;

function running(): Localnet {
  if (!net) throw new Error('cluster not started');
  return net;
}

serveChild({
  async start(opts: LocalnetOptions) {
    net = await startLocalnet(opts);
    return { rpcUrl: net.rpcUrl, wsUrl: net.wsUrl, slotMs: net.slotMs, sink: net.sink, validators: net.validators.map((v) => v.name) };
  },
  /** Fund each address (in turn: every airdrop is a transaction from the one faucet). */
  async airdrop({ addresses, lamports }: { addresses: string[]; lamports: bigint }) {
    for (const a of addresses) await running().airdrop(a, lamports);
  },
  stats() {
    const n = running();
    return {
      slot: n.slot(),
      counters: n.counters(),
      arrivals: n.arrivals(),
      servers: Object.fromEntries(n.validators.map((v) => [v.name, n.serverStats(v.name)])),
      memory: memory(),
      cpuMs: cpuMs(),
    };
  },
  /** What each validator received of these transactions, and what became of it (the receive log; kept `historySlots`). */
  receipts(signatures: string[]) {
    const n = running();
    return signatures.map((s) => n.receivedBy(s));
  },
  /** The leader of each slot asked (validator name). */
  leaders(slots: number[]) {
    const n = running();
    return slots.map((s) => n.leaderAt(s).name);
  },
  async close() {
    await net?.close();
    net = null;
  },
});

/**
 * What the first send costs the thread that takes the request, two trees side by side in one
 * process: each tree's own `FirstSender` and `ChainViewReplica` (`<dir>/src/…`) over its own
 * addon (`<dir>/native/index.js`), writing to real QUIC servers on loopback (no stream limit) in
 * a child process, so the servers' CPU is not this process's. Written for issue 35's row 11
 * (both rounds in one native call, `sendFirstRoute`, against a `sendFirst` per round and the
 * JavaScript that turned each result into trace attempts), but it measures whatever `send` is.
 *
 *   node --import tsx bench/first-send-ab.ts <dirA> <dirB> [blocks]
 *
 * A block is N = 2,000 first sends of fresh signatures, 16 in flight at once (as many requests
 * as an ingress thread has waiting under load), in one of two cases:
 * - `round 1`: the route of a healthy slot — the current and next leader (two servers), both
 *   connected; round 1 writes, one target usually still pending;
 * - `round 2`: the current leader unreachable (in back-off after its first failure: a refusal at
 *   once, as a dead leader is between retries), the next one live: round 2 writes every time.
 * Measured per block: the main thread's CPU (`/proc/self/task/<pid>/schedstat`, ns) and the whole
 * process's (`process.cpuUsage`: the QUIC runtime's threads too), per send. Blocks alternate A, B,
 * B, A…; medians, and the median of each pair's ratio B/A (a pair runs back to back, so the
 * machine's load drifts less within it). The load average is printed at the start and the end.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { treeCommon, treeImport, type TreeBase } from './lib/ab-trees.js';
import { processCpuUs, threadCpuNs } from './lib/proc-cpu.js';
import { median } from './lib/suite.js';

interface Tree extends TreeBase {
  sender: import('../src/delivery/first-send.js').FirstSender;
  view: import('../src/delivery/chain-view.js').ChainViewReplica;
}

async function load(dir: string, name: string): Promise<Tree> {
  const from = treeImport(dir);
  const { FirstSender } = await from<typeof import('../src/delivery/first-send.js')>('src/delivery/first-send.ts');
  const { ChainViewReplica } = await from<typeof import('../src/delivery/chain-view.js')>('src/delivery/chain-view.ts');
  const { statusRecord, DEFAULT_SEND_OPTIONS, QuicClient } = await treeCommon(dir);
  const client = new QuicClient({ identity: randomBytes(32), backoffBaseMs: 60_000, backoffMaxMs: 60_000 });
  const view = new ChainViewReplica();
  return { name, sender: new FirstSender(client, view), view, statusRecord, DEFAULT_SEND_OPTIONS, client };
}

type Route = import('../src/delivery/chain-view.js').Route;

/** Point `tree`'s view at `route` (one snapshot; a new slot each time, so `sentIn` starts empty). */
function routeTo(tree: Tree, route: Route, slot: number): void {
  tree.view.apply({ slot, seenAtMs: Date.now(), blockHeight: 100, leader: 'Leader1111111111111111111111111111111111111', plain: route, antiMev: route, blockhashes: [], staleMs: 600_000, epoch: null });
}

const IN_FLIGHT = 16;

/** `n` first sends, `IN_FLIGHT` at once: main thread and process CPU µs per send. */
async function block(tree: Tree, n: number): Promise<{ mainUs: number; processUs: number }> {
  const sigs = Array.from({ length: n }, () => tree.statusRecord().signature);
  const wire = randomBytes(200);
  let next = 0;
  let written = 0;
  const main0 = threadCpuNs();
  const proc0 = processCpuUs();
  const worker = async (): Promise<void> => {
    while (next < n) {
      const sig = sigs[next++]!;
      const r = await tree.sender.send(sig, wire, tree.DEFAULT_SEND_OPTIONS, process.hrtime.bigint());
      written += r.reached;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const mainUs = (threadCpuNs() - main0) / 1000 / n;
  const procUs = (processCpuUs() - proc0) / n;
  if (written !== n) throw new Error(`${tree.name}: ${written} of ${n} written`);
  return { mainUs, processUs: procUs };
}

async function main(a: string, b: string, blocks: number): Promise<void> {
  const child: ChildProcess = fork(new URL(import.meta.url).pathname, ['--server', a], { execArgv: ['--import', 'tsx'] });
  const addrs = await new Promise<string[]>((res) => child.once('message', (m: { addrs: string[] }) => res(m.addrs)));
  const trees = [await load(a, 'A'), await load(b, 'B')];
  const leader = (tpuQuic: string) => ({ slot: 0, identity: `L${tpuQuic}`, tpuQuic });
  const cases: Array<[string, Route]> = [
    ['round 1', { first: [leader(addrs[0]!), leader(addrs[1]!)], next: [leader(addrs[2]!)], hold: false }],
    ['round 2', { first: [leader('127.0.0.1:0')], next: [leader(addrs[2]!)], hold: false }],
  ];
  console.log(`A = ${a}\nB = ${b}\nload average at start: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  const N = Number(process.env.BENCH_FIRST_N ?? 2000);
  let slot = 1000;
  for (const [label, route] of cases) {
    // Warm-up: a block each (JIT, connections, the dead leader's back-off).
    for (const t of trees) {
      routeTo(t, route, ++slot);
      await block(t, 500);
    }
    const res = new Map<string, { main: number[]; proc: number[] }>(trees.map((t) => [t.name, { main: [], proc: [] }]));
    for (let i = 0; i < blocks; i++) {
      for (const t of i % 2 === 0 ? trees : [...trees].reverse()) {
        routeTo(t, route, ++slot);
        const r = await block(t, N);
        res.get(t.name)!.main.push(r.mainUs);
        res.get(t.name)!.proc.push(r.processUs);
      }
    }
    for (const t of trees) {
      const { main, proc } = res.get(t.name)!;
      console.log(
        `${label} ${t.name}: main thread ${median(main).toFixed(2)} µs/send (${main.map((x) => x.toFixed(1)).join(', ')}), process ${median(proc).toFixed(1)} µs/send (${proc.map((x) => x.toFixed(1)).join(', ')})`,
      );
    }
    const [ma, mb] = trees.map((t) => median(res.get(t.name)!.main));
    // Each block of B against A's of the same pair (run back to back): the machine's load drifts
    // less within a pair than across the run.
    const pairs = res.get('B')!.main.map((b, i) => b / res.get('A')!.main[i]!);
    console.log(
      `${label}: main thread B/A ${(mb! / ma!).toFixed(3)} (medians), ${median(pairs).toFixed(3)} (median of the ${pairs.length} pairs' ratios); load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`,
    );
  }
  console.log(`load average at end: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  for (const t of trees) t.client.close();
  child.disconnect();
}

const [dirA, dirB, blocksArg] = process.argv.slice(2);
if (process.argv[2] === '--server') {
  // The child: three QUIC servers (the addon of the tree given), their addresses to the parent.
  const { QuicServer } = await treeImport(resolve(process.argv[3]!))<typeof import('../native/index.js')>('native/index.js');
  const servers = [0, 1, 2].map(() => new QuicServer({ bind: '127.0.0.1:0', identity: randomBytes(32), maxStreamsPer100ms: 0 }, () => {}));
  process.send!({ addrs: servers.map((s) => s.localAddr) });
  process.on('disconnect', () => {
    for (const s of servers) s.close();
    process.exit(0);
  });
} else {
  if (!dirA || !dirB) throw new Error('usage: first-send-ab.ts <dirA> <dirB> [blocks]');
  await main(resolve(dirA), resolve(dirB), Number(blocksArg ?? 7));
}

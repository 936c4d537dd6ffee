/**
 * What the rebroadcast rounds cost the main thread, two trees side by side in one process: each
 * tree's own `Rebroadcaster`, `TraceBook` and addon (`<dir>/src/…`, `<dir>/native/index.js`),
 * writing to one real QUIC server on loopback (no stream limit) in a child process, so the
 * server's CPU is not this process's.
 *
 *   node --import tsx bench/rebroadcast-round.ts <dirA> <dirB> [blocks]
 *
 * A block is one flight lifetime for N transactions (N = 100, then 1,000): all added in slot 10
 * (as accepted, first send written, a trace each, `max_retries` 3, 150 blocks of blockhash
 * left), then `onSlot` for slots 11–160 (rounds due in 11, 22 and spread over 111–158), a 2 ms
 * pause after each slot for the writes' outcomes, until every flight has ended and its trace is
 * finished. Measured per block: the main thread's CPU (`/proc/self/task/<pid>/schedstat`, ns)
 * and the whole process's (`process.cpuUsage`: the QUIC runtime's threads too), less the same
 * 160 slots with no flight (their timers and pauses), per transaction. Blocks alternate A, B,
 * B, A…; medians. `BENCH_CPU_PROF`-style profiling: run it under `node --cpu-prof`.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { treeCommon, treeImport, type TreeBase } from './lib/ab-trees.js';
import { processCpuUs, threadCpuNs } from './lib/proc-cpu.js';
import { median } from './lib/suite.js';

interface Tree extends TreeBase {
  Rebroadcaster: typeof import('../src/delivery/rebroadcast.js').Rebroadcaster;
  TraceBook: typeof import('../src/delivery/trace-book.js').TraceBook;
}

async function load(dir: string, name: string): Promise<Tree> {
  const from = treeImport(dir);
  const { Rebroadcaster } = await from<typeof import('../src/delivery/rebroadcast.js')>('src/delivery/rebroadcast.ts');
  const { TraceBook } = await from<typeof import('../src/delivery/trace-book.js')>('src/delivery/trace-book.ts');
  const { statusRecord, DEFAULT_SEND_OPTIONS, QuicClient } = await treeCommon(dir);
  return { name, Rebroadcaster, TraceBook, statusRecord, DEFAULT_SEND_OPTIONS, client: new QuicClient({ identity: randomBytes(32) }) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * One flight lifetime of `n` transactions: main thread and process CPU µs per transaction, less
 * the same slots with no flight (`idle`: the timers and the pauses, the same for both trees).
 */
async function block(tree: Tree, tpu: string, identity: string, n: number, idle = { main: 0, proc: 0 }): Promise<{ mainUs: number; processUs: number }> {
  const book = new tree.TraceBook(() => identity);
  const r = new tree.Rebroadcaster(tree.client, book);
  const txs = Array.from({ length: n }, () => {
    const record = tree.statusRecord({ submittedAt: Date.now(), submitSlot: 10, lastValidBlockHeight: 250 });
    const firstAttempts = [tpu, 0, -1, 150, ''];
    return { record, wire: randomBytes(200), options: { ...tree.DEFAULT_SEND_OPTIONS, maxRetries: 3, antiMev: false }, receivedAt: process.hrtime.bigint(), sentSlot: 10, held: false, firstAttempts };
  });
  const main0 = threadCpuNs();
  const proc0 = processCpuUs();
  if (idle.main >= 0) for (const a of txs) r.add(a, book.open(a, null), tpu);
  for (let slot = 11; slot <= 170; slot++) {
    const route = { first: [{ slot, identity, tpuQuic: tpu }], next: [], hold: false };
    r.onSlot(slot, 100 + slot - 10, { plain: route, antiMev: route });
    await sleep(2);
  }
  const mainUs = ((threadCpuNs() - main0) / 1000 - Math.max(0, idle.main)) / n;
  const processUsPer = (processCpuUs() - proc0 - Math.max(0, idle.proc)) / n;
  if (r.size > 0 || book.size > 0) throw new Error(`${tree.name}: ${r.size} flights, ${book.size} traces left`);
  return { mainUs, processUs: processUsPer };
}

async function main(a: string, b: string, blocks: number): Promise<void> {
  const child: ChildProcess = fork(new URL(import.meta.url).pathname, ['--server', a], { execArgv: ['--import', 'tsx'] });
  const tpu = await new Promise<string>((res) => child.once('message', (m: { addr: string }) => res(m.addr)));
  const trees = [await load(a, 'A'), await load(b, 'B')];
  const identity = 'Leader1111111111111111111111111111111111111';
  // Warm-up: a block each (JIT, connections).
  for (const t of trees) await block(t, tpu, identity, 100);
  // The slots alone (no flight added): subtracted from every block.
  const idleMain: number[] = [];
  const idleProc: number[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await block(trees[0]!, tpu, identity, 1, { main: -1, proc: -1 });
    idleMain.push(r.mainUs);
    idleProc.push(r.processUs);
  }
  const idle = { main: median(idleMain), proc: median(idleProc) };
  console.log(`the slots alone: main thread ${idle.main.toFixed(0)} µs, process ${idle.proc.toFixed(0)} µs a block`);
  console.log(`A = ${a}\nB = ${b}\nload average at start: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  for (const n of [100, 1000]) {
    const res = new Map<string, { main: number[]; proc: number[] }>(trees.map((t) => [t.name, { main: [], proc: [] }]));
    for (let i = 0; i < blocks; i++) {
      for (const t of i % 2 === 0 ? trees : [...trees].reverse()) {
        const r = await block(t, tpu, identity, n, idle);
        res.get(t.name)!.main.push(r.mainUs);
        res.get(t.name)!.proc.push(r.processUs);
      }
    }
    for (const t of trees) {
      const { main, proc } = res.get(t.name)!;
      console.log(
        `N=${n} ${t.name}: main thread ${median(main).toFixed(1)} µs/tx (${main.map((x) => x.toFixed(1)).join(', ')}), process ${median(proc).toFixed(1)} µs/tx (${proc.map((x) => x.toFixed(1)).join(', ')})`,
      );
    }
  }
  console.log(`load average at end: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  for (const t of trees) t.client.close();
  child.disconnect();
}

const [dirA, dirB, blocksArg] = process.argv.slice(2);
if (process.argv[2] === '--server') {
  // The child: one QUIC server (the addon of the tree given), its address to the parent.
  const { QuicServer } = await treeImport(resolve(process.argv[3]!))<typeof import('../native/index.js')>('native/index.js');
  let received = 0;
  const s = new QuicServer({ bind: '127.0.0.1:0', identity: randomBytes(32), maxStreamsPer100ms: 0 }, () => received++);
  process.send!({ addr: s.localAddr });
  process.on('message', () => process.send!({ received }));
  process.on('disconnect', () => {
    s.close();
    process.exit(0);
  });
} else {
  if (!dirA || !dirB) throw new Error('usage: rebroadcast-round.ts <dirA> <dirB> [blocks]');
  await main(resolve(dirA), resolve(dirB), Number(blocksArg ?? 7));
}

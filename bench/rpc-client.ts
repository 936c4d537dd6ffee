/**
 * What one JSON-RPC call of the tracker's poll costs the calling thread: `getSignatureStatuses`
 * of 256 signatures (the poll's batch), answered with 256 nulls (a node where nothing lands, as
 * the sink cluster of the send benchmarks), over `fetch` (how `src/chain/rpc.ts` called until
 * 2026-11-29) and over the `Rpc` class (`node:http` with its keep-alive agent), in one process:
 *
 *   node --import tsx bench/rpc-client.ts [calls per block] [blocks]
 *
 * The node is a `node:http` server in a child process, so its work is not counted. CPU µs per
 * call of this process (`process.cpuUsage`: the calls are made one after another, so the
 * process's other threads are idle), blocks alternated between the two clients after a warm-up
 * block of each, medians.
 */
import { fork } from 'node:child_process';
import { loadavg } from 'node:os';
import { Rpc } from '../src/chain/rpc.js';

const perBlock = Number(process.argv[2] ?? 1000);
const blocks = Number(process.argv[3] ?? 7);

if (process.argv[2] === 'serve') {
  const { createServer } = await import('node:http');
  const answer = (id: unknown) => JSON.stringify({ jsonrpc: '2.0', id, result: { context: { slot: 1, apiVersion: '2.0.0' }, value: Array(256).fill(null) } });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const { id } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: unknown };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(answer(id));
    });
  });
  server.listen(0, '127.0.0.1', () => process.send!((server.address() as { port: number }).port));
  process.on('disconnect', () => process.exit(0));
} else {
  const child = fork(new URL(import.meta.url).pathname, ['serve'], { execArgv: process.execArgv });
  const port = await new Promise<number>((resolve) => child.once('message', (m) => resolve(m as number)));
  const url = `http://127.0.0.1:${port}/`;
  const signatures = Array.from({ length: 256 }, (_, i) => `${'5'.repeat(80)}${String(i).padStart(8, '0')}`);
  let id = 0;
  // The call as rpc.ts made it over fetch.
  const viaFetch = async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'getSignatureStatuses', params: [signatures, { searchTransactionHistory: false }] }),
      signal: AbortSignal.timeout(5_000),
    });
    const body = (await res.json()) as { result?: { value: unknown[] } };
    if (body.result?.value.length !== 256) throw new Error('bad answer');
  };
  const rpc = new Rpc(url);
  const viaRpc = async () => {
    const r = await rpc.getSignatureStatuses(signatures);
    if (r.value.length !== 256) throw new Error('bad answer');
  };
  const clients = { fetch: viaFetch, 'Rpc (node:http)': viaRpc };
  const samples = new Map<string, number[]>(Object.keys(clients).map((k) => [k, []]));
  const load0 = loadavg()[0]!;
  for (let b = -1; b < blocks; b++) {
    const order = Object.entries(clients);
    if (b % 2 === 1) order.reverse();
    for (const [name, call] of order) {
      const c0 = process.cpuUsage();
      for (let i = 0; i < perBlock; i++) await call();
      const c = process.cpuUsage(c0);
      if (b >= 0) samples.get(name)!.push((c.user + c.system) / perBlock);
    }
  }
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  console.log(`getSignatureStatuses of 256 signatures, ${perBlock} calls a block, ${blocks} blocks alternated (1-minute load ${load0.toFixed(2)} → ${loadavg()[0]!.toFixed(2)}):`);
  for (const [name, xs] of samples) console.log(`  ${name.padEnd(16)} ${median(xs).toFixed(0).padStart(5)} µs of CPU a call (blocks ${xs.map((x) => x.toFixed(0)).join(', ')})`);
  child.disconnect();
}

/**
 * One account's WebSocket flood, in a process of its own (so its CPU is not the prober's):
 * `node --import tsx bench/lib/ws-flood-agent.ts <ws url> <key> <method> <ms> <sockets>`.
 * Each socket writes the method's message as fast as the kernel takes it (up to 1 MiB queued in
 * the client), and is reopened when the server closes it, until `ms` passed; then it prints one
 * JSON line of what happened and exits.
 */
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { base58Encode } from '../../src/native.js';

const [url, key, method, msText, socketsText] = process.argv.slice(2) as [string, string, string, string, string];
const until = Date.now() + Number(msText);
const stats = { sent: 0, received: 0, opened: 0, closes: {} as Record<string, number> };

const big = 'x'.repeat(15 * 1024);
function message(id: number): string {
  switch (method) {
    case 'slotSubscribe':
      return `{"jsonrpc":"2.0","id":${id},"method":"slotSubscribe"}`;
    case 'signatureSubscribe':
      return JSON.stringify({ jsonrpc: '2.0', id, method: 'signatureSubscribe', params: [base58Encode(randomBytes(64))] });
    case 'signatureSubscribe-15KiB':
      return JSON.stringify({ jsonrpc: '2.0', id, method: 'signatureSubscribe', params: [big] });
    case 'unknown-method':
      return `{"jsonrpc":"2.0","id":${id},"method":"getAccountInfo","params":[]}`;
    default:
      return 'not json {';
  }
}

function socket(): Promise<void> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${url}/?api-key=${key}`);
    let id = 0;
    ws.on('error', () => {});
    ws.on('message', () => void stats.received++);
    ws.on('open', () => {
      stats.opened++;
      const pump = () => {
        if (ws.readyState !== WebSocket.OPEN) return;
        if (Date.now() >= until) return void ws.close();
        while (ws.bufferedAmount < 1 << 20) {
          ws.send(message(++id));
          stats.sent++;
          if (id % 200 === 0) break;
        }
        setImmediate(pump);
      };
      pump();
    });
    ws.on('close', (code) => {
      stats.closes[code] = (stats.closes[code] ?? 0) + 1;
      resolve();
    });
  });
}

await Promise.all(
  Array.from({ length: Number(socketsText) }, async () => {
    while (Date.now() < until) {
      await socket();
      // A refused upgrade (the account's 10 streams still counted as open) closes at once: not a busy loop.
      if (Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    }
  }),
);
console.log(JSON.stringify(stats));
process.exit(0);

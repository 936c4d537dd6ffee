/**
 * Two numbers behind the HTTP layer's edges (docs/failure-behaviour.md). Run:
 * `node --import tsx bench/http-edges.ts [requests]`.
 *
 * 1. What the framing check (`framingError` in `src/http/request.ts`: one `req.forEach` over the
 *    header lines, run for requests that declare a body) costs per request, inside a real uWS
 *    handler: one keep-alive connection sends `requests` POSTs carrying the 10 header lines a
 *    fetch() POST carries, and the handler times the check (and, for scale, two `getHeader`
 *    calls) with `process.hrtime.bigint()`; the first 2 000 are warm-up.
 * 2. When uWS closes an idle keep-alive connection: 16 connections, opened 300 ms apart, each
 *    sends one request and then stays idle; the time from its response to the server's close.
 *    This is what the `Keep-Alive: timeout=N` hint must stay below.
 */
import { connect } from 'node:net';
import * as uWS from 'uWebSockets.js';
import { framingError } from '../src/http/request.js';

const requests = Number(process.argv[2] ?? 22_000);
const WARMUP = 2_000;

async function framingCost(): Promise<{ checkNs: number; getHeadersNs: number; n: number }> {
  const app = uWS.App();
  let check = 0n;
  let getHeaders = 0n;
  let seen = 0;
  let sink = 0;
  app.post('/*', (res, req) => {
    const a = process.hrtime.bigint();
    const bad = framingError(req, '');
    const b = process.hrtime.bigint();
    sink += req.getHeader('content-length').length + req.getHeader('transfer-encoding').length;
    const c = process.hrtime.bigint();
    if (seen++ >= WARMUP) {
      check += b - a;
      getHeaders += c - b;
    }
    if (bad !== null) sink++;
    res.onAborted(() => {});
    res.onData((_, last) => {
      if (last) res.cork(() => res.end('ok'));
    });
  });
  const listen = await new Promise<uWS.us_listen_socket>((resolve) => app.listen('127.0.0.1', 0, (s) => resolve(s as uWS.us_listen_socket)));
  const port = uWS.us_socket_local_port(listen as unknown as uWS.us_socket);
  const request =
    'POST /v1/send HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: keep-alive\r\ncontent-type: application/json\r\n' +
    'authorization: Bearer lf_3yZe7d9Hq1k2m3n4p5q6r7s8t9u1v2w3x4y5z6A7B8C\r\naccept: */*\r\naccept-language: *\r\n' +
    'sec-fetch-mode: cors\r\nuser-agent: node\r\naccept-encoding: gzip, deflate\r\ncontent-length: 2\r\n\r\n{}';
  await new Promise<void>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let answered = 0;
    let text = '';
    socket.on('data', (d) => {
      text += d;
      let i: number;
      while ((i = text.indexOf('ok')) !== -1) {
        text = text.slice(i + 2);
        if (++answered === requests) {
          socket.destroy();
          return resolve();
        }
        socket.write(request);
      }
    });
    socket.write(request);
  });
  uWS.us_listen_socket_close(listen);
  app.close();
  const n = requests - WARMUP;
  if (sink < 0) console.log(sink); // keep the reads
  return { checkNs: Number(check) / n, getHeadersNs: Number(getHeaders) / n, n };
}

async function idleClose(): Promise<number[]> {
  const app = uWS.App();
  app.get('/*', (res) => void res.end('ok'));
  const listen = await new Promise<uWS.us_listen_socket>((resolve) => app.listen('127.0.0.1', 0, (s) => resolve(s as uWS.us_listen_socket)));
  const port = uWS.us_socket_local_port(listen as unknown as uWS.us_socket);
  const one = (delay: number) =>
    new Promise<number>((resolve) =>
      setTimeout(() => {
        const socket = connect(port, '127.0.0.1');
        let answeredAt = 0;
        socket.on('data', () => (answeredAt ||= Date.now()));
        socket.on('close', () => resolve(Date.now() - answeredAt));
        socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
      }, delay),
    );
  const closes = await Promise.all(Array.from({ length: 16 }, (_, i) => one(i * 300)));
  uWS.us_listen_socket_close(listen);
  app.close();
  return closes.sort((a, b) => a - b);
}

const cost = await framingCost();
console.log(`framing check (forEach over 10 header lines): ${(cost.checkNs / 1000).toFixed(2)} µs per request; two getHeader calls: ${(cost.getHeadersNs / 1000).toFixed(2)} µs (n = ${cost.n})`);
const closes = await idleClose();
console.log(`idle keep-alive close after the last response: ${(closes[0]! / 1000).toFixed(1)}–${(closes.at(-1)! / 1000).toFixed(1)} s (16 connections): ${closes.join(' ')} ms`);

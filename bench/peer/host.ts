/** Child process: the peer server (`app.ts`), driven by the send suite like the Landfall host. */
import { serveChild } from '../lib/child.js';
import { cpuMs, LoopDelayMonitor, memory } from '../lib/process-stats.js';
import { startPeer, type Peer, type PeerOptions } from './app.js';

let peer: Peer | null = null;
const loop = new LoopDelayMonitor();

serveChild({
  async start(opts: PeerOptions) {
    peer = await startPeer(opts);
    return { url: peer.url };
  },
  reset() {
    loop.reset();
  },
  snapshot() {
    return { memory: memory(), cpuMs: cpuMs(), loopDelay: loop.read() };
  },
  async close() {
    await peer?.close();
    peer = null;
  },
});

/** Child process: the floor (`app.ts`), driven by the targets suite like the Landfall and peer hosts. */
import { randomBytes } from 'node:crypto';
import { serveChild } from '../lib/child.js';
import { cpuMs, LoopDelayMonitor, memory } from '../lib/process-stats.js';
import { startFloor, type Floor, type FloorOptions } from './app.js';

let floor: Floor | null = null;
const loop = new LoopDelayMonitor();

serveChild({
  async start(opts: Omit<FloorOptions, 'identity'>) {
    floor = await startFloor({ ...opts, identity: randomBytes(32) });
    return { url: floor.url };
  },
  reset() {
    loop.reset();
  },
  snapshot() {
    return { memory: memory(), cpuMs: cpuMs(), loopDelay: loop.read() };
  },
  inFlight() {
    return floor?.inFlight() ?? 0;
  },
  async close() {
    await floor?.close();
    floor = null;
  },
});

/**
 * The links' worker thread: every validator's relay (`link-relay.ts`) of a cluster runs here,
 * on an event loop of its own, so the path a datagram takes never waits for the cluster's
 * thread. The cluster's thread drives it with messages (`link.ts`, `Links`); counters come back
 * through shared memory.
 */
import { parentPort } from 'node:worker_threads';
import { Relay } from './link-relay.js';
import type { LinkCommand, LinkReply } from './link.js';

const relays = new Map<number, Relay>();
const port = parentPort!;

function reply(r: LinkReply): void {
  port.postMessage(r);
}

port.on('message', (m: LinkCommand) => {
  void (async () => {
    try {
      switch (m.op) {
        case 'open': {
          const relay = new Relay(m.target, m.link, new Float64Array(m.counters));
          const address = await relay.open(m.host, m.port);
          relays.set(m.id, relay);
          reply({ seq: m.seq, ok: true, address });
          return;
        }
        case 'set':
          relays.get(m.id)?.setLink(m.link);
          reply({ seq: m.seq, ok: true });
          return;
        case 'retarget':
          relays.get(m.id)?.retarget(m.target);
          reply({ seq: m.seq, ok: true });
          return;
        case 'close': {
          const relay = relays.get(m.id);
          relays.delete(m.id);
          if (relay) {
            await relay.drained();
            await relay.close();
          }
          reply({ seq: m.seq, ok: true });
          return;
        }
      }
    } catch (e) {
      reply({ seq: m.seq, ok: false, error: (e as Error).message });
    }
  })();
});

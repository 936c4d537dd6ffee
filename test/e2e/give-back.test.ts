/**
 * Memory given back after a load (`src/memory/give-back.ts`), inside the real service on the
 * local cluster, with an ingress thread serving HTTP: never while transactions are in flight,
 * once when the service has gone quiet after them, not again while it stays quiet, and again
 * after a load of nothing but status reads (counted on the ingress thread, read on the main
 * one). The quiet is shortened to 1 s (the default is 5 s); the test waits for the give-back's
 * own count and checks, never for time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../harness/localnet.js';
import { account, payer, send, startStack, tipped, type Stack } from '../../harness/stack.js';

const GIVE_BACK = { quietMs: 1_000, checkMs: 100, quietRequestsPerSec: 20, quietWatched: 0 };
/** Quiet periods' worth of checks: enough to see a second give-back if the rule allowed one. */
const THREE_QUIETS = (3 * GIVE_BACK.quietMs) / GIVE_BACK.checkMs;

describe('memory given back once the service is quiet after a load', () => {
  let stack: Stack;
  let key: string;

  beforeAll(async () => {
    stack = await startStack({ config: { ingressThreads: 1 }, service: { giveBack: GIVE_BACK } });
    key = account(stack).key;
  });
  afterAll(async () => {
    await stack?.close();
  });

  const checksPass = async (n: number): Promise<void> => {
    const from = stack.svc.giveBack.checks;
    await waitFor(`${n} more give-back checks`, () => (stack.svc.giveBack.checks >= from + n ? true : undefined));
  };
  const inFlight = (): number => stack.svc.tracker.size + stack.svc.engine.inFlight;

  it('never while sends are in flight; once after they settle; not again while quiet', async () => {
    const g = stack.svc.giveBack;
    // Started and idle: nothing to give back, however many checks pass.
    await checksPass(THREE_QUIETS);
    expect(g.count).toBe(0);
    expect(g.pending).toBe(false);

    const from = await payer(stack);
    const txs = await Promise.all(Array.from({ length: 20 }, () => tipped(stack, from, 1_000_000)));
    for (const tx of txs) expect((await send(stack, key, tx.base64)).status).toBe(200);
    // While any is still watched or has rounds left, no give-back (read on the service's own
    // thread, between two of its checks).
    await waitFor(
      'every transaction settled',
      () => {
        if (inFlight() === 0) return true;
        expect(g.count).toBe(0);
        return undefined;
      },
      30_000,
    );
    await waitFor('the give-back after the load', () => (g.count > 0 ? true : undefined));
    expect(g.count).toBe(1);
    expect(g.last!.anonBeforeBytes).toBeGreaterThan(0);
    expect(g.last!.anonAfterBytes).toBeGreaterThan(0);
    // Quiet goes on: once per quiet period.
    await checksPass(THREE_QUIETS);
    expect(g.count).toBe(1);
    expect(g.pending).toBe(false);
  });

  it('a load of status reads on the ingress thread arms it too: given back once more after it', async () => {
    const g = stack.svc.giveBack;
    const before = g.count;
    expect(inFlight()).toBe(0);
    const from = await payer(stack);
    const sig = (await tipped(stack, from, 1_000_000)).signature; // never sent: a 404 is a request too
    for (let i = 0; i < 30; i++) {
      const rs = await Promise.all(Array.from({ length: 10 }, () => fetch(`${stack.svc.url}/v1/status/${sig}`, { headers: { authorization: `Bearer ${key}` } })));
      for (const r of rs) await r.arrayBuffer();
    }
    await waitFor('the give-back after the reads', () => (g.count > before ? true : undefined));
    expect(g.count).toBe(before + 1);
    await checksPass(THREE_QUIETS);
    expect(g.count).toBe(before + 1);
  });
});

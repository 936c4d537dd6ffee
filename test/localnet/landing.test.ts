/**
 * Landing where it is hard, small and bounded (the full comparison is `npm run bench -- landing`):
 * the whole service on the local cluster, every validator 80 ms away with 3 % loss each way, a
 * leader skipping its slots, and a congested cluster where the price decides. Each transaction
 * lands, and Landfall's record says the slot the chain says (getSignatureStatuses).
 */
import type { Keypair } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, payer, send, settled, startStack, tipped, type Stack } from '../../harness/stack.js';
import { computeBudget } from '../../harness/transactions.js';
import { waitFor } from '../../harness/localnet.js';

let s: Stack;
let bot: { key: string };
let from: Keypair;

beforeAll(async () => {
  s = await startStack({
    localnet: { slotMs: 200, seed: 'landing-test', link: 'rtt=80ms,loss=3%', maxConnectionsPerIpPerMinute: 0, maxConnectionsPerPeer: 64 },
  });
  bot = account(s);
  from = await payer(s);
});

afterAll(async () => {
  await s?.close();
});

/** Send `count` tipped transactions through Landfall; each must land where the chain says it did. */
async function landAll(count: number, extra: ReturnType<typeof computeBudget> = []): Promise<void> {
  const sigs: string[] = [];
  for (let i = 0; i < count; i++) {
    const tx = await tipped(s, from, 300_000, { extra });
    const r = await send(s, bot.key, tx.base64);
    expect(r.status).toBe(200);
    sigs.push(tx.signature);
  }
  for (const sig of sigs) {
    const rec = await settled(s, bot.key, sig, (r) => r.status !== 'sent', 30_000);
    expect(rec.status).toBe('confirmed');
    const { value } = await s.connection.getSignatureStatuses([sig], { searchTransactionHistory: true });
    expect(rec.slot).toBe(value[0]!.slot);
    expect(s.net.receivedBy(sig).find((x) => x.outcome === 'included')!.landedSlot).toBe(rec.slot);
  }
}

describe('landing through Landfall where it is hard', () => {
  it('80 ms away with 3 % loss each way: every transaction lands, its record at the chain\'s slot', () => landAll(6));

  it('one leader in four skipping its slots as well', async () => {
    await s.net.setFault('v2', { skipSlots: true });
    try {
      await landAll(6);
    } finally {
      await s.net.setFault('v2', {});
    }
  });

  it('blocks full of a competing load: priced above it, transactions still land', async () => {
    s.net.setLoad({ tps: 400, prices: [0, 1_000] });
    try {
      await waitFor('a full block', () => {
        const space = s.net.blockSpace(s.net.slot() - 1);
        return space && space.used > space.limit * 0.9 ? true : undefined;
      });
      await landAll(4, computeBudget(5_000, 50_000n));
    } finally {
      s.net.setLoad(null);
    }
  });
});

/**
 * Rounds and the landing, end to end: the full service on the local cluster (400 ms slots, as on
 * mainnet), real web3.js transactions sent with `max_retries: 10` or `rebroadcast_until_expiry`
 * (rounds due in each of the next three slots). Each confirmed record's slot is the chain's own for the transaction, and once the
 * service knows a transaction landed no round goes out for it: the trace holds no rebroadcast
 * after the landing slot. Each transaction is sent early in a slot, so that it lands (and the
 * push says so) well before the next slot's round is due: the rule is about what the service
 * knew, and a transaction landing in the last milliseconds of a slot can be known only after
 * that slot's successor has begun.
 */
import type { Keypair } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account, nextSlot, payer, send, settled, startStack, tipped, type Stack } from '../../harness/stack.js';

async function finishedTrace(s: Stack, key: string, signature: string): Promise<any> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const r = await fetch(`${s.svc.url}/v1/status/${signature}/trace`, { headers: { authorization: `Bearer ${key}` } });
    const body = (await r.json()) as any;
    if (r.status === 200 && body.final_state === 'landed') return body;
    if (Date.now() > deadline) throw new Error(`trace of ${signature} never finished: ${JSON.stringify(body)}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

describe('rebroadcast rounds and the landing on the local cluster', () => {
  let s: Stack;
  let bot: { id: string; key: string };
  let from: Keypair;

  beforeAll(async () => {
    s = await startStack({ localnet: { slotMs: 400, seed: 'landing-rounds' } });
    bot = account(s);
    from = await payer(s);
  });
  afterAll(async () => {
    await s?.close();
  });

  it('no round after the landing slot, and every confirmed record carries the chain\'s slot', async () => {
    const sent: string[] = [];
    for (let i = 0; i < 8; i++) {
      const tx = await tipped(s, from, 300_000);
      await nextSlot(s);
      // Half with rebroadcast_until_expiry (a round every slot for the first leader window).
      const r = await send(s, bot.key, tx.base64, i % 2 === 0 ? { max_retries: 10 } : { rebroadcast_until_expiry: true });
      expect(r.status).toBe(200);
      sent.push(tx.signature);
    }
    const records = [];
    for (const sig of sent) records.push(await settled(s, bot.key, sig));
    const chain = (await s.connection.getSignatureStatuses(sent, { searchTransactionHistory: true })).value;
    for (const [i, rec] of records.entries()) {
      expect(rec.status).toBe('confirmed');
      expect(rec.slot).toBe(chain[i]!.slot);
      const t = await finishedTrace(s, bot.key, rec.signature);
      const late = t.attempts.filter((a: any) => a.round > 0 && a.slot > rec.slot);
      expect(late, `landed in ${rec.slot}: ${JSON.stringify(t.attempts)}`).toEqual([]);
    }
  });
});

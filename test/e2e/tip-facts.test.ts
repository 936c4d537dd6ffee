/**
 * The tip facts a bot needs, on a service whose operator chose a conversion other than the
 * default (2 500 lamports per point instead of 1 000), so nothing here can pass by assuming the
 * default: `/v1/account` reports `lamports_per_point`, and the typed client's `addTip` tips the
 * plan minimum in lamports computed from it; the transaction is accepted (not 402) and lands.
 */
import { SystemInstruction, SystemProgram, Transaction, type Keypair } from '@solana/web3.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLANS } from '../../src/accounts/plans.js';
import { addTip, LandfallClient } from '../../src/client/index.js';
import { account, accountView, blockhash, payer, startStack, type Stack } from '../helpers/stack.js';

const LAMPORTS_PER_POINT = 2_500;

let s: Stack;
let from: Keypair;
const clients: LandfallClient[] = [];
const client = (key: string) => {
  const c = new LandfallClient({ url: s.svc.url, apiKey: key });
  clients.push(c);
  return c;
};
let unique = 0;
/** An unsigned legacy transaction with one self-transfer that makes its signature unique. */
const legacy = async () =>
  new Transaction({ feePayer: from.publicKey, recentBlockhash: await blockhash(s) }).add(
    SystemProgram.transfer({ fromPubkey: from.publicKey, toPubkey: from.publicKey, lamports: ++unique }),
  );

beforeAll(async () => {
  s = await startStack({ localnet: { slotMs: 100, seed: 'tip-facts' }, config: { lamportsPerPoint: LAMPORTS_PER_POINT } });
  from = await payer(s);
});
afterAll(async () => {
  for (const c of clients) c.close();
  await s?.close();
});

describe('lamports_per_point', () => {
  it('/v1/account reports the configured conversion', async () => {
    const bot = account(s, 'starter');
    const view = await accountView(s, bot.key);
    expect(view.lamports_per_point).toBe(LAMPORTS_PER_POINT);
    expect(view.limits.min_tip_bp).toBe(DEFAULT_PLANS.starter.minTipBp);
  });

  it('the typed client tips min_tip_bp × lamports_per_point, and the transaction is accepted and lands', async () => {
    const bot = account(s, 'starter');
    const c = client(bot.key);
    const info = await c.tipInfo();
    expect(info.lamportsPerPoint).toBe(LAMPORTS_PER_POINT);
    const expected = BigInt(DEFAULT_PLANS.starter.minTipBp * LAMPORTS_PER_POINT);
    expect(info.minTipLamports).toBe(expected);
    const tx = await addTip(await legacy(), { client: c });
    expect(SystemInstruction.decodeTransfer(tx.instructions.at(-1)!).lamports).toBe(expected);
    tx.sign(from);
    const { signature } = await c.send(tx);
    expect((await c.waitForConfirmation(signature, { timeoutMs: 20_000 })).status).toBe('confirmed');
    // One lamport less than the minimum at this conversion: refused before signing, as the
    // service would refuse it (402), where the old assumption of 1000 would have let it through.
    await expect(addTip(await legacy(), { client: c, lamports: expected - 1n })).rejects.toThrow(RangeError);
  });
});

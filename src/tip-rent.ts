/**
 * Tip addresses must be rent-exempt before the first tip: a System transfer into an empty
 * account must leave it with at least the rent-exempt minimum of a zero-byte account (890,880
 * lamports), or the whole transaction fails with `InsufficientFundsForRent` — and the lowest plan
 * minimum (whale, 250 BP = 250,000 lamports by default) is below that. So at start the service
 * reads its tip addresses' balances: on the embedded cluster it funds any that is short; against
 * any other chain it warns, naming them, or refuses to start (`tipRentCheck: "refuse"`).
 */
import { MAX_MULTIPLE_ACCOUNTS, type Rpc } from './chain/rpc.js';
import { LandfallError } from './errors.js';

/** What to do at start about a tip address that is not rent-exempt on a chain the service does not own. */
export type TipRentCheck = 'warn' | 'refuse' | 'off';
export const TIP_RENT_CHECKS: readonly TipRentCheck[] = ['warn', 'refuse', 'off'];

/** A tip address below the rent-exempt minimum, and its balance. */
export interface ShortTipAddress {
  address: string;
  lamports: number;
}

/** The tip addresses holding less than the rent-exempt minimum of a zero-byte account, and that minimum. */
export async function tipAddressesShortOfRent(rpc: Rpc, addresses: readonly string[]): Promise<{ short: ShortTipAddress[]; rentExempt: number }> {
  const rentExempt = await rpc.getMinimumBalanceForRentExemption(0);
  const short: ShortTipAddress[] = [];
  for (let i = 0; i < addresses.length; i += MAX_MULTIPLE_ACCOUNTS) {
    const batch = addresses.slice(i, i + MAX_MULTIPLE_ACCOUNTS);
    const { value } = await rpc.getMultipleAccounts(batch, 'confirmed');
    batch.forEach((address, j) => {
      const lamports = value[j]?.lamports ?? 0;
      if (lamports < rentExempt) short.push({ address, lamports });
    });
  }
  return { short, rentExempt };
}

/** Why a short tip address matters, for the warning and the refusal. */
export function tipRentMessage(short: readonly ShortTipAddress[], rentExempt: number): string {
  const list = short.map((s) => `${s.address} (${s.lamports} lamports)`).join(', ');
  return (
    `${short.length} tip address${short.length === 1 ? ' is' : 'es are'} below the rent-exempt minimum of ${rentExempt} lamports: ${list}. ` +
    `A tip smaller than that into an empty tip address fails on chain (InsufficientFundsForRent), the whole transaction with it: ` +
    `send each at least ${rentExempt} lamports once`
  );
}

/**
 * The start-up check against a chain the service does not own: a warning through `warn`, or,
 * with `refuse`, a `CONFIG_INVALID` error that stops the start. Returns the short addresses.
 */
export async function checkTipRent(rpc: Rpc, addresses: readonly string[], mode: TipRentCheck, warn: (message: string, short: ShortTipAddress[]) => void): Promise<ShortTipAddress[]> {
  if (mode === 'off') return [];
  const { short, rentExempt } = await tipAddressesShortOfRent(rpc, addresses);
  if (short.length === 0) return short;
  const message = tipRentMessage(short, rentExempt);
  if (mode === 'refuse') throw new LandfallError('CONFIG_INVALID', `${message} (tipRentCheck is "refuse"; "warn" starts anyway)`);
  warn(message, short);
  return short;
}

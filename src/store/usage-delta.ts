import type { Database } from 'lmdb';
import { utcDay } from '../native.js';
import type { UsageRecord } from './records.js';

/**
 * New records per account and UTC day, added to the usage table inside a write transaction: a
 * record counts in its account's usage when it first reaches LMDB (a status window, the replay of
 * an acknowledgement log), never twice.
 */
export class UsageDelta {
  private readonly counts = new Map<string, Map<number, number>>();

  add(accountId: string, submittedAt: number): void {
    let days = this.counts.get(accountId);
    if (!days) this.counts.set(accountId, (days = new Map()));
    const day = utcDay(submittedAt);
    days.set(day, (days.get(day) ?? 0) + 1);
  }

  /** Must run inside a write transaction. A record of a later day starts that day's count. */
  apply(table: Database<UsageRecord, string>): void {
    for (const [accountId, days] of this.counts) {
      const u: UsageRecord = { ...(table.get(accountId) ?? { total: 0, day: 0, today: 0 }) };
      for (const [day, n] of [...days].sort((a, b) => a[0] - b[0])) {
        u.total += n;
        if (day > u.day) {
          u.day = day;
          u.today = n;
        } else if (day === u.day) u.today += n;
      }
      table.putSync(accountId, u);
    }
  }
}

/**
 * The acknowledgement log (`src/store/ack-log.ts`) and its replay (`Store.recoverAcknowledged`):
 * what a dead process logged and LMDB lacks is written once, with its usage; a live process's log
 * is never touched; a torn or damaged tail ends the replay of its segment, nothing else.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AckLog, parseSegment, readDeadLogs } from '../../src/store/ack-log.js';
import { encodeStatus, statusKey } from '../../src/store/status-codec.js';
import { Store, type StatusRecord } from '../../src/store/store.js';
import { statusRecord } from '../../harness/records.js';
import { tempDir } from '../../harness/tmp.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

/** A pid and start time of a process that has exited (its pid may be reused: the start time tells). */
function deadWriter(): string {
  const r = spawnSync('sh', ['-c', 'echo $$; cut -d" " -f22 /proc/$$/stat'], { encoding: 'utf8' });
  const [pid, start] = r.stdout.trim().split('\n');
  return `${pid}-${start}`;
}

/** Log `records` as this process would, then hand the segments to a dead writer (as after a kill -9). */
function logAsDead(dir: string, records: StatusRecord[]): string[] {
  const log = new AckLog(dir, { syncMs: 0 });
  for (const r of records) log.append(statusKey(r.signature)!, encodeStatus(r));
  const writer = deadWriter();
  const names = readdirSync(dir).filter((f) => f.startsWith(`${process.pid}-`));
  return names.map((name) => {
    const dead = join(dir, name.replace(/^\d+-\d+/, writer));
    renameSync(join(dir, name), dead);
    return dead;
  });
}

describe('acknowledgement log', () => {
  it('writes whole frames to a 0600 file in a 0700 folder, and deletes a segment once all of it committed', () => {
    const dir = join(tmp.dir, 'acks');
    const log = new AckLog(dir);
    const recs = [statusRecord(), statusRecord()];
    const segs = recs.map((r) => log.append(statusKey(r.signature)!, encodeStatus(r, { wire: Buffer.alloc(200, 7), antiMev: false, maxRetries: 2 })));
    const [file] = readdirSync(dir);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, file!)).mode & 0o777).toBe(0o600);
    const parsed = parseSegment(readFileSync(join(dir, file!)));
    expect(parsed.torn).toBe(false);
    expect(parsed.records.map((r) => r.key)).toEqual(recs.map((r) => statusKey(r.signature)));
    // Closed with records not committed: kept for the next start.
    log.committed(segs[0]!);
    log.close();
    expect(readdirSync(dir)).toEqual([file]);
    // All committed: deleted.
    const log2 = new AckLog(dir);
    const seg = log2.append(statusKey(recs[0]!.signature)!, encodeStatus(recs[0]!));
    log2.committed(seg);
    log2.close();
    expect(readdirSync(dir)).toEqual([file]);
  });

  it('reads frames up to a torn or damaged one', () => {
    const dir = join(tmp.dir, 'acks');
    const recs = [statusRecord(), statusRecord(), statusRecord()];
    const [path] = logAsDead(dir, recs);
    const whole = readFileSync(path!);
    // Torn: the last frame cut short (a power loss mid-write).
    expect(parseSegment(whole.subarray(0, whole.length - 5))).toMatchObject({ torn: true, records: { length: 2 } });
    // Damaged: a byte of the second frame's payload changed.
    const damaged = Buffer.from(whole);
    const second = 8 + whole.readUInt32LE(0) + 8 + 70;
    damaged[second] = damaged[second]! ^ 0xff;
    expect(parseSegment(damaged)).toMatchObject({ torn: true, records: { length: 1 } });
  });

  it('never reads the log of a live process', () => {
    const dir = join(tmp.dir, 'acks');
    const log = new AckLog(dir);
    log.append(statusKey(statusRecord().signature)!, encodeStatus(statusRecord()));
    expect(readDeadLogs(dir)).toMatchObject({ segments: 0, records: [] });
    log.close();
    expect(readdirSync(dir)).toHaveLength(1);
  });
});

describe('Store.recoverAcknowledged', () => {
  it('writes what a dead process acknowledged and LMDB lacks, counts it once in usage, leaves newer records as they are, and deletes the logs', async () => {
    const store = Store.open(tmp.dir);
    try {
      const account = 'acc_recovery';
      const t = Date.UTC(2026, 10, 26, 9);
      const lost = [statusRecord({ accountId: account, submittedAt: t }), statusRecord({ accountId: account, submittedAt: t })];
      const settled = statusRecord({ accountId: account, submittedAt: t });
      // `settled` committed as confirmed before the crash; its acceptance is in the log too.
      await store.updateStatus({ ...settled, status: 'confirmed', confirmedAt: t + 400, latencyMs: 400, slot: 7 });
      const files = logAsDead(join(tmp.dir, 'acks'), [...lost, settled]);
      // A torn frame after them (a power loss): ignored, the rest replayed.
      appendFileSync(files[0]!, Buffer.from([9, 0, 0]));
      // A file that is not a segment is left alone.
      writeFileSync(join(tmp.dir, 'acks', 'notes.txt'), 'x');

      const recovered = store.recoverAcknowledged();
      expect(recovered.map((r) => r.signature).sort()).toEqual(lost.map((r) => r.signature).sort());
      for (const r of lost) expect(store.getStatus(r.signature)).toMatchObject({ status: 'sent', expired: false, accountId: account });
      expect(store.getStatus(settled.signature)?.status).toBe('confirmed');
      expect(store.getUsage(account)).toEqual({ total: 3, day: Math.floor(t / 86_400_000), today: 3 });
      for (const f of files) expect(existsSync(f)).toBe(false);
      expect(existsSync(join(tmp.dir, 'acks', 'notes.txt'))).toBe(true);
      // Nothing left to replay: a second start writes nothing.
      expect(store.recoverAcknowledged()).toEqual([]);
      expect(store.getUsage(account)?.total).toBe(3);
    } finally {
      await store.close();
    }
  });

  it('a pending record replayed keeps its resend bytes (a restarted service sends it again)', async () => {
    const store = Store.open(tmp.dir);
    try {
      const rec = statusRecord();
      const log = new AckLog(join(tmp.dir, 'acks'), { syncMs: 0 });
      log.append(statusKey(rec.signature)!, encodeStatus(rec, { wire: Buffer.alloc(300, 5), antiMev: true, maxRetries: 4 }));
      const writer = deadWriter();
      for (const name of readdirSync(join(tmp.dir, 'acks'))) renameSync(join(tmp.dir, 'acks', name), join(tmp.dir, 'acks', name.replace(/^\d+-\d+/, writer)));
      store.recoverAcknowledged();
      const pending = [...store.pendingEntries()].find((p) => p.signature === rec.signature);
      expect(pending?.resend).toMatchObject({ antiMev: true, maxRetries: 4, wire: Buffer.alloc(300, 5) });
    } finally {
      await store.close();
    }
  });
});

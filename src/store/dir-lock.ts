/**
 * One service per data directory. LMDB lets several processes open one environment (the admin
 * CLI does, beside a running service), so a second `landfall serve` on the same directory used to
 * start silently, with the same QUIC identity and tip keys: two services answering for the same
 * accounts, each with its own in-memory budgets and tracker. The service takes this lock before it
 * opens anything, and a second one refuses with a message naming the holder's pid.
 *
 * The lock is a file (`service.lock`, created with O_EXCL) holding the holder's pid and the start
 * time of that process (`/proc/<pid>/stat`, field 22), so a lock left by a process that died
 * (kill -9, a power loss) is taken over, even when the pid was reused since by an unrelated process.
 * The admin CLI (`landfall accounts …`) does not take it: it is meant to run beside the service.
 */
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { LandfallError } from '../errors.js';

export const LOCK_FILE = 'service.lock';

/** The start time of process `pid` in clock ticks since boot, or null when it is not running (or /proc cannot tell). */
export function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count from after it.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** Whether the process that wrote `text` ("pid start") still runs. */
function holderAlive(text: string): { pid: number; alive: boolean } {
  const [pidText, start] = text.trim().split(/\s+/);
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0) return { pid: 0, alive: false };
  try {
    process.kill(pid, 0);
  } catch (e) {
    // EPERM: it runs, as another user.
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return { pid, alive: false };
  }
  const now = processStart(pid);
  // Same pid, another process (started since): the holder is gone.
  return { pid, alive: !(start && now && start !== now) };
}

/** The held lock of a data directory; `release()` gives it back (idempotent). */
export interface DirLock {
  readonly path: string;
  release(): void;
}

/**
 * Take the data directory's service lock, or throw `CONFIG_INVALID` naming the process that holds
 * it. Creates the directory (0700) if it does not exist yet.
 */
export function lockDataDir(dataDir: string): DirLock {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, LOCK_FILE);
  const mine = `${process.pid} ${processStart(process.pid) ?? ''}\n`;
  for (let attempt = 0; ; attempt++) {
    let fd: number;
    try {
      fd = openSync(path, 'wx', 0o600);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // No room for the file, or a directory this user cannot write: the store's own checks say
      // what is wrong more precisely than a lock could, so go on without one.
      if (code !== 'EEXIST') return { path, release: () => {} };
      if (attempt > 1) throw new LandfallError('CONFIG_INVALID', `cannot lock the data directory ${dataDir}: ${(e as Error).message}`);
      let text = '';
      try {
        text = readFileSync(path, 'utf8');
      } catch {
        // Removed meanwhile: try again.
      }
      const holder = holderAlive(text);
      if (holder.alive) {
        const who = holder.pid === process.pid ? 'another service in this process' : `another Landfall service (pid ${holder.pid})`;
        throw new LandfallError(
          'CONFIG_INVALID',
          `the data directory ${dataDir} is in use by ${who}: two services on one data directory would share its QUIC identity, tip keys and accounts. Stop it, or give this one another data directory (--data, or dataDir in the configuration)`,
          { pid: holder.pid },
        );
      }
      // Left by a process that is gone: take it over.
      try {
        unlinkSync(path);
      } catch {
        // Another starter took it over first: the next attempt says who holds it.
      }
      continue;
    }
    try {
      writeSync(fd, mine);
    } catch {
      // A full disk: the file exists, empty; another starter takes an empty lock for a dead one.
    } finally {
      closeSync(fd);
    }
    let held = true;
    return {
      path,
      release(): void {
        if (!held) return;
        held = false;
        try {
          if (readFileSync(path, 'utf8') === mine) unlinkSync(path);
        } catch {
          // Already gone.
        }
      },
    };
  }
}

/**
 * A real small filesystem for disk-full tests: a tmpfs mounted on a fresh directory (needs root,
 * `mount -t tmpfs`), filled for real with a filler file, freed by deleting it. Where mounting is
 * impossible (not root, no mount permission in a container) `mountTmpfs` says why, so a test
 * can skip with that message; nothing is mocked.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, statfsSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Tmpfs {
  /** The mount point. */
  dir: string;
  /** Free bytes, as the service sees them (`statfs` `bavail`). */
  freeBytes(): number;
  /** Write the filler file until at most `leaveBytes` remain free (0: until the write fails with ENOSPC). */
  fill(leaveBytes?: number): void;
  /** Delete the filler file: the space is back. */
  unfill(): void;
  /** Unmount (lazily: a killed process may still hold files) and remove the mount point. */
  unmount(): void;
}

const FILLER = '.filler';
const CHUNK = 1 << 20;

/** Mount a tmpfs of `sizeBytes`, or the reason it cannot be done here. */
export function mountTmpfs(sizeBytes: number): Tmpfs | { error: string } {
  const dir = mkdtempSync(join(tmpdir(), 'landfall-tmpfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeBytes},mode=0755`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    const err = e as { stderr?: Buffer; message: string };
    return { error: `cannot mount a tmpfs (needs root): ${err.stderr?.toString().trim() || err.message}` };
  }
  const filler = join(dir, FILLER);
  const freeBytes = (): number => {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  };
  return {
    dir,
    freeBytes,
    fill(leaveBytes = 0) {
      const fd = openSync(filler, 'a');
      const zeros = Buffer.alloc(CHUNK);
      try {
        for (;;) {
          const over = freeBytes() - leaveBytes;
          if (over <= 0) break;
          writeSync(fd, zeros, 0, Math.min(CHUNK, over));
        }
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
      } finally {
        closeSync(fd);
      }
    },
    unfill() {
      rmSync(filler, { force: true });
    },
    unmount() {
      try {
        execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/**
 * The acknowledgement log: what makes a `200` a promise.
 *
 * A status record waits up to `COMMIT_WINDOW_MS` for the LMDB commit that groups it with others
 * (`commit-window.ts`), but the client is answered at once. Before it is answered, the accepted record is
 * appended here with one `write(2)` on a file this thread owns: the bytes are then in the page
 * cache, which outlives the process. A `kill -9`, an OOM kill or a panic therefore loses nothing
 * that was acknowledged: the next start replays every record of a dead process's log that LMDB
 * does not have (`recover`), before the tracker resumes what is pending.
 *
 * What a power loss (or an OS crash) may lose is bounded by `syncMs`: each log is `fdatasync`ed
 * that often while it has unsynced appends (on libuv's pool, off the request path); `syncMs: 0`
 * syncs every append before the answer instead (the strongest promise, a disk flush per send).
 *
 * Files. One segment at a time per writer (thread), named `<pid>-<process start>-<thread>-<seq>.log`
 * in `<data>/acks/` (0700; files 0600: they hold the wire transactions). A segment is rotated
 * past `SEGMENT_BYTES` and deleted once every record in it has committed to LMDB (`committed`);
 * a record that never commits (the store stayed unavailable, the process died) keeps its segment
 * for the next start. The process start time in the name tells a dead writer from a live one
 * whose pid was reused: `recover` never touches the log of a live process (the CLI, a second
 * service on the same data directory).
 *
 * Frame: `u32 payload length | u32 CRC-32 of the payload | payload = 64-byte key + value`. A torn
 * or damaged tail (possible only after a power loss) ends the replay of that segment.
 */
import { closeSync, fdatasync, fdatasyncSync, ftruncateSync, mkdirSync, openSync, readdirSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';
import { crc32 } from 'node:zlib';

/** A segment is rotated once it holds this many bytes. */
export const SEGMENT_BYTES = 4 * 1024 * 1024;
/** Default `fdatasync` cadence of a log with unsynced appends. */
export const DEFAULT_SYNC_MS = 100;
/** Bytes of a frame's header: payload length, CRC-32. */
export const FRAME_HEADER_BYTES = 8;
const HEADER_BYTES = FRAME_HEADER_BYTES;
/** The key of a status record: the signature's 64 bytes. */
const KEY_BYTES = 64;
const DIR_MODE = 0o700;
const FILE_MODE = 0o600;
const SEGMENT_RE = /^(\d+)-(\d+)-(\d+)-(\d+)\.log$/;

/** Sequence number of this thread's next segment (per thread, not per log: a log reopened in the same thread never appends to a kept one). */
let nextSegment = 0;

/** One log file and the records in it not yet committed to LMDB. */
export class Segment {
  /** Records appended and not yet committed. */
  pending = 0;
  bytes = 0;
  /** Rotated: no more appends; deleted once `pending` is 0. */
  closed = false;
  /** Appends since the last `fdatasync`. */
  unsynced = false;
  constructor(
    readonly path: string,
    readonly fd: number,
  ) {}
}

export interface AckLogOptions {
  /** `fdatasync` cadence in ms; 0 syncs every append before it returns. */
  syncMs?: number;
}

/** This thread's acknowledgement log in `<dataDir>/acks`. */
export class AckLog {
  private current: Segment | null = null;
  private readonly syncMs: number;
  private syncTimer: NodeJS.Timeout | null = null;
  private syncing = false;
  private closing = false;
  /** Rotated segments still waiting for commits, or for their last sync. */
  private readonly older = new Set<Segment>();

  constructor(
    readonly dir: string,
    opts: AckLogOptions = {},
  ) {
    this.syncMs = opts.syncMs ?? DEFAULT_SYNC_MS;
    mkdirSync(dir, { recursive: true, mode: DIR_MODE });
  }

  /**
   * Append one accepted record; returns its segment (hand it to `committed` once LMDB has the
   * record). Throws when the bytes could not be written (ENOSPC, EIO): the record is then not
   * a promise, and the caller must not acknowledge it as one.
   */
  append(key: Buffer, value: Buffer): Segment {
    const seg = this.segment();
    const frame = Buffer.allocUnsafe(HEADER_BYTES + key.length + value.length);
    key.copy(frame, HEADER_BYTES);
    value.copy(frame, HEADER_BYTES + key.length);
    const payload = frame.subarray(HEADER_BYTES);
    frame.writeUInt32LE(payload.length, 0);
    frame.writeUInt32LE(crc32(payload), 4);
    // One write(2) of the whole frame. A failed or short one (a full disk) is cut off again, so
    // the frames after it, once there is room, are not behind a torn one.
    let n: number;
    try {
      n = writeSync(seg.fd, frame);
    } catch (e) {
      this.cutBack(seg);
      throw e;
    }
    if (n !== frame.length) {
      this.cutBack(seg);
      throw Object.assign(new Error(`short write to ${seg.path} (${n} of ${frame.length} bytes)`), { code: 'ENOSPC' });
    }
    seg.bytes += n;
    seg.pending++;
    if (this.syncMs === 0) fdatasyncSync(seg.fd);
    this.settle(seg);
    return seg;
  }

  /**
   * The segment the next frame goes to (opened if there is none), for a writer that appends a
   * frame itself — the native `recordAccepted`, which writes it with one `writev(2)` on its `fd`
   * (and syncs it when `syncEach`) — and then reports `appended` or `failed`. Throws if it cannot
   * be opened, or once the log is closed.
   */
  writer(): Segment {
    return this.segment();
  }

  /** Each append must be `fdatasync`ed before it returns (`syncMs: 0`). */
  get syncEach(): boolean {
    return this.syncMs === 0;
  }

  /** One whole frame of `n` bytes was written to `seg` (by the `writer`'s caller): as `append` after its write. */
  appended(seg: Segment, n: number): void {
    seg.bytes += n;
    seg.pending++;
    this.settle(seg);
  }

  /** A frame's write to `seg` failed or was short (by the `writer`'s caller): cut back, as `append` does. */
  failed(seg: Segment): void {
    this.cutBack(seg);
  }

  /** After an append: its sync scheduled (unless every append is synced), the segment rotated once full. */
  private settle(seg: Segment): void {
    if (this.syncMs !== 0) {
      seg.unsynced = true;
      this.scheduleSync();
    }
    if (seg.bytes >= SEGMENT_BYTES) this.rotate();
  }

  /** `n` records of `seg` are in LMDB now; a rotated segment with none left is deleted. */
  committed(seg: Segment, n = 1): void {
    seg.pending -= n;
    if (seg.closed && seg.pending <= 0) this.remove(seg);
  }

  /**
   * Stop appending; delete what has fully committed and keep the rest (a later start replays
   * it). Pending syncs are made first, so what is kept is on disk.
   */
  close(): void {
    this.closing = true;
    if (this.syncTimer) clearTimeout(this.syncTimer);
    this.syncTimer = null;
    this.rotate();
    for (const seg of [...this.older]) {
      if (seg.unsynced) fdatasyncSync(seg.fd);
      seg.unsynced = false;
      if (seg.pending <= 0) this.remove(seg);
      else {
        closeSync(seg.fd);
        this.older.delete(seg);
      }
    }
  }

  /** Truncate `seg` to its last whole frame; if that fails, end it (a replay stops at the tear). */
  private cutBack(seg: Segment): void {
    try {
      ftruncateSync(seg.fd, seg.bytes);
    } catch {
      this.rotate();
    }
  }

  private segment(): Segment {
    if (this.current) return this.current;
    if (this.closing) throw new Error('acknowledgement log is closed');
    const path = join(this.dir, `${process.pid}-${PROCESS_START}-${threadId}-${nextSegment++}.log`);
    this.current = new Segment(path, openSync(path, 'a', FILE_MODE));
    return this.current;
  }

  private rotate(): void {
    const seg = this.current;
    if (!seg) return;
    this.current = null;
    seg.closed = true;
    this.older.add(seg);
    if (seg.pending <= 0) this.remove(seg);
  }

  private remove(seg: Segment): void {
    if (!this.older.delete(seg)) return;
    closeSync(seg.fd);
    try {
      unlinkSync(seg.path);
    } catch {
      // already gone (a recovery by another start cannot run while this process lives)
    }
  }

  private scheduleSync(): void {
    if (this.syncTimer || this.closing) return;
    this.syncTimer = setTimeout(this.sync, this.syncMs);
    this.syncTimer.unref();
  }

  /** `fdatasync` every segment with unsynced appends, on libuv's pool. */
  private readonly sync = (): void => {
    this.syncTimer = null;
    if (this.syncing) return this.scheduleSync();
    const segs = [...this.older, ...(this.current ? [this.current] : [])].filter((s) => s.unsynced);
    if (segs.length === 0) return;
    this.syncing = true;
    let left = segs.length;
    for (const seg of segs) {
      seg.unsynced = false;
      fdatasync(seg.fd, () => {
        // A failed sync is retried by the next append's timer; nothing else depends on it.
        if (--left === 0) this.syncing = false;
      });
    }
  };
}

/** A record read back from a dead writer's log. */
export interface LoggedRecord {
  key: Buffer;
  value: Buffer;
}

/** What `recover` found. */
export interface Recovery {
  /** Segments of dead writers read (and to be deleted by `done`). */
  segments: number;
  /** Records read from them (each possibly already in LMDB). */
  records: LoggedRecord[];
  /** Segments whose tail was torn or damaged (read up to it). */
  damaged: number;
  /** Delete the segments read, once their records are committed to LMDB. */
  done(): void;
}

/**
 * Read every segment in `dir` left by a process that is no longer running (never one of a live
 * process). The caller writes the records LMDB lacks, then calls `done`.
 */
export function readDeadLogs(dir: string): Recovery {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    names = [];
  }
  const read: string[] = [];
  const records: LoggedRecord[] = [];
  let damaged = 0;
  for (const name of names.sort(bySequence)) {
    const m = SEGMENT_RE.exec(name);
    if (!m || processAlive(Number(m[1]), m[2]!)) continue;
    const path = join(dir, name);
    const { records: found, torn } = parseSegment(readFileSync(path));
    records.push(...found);
    if (torn) damaged++;
    read.push(path);
  }
  return {
    segments: read.length,
    records,
    damaged,
    done() {
      for (const p of read) unlinkSync(p);
    },
  };
}

/** The frames of one segment, up to the first torn or damaged one. */
export function parseSegment(buf: Buffer): { records: LoggedRecord[]; torn: boolean } {
  const records: LoggedRecord[] = [];
  let off = 0;
  while (off < buf.length) {
    if (buf.length - off < HEADER_BYTES) return { records, torn: true };
    const len = buf.readUInt32LE(off);
    const sum = buf.readUInt32LE(off + 4);
    const end = off + HEADER_BYTES + len;
    if (len <= KEY_BYTES || end > buf.length) return { records, torn: true };
    const payload = buf.subarray(off + HEADER_BYTES, end);
    if (crc32(payload) !== sum) return { records, torn: true };
    records.push({ key: Buffer.from(payload.subarray(0, KEY_BYTES)), value: Buffer.from(payload.subarray(KEY_BYTES)) });
    off = end;
  }
  return { records, torn: false };
}

/** Writers in name order, each writer's segments in sequence: a later write of a key comes last. */
function bySequence(a: string, b: string): number {
  const ma = SEGMENT_RE.exec(a);
  const mb = SEGMENT_RE.exec(b);
  if (!ma || !mb) return a < b ? -1 : a > b ? 1 : 0;
  for (let i = 1; i <= 4; i++) {
    const d = Number(ma[i]) - Number(mb[i]);
    if (d !== 0) return d;
  }
  return 0;
}

/** Field 22 of `/proc/<pid>/stat`: the process's start time in clock ticks since boot. */
function startTimeOf(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** This process's start time, part of every segment's name. */
const PROCESS_START = startTimeOf(process.pid) ?? '0';

/** Whether the process that wrote a segment still runs (same pid, same start time). */
function processAlive(pid: number, startTime: string): boolean {
  return startTimeOf(pid) === startTime;
}

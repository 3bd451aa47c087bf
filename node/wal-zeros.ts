/**
 * Zeros written past the WAL's end, a chunk at a time, ahead of SQLite's frames: a sync of
 * a file that grew commits the file system's journal too (about twice the time, measured),
 * while frames written over blocks the WAL already has need only their data flushed.
 * SQLite reuses the WAL from its start once it is checkpointed, and takes the zeros, as any
 * bytes past its last valid frame, for no frame.
 *
 * Whether to add a chunk is read from the file itself, not remembered by the connection:
 * every process sharing the database sees the same WAL, so one chunk serves them all (a
 * connection that remembered only its own chunks added one each time another process had
 * written past them: 1 MB per commit with six processes on one file).
 */
import { fstatSync, readSync, writeSync } from 'node:fs';

const WAL_CHUNK = 1 << 20;
/** A chunk is added once the frames come within this many bytes of the end (a commit's frames fit). */
const WAL_HEADROOM = WAL_CHUNK / 2;
/**
 * A WAL shorter than this gets no zeros yet: a new WAL's first commits (a short-lived
 * process's only ones) would each flush a chunk of zeros they never reach.
 */
const WAL_FIRST = 128 << 10;
/** The WAL file format (https://sqlite.org/fileformat2.html#walformat): a 32-byte header, then frames of a 24-byte header and a page. */
const WAL_HEADER = 32;
const FRAME_HEADER = 24;

let zeros: Buffer | undefined;
const header = Buffer.alloc(WAL_HEADER);
const frameHeader = Buffer.alloc(FRAME_HEADER);

/**
 * True when frames of the WAL's current generation lie in its last `WAL_HEADROOM` bytes:
 * the frame slot there carries the salts of the WAL's header. Zeros, and frames left from
 * before SQLite last started the WAL over (their salts are the old ones), do not.
 */
function framesNearEnd(wal: number, size: number): boolean {
  if (size < WAL_FIRST) return false;
  const from = size - WAL_HEADROOM;
  if (from < WAL_HEADER) return true;
  if (readSync(wal, header, 0, WAL_HEADER, 0) < WAL_HEADER) return true;
  // No valid header: SQLite writes the WAL from its start, where the file has room.
  if ((header.readUInt32BE(0) & ~1) >>> 0 !== 0x377f0682) return false;
  const frame = header.readUInt32BE(8) + FRAME_HEADER;
  const slot = WAL_HEADER + Math.ceil((from - WAL_HEADER) / frame) * frame;
  if (slot + FRAME_HEADER > size) return false;
  if (readSync(wal, frameHeader, 0, FRAME_HEADER, slot) < FRAME_HEADER) return false;
  return frameHeader.compare(header, 16, 24, 8, 16) === 0;
}

/**
 * A WAL this long gets no more zeros: one that long was not started over by the checkpoints
 * (they never catch up with a writer that never pauses), and grows by as many bytes of zeros
 * as of frames. Its writer checkpoints instead (`CommitQueue`), and SQLite starts it over.
 */
export const WAL_CAP = 8 * WAL_CHUNK;

/**
 * Adds a chunk of zeros past the end of the WAL open as `wal` when SQLite's frames come
 * near it. Only inside a write transaction: no other connection can append frames or start
 * the WAL over meanwhile, so the decision is one for every process. The zeros are flushed
 * by the next sync of the WAL. True when the frames came near the end of a WAL of
 * {@link WAL_CAP} or more: nothing added, and the WAL wants a checkpoint to start over.
 */
export function extendWalAhead(wal: number): boolean {
  const { size } = fstatSync(wal);
  if (!framesNearEnd(wal, size)) return false;
  if (size >= WAL_CAP) return true;
  zeros ??= Buffer.alloc(WAL_CHUNK);
  writeSync(wal, zeros, 0, WAL_CHUNK, size);
  return false;
}

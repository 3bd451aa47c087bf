/**
 * Temporary files: names that say which process wrote them, and the clean-up of the
 * ones left behind by a process that died mid-write.
 */
import { randomBytes } from 'node:crypto';
import { lstat, readdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import { errorCode } from './fs-durable.js';

/** A temp file older than this is removed even if the process that named it still runs. */
export const STALE_TEMP_MS = 60_000;

/** Tells this process's temp files from those of an earlier process that had the same pid. */
const processNonce = randomBytes(6).toString('hex');
let sequence = 0;

const TEMP_NAME = /^(\d+)\.([0-9a-f]+)\.[0-9a-z]+\.tmp$/;

/** A fresh temp file name: `<pid>.<process nonce>.<sequence>.tmp`. */
export function tempName(): string {
  return `${process.pid}.${processNonce}.${(sequence++).toString(36)}.tmp`;
}

/** Whether a process with this pid exists (it may be another program that reused the pid). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errorCode(error) === 'EPERM';
  }
}

/**
 * Removes the temp files in `dir` that no live writer can still use: those of dead
 * processes (and of an earlier process with this process's pid), and any older than
 * {@link STALE_TEMP_MS}. Resolves with the number removed.
 */
export async function removeStaleTemps(dir: string, now = Date.now()): Promise<number> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return 0;
    throw error;
  }
  let removed = 0;
  for (const name of names) {
    const file = path.join(dir, name);
    const match = TEMP_NAME.exec(name);
    let stale: boolean;
    if (match && Number(match[1]) === process.pid) stale = match[2] !== processNonce;
    else if (match && !isProcessAlive(Number(match[1]))) stale = true;
    else {
      const stats = await lstat(file).catch(() => undefined);
      stale = stats !== undefined && now - stats.mtimeMs > STALE_TEMP_MS;
    }
    if (!stale) continue;
    // Best effort: another process may be removing it too, or it is not a file.
    if (
      await unlink(file).then(
        () => true,
        () => false,
      )
    )
      removed++;
  }
  return removed;
}

/**
 * The `quarantine/` folder of a FileStore: bad record files moved aside untouched (as a
 * hard link), each with a `.why.json` note saying what was wrong and what was kept.
 * One sub-folder per scope, so that `clear(scope)` removes the scope's quarantine too.
 */
import { randomBytes } from 'node:crypto';
import { link, readdir } from 'node:fs/promises';
import path from 'node:path';
import { ensureDir, errorCode, readIfExists, removeQuietly, syncDir, writeNewFile } from './fs-durable.js';

/** One quarantined file, as `FileStore.listQuarantined()` reports it. */
export interface QuarantinedFile {
  /** Path of the file as it was found, moved aside untouched. */
  location: string;
  reason: string;
  /** When it was moved aside (ms since epoch). */
  at: number;
  /** Missing when the file did not say which intent it belonged to. */
  scope?: string;
  name?: string;
  /** The key kept in place of the bad record, when one could be salvaged. */
  salvagedKey?: string;
}

/**
 * Keeps a copy of `file` in `dir/<scope id>/` with a note, if `file` still holds `text`
 * (the content judged bad). Resolves the copy's path, or `undefined` if the file was
 * removed or changed meanwhile (nothing kept).
 */
export async function keepInQuarantine(
  options: { dir: string; sid: string; id: string; sync: boolean },
  file: string,
  text: string,
  note: Omit<QuarantinedFile, 'location'>,
): Promise<string | undefined> {
  const dir = path.join(options.dir, options.sid);
  await ensureDir(dir, options.sync);
  const base = path.join(dir, `${options.id}.${note.at}.${randomBytes(4).toString('hex')}`);
  const location = `${base}.jsonl`;
  try {
    await link(file, location);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
  // Another process may have settled it between our read and our link.
  if ((await readIfExists(location)) !== text) {
    await removeQuietly(location);
    return undefined;
  }
  const full: QuarantinedFile = { location, ...note };
  await writeNewFile(`${base}.why.json`, `${JSON.stringify(full, null, 2)}\n`, options.sync);
  if (options.sync) await syncDir(dir);
  return location;
}

/** The notes of the quarantine folder `dir`, of the given scope ids or of all, oldest first. */
export async function readQuarantineNotes(dir: string, sids?: string[]): Promise<QuarantinedFile[]> {
  let folders: string[];
  try {
    folders = sids ?? (await readdir(dir));
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return [];
    throw error;
  }
  const notes: QuarantinedFile[] = [];
  for (const sid of folders) {
    const folder = path.join(dir, sid);
    const names = await readdir(folder).catch(() => [] as string[]);
    for (const name of names.filter((n) => n.endsWith('.why.json'))) {
      try {
        const text = await readIfExists(path.join(folder, name));
        if (text !== undefined) notes.push(JSON.parse(text) as QuarantinedFile);
      } catch {
        // A note that cannot be read is not worth failing over.
      }
    }
  }
  return notes.sort((a, b) => a.at - b.at);
}

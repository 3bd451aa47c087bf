/**
 * Small file-system steps that are durable when asked to be: a new file flushed to
 * disk, a directory whose entries are flushed, a rename that survives Windows' sharing
 * errors. Every write path of `FileStore` is built from these.
 */
import type { BigIntStats } from 'node:fs';
import { type FileHandle, mkdir, open, readFile, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';

export const isWindows = process.platform === 'win32';

/** The `code` of a Node system error (`ENOENT`, `EEXIST`…), if it has one. */
export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * Creates `file` (failing with `EEXIST` if it exists), writes `data` and, with `sync`,
 * flushes the data (`fdatasync`) before resolving. A partly written file is removed.
 */
export async function writeNewFile(file: string, data: string | Uint8Array, sync: boolean): Promise<void> {
  const handle = await open(file, 'wx');
  try {
    await handle.writeFile(data);
    if (sync) await handle.datasync();
  } catch (error) {
    await handle.close().catch(() => {});
    await removeQuietly(file);
    throw error;
  }
  await handle.close();
}

/** Reads a file whole. Resolves `undefined` when it does not exist. */
export async function readIfExists(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * What tells the file now at a path from the one read there earlier: device, inode,
 * size and modification time (ns). Files of the store are never modified in place, only
 * replaced (a new inode) or removed, so the same identity means the same content. The
 * link count and change time are left out: they change when another name of a shared
 * file is replaced.
 */
export const fileIdentity = (stats: BigIntStats): string => `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeNs}`;

/** The {@link fileIdentity} of the file at `file`, or `undefined` when there is none. */
export async function identityAt(file: string): Promise<string | undefined> {
  try {
    return fileIdentity(await stat(file, { bigint: true }));
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Reads a file whole, with the {@link fileIdentity} of what was read (taken from the
 * open file, so the two agree). Resolves `undefined` when it does not exist.
 */
export async function readWithIdentity(file: string): Promise<{ text: string; identity: string } | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(file, 'r');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const identity = fileIdentity(await handle.stat({ bigint: true }));
    return { text: await handle.readFile('utf8'), identity };
  } finally {
    await handle.close();
  }
}

/** A file read by {@link readShared}; `lines` is free for the caller to cache a parse in. */
export interface SharedFile {
  text: string;
  lines?: Map<string, string>;
}

/**
 * Reads a file whole, but a file with several hard links whose inode (same number, size
 * and modification time) is in `seen` is not read again: files are never modified in
 * place. Resolves `undefined` when it does not exist.
 */
export async function readShared(file: string, seen: Map<string, SharedFile>): Promise<SharedFile | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(file, 'r');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const stats = await handle.stat();
    if (stats.nlink <= 1) return { text: await handle.readFile('utf8') };
    const inode = `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeMs}`;
    let shared = seen.get(inode);
    if (!shared) {
      shared = { text: await handle.readFile('utf8') };
      seen.set(inode, shared);
    }
    return shared;
  } finally {
    await handle.close();
  }
}

/**
 * Reads a file whole and flushes its data, so that what this process read (perhaps
 * written by another process that has not flushed it yet) is on disk before it is
 * acted on. Resolves `undefined` when it does not exist.
 */
export async function readAndFlush(file: string, sync: boolean): Promise<string | undefined> {
  let handle: FileHandle;
  try {
    // Windows flushes only handles opened for writing.
    handle = await open(file, isWindows && sync ? 'r+' : 'r');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const text = await handle.readFile('utf8');
    if (sync) await handle.datasync();
    return text;
  } finally {
    await handle.close();
  }
}

/**
 * Flushes a directory's entries (`fsync` of the directory), which makes creates,
 * links, renames and removals in it durable. Windows cannot open a directory for this
 * and journals its metadata itself, so there it does nothing; so does a file system
 * that does not support it (`EINVAL`).
 */
export async function syncDir(dir: string): Promise<void> {
  if (isWindows) return;
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } catch (error) {
    if (errorCode(error) !== 'EINVAL') throw error;
  } finally {
    await handle.close();
  }
}

/**
 * Creates `dir` and missing parents. With `sync`, makes each new directory's own entry
 * durable (flushes its parent), so that files later made durable in it are reachable.
 */
export async function ensureDir(dir: string, sync: boolean): Promise<void> {
  const first = await mkdir(dir, { recursive: true });
  if (first === undefined || !sync) return;
  const created: string[] = [];
  for (let current = dir; current.length >= first.length; current = path.dirname(current)) {
    created.push(current);
    if (current === first || path.dirname(current) === current) break;
  }
  for (const made of created) await syncDir(path.dirname(made));
}

/**
 * `rename`, replacing `to` atomically. On Windows a file another process has open
 * cannot be replaced for a moment (`EPERM`, `EACCES`, `EBUSY`): retried briefly.
 */
export async function renameReplacing(from: string, to: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await rename(from, to);
    } catch (error) {
      const code = errorCode(error);
      const sharing = code === 'EPERM' || code === 'EACCES' || code === 'EBUSY';
      if (!isWindows || !sharing || attempt >= 20) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5 + attempt * 5));
    }
  }
}

/** Removes a file, ignoring every error (it may be gone already). */
export async function removeQuietly(file: string): Promise<void> {
  await unlink(file).catch(() => {});
}

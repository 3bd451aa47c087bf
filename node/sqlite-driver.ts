/**
 * `node:sqlite`, loaded at run time (Node >= 22.13, no flag, no native addon). Node
 * announced that `DatabaseSync` becomes `Database` (DEP0210): whichever exists is used.
 */
import type { DatabaseSync, DatabaseSyncOptions } from 'node:sqlite';

export type Db = DatabaseSync;

type DatabaseClass = new (file: string, options?: DatabaseSyncOptions) => DatabaseSync;

let cached: DatabaseClass | undefined;

/** The database class of `node:sqlite`, under its new name or its old one. */
export function databaseClass(): DatabaseClass {
  if (cached) return cached;
  const sqlite = process.getBuiltinModule?.('node:sqlite') as
    | { Database?: DatabaseClass; DatabaseSync?: DatabaseClass }
    | undefined;
  const found = sqlite?.Database ?? sqlite?.DatabaseSync;
  if (!found) throw new Error(`node:sqlite is not available in Node ${process.version}: oncely needs Node >= 22.13.`);
  cached = found;
  return found;
}

/** SQLite's primary result code of an error thrown by `node:sqlite`, if it has one. */
export function sqliteCode(error: unknown): number | undefined {
  const code = (error as { errcode?: unknown } | null)?.errcode;
  return typeof code === 'number' ? code & 0xff : undefined;
}

export const SQLITE_BUSY = 5;
export const SQLITE_LOCKED = 6;
export const SQLITE_CORRUPT = 11;
export const SQLITE_NOTADB = 26;

/** True when another connection holds the lock: worth retrying later, never by sleeping. */
export const isBusy = (error: unknown): boolean => {
  const code = sqliteCode(error);
  return code === SQLITE_BUSY || code === SQLITE_LOCKED;
};

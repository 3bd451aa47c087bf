/**
 * `node:sqlite`, loaded at run time (Node >= 22.13, no flag, no native addon). Node
 * announced that `DatabaseSync` becomes `Database` (DEP0210): whichever exists is used.
 */
import type { DatabaseSync, DatabaseSyncOptions } from 'node:sqlite';

export type Db = DatabaseSync;

type DatabaseClass = new (file: string, options?: DatabaseSyncOptions) => DatabaseSync;

let cached: DatabaseClass | undefined;

/**
 * `node:sqlite`, loaded without the one warning Node 22 prints when it loads
 * (`ExperimentalWarning: SQLite is an experimental feature`): oncely loads it only on its
 * own threads, for its own store, so the warning tells the app nothing it chose and would
 * print at every start of every program that imports oncely. Every other warning, and
 * this one where the app loads `node:sqlite` itself, is left alone. Self-contained: the
 * threads run as `eval` code embed it with `loadSqlite.toString()`.
 */
export function loadSqlite(): unknown {
  const emitWarning = process.emitWarning;
  process.emitWarning = function (this: unknown, warning: string | Error, ...rest: unknown[]) {
    const text = typeof warning === 'string' ? warning : warning?.message;
    if (typeof text === 'string' && text.startsWith('SQLite is an experimental feature')) return;
    return Reflect.apply(emitWarning, this, [warning, ...rest]);
  } as typeof process.emitWarning;
  try {
    return process.getBuiltinModule?.('node:sqlite');
  } finally {
    process.emitWarning = emitWarning;
  }
}

/** The database class of `node:sqlite`, under its new name or its old one. */
export function databaseClass(): DatabaseClass {
  if (cached) return cached;
  const sqlite = loadSqlite() as { Database?: DatabaseClass; DatabaseSync?: DatabaseClass } | undefined;
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

/**
 * Whether `db` is inside a transaction. `db.isTransaction` exists from Node 22.16 only;
 * before it (22.13–22.15, which `engines` admits) a deferred `BEGIN` tells: it fails only
 * inside a transaction, and outside one it takes no lock and is rolled back at once.
 */
export function inTransaction(db: Db): boolean {
  const known = (db as { isTransaction?: unknown }).isTransaction;
  if (typeof known === 'boolean') return known;
  try {
    db.exec('BEGIN');
  } catch (error) {
    if (/within a transaction/.test((error as Error)?.message ?? '')) return true;
    throw error;
  }
  db.exec('ROLLBACK');
  return false;
}

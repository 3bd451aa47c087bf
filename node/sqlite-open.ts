/**
 * Opening the database of a SqliteStore: look at the file before writing to it, switch
 * to WAL, migrate, import a FileStore directory. Every step that needs a lock another
 * process may hold is retried from a timer.
 */
import { mkdirSync } from 'node:fs';
import { hasFileStore, type ImportReport, importFileStore, retireFileStore } from './file-store-import.js';
import { type Db, databaseClass, isBusy } from './sqlite-driver.js';
import { IntentRows } from './sqlite-rows.js';
import { checkAndMigrate } from './sqlite-schema.js';

const FIRST_RETRY_MS = 1;
const MAX_RETRY_MS = 25;

/** Runs `fn`, and again from a timer while another process holds the lock it needs, up to `lockTimeout` ms. */
export async function retryWhileBusy<T>(fn: () => T, lockTimeout: number): Promise<T> {
  const started = performance.now(); // monotonic: a wall clock stepped back must not stretch the bound
  let delay = FIRST_RETRY_MS;
  for (;;) {
    try {
      return fn();
    } catch (error) {
      if (!isBusy(error) || performance.now() - started > lockTimeout) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, delay * (0.5 + Math.random() / 2)));
    delay = Math.min(MAX_RETRY_MS, delay * 2);
  }
}

/** Runs `fn` in one transaction opened with `begin`; rolls back if it throws. */
function transaction<T>(db: Db, begin: string, fn: () => T): T {
  db.exec(begin);
  try {
    const result = fn();
    db.exec('COMMIT');
    return result;
  } catch (error) {
    if (db.isTransaction) db.exec('ROLLBACK');
    throw error;
  }
}

export interface OpenedDatabase {
  db: Db;
  rows: IntentRows;
  /** What importing a FileStore directory found, when this open imported one. */
  imported: ImportReport | undefined;
}

/** Opens (creating if needed) the database `file` of the store in `dir`. Throws `StoreFileError` for a file it must not touch. */
export async function openDatabase(options: {
  dir: string;
  file: string;
  lockTimeout: number;
  now: () => number;
}): Promise<OpenedDatabase> {
  const { dir, file, lockTimeout } = options;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const Database = databaseClass();
  const db = new Database(file);
  try {
    db.exec('PRAGMA busy_timeout = 0');
    // Looks before it writes anything: a foreign file must be left as it is.
    const current = await retryWhileBusy(
      () => transaction(db, 'BEGIN', () => checkAndMigrate(db, file, false)),
      lockTimeout,
    );
    await retryWhileBusy(() => db.exec('PRAGMA journal_mode = WAL'), lockTimeout);
    // A file of this schema needs no write lock at open (a process's first write would wait for it).
    if (!current) {
      await retryWhileBusy(() => transaction(db, 'BEGIN IMMEDIATE', () => checkAndMigrate(db, file)), lockTimeout);
    }
    const rows = new IntentRows(db, file);
    let imported: ImportReport | undefined;
    if (hasFileStore(dir)) {
      const now = options.now();
      // Under the write lock: other processes opening meanwhile wait, then see it done.
      imported = await retryWhileBusy(
        () => transaction(db, 'BEGIN IMMEDIATE', () => importFileStore(db, rows, dir, now)),
        lockTimeout,
      );
      retireFileStore(dir, now);
    }
    return { db, rows, imported };
  } catch (error) {
    db.close();
    throw error;
  }
}

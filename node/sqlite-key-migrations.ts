/**
 * The server half's tables in the app's own SQLite file (`SqliteKeyStore`). The file is the
 * app's, so neither `user_version` nor `application_id` is ours: versions are rows of
 * `oncely_server_migrations`, as on PostgreSQL. Append only; never edit a shipped entry.
 */
import { StoreError } from '../src/errors.js';
import type { Db } from './sqlite-driver.js';

export interface SqliteKeyMigration {
  version: number;
  name: string;
  sql: string;
}

export const sqliteKeyMigrations: readonly SqliteKeyMigration[] = [
  {
    version: 1,
    name: 'server keys',
    sql: `
CREATE TABLE oncely_server_keys (
  scope        TEXT    NOT NULL,
  key          TEXT    NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
  -- ms since the epoch, of the commit: retention counts from it
  created_at   INTEGER NOT NULL,
  operation    TEXT    NOT NULL,
  fingerprint  TEXT    NOT NULL,
  -- NULL only inside the claiming transaction, which sets them before it commits
  status       INTEGER,
  headers      TEXT,
  body         BLOB,
  PRIMARY KEY (scope, key)
);
-- maintain(): the rows past retention, oldest first, in small batches
CREATE INDEX oncely_server_keys_by_age ON oncely_server_keys (created_at);
`,
  },
];

export const SQLITE_KEY_SCHEMA_VERSION = sqliteKeyMigrations[sqliteKeyMigrations.length - 1]!.version;

/** The newest version applied to the file (0: none), read without taking the write lock. */
export function schemaVersion(db: Db): number {
  const table = db.prepare(
    `SELECT 1 AS found FROM sqlite_schema WHERE type = 'table' AND name = 'oncely_server_migrations'`,
  );
  if (!table.get()) return 0;
  return Number(db.prepare('SELECT max(version) AS v FROM oncely_server_migrations').get()?.v ?? 0);
}

/**
 * Applies the migrations the file lacks, each with its row, in the caller's `BEGIN
 * IMMEDIATE` transaction (so two processes starting at once do not interleave). A file
 * migrated by a newer oncely is refused, unchanged.
 */
export function migrateSqliteKeys(db: Db): { applied: number[]; version: number } {
  db.exec(`CREATE TABLE IF NOT EXISTS oncely_server_migrations (
             version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
  const have = new Set(
    db
      .prepare('SELECT version FROM oncely_server_migrations')
      .all()
      .map((row) => Number(row.version)),
  );
  const newest = Math.max(0, ...have);
  if (newest > SQLITE_KEY_SCHEMA_VERSION)
    throw new StoreError(
      `SqliteKeyStore: the file's server-key schema is version ${newest}, newer than this oncely knows (${SQLITE_KEY_SCHEMA_VERSION}). Upgrade oncely; nothing was changed.`,
    );
  const applied: number[] = [];
  const record = db.prepare('INSERT INTO oncely_server_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  for (const migration of sqliteKeyMigrations) {
    if (have.has(migration.version)) continue;
    db.exec(migration.sql);
    record.run(migration.version, migration.name, Date.now());
    applied.push(migration.version);
  }
  return { applied, version: SQLITE_KEY_SCHEMA_VERSION };
}

/**
 * The server half's SQL (`PostgresKeyStore`), numbered apart from the client store's
 * (`oncely_server_migrations`), so that the two evolve without sharing version numbers.
 * Partitions are not created here but by `store.maintain()` (and `migrate()`), from the
 * database's clock.
 */
import { StoreError } from '../src/errors.js';
import { isPool, type Queryable } from './database.js';
import type { MigrateResult } from './migrate.js';
import type { Migration } from './migrations.js';

export const keyMigrations: readonly Migration[] = [
  {
    version: 1,
    name: 'server keys, partitioned by day',
    sql: `
CREATE TABLE oncely_server_keys (
  scope        text        NOT NULL,
  key          text        NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
  -- The UTC day of created_at: the partition. A partitioned table's primary key must hold
  -- it, so (scope, key) is unique per day here; across days the store guarantees it
  -- under the key's advisory lock (a look-up over the retention window before inserting).
  day          date        NOT NULL,
  created_at   timestamptz NOT NULL,
  operation    text        NOT NULL,
  fingerprint  text        NOT NULL,
  status       smallint    NOT NULL,
  headers      jsonb       NOT NULL,
  body         bytea       NOT NULL,
  PRIMARY KEY (scope, key, day)
) PARTITION BY RANGE (day);
`,
  },
];

export const KEY_SCHEMA_VERSION = keyMigrations[keyMigrations.length - 1]!.version;

/** Serialises the server migrations across the fleet (any constant apart from the client's). */
const MIGRATE_LOCK = 0x6f6e6366;

/**
 * Applies the server migrations the database lacks, each with its entry in
 * `oncely_server_migrations`, in one transaction under an advisory lock: safe from every
 * process at start. A database newer than this code is refused.
 */
export async function migrateKeys(db: Queryable): Promise<MigrateResult> {
  const client = isPool(db) ? await db.connect() : undefined;
  const conn: Queryable = client ?? db;
  let failed: unknown;
  try {
    await conn.query({ text: 'BEGIN' });
    await conn.query({ text: 'SELECT pg_advisory_xact_lock($1)', values: [MIGRATE_LOCK] });
    await conn.query({
      text: `CREATE TABLE IF NOT EXISTS oncely_server_migrations (
               version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    });
    const done = await conn.query({ text: 'SELECT version FROM oncely_server_migrations' });
    const have = new Set(done.rows.map((row) => Number(row.version)));
    const newest = Math.max(0, ...have);
    if (newest > KEY_SCHEMA_VERSION)
      throw new StoreError(
        `PostgresKeyStore: the database's server-key schema is version ${newest}, newer than this oncely knows (${KEY_SCHEMA_VERSION}). Upgrade oncely; nothing was changed.`,
      );
    const applied: number[] = [];
    for (const migration of keyMigrations) {
      if (have.has(migration.version)) continue;
      await conn.query({ text: migration.sql });
      await conn.query({
        text: 'INSERT INTO oncely_server_migrations (version, name) VALUES ($1, $2)',
        values: [migration.version, migration.name],
      });
      applied.push(migration.version);
    }
    await conn.query({ text: 'COMMIT' });
    return { applied, version: KEY_SCHEMA_VERSION };
  } catch (error) {
    failed = error;
    await conn.query({ text: 'ROLLBACK' }).catch(() => undefined);
    throw error;
  } finally {
    client?.release(failed instanceof Error && !(failed instanceof StoreError) ? failed : undefined);
  }
}

import { StoreError } from '../src/errors.js';
import { isPool, type Queryable } from './database.js';
import { type Migration, migrations } from './migrations.js';

export interface MigrateResult {
  /** Versions applied by this call (empty when the schema was already current). */
  applied: number[];
  /** The schema version now in the database. */
  version: number;
}

/** A numbered migration series and the table that records which of it a database has. */
export interface MigrationSeries {
  /** Who migrates, for messages: `PostgresStore`, `PostgresKeyStore`. */
  who: string;
  /** What the schema is called in messages: `oncely`, `server-key`. */
  what: string;
  /** The table of applied versions, e.g. `oncely_migrations`. */
  table: string;
  /** The advisory lock that serialises this series across the fleet (any constant of its own). */
  lock: number;
  migrations: readonly Migration[];
}

/**
 * Applies the migrations of `series` the database lacks, each in the same transaction as its
 * entry in the series' table, under an advisory lock so that replicas starting together
 * migrate once. A database at a newer version than this code knows is refused.
 */
export async function runMigrations(db: Queryable, series: MigrationSeries): Promise<MigrateResult> {
  const version = series.migrations[series.migrations.length - 1]!.version;
  const client = isPool(db) ? await db.connect() : undefined;
  const conn: Queryable = client ?? db;
  let failed: unknown;
  try {
    await conn.query({ text: 'BEGIN' });
    await conn.query({ text: 'SELECT pg_advisory_xact_lock($1)', values: [series.lock] });
    await conn.query({
      text: `CREATE TABLE IF NOT EXISTS ${series.table} (
               version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    });
    const done = await conn.query({ text: `SELECT version FROM ${series.table}` });
    const have = new Set(done.rows.map((row) => Number(row.version)));
    const newest = Math.max(0, ...have);
    if (newest > version)
      throw new StoreError(
        `${series.who}: the database's ${series.what} schema is version ${newest}, newer than this oncely knows (${version}). Upgrade oncely; nothing was changed.`,
      );
    const applied: number[] = [];
    for (const migration of series.migrations) {
      if (have.has(migration.version)) continue;
      await conn.query({ text: migration.sql });
      await conn.query({
        text: `INSERT INTO ${series.table} (version, name) VALUES ($1, $2)`,
        values: [migration.version, migration.name],
      });
      applied.push(migration.version);
    }
    await conn.query({ text: 'COMMIT' });
    return { applied, version };
  } catch (error) {
    failed = error;
    await conn.query({ text: 'ROLLBACK' }).catch(() => undefined);
    throw error;
  } finally {
    client?.release(failed instanceof Error && !(failed instanceof StoreError) ? failed : undefined);
  }
}

/** The client store's series (`oncely_migrations`). */
export function migrate(db: Queryable): Promise<MigrateResult> {
  return runMigrations(db, {
    who: 'PostgresStore',
    what: 'oncely',
    table: 'oncely_migrations',
    lock: 0x6f6e6365, // "once"
    migrations,
  });
}

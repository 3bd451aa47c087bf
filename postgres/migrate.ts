import { StoreError } from '../src/errors.js';
import { isPool, type Queryable } from './database.js';
import { migrations, SCHEMA_VERSION } from './migrations.js';

export interface MigrateResult {
  /** Versions applied by this call (empty when the schema was already current). */
  applied: number[];
  /** The schema version now in the database. */
  version: number;
}

/** Any constant: the advisory lock that serialises `migrate()` across the fleet. */
const MIGRATE_LOCK = 0x6f6e6365; // "once"

/**
 * Applies the migrations the database lacks, each in the same transaction as its entry
 * in `oncely_migrations`, under an advisory lock so that replicas starting together
 * migrate once. A database at a newer version than this code knows is refused.
 */
export async function migrate(db: Queryable): Promise<MigrateResult> {
  const client = isPool(db) ? await db.connect() : undefined;
  const conn: Queryable = client ?? db;
  let failed: unknown;
  try {
    await conn.query({ text: 'BEGIN' });
    await conn.query({ text: 'SELECT pg_advisory_xact_lock($1)', values: [MIGRATE_LOCK] });
    await conn.query({
      text: `CREATE TABLE IF NOT EXISTS oncely_migrations (
               version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    });
    const done = await conn.query({ text: 'SELECT version FROM oncely_migrations' });
    const have = new Set(done.rows.map((row) => Number(row.version)));
    const newest = Math.max(0, ...have);
    if (newest > SCHEMA_VERSION)
      throw new StoreError(
        `PostgresStore: the database's oncely schema is version ${newest}, newer than this oncely knows (${SCHEMA_VERSION}). Upgrade oncely; nothing was changed.`,
      );
    const applied: number[] = [];
    for (const migration of migrations) {
      if (have.has(migration.version)) continue;
      await conn.query({ text: migration.sql });
      await conn.query({
        text: 'INSERT INTO oncely_migrations (version, name) VALUES ($1, $2)',
        values: [migration.version, migration.name],
      });
      applied.push(migration.version);
    }
    await conn.query({ text: 'COMMIT' });
    return { applied, version: SCHEMA_VERSION };
  } catch (error) {
    failed = error;
    await conn.query({ text: 'ROLLBACK' }).catch(() => undefined);
    throw error;
  } finally {
    client?.release(failed instanceof Error && !(failed instanceof StoreError) ? failed : undefined);
  }
}

/**
 * The server half's SQL (`PostgresKeyStore`), numbered apart from the client store's
 * (`oncely_server_migrations`), so that the two evolve without sharing version numbers.
 * Partitions are not created here but by `store.maintain()` (and `migrate()`), from the
 * database's clock.
 */
import type { Queryable } from './database.js';
import { type MigrateResult, runMigrations } from './migrate.js';
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
  {
    version: 2,
    name: 'provider calls between their phases',
    sql: `
-- A key whose handler calls a provider (providerCall): written in phase 1 with the app's rows
-- and the downstream intent, deleted in phase 3 with the key's answer. Only unfinished calls.
CREATE TABLE oncely_server_calls (
  scope        text        NOT NULL,
  key          text        NOT NULL,
  operation    text        NOT NULL,
  fingerprint  text        NOT NULL,
  intent       text        NOT NULL,
  intent_key   text        NOT NULL,
  state        jsonb,
  review       boolean     NOT NULL DEFAULT false,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (scope, key)
);
CREATE INDEX oncely_server_calls_review ON oncely_server_calls (created_at) WHERE review;
`,
  },
];

export const KEY_SCHEMA_VERSION = keyMigrations[keyMigrations.length - 1]!.version;

/**
 * Applies the server migrations the database lacks, each with its entry in
 * `oncely_server_migrations`, in one transaction under an advisory lock: safe from every
 * process at start. A database newer than this code is refused.
 */
export function migrateKeys(db: Queryable): Promise<MigrateResult> {
  return runMigrations(db, {
    who: 'PostgresKeyStore',
    what: 'server-key',
    table: 'oncely_server_migrations',
    lock: 0x6f6e6366, // apart from the client series' lock
    migrations: keyMigrations,
  });
}

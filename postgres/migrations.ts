/**
 * The SQL oncely needs in PostgreSQL, as numbered migrations. `store.migrate()` applies
 * them; apps with their own migration tool can take `migrations[i].sql` verbatim instead
 * (then insert the applied versions into `oncely_migrations` so `migrate()` agrees).
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: 'intents',
    sql: `
CREATE TABLE oncely_intents (
  scope         text    NOT NULL,
  name          text    NOT NULL,
  key           text    NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
  state         text    NOT NULL CHECK (state IN ('ready', 'in_flight', 'succeeded', 'failed', 'unknown')),
  fingerprint   text,
  attempts      integer NOT NULL CHECK (attempts >= 0),
  created_at    bigint  NOT NULL,
  updated_at    bigint  NOT NULL,
  ttl           bigint  CHECK (ttl >= 0),
  status        integer,
  lease_owner   text,
  lease_until   bigint,
  -- Bumped by every update: the compare-and-set token.
  version       bigint  NOT NULL DEFAULT 1,
  -- When a settled or never-sent record may be swept (its own ttl, 24 h for 0.1.0 records).
  sweep_after   bigint  GENERATED ALWAYS AS (updated_at + coalesce(ttl, 86400000)) STORED,
  -- The worker queue's own lease (who is re-issuing it), apart from the engine's attempt lease.
  worker_owner  text,
  worker_until  bigint,
  PRIMARY KEY (scope, name),
  UNIQUE (scope, key),
  CHECK ((lease_owner IS NULL) = (lease_until IS NULL))
);
-- Bounded sweeps walk this index oldest-first and stop at the first row not yet due.
CREATE INDEX oncely_intents_sweep ON oncely_intents (scope, sweep_after)
  WHERE state IN ('succeeded', 'failed', 'ready');
-- The worker finds pending intents without reading settled ones.
CREATE INDEX oncely_intents_pending ON oncely_intents (scope, updated_at)
  WHERE state IN ('ready', 'in_flight', 'unknown');
`,
  },
];

/** The newest schema version this code knows. */
export const SCHEMA_VERSION = migrations[migrations.length - 1]!.version;

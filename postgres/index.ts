/**
 * `oncely/postgres`: intents in the app's PostgreSQL, for fleets. The store, its
 * migrations, and the outbox worker that resumes and reconciles pending intents.
 * Needs the `pg` driver (an optional peer dependency); nothing here imports it.
 */
export type { PoolLike, Queryable, QueryConfig, QueryResultLike } from './database.js';
export { checkKeyInvariant, type InvariantOptions, type InvariantReport } from './key-invariant.js';
export { KEY_SCHEMA_VERSION, keyMigrations } from './key-migrations.js';
export {
  type KeyStorePool,
  type PooledConnection,
  PostgresKeyStore,
  type PostgresKeyStoreOptions,
} from './key-store.js';
export type { MigrateResult } from './migrate.js';
export { type Migration, migrations, SCHEMA_VERSION } from './migrations.js';
export {
  extendPending,
  isExpired,
  type PendingIntent,
  releasePending,
  type TakePendingOptions,
  takePending,
} from './pending.js';
export { PostgresStore, type PostgresStoreOptions } from './postgres-store.js';
export {
  type CallContext,
  type CallInReview,
  callsInReview,
  downstreamIntent,
  type ProviderCallOptions,
  type ProviderOutcome,
  providerCall,
} from './provider-call.js';
export {
  checkProviderInvariant,
  type ProviderInvariantOptions,
  type ProviderInvariantReport,
} from './provider-invariant.js';
export { type SettleOptions, settleIntent } from './reconcile.js';
export { type DrainReport, drainOnce, startWorker, type Worker, type WorkerOptions } from './worker.js';

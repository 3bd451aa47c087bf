/**
 * `oncely/node`: everything in `oncely`, with a `createClient` that defaults to the
 * SQLite store, plus that store itself and the contract server over node:http.
 */
export * from './default.js';
export { type ListeningContractServer, type ListenOptions, listenContractServer } from './mock-server.js';
export { SQLITE_KEY_SCHEMA_VERSION, type SqliteKeyMigration, sqliteKeyMigrations } from './sqlite-key-migrations.js';
export {
  openSqliteKeyStore,
  type SqliteInvariantOptions,
  type SqliteInvariantReport,
  SqliteKeyStore,
  type SqliteKeyStoreOptions,
  type SqliteTransaction,
  type SqlParameters,
} from './sqlite-key-store.js';
export {
  openSqliteStore,
  type QuarantinedRecord,
  SqliteStore,
  type SqliteStoreOptions,
  StoreFileError,
  type StoreFileProblem,
} from './sqlite-store.js';
export { defaultStateDir } from './state-dir.js';

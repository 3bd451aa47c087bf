/** The public types of `SqliteKeyStore`: its options, the handler's transaction, the invariant report. */
import type { DatabaseSync, SQLInputValue, SQLOutputValue, StatementResultingChanges } from 'node:sqlite';

/** Positional values, or named ones (`{ $amount: 1 }`) then positional ones. */
export type SqlParameters = SQLInputValue[] | [Record<string, SQLInputValue>, ...SQLInputValue[]];

/**
 * What a handler receives: statements in the transaction that holds the key, on the store's
 * connection to the app's file. Valid until the handler returns (later calls throw);
 * `BEGIN`, `COMMIT`, `END` and `ROLLBACK` are the store's and refused (savepoints are fine).
 * @example tx.run('INSERT INTO ledger (key, amount) VALUES (?, ?)', key, amount);
 */
export interface SqliteTransaction {
  /** Runs one statement; `changes` and `lastInsertRowid` as `node:sqlite` gives them. */
  run(sql: string, ...params: SqlParameters): StatementResultingChanges;
  /** The first row of one statement (`INSERT … RETURNING` included), or `undefined`. */
  get<T = Record<string, SQLOutputValue>>(sql: string, ...params: SqlParameters): T | undefined;
  /** Every row of one statement. */
  all<T = Record<string, SQLOutputValue>>(sql: string, ...params: SqlParameters): T[];
  /** Runs SQL without parameters (several statements allowed), e.g. DDL. */
  exec(sql: string): void;
}

export interface SqliteKeyStoreOptions {
  /**
   * The app's database file: the handlers write their own tables in it, in the key's
   * transaction. Created if missing (and its directory). Not `:memory:`.
   * @example new SqliteKeyStore({ file: '/var/lib/shop/shop.db' })
   */
  file: string;
  /**
   * How long a key is remembered, from its commit; after that it is new and a retry runs
   * again. At least 24 h, and never less than the clients' `keyTtl`.
   * @default 86_400_000 (24 h)
   */
  retentionMs?: number;
  /**
   * How long (ms) a transaction waits for another connection's write lock (another
   * process, or the app's own connection), retrying from a timer, before the request fails
   * with a `StoreError` (nothing ran).
   * @default 5_000
   */
  lockTimeout?: number;
  /**
   * Longest a handler may hold the transaction (ms): past it the transaction is rolled back
   * (nothing happened, the key is free), the request fails with a `StoreError`, and the
   * handler's later statements throw. Every write of this process waits behind it meanwhile.
   * @default 30_000
   */
  transactionTimeout?: number;
  /**
   * Whether `execute` starts `maintain()` in the background once an hour. `false`: schedule
   * `maintain()` yourself.
   * @default true
   */
  autoMaintain?: boolean;
  /** Keys deleted per transaction by `maintain()`. @default 500 */
  maintainBatch?: number;
  /** Called with a background maintenance failure (retried an hour later). @default ignore */
  onMaintenanceError?: (error: unknown) => void;
  /**
   * Called once with the store's write connection when it opens, outside any transaction:
   * per-connection settings the handlers' statements need. Do not keep the connection.
   * @example setup: (db) => db.exec('PRAGMA foreign_keys = ON')
   */
  setup?: (connection: DatabaseSync) => void;
}

export interface SqliteInvariantOptions {
  /** The operation the keys were bound to, e.g. `POST /payments`. */
  operation: string;
  /**
   * SQL that counts the effects in the window, as one number in the first column; its one
   * parameter `?` is the window's start in ms since the epoch (the keys' `created_at` unit).
   * @example "SELECT count(*) FROM ledger WHERE created_at > ?"
   */
  effectsSql: string;
  /** The window, in ms, inside retention. @default 82_800_000 (23 h) */
  windowMs?: number;
  /** Which stored answers count as an effect. @default status 200–299 */
  statuses?: [number, number];
}

/** Effects against the keys that committed them; `drift` above 0 is an effect without its key. */
export interface SqliteInvariantReport {
  operation: string;
  keys: number;
  effects: number;
  drift: number;
}

/**
 * What oncely needs from a PostgreSQL driver, structurally: `pg`'s `Pool`, `PoolClient`
 * and `Client` fit. Nothing here imports `pg`, so the driver stays the app's choice of
 * version and the only copy in the process.
 */
import { OncelyError, StoreError } from '../src/errors.js';

export interface QueryConfig {
  text: string;
  values?: unknown[];
  /** A prepared-statement name: `pg` prepares it once per connection. */
  name?: string;
}

export interface QueryResultLike {
  // biome-ignore lint/suspicious/noExplicitAny: rows are whatever the driver parsed; rows.ts reads them field by field.
  rows: any[];
  rowCount: number | null;
}

/** A `pg` `Pool`, `PoolClient` or `Client`. */
export interface Queryable {
  query(config: QueryConfig): Promise<QueryResultLike>;
}

/** A `pg` `Pool`: hands out one connection for a transaction. */
export interface PoolLike extends Queryable {
  connect(): Promise<Queryable & { release(error?: Error | boolean): void }>;
}

/** A pool hands out clients; a `Client` and a `PoolClient` have `connect` too, but no counts. */
export const isPool = (db: Queryable): db is PoolLike =>
  typeof (db as Partial<PoolLike>).connect === 'function' &&
  typeof (db as { totalCount?: unknown }).totalCount === 'number';

/** SQLSTATE of a missing table: the schema was never migrated. */
const UNDEFINED_TABLE = '42P01';
/** A named statement missing on, or already prepared on, the server connection: a pooler in transaction mode. */
const PREPARED_ELSEWHERE = ['26000', '42P05'];

/** Any failure of the database as a `StoreError` (with `cause`); oncely's own errors pass through. */
export function toStoreError(error: unknown, what: string, context: { scope?: string; intent?: string }): OncelyError {
  if (error instanceof OncelyError) return error;
  const code = (error as { code?: unknown } | undefined)?.code;
  const message =
    code === UNDEFINED_TABLE
      ? `PostgresStore: the oncely tables do not exist in this database; run \`await store.migrate()\` (or apply the shipped migrations) first.`
      : `PostgresStore could not ${what}: ${(error as Error | undefined)?.message ?? String(error)}.${
          PREPARED_ELSEWHERE.includes(code as string)
            ? ' Behind a pooler in transaction mode (PgBouncer), make the store with `preparedStatements: false`.'
            : ''
        }`;
  return new StoreError(message, { ...context, cause: error });
}

/**
 * `db.query(config)`, bounded: a failure becomes a `StoreError` (`toStoreError`), and no
 * answer within `ms` a `StoreError` that says so (the query may still complete). One
 * promise and one timer per statement: it runs for every write.
 */
export function boundedQuery(
  db: Queryable,
  config: QueryConfig,
  ms: number,
  what: string,
  context: { scope?: string; intent?: string },
): Promise<QueryResultLike> {
  let running: Promise<QueryResultLike>;
  try {
    running = Promise.resolve(db.query(config)); // the same promise when it is one
  } catch (error) {
    return Promise.reject(toStoreError(error, what, context));
  }
  if (!Number.isFinite(ms)) return running.catch((error) => Promise.reject(toStoreError(error, what, context)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new StoreError(`PostgresStore did not ${what} within ${ms} ms; the database did not answer.`)),
      ms,
    );
    running.then(
      (result) => {
        clearTimeout(timer);
        resolve(result);
      },
      (error) => {
        clearTimeout(timer);
        reject(toStoreError(error, what, context));
      },
    );
  });
}

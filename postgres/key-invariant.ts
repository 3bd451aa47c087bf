/**
 * The daily invariant of the seeds: effects recorded = distinct keys that committed them,
 * per operation, over a window. The app says how to count its effects; both counts are read
 * in one snapshot, from the database's clock.
 */
import { InvalidArgumentError, StoreError } from '../src/errors.js';
import { isPool, type Queryable } from './database.js';

export interface InvariantOptions {
  /** The operation the keys were bound to, e.g. `POST /api/payments`. */
  operation: string;
  /**
   * SQL that counts the effects in the window, as one number in the first column; `$1` is
   * the window's start (timestamptz). With the effect's own `created_at DEFAULT now()`,
   * an effect and its key share the transaction's timestamp, so the window cuts both alike.
   * @example "SELECT count(*) FROM payments WHERE created_at > $1"
   */
  effectsSql: string;
  /** The window, a PostgreSQL interval inside retention. @default '23 hours' */
  window?: string;
  /** Which stored answers count as an effect. @default status 200–299 */
  statuses?: [number, number];
}

export interface InvariantReport {
  operation: string;
  /** Keys committed for the operation in the window (with a status in `statuses`). */
  keys: number;
  effects: number;
  /** `effects - keys`: above 0, an effect without its key (a duplicate, or written outside the key's transaction). */
  drift: number;
}

/**
 * Counts both sides in one REPEATABLE READ snapshot. Schedule it; page on `drift !== 0`.
 *
 * @example
 * const report = await checkKeyInvariant(pool, { operation: 'POST /api/payments', effectsSql: 'SELECT count(*) FROM payments WHERE created_at > $1' });
 */
export async function checkKeyInvariant(db: Queryable, options: InvariantOptions): Promise<InvariantReport> {
  if (typeof options?.operation !== 'string' || typeof options.effectsSql !== 'string')
    throw new InvalidArgumentError('checkKeyInvariant needs an `operation` and an `effectsSql`.');
  const [low, high] = options.statuses ?? [200, 299];
  const client = isPool(db) ? await db.connect() : undefined;
  const conn: Queryable = client ?? db;
  try {
    await conn.query({ text: 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY' });
    const window = await conn.query({
      text: 'SELECT (now() - $1::interval)::text AS since',
      values: [options.window ?? '23 hours'],
    });
    const since = window.rows[0].since;
    const keys = await conn.query({
      text: `SELECT count(*)::bigint AS n FROM oncely_server_keys
              WHERE operation = $1 AND status BETWEEN $2 AND $3 AND created_at > $4::timestamptz`,
      values: [options.operation, low, high, since],
    });
    const effects = await conn.query({ text: options.effectsSql, values: [since] });
    await conn.query({ text: 'COMMIT' });
    const count = (value: unknown) => Number(value);
    const report = {
      operation: options.operation,
      keys: count(keys.rows[0].n),
      effects: count(Object.values(effects.rows[0] ?? { n: 0 })[0]),
    };
    return { ...report, drift: report.effects - report.keys };
  } catch (error) {
    await conn.query({ text: 'ROLLBACK' }).catch(() => undefined);
    throw new StoreError(`checkKeyInvariant could not count: ${(error as Error)?.message ?? String(error)}.`, {
      cause: error,
    });
  } finally {
    client?.release();
  }
}

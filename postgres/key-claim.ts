/**
 * The statements of a claim on `oncely_server_keys`, shared by `PostgresKeyStore.execute`
 * (its own transaction) and `executeIn` (a transaction the app opened): the advisory locks
 * with the look-up over the retention window (one round trip), the decision, and the key
 * row's insert (sent with what follows it: the COMMIT, or the savepoint's release).
 *
 * Values go in as escaped SQL literals, not parameters: several statements in one message
 * take the simple protocol only, which has none.
 */
import { StoreError } from '../src/errors.js';
import { sha256 } from '../src/intent/sha256.js';
import type { Execution, KeyClaim, StoredAnswer } from '../src/server/store.js';
import type { Queryable } from './database.js';

/** Signed 64-bit integer (as a decimal string) from the first 16 hex digits of a SHA-256. */
const int64 = (hex: string): string => BigInt.asIntN(64, BigInt(`0x${hex.slice(0, 16)}`)).toString();
const int32 = (hex: string): number => Number.parseInt(hex, 16) | 0;

/** The advisory lock keys of a claim: K on the key, F on the key with its request. */
export function lockKeys(claim: KeyClaim): { key: string; request: [number, number] } {
  const k = sha256(JSON.stringify([claim.scope, claim.key]));
  const f = sha256(JSON.stringify([claim.scope, claim.key, claim.operation, claim.fingerprint]));
  return { key: int64(k), request: [int32(f.slice(0, 8)), int32(f.slice(8, 16))] };
}

/**
 * A string as a SQL literal, escaped as `pg`'s `escapeLiteral` does (quotes doubled; with a
 * backslash, an `E''` string with it doubled): a constant the planner sees, safe whatever
 * `standard_conforming_strings` says. NUL cannot be in a PostgreSQL string (nor in a query).
 */
function literal(value: string): string {
  // Thrown as the database would refuse it: the store makes it a StoreError, nothing run.
  if (value.includes('\0')) throw new Error('a PostgreSQL string cannot hold NUL (0x00)');
  const quoted = `'${value.replaceAll("'", "''")}'`;
  return value.includes('\\') ? ` E${quoted.replaceAll('\\', '\\\\')}` : quoted;
}
const bytes = (value: Uint8Array): string =>
  `decode('${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex')}', 'hex')`;

/** The error a key row that was not inserted raises, so that nothing sent after it runs. */
const NOT_INSERTED = 'oncely: the key row was not inserted';

/** The UTC days a window covers, as the database's clock gives them (`YYYY-MM-DD`). */
export interface Days {
  first: string;
  today: string;
}

/** The window's days from the database's clock, in SQL. */
const FIRST_DAY = (retention: string) => `((now() - interval '${retention}') AT TIME ZONE 'UTC')::date`;
const TODAY = `(now() AT TIME ZONE 'UTC')::date`;

/**
 * The window: the key's rows newer than retention, in the day partitions it covers. With its
 * days known (`days`), the planner prunes the other partitions when it plans the statement;
 * without, when it starts.
 */
const windowOf = (
  claim: KeyClaim,
  retention: string,
  days: Days | undefined,
): string => `scope = ${literal(claim.scope)}
  AND key = ${literal(claim.key)}
  AND day BETWEEN ${days ? `'${days.first}'::date AND '${days.today}'::date` : `${FIRST_DAY(retention)} AND ${TODAY}`}
  AND created_at > now() - interval '${retention}'`;

interface Row {
  operation: string;
  fingerprint: string;
  status: number;
  headers: [string, string][];
  body: Uint8Array;
}

export interface Looked {
  /** `claimed`: this transaction holds K; `same`: the same request holds it; `other`: another does. */
  hold: 'claimed' | 'other' | 'same';
  /** The key's committed row in the window, if any. */
  row: Row | undefined;
  /** The window's days, from the database's clock in this transaction. */
  window: Days;
  /** `transaction_isolation` of the transaction the statements ran in. */
  isolation: string;
}

/**
 * Tries the locks (never waiting) and looks the key up, in one round trip: `prefix` first
 * (`BEGIN …`, or a `SAVEPOINT` in the app's transaction), then the try-locks, then the
 * look-up — each statement with a snapshot of its own (READ COMMITTED), the look-up's taken
 * after the locks: it sees every commit of a holder the locks found gone. The look-up is
 * pruned to `days` (the last request's); the lock statement reads them from the database's
 * clock, and when they changed (a new day) the look-up is redone over the fresh ones.
 */
export async function lockAndLookUp(
  conn: Queryable,
  claim: KeyClaim,
  retention: string,
  prefix: string,
  days: Days | undefined,
): Promise<Looked> {
  const locks = lockKeys(claim);
  const lookUp = (window: Days | undefined) => `SELECT operation, fingerprint, status, headers, body
      FROM oncely_server_keys WHERE ${windowOf(claim, retention, window)} ORDER BY created_at DESC LIMIT 1`;
  const results = (await conn.query({
    text: `${prefix};
           SELECT CASE WHEN pg_try_advisory_xact_lock(${locks.request[0]}, ${locks.request[1]})
             THEN CASE WHEN pg_try_advisory_xact_lock(${locks.key}) THEN 'claimed' ELSE 'other' END
             ELSE 'same' END AS hold,
             to_char(${FIRST_DAY(retention)}, 'YYYY-MM-DD') AS first, to_char(${TODAY}, 'YYYY-MM-DD') AS today,
             current_setting('transaction_isolation') AS isolation;
           ${lookUp(days)}`,
  })) as unknown as { rows: unknown[] }[];
  const held = results[results.length - 2]!.rows[0] as { hold: Looked['hold']; isolation: string } & Days;
  const window = { first: held.first, today: held.today };
  let row = results[results.length - 1]!.rows[0] as Row | undefined;
  if (days && (days.first !== window.first || days.today !== window.today))
    row = (await conn.query({ text: lookUp(window) })).rows[0] as Row | undefined;
  return { hold: held.hold, row, window, isolation: held.isolation };
}

/** What a look-up decides without running anything; `undefined` when this transaction holds the key to run it. */
export function decided({ hold, row }: Looked, claim: KeyClaim): Execution | undefined {
  if (row) {
    if (row.operation !== claim.operation || row.fingerprint !== claim.fingerprint) return { outcome: 'mismatch' };
    return {
      outcome: 'replayed',
      answer: { status: row.status, headers: row.headers, body: new Uint8Array(row.body) },
    };
  }
  if (hold === 'claimed') return undefined;
  // Not committed: the same request runs (409), or another one does (422).
  return { outcome: hold === 'same' ? 'in_progress' : 'mismatch' };
}

/**
 * Inserts the key row with its answer, then runs `then` (`COMMIT`, or `RELEASE SAVEPOINT …`)
 * in the same round trip. The insert re-checks the window, so that a writer that bypassed
 * the lock cannot make a second row; an insert of no row fails its statement, so `then`
 * never runs — thrown as a StoreError.
 */
export async function insertKey(
  conn: Queryable,
  looked: Looked,
  claim: KeyClaim,
  retention: string,
  answer: StoredAnswer,
  then: string,
): Promise<void> {
  if (!Number.isInteger(answer?.status) || !(answer.body instanceof Uint8Array))
    throw new StoreError('PostgresKeyStore: the work answered something that is not a stored answer.');
  const text = `WITH inserted AS (
                 INSERT INTO oncely_server_keys (scope, key, day, created_at, operation, fingerprint, status, headers, body)
                 SELECT ${literal(claim.scope)}, ${literal(claim.key)}, ${TODAY}, now(),
                        ${literal(claim.operation)}, ${literal(claim.fingerprint)}, ${answer.status},
                        ${literal(JSON.stringify(answer.headers))}::jsonb, ${bytes(answer.body)}
                  WHERE NOT EXISTS (SELECT 1 FROM oncely_server_keys WHERE ${windowOf(claim, retention, looked.window)})
                 ON CONFLICT DO NOTHING RETURNING 1)
               SELECT CASE WHEN (SELECT count(*) FROM inserted) = 1 THEN 1
                 ELSE ('${NOT_INSERTED}: ' || (SELECT count(*) FROM inserted))::int END AS inserted;
               ${then}`;
  try {
    await conn.query({ text });
  } catch (error) {
    if (String((error as Error)?.message ?? error).includes(NOT_INSERTED))
      throw new StoreError(
        'PostgresKeyStore: the key was committed by a transaction that did not hold its advisory lock (another writer of oncely_server_keys?); this one is rolled back.',
        { scope: claim.scope, cause: error },
      );
    throw error;
  }
}

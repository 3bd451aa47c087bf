/**
 * The statements of a claim on `oncely_server_keys`, shared by `PostgresKeyStore.execute`
 * (its own transaction) and `executeIn` (a transaction the app opened): the advisory locks
 * and the look-up over the retention window, the decision, and the key row's insert.
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
 * The window: rows newer than retention, in the days it covers. The days come as parameters
 * (from the database's clock, read in the lock statement) so that the planner prunes the
 * other partitions when it plans the statement, not row by row.
 */
const LIVE = `scope = $1 AND key = $2
  AND day BETWEEN $3::date AND $4::date
  AND created_at > now() - $5::interval`;

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
  /** The look-up's parameters, for the insert. */
  live: unknown[];
  /** `transaction_isolation` of the transaction the statements ran in. */
  isolation: string;
}

/**
 * Tries the locks (never waiting) and looks the key up. `prefix` runs first in the same
 * round trip (`BEGIN …`, or a `SAVEPOINT` in the app's transaction): one simple-protocol
 * query, so no parameters — the lock keys are integers and retention an interval literal.
 */
export async function lockAndLookUp(
  conn: Queryable,
  claim: KeyClaim,
  retention: string,
  prefix: string,
): Promise<Looked> {
  const locks = lockKeys(claim);
  const results = (await conn.query({
    text: `${prefix};
           SELECT CASE WHEN pg_try_advisory_xact_lock(${locks.request[0]}, ${locks.request[1]})
             THEN CASE WHEN pg_try_advisory_xact_lock(${locks.key}) THEN 'claimed' ELSE 'other' END
             ELSE 'same' END AS hold,
             to_char(((now() - interval '${retention}') AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS first_day,
             to_char((now() AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS today,
             current_setting('transaction_isolation') AS isolation`,
  })) as unknown as { rows: { hold: Looked['hold']; first_day: string; today: string; isolation: string }[] }[];
  const { hold, first_day: firstDay, today, isolation } = results[results.length - 1]!.rows[0]!;
  const live = [claim.scope, claim.key, firstDay, today, retention];
  const found = await conn.query({
    text: `SELECT operation, fingerprint, status, headers, body FROM oncely_server_keys
            WHERE ${LIVE} ORDER BY created_at DESC LIMIT 1`,
    values: live,
  });
  return { hold, row: found.rows[0] as Row | undefined, live, isolation };
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

/** Inserts the key row with its answer; re-checks the window, so a writer that bypassed the lock cannot make a second row. */
export async function insertKey(conn: Queryable, looked: Looked, claim: KeyClaim, answer: StoredAnswer): Promise<void> {
  const inserted = await conn.query({
    text: `INSERT INTO oncely_server_keys (scope, key, day, created_at, operation, fingerprint, status, headers, body)
           SELECT $1, $2, $4::date, now(), $6, $7, $8, $9, $10
            WHERE NOT EXISTS (SELECT 1 FROM oncely_server_keys WHERE ${LIVE})
           ON CONFLICT DO NOTHING`,
    values: [
      ...looked.live,
      claim.operation,
      claim.fingerprint,
      answer.status,
      JSON.stringify(answer.headers),
      answer.body,
    ],
  });
  if (inserted.rowCount !== 1)
    throw new StoreError(
      'PostgresKeyStore: the key was committed by a transaction that did not hold its advisory lock (another writer of oncely_server_keys?); this one is rolled back.',
    );
}

/**
 * The write statements of `PostgresStore`, each built once at load: a call picks its text and
 * name from here and only makes its values (the text of a named statement is compared with
 * the one prepared on the connection, so the same string each time also spares that).
 */
import { RECORD_COLUMNS } from './rows.js';

/**
 * How long one statement waits for a row lock (ms) before it gives up (55P03): a row held
 * by an open transaction (the app's uncommitted claim, a worker's FOR UPDATE) must not hold
 * a write slot, nor, in a group, the unrelated writes grouped with it. Set for the
 * statement's own transaction from an InitPlan, which runs before it takes its first row lock.
 */
export const LOCK_WAIT_MS = 200;
export const LOCK_WAIT = `(SELECT set_config('lock_timeout', '${LOCK_WAIT_MS}ms', true)) IS NOT NULL`;
/**
 * How long a try after a row was found held waits for it (ms). The pauses between tries do
 * the waiting, with no slot and no connection held; a long wait here would fill the slots.
 */
export const HELD_LOCK_WAIT_MS = 50;
const HELD_LOCK_WAIT = LOCK_WAIT.replace(`'${LOCK_WAIT_MS}ms'`, `'${HELD_LOCK_WAIT_MS}ms'`);
/** Makes the statement's own transaction commit without waiting for the WAL flush. */
export const RELAXED = `set_config('synchronous_commit', 'off', true)`;

export interface Statement {
  name: string;
  text: string;
}

/** The statement for a try after a held row: the same, with the shorter lock wait (and its own name). */
export const afterHeld = <T extends { text: string; name?: string }>(config: T): T => ({
  ...config,
  text: config.text.replace(LOCK_WAIT, HELD_LOCK_WAIT),
  ...(config.name !== undefined && { name: `${config.name}_held` }),
});

const VALUES = '$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12';
/** $1…$12 typed as their columns, for an `INSERT … SELECT` (whose WHERE bounds its lock wait). */
const TYPED_VALUES =
  '$1::text, $2::text, $3::text, $4::text, $5::text, $6::integer, $7::bigint, $8::bigint, $9::bigint, $10::integer, $11::text, $12::bigint';
const SET =
  'key = $3, state = $4, fingerprint = $5, attempts = $6, created_at = $7, updated_at = $8, ttl = $9, status = $10, lease_owner = $11, lease_until = $12';
const INSERT_COLUMNS = RECORD_COLUMNS.replace(', version', '');

// Through the pool, a claim waits at most LOCK_WAIT_MS for a row another transaction holds
// (the app's uncommitted claim of the same intent), then tries again outside its write slot.
// In the app's own transaction it sets nothing: that transaction's settings are the app's.
const insertSql = (relaxed: boolean, inAppTransaction = false) =>
  `INSERT INTO oncely_intents (${INSERT_COLUMNS}) ${
    inAppTransaction ? `VALUES (${VALUES})` : `SELECT ${TYPED_VALUES} WHERE ${LOCK_WAIT}`
  }
   ON CONFLICT (scope, name) DO NOTHING RETURNING version${relaxed ? `, ${RELAXED}` : ''}`;
// The version alone does not name a row: one rolled back, or deleted and formed again,
// starts again at 1. The key and creation time of the row the updater saw say which one it was.
const casSql = (relaxed: boolean) =>
  `UPDATE oncely_intents SET ${SET}, version = version + 1
   WHERE scope = $1 AND name = $2 AND version = $13 AND key = $14 AND created_at = $15 AND ${LOCK_WAIT}
   RETURNING version${relaxed ? `, ${RELAXED}` : ''}`;

const COLUMNS =
  'scope text, name text, key text, state text, fingerprint text, attempts integer, created_at bigint, updated_at bigint, ttl bigint, status integer, lease_owner text, lease_until bigint';
const NAMES =
  'scope, name, key, state, fingerprint, attempts, created_at, updated_at, ttl, status, lease_owner, lease_until';

/**
 * The rows travel as one JSON parameter (any driver passes text; no array encoding),
 * sorted by (scope, name). Groups lock rows in one order, so two (two machines) never wait
 * for each other in a cycle: an insert in the JSON's order; a compare-and-set locks its rows
 * first, in primary-key order, as its UPDATE's join locks them in the order its plan reads
 * the table (a hash join over a sequential scan: where each row's current version lies).
 */
function groupSql(kind: 'insert' | 'cas', relaxed: boolean): string {
  const returning = `RETURNING t.scope, t.name, t.version${relaxed ? `, ${RELAXED}` : ''}`;
  if (kind === 'insert')
    return `INSERT INTO oncely_intents AS t (${NAMES})
            SELECT ${NAMES} FROM json_to_recordset($1::json) AS v(${COLUMNS}) WHERE ${LOCK_WAIT}
            ON CONFLICT (scope, name) DO NOTHING ${returning}`;
  // The identity (key, created_at) and version each write saw, as in the single compare-and-set.
  // A sub-SELECT per row, over the rows sorted first, locks in that order whatever the plan;
  // the UPDATE then writes only rows the statement already holds (`locked`): it never waits.
  return `WITH v AS MATERIALIZED (
            SELECT j.*, (SELECT true FROM oncely_intents l
                         WHERE l.scope = j.scope AND l.name = j.name AND l.version = j.seen_version
                           AND l.key = j.seen_key AND l.created_at = j.seen_created_at
                         FOR NO KEY UPDATE) AS locked
            FROM (SELECT * FROM json_to_recordset($1::json)
                    AS j(${COLUMNS}, seen_version bigint, seen_key text, seen_created_at bigint)
                  WHERE ${LOCK_WAIT} ORDER BY scope, name) j)
          UPDATE oncely_intents t SET key = v.key, state = v.state, fingerprint = v.fingerprint,
            attempts = v.attempts, created_at = v.created_at, updated_at = v.updated_at, ttl = v.ttl,
            status = v.status, lease_owner = v.lease_owner, lease_until = v.lease_until, version = t.version + 1
          FROM v WHERE v.locked AND t.scope = v.scope AND t.name = v.name AND t.version = v.seen_version
            AND t.key = v.seen_key AND t.created_at = v.seen_created_at
          ${returning}`;
}

/** A write's statements: alone, in a group, and each after a held row. */
export interface WriteStatements {
  single: Statement;
  singleHeld: Statement;
  group: Statement;
  groupHeld: Statement;
}

const writeStatements = (kind: 'insert' | 'cas', relaxed: boolean): WriteStatements => {
  const suffix = relaxed ? '_relaxed' : '';
  const single = {
    name: `${kind === 'insert' ? 'oncely_claim' : 'oncely_cas'}${suffix}`,
    text: kind === 'insert' ? insertSql(relaxed) : casSql(relaxed),
  };
  const group = { name: `oncely_group_${kind}${suffix}`, text: groupSql(kind, relaxed) };
  return { single, singleHeld: afterHeld(single), group, groupHeld: afterHeld(group) };
};

/** By kind, then strict (`[0]`) or relaxed (`[1]`). */
export const WRITES = {
  insert: [writeStatements('insert', false), writeStatements('insert', true)],
  cas: [writeStatements('cas', false), writeStatements('cas', true)],
} as const;

/** A claim inside the app's transaction: its plain INSERT, the app's settings untouched. */
export const CLAIM_IN_TRANSACTION: Statement = {
  name: 'oncely_claim_in_transaction',
  text: insertSql(false, true),
};

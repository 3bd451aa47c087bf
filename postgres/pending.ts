/**
 * The worker queue over `oncely_intents`: pending intents handed out under a worker lease
 * (`worker_owner`, `worker_until`), apart from the record's own attempt `lease`, which the
 * engine writes when it sends. Taking one is a single `UPDATE … FOR UPDATE SKIP LOCKED`
 * statement: two workers never hold one intent, and no transaction stays open while the
 * app re-issues the request.
 */
import { InvalidArgumentError } from '../src/errors.js';
import { recordTtl } from '../src/store/record-rules.js';
import type { IntentRecord } from '../src/store/store.js';
import type { PostgresStore } from './postgres-store.js';
import { fromRow, RECORD_COLUMNS } from './rows.js';

export interface TakePendingOptions {
  /** Who takes them (a random id per worker process). */
  owner: string;
  /** Most intents taken. @default 16 */
  limit?: number;
  /** How long (ms) the worker lease lasts unless extended. @default 30_000 */
  leaseMs?: number;
  /**
   * How long (ms) a `ready` intent, or an `in_flight` / `unknown` one without an attempt
   * lease, must sit untouched before a worker takes it: the process that formed it
   * usually sends it itself right after its transaction commits.
   * @default 30_000
   */
  idleAfter?: number;
  /** @default Date.now() */
  now?: number;
}

export interface PendingIntent {
  record: IntentRecord;
  /**
   * Sent, outcome unknown, key past its retention: the server may have forgotten it, so
   * it must not be resent. Reconcile it with the provider and settle it.
   */
  expired: boolean;
}

const PENDING = `state IN ('ready', 'in_flight', 'unknown')`;
// The attempt lease decides when one is set; otherwise the record must have sat idle.
const DUE = `(worker_until IS NULL OR worker_until < $4)
  AND CASE WHEN lease_until IS NOT NULL THEN lease_until < $4 ELSE updated_at <= $5 END`;

/** True when a sent intent's key is past its own retention at `now`. */
export const isExpired = (record: IntentRecord, now: number): boolean =>
  record.state !== 'ready' && record.createdAt + recordTtl(record) < now;

/** Takes up to `limit` pending intents of `scope` under a worker lease, oldest first. */
export async function takePending(
  store: PostgresStore,
  scope: string,
  options: TakePendingOptions,
): Promise<PendingIntent[]> {
  const now = options.now ?? Date.now();
  const limit = options.limit ?? 16;
  if (!(Number.isSafeInteger(limit) && limit > 0)) throw new InvalidArgumentError('limit must be a positive integer.');
  const result = await store.query(
    {
      name: 'oncely_take_pending',
      // A materialised CTE runs once: an IN (subquery … LIMIT) may be re-run by a join and take more.
      text: `WITH due AS MATERIALIZED (
               SELECT name FROM oncely_intents WHERE scope = $1 AND ${PENDING} AND ${DUE}
               ORDER BY updated_at LIMIT $6 FOR UPDATE SKIP LOCKED)
             UPDATE oncely_intents t SET worker_owner = $2, worker_until = $3
             FROM due WHERE t.scope = $1 AND t.name = due.name
             RETURNING ${RECORD_COLUMNS.split(', ')
               .map((column) => `t.${column}`)
               .join(', ')}`,
      values: [
        scope,
        options.owner,
        now + (options.leaseMs ?? 30_000),
        now,
        now - (options.idleAfter ?? 30_000),
        limit,
      ],
    },
    'take pending intents',
    { scope },
  );
  return result.rows.map((row) => {
    const { record } = fromRow(row);
    return { record, expired: isExpired(record, now) };
  });
}

/** Extends the worker lease; false when `owner` no longer holds it. */
export async function extendPending(
  store: PostgresStore,
  scope: string,
  names: readonly string[],
  owner: string,
  until: number,
): Promise<string[]> {
  const result = await store.query(
    {
      name: 'oncely_extend_pending',
      text: `UPDATE oncely_intents SET worker_until = $4
             WHERE scope = $1 AND name = ANY($2) AND worker_owner = $3 RETURNING name`,
      values: [scope, [...names], owner, until],
    },
    'extend a worker lease',
    { scope },
  );
  return result.rows.map((row) => String(row.name));
}

/**
 * Gives an intent back. `retryAt` (ms since epoch) keeps every worker off it until then,
 * e.g. after a handler failed; without it any worker may take it again at once.
 */
export async function releasePending(
  store: PostgresStore,
  scope: string,
  name: string,
  owner: string,
  retryAt?: number,
): Promise<void> {
  await store.query(
    {
      name: 'oncely_release_pending',
      text: `UPDATE oncely_intents SET worker_owner = NULL, worker_until = $4
             WHERE scope = $1 AND name = $2 AND worker_owner = $3`,
      values: [scope, name, owner, retryAt ?? null],
    },
    'release a worker lease',
    { scope, intent: name },
  );
}

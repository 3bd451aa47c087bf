import { InvalidArgumentError, InvalidKeyError, StoreError } from '../src/errors.js';
import { QueuedWrites } from '../src/store/queued-writes.js';
import { checkStorable, intentId, SWEEPABLE_STATES } from '../src/store/record-rules.js';
import { validRecord } from '../src/store/record-schema.js';
import type {
  ClaimOptions,
  ClaimResult,
  DeleteOptions,
  IntentRecord,
  IntentState,
  RecordUpdater,
  Store,
  SweepOptions,
  WriteOptions,
} from '../src/store/store.js';
import {
  isPool,
  type Queryable,
  type QueryConfig,
  type QueryResultLike,
  toStoreError,
  withTimeout,
} from './database.js';
import {
  afterHeld,
  GroupWrites,
  HELD_LOCK_WAIT_MS,
  heldPause,
  heldTooLong,
  LOCK_NOT_AVAILABLE,
  LOCK_WAIT,
} from './group-writes.js';
import { type MigrateResult, migrate } from './migrate.js';
import { fromRow, RECORD_COLUMNS, recordRow, recordValues, type StoredRecord } from './rows.js';

export interface PostgresStoreOptions {
  /** A `pg` `Pool` (recommended) or a connected `Client`. The store never ends it. */
  pool: Queryable;
  /**
   * Longest wait (ms) for one database call before it fails with a `StoreError`.
   * @default 10_000
   */
  timeout?: number;
  /**
   * Records this store remembers, so that an update usually costs one statement
   * (compare-and-set against the remembered row: its key, creation time and version)
   * instead of two.
   * @default 10_000
   */
  cacheSize?: number;
  /**
   * Most claim and update statements the store runs at once. Writes asked for while that
   * many run wait, and go together as one statement when one ends (one round trip and one
   * commit for many intents); a lone write never waits. Keep it under the pool's size.
   * @default 4
   */
  writeConcurrency?: number;
  /**
   * Most records one `sweep()` removes unless its `limit` says otherwise, so that a sweep
   * of a large backlog ends within the client's `storeTimeout`; the next call goes on.
   * @default 5_000
   */
  sweepBatch?: number;
  /**
   * Names the store's statements, so that `pg` parses each once per connection and then
   * only binds it. Set `false` behind a pooler in transaction mode (PgBouncer's
   * `pool_mode = transaction` without `max_prepared_statements`, and most managed poolers),
   * where a connection's prepared statements are not the client's: every statement is then
   * unnamed, parsed and planned each time (about 0.1 ms more of PostgreSQL CPU per statement).
   * See docs/postgres.md, "Poolers".
   * @default true
   */
  preparedStatements?: boolean;
}

const SWEEP_BATCH = 1_000;
/** Rows per sweep statement: short enough that a claim queued behind one waits little. */
const SWEEP_STEP = 500;
/** Rows `isPending` would not keep at time $4: settled or never sent, under no live lease. */
const SETTLED = `state NOT IN ('in_flight', 'unknown') AND (lease_until IS NULL OR lease_until <= $4)`;
const SWEEPABLE = `state IN (${SWEEPABLE_STATES.map((s) => `'${s}'`).join(', ')})`;
/** Makes the statement's own transaction commit without waiting for the WAL flush. */
const RELAXED = `set_config('synchronous_commit', 'off', true)`;
const VALUES = '$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12';
const SET =
  'key = $3, state = $4, fingerprint = $5, attempts = $6, created_at = $7, updated_at = $8, ttl = $9, status = $10, lease_owner = $11, lease_until = $12';

/** $1…$12 typed as their columns, for an `INSERT … SELECT` (whose WHERE bounds its lock wait). */
const TYPED_VALUES =
  '$1::text, $2::text, $3::text, $4::text, $5::text, $6::integer, $7::bigint, $8::bigint, $9::bigint, $10::integer, $11::text, $12::bigint';

// Through the pool, a claim waits at most LOCK_WAIT_MS for a row another transaction holds
// (the app's uncommitted claim of the same intent), then tries again outside its write slot.
// In the app's own transaction it sets nothing: that transaction's settings are the app's.
const insertSql = (relaxed: boolean, inAppTransaction = false) =>
  `INSERT INTO oncely_intents (${RECORD_COLUMNS.replace(', version', '')}) ${
    inAppTransaction ? `VALUES (${VALUES})` : `SELECT ${TYPED_VALUES} WHERE ${LOCK_WAIT}`
  }
   ON CONFLICT (scope, name) DO NOTHING RETURNING version${relaxed ? `, ${RELAXED}` : ''}`;
// The version alone does not name a row: one rolled back, or deleted and formed again,
// starts again at 1. The key and creation time of the row the updater saw say which one it was.
const casSql = (relaxed: boolean) =>
  `UPDATE oncely_intents SET ${SET}, version = version + 1
   WHERE scope = $1 AND name = $2 AND version = $13 AND key = $14 AND created_at = $15 AND ${LOCK_WAIT}
   RETURNING version${relaxed ? `, ${RELAXED}` : ''}`;

/**
 * Intents in the app's PostgreSQL (`oncely/postgres`): one row per (scope, name) in
 * `oncely_intents`, the key unique per scope. Claims are one `INSERT … ON CONFLICT DO
 * NOTHING RETURNING` (read back on conflict), updates are compare-and-set on the row's
 * identity (key, created_at) and version, so both are atomic across connections and
 * machines, and a handle whose row was rolled back or formed again elsewhere never writes
 * over the new one: its updater runs again on the row that is stored. `claim(…, { transaction })`
 * joins a `pg` client inside the app's `BEGIN`. Run `await store.migrate()` once.
 *
 * A claim is durable when it resolves (`synchronous_commit` on, even when asked for
 * `durability: 'relaxed'`); relaxed updates commit without waiting for the WAL flush.
 * An updater may run more than once, each time with a newer record, when another writer
 * got in first; only the result of its last run is stored.
 *
 * @example
 * const store = new PostgresStore({ pool: new pg.Pool() });
 * await store.migrate();
 * const api = createClient({ baseUrl, scope: 'payouts', store });
 */
export class PostgresStore implements Store {
  readonly #db: Queryable;
  readonly #timeout: number;
  readonly #cacheSize: number;
  /**
   * intentId → last row seen: the compare-and-set guess, matched on the row's identity
   * (key, created_at) and version. Wrong guesses only cost a read.
   */
  readonly #versions = new Map<string, StoredRecord>();
  readonly #writes: GroupWrites;
  /** This store's updates not landed yet, by intent: its reads wait for them (read your writes). */
  readonly #updating = new QueuedWrites();
  readonly #sweepBatch: number;
  readonly #prepared: boolean;

  constructor(options: PostgresStoreOptions) {
    if (typeof options?.pool?.query !== 'function')
      throw new InvalidArgumentError('PostgresStore needs `pool`: a pg Pool or a connected pg Client.');
    this.#db = options.pool;
    this.#timeout = options.timeout ?? 10_000;
    this.#cacheSize = options.cacheSize ?? 10_000;
    const concurrency = options.writeConcurrency ?? 4;
    if (!(Number.isSafeInteger(concurrency) && concurrency >= 1))
      throw new InvalidArgumentError('PostgresStore: `writeConcurrency` must be a positive integer.');
    this.#sweepBatch = options.sweepBatch ?? 5_000;
    if (!(Number.isSafeInteger(this.#sweepBatch) && this.#sweepBatch >= 1))
      throw new InvalidArgumentError('PostgresStore: `sweepBatch` must be a positive integer.');
    this.#prepared = options.preparedStatements ?? true;
    if (typeof this.#prepared !== 'boolean')
      throw new InvalidArgumentError('PostgresStore: `preparedStatements` must be a boolean.');
    this.#writes = new GroupWrites(
      (config, what, context) => this.query(config, what, context),
      concurrency,
      this.#timeout,
    );
  }

  /** Creates or upgrades the tables (idempotent; concurrent calls across the fleet serialise). */
  migrate(): Promise<MigrateResult> {
    return migrate(this.#db).catch((error) => {
      throw toStoreError(error, 'migrate its tables', {});
    });
  }

  /**
   * One statement, time-bounded, failures as `StoreError`. For the worker queue too. Its
   * `name` is dropped when the store was made with `preparedStatements: false`.
   */
  async query(
    config: QueryConfig,
    what: string,
    context: { scope?: string; intent?: string },
    db: Queryable = this.#db,
  ): Promise<QueryResultLike> {
    const statement =
      this.#prepared || config.name === undefined ? config : { text: config.text, values: config.values };
    try {
      return await withTimeout(db.query(statement), this.#timeout, what);
    } catch (error) {
      throw toStoreError(error, what, context);
    }
  }

  async claim(fresh: IntentRecord, options: ClaimOptions = {}): Promise<ClaimResult> {
    const record = validRecord(fresh, fresh?.scope, fresh?.name);
    checkStorable(record.scope, record.name);
    const context = { scope: record.scope, intent: record.name };
    const tx = options.transaction;
    if (tx !== undefined && (typeof (tx as Queryable)?.query !== 'function' || isPool(tx as Queryable)))
      throw new InvalidArgumentError(
        'PostgresStore: `transaction` must be the pg client on which the app ran BEGIN (from pool.connect()), not a pool.',
        context,
      );
    const db = (tx as Queryable | undefined) ?? this.#db;
    // Never relaxed (`durability` is not read): an acknowledged claim survives a crash of
    // the server, because the app may act on its key. In the app's transaction, its COMMIT.
    const single =
      tx === undefined
        ? { name: 'oncely_claim', text: insertSql(false), values: recordValues(record) }
        : { name: 'oncely_claim_in_transaction', text: insertSql(false, true), values: recordValues(record) };
    for (let round = 0; round < 100; round++) {
      // In the app's transaction, on its connection; otherwise it may go with concurrent writes.
      const version = await (tx === undefined
        ? this.#writes.write({
            kind: 'insert',
            id: intentId(record.scope, record.name),
            single,
            what: 'claim an intent',
            context,
            row: recordRow(record),
            relaxed: false,
          })
        : this.query(single, 'claim an intent', context, db).then((r) =>
            r.rows.length === 1 ? String(r.rows[0].version) : undefined,
          )
      ).catch((error) => {
        throw keyTaken(error, context) ?? error;
      });
      if (version !== undefined) {
        this.#remember({ record, version });
        return { record: { ...record }, created: true };
      }
      const existing = await this.#read(record.scope, record.name, db);
      if (existing) return { record: { ...existing.record }, created: false };
      // Deleted between the conflict and the read: claim again.
    }
    throw new StoreError('PostgresStore: a claim kept conflicting with deletes of the same intent.', context);
  }

  async get(scope: string, name: string): Promise<IntentRecord | undefined> {
    checkStorable(scope, name);
    const writing = this.#updating.landed(intentId(scope, name));
    if (writing) await writing; // read your writes: a call's outcome write is not awaited by the call
    const stored = await this.#read(scope, name);
    return stored && { ...stored.record };
  }

  update(
    scope: string,
    name: string,
    updater: RecordUpdater,
    options: WriteOptions = {},
  ): Promise<IntentRecord | undefined> {
    const write = this.#update(scope, name, updater, options);
    this.#updating.track(intentId(scope, name), write);
    return write;
  }

  async #update(
    scope: string,
    name: string,
    updater: RecordUpdater,
    options: WriteOptions,
  ): Promise<IntentRecord | undefined> {
    checkStorable(scope, name);
    const context = { scope, intent: name };
    const relaxed = options.durability === 'relaxed';
    let guess = this.#versions.get(intentId(scope, name));
    // Nothing remembered: guess no record first. An updater that forms one (`client.send()`:
    // claim and in_flight in one write) then costs one INSERT; a wrong guess costs nothing.
    let guessAbsent = guess === undefined;
    for (let round = 0; round < 1_000; round++) {
      const fromGuess = guess !== undefined || guessAbsent;
      const current = guess ?? (guessAbsent ? undefined : await this.#read(scope, name));
      guess = undefined;
      guessAbsent = false;
      const next = updater(
        current && { ...current.record, ...(current.record.lease && { lease: { ...current.record.lease } }) },
      );
      if (next === undefined) {
        if (fromGuess) continue; // "leave it" about a remembered record: ask about the stored one
        return current && { ...current.record };
      }
      const record = validRecord(next, scope, name);
      const row = recordRow(record);
      const version = await this.#writes
        .write(
          current
            ? {
                kind: 'cas',
                id: intentId(scope, name),
                single: {
                  name: relaxed ? 'oncely_cas_relaxed' : 'oncely_cas',
                  text: casSql(relaxed),
                  values: [...recordValues(record), current.version, current.record.key, current.record.createdAt],
                },
                what: 'update an intent',
                context,
                row: {
                  ...row,
                  seen_version: current.version,
                  seen_key: current.record.key,
                  seen_created_at: current.record.createdAt,
                },
                relaxed,
              }
            : {
                kind: 'insert',
                id: intentId(scope, name),
                single: {
                  name: relaxed ? 'oncely_claim_relaxed' : 'oncely_claim',
                  text: insertSql(relaxed),
                  values: recordValues(record),
                },
                what: 'update an intent',
                context,
                row,
                relaxed,
              },
        )
        .catch((error) => {
          throw keyTaken(error, context) ?? error;
        });
      if (version !== undefined) {
        this.#remember({ record, version });
        return { ...record };
      }
      // Another writer got in first: run the updater again on what is stored now.
    }
    throw new StoreError('PostgresStore: an update kept losing to concurrent writers.', context);
  }

  async delete(scope: string, name: string, key?: string, options: DeleteOptions = {}): Promise<void> {
    checkStorable(scope, name);
    this.#versions.delete(intentId(scope, name));
    const keep = options.keepPending;
    await this.#bounded(
      keep !== undefined
        ? {
            name: 'oncely_delete_settled',
            text: `DELETE FROM oncely_intents WHERE scope = $1 AND name = $2 AND ($3::text IS NULL OR key = $3) AND ${SETTLED} AND ${LOCK_WAIT}`,
            values: [scope, name, key ?? null, keep],
          }
        : key === undefined
          ? {
              name: 'oncely_delete',
              text: `DELETE FROM oncely_intents WHERE scope = $1 AND name = $2 AND ${LOCK_WAIT}`,
              values: [scope, name],
            }
          : {
              name: 'oncely_delete_key',
              text: `DELETE FROM oncely_intents WHERE scope = $1 AND name = $2 AND key = $3 AND ${LOCK_WAIT}`,
              values: [scope, name, key],
            },
      'delete an intent',
      { scope, intent: name },
    );
  }

  async list(scope: string, states?: readonly IntentState[]): Promise<IntentRecord[]> {
    checkStorable(scope);
    if (states?.length === 0) return [];
    const writing = this.#updating.landed();
    if (writing) await writing;
    const result = await this.query(
      states
        ? {
            text: `SELECT ${RECORD_COLUMNS} FROM oncely_intents WHERE scope = $1 AND state = ANY($2) ORDER BY created_at, name`,
            values: [scope, [...states]],
          }
        : {
            text: `SELECT ${RECORD_COLUMNS} FROM oncely_intents WHERE scope = $1 ORDER BY created_at, name`,
            values: [scope],
          },
      'list intents',
      { scope },
    );
    return result.rows.map((row) => fromRow(row).record);
  }

  /** Deletes in bounded batches, so that no single statement holds many row locks for long. */
  async clear(scope: string, options: DeleteOptions = {}): Promise<void> {
    checkStorable(scope);
    const keep = options.keepPending;
    for (const [id, stored] of this.#versions) if (stored.record.scope === scope) this.#versions.delete(id);
    for (;;) {
      const result = await this.#bounded(
        {
          text: `WITH batch AS MATERIALIZED (SELECT name FROM oncely_intents WHERE scope = $1 AND ${LOCK_WAIT}${keep === undefined ? '' : ` AND ${SETTLED.replaceAll('$4', '$2')}`} LIMIT ${SWEEP_BATCH} FOR UPDATE)
                 DELETE FROM oncely_intents t USING batch WHERE t.scope = $1 AND t.name = batch.name`,
          values: keep === undefined ? [scope] : [scope, keep],
        },
        'clear a scope',
        { scope },
      );
      if ((result.rowCount ?? 0) < SWEEP_BATCH) return;
    }
  }

  /**
   * Bounded batches of 500 over the partial sweep index, oldest first; rows another
   * transaction holds are skipped (`SKIP LOCKED`) and left for the next sweep. At most
   * `limit` (default `sweepBatch`) records per call: the next call goes on. Its commits do not wait for the WAL flush: a delete lost in
   * a crash is done again by the next sweep, and any later write's flush carries it.
   */
  async sweep(scope: string, now: number, options: SweepOptions = {}): Promise<number> {
    checkStorable(scope);
    const limit = options.limit ?? this.#sweepBatch;
    if (limit !== undefined && !(Number.isSafeInteger(limit) && limit >= 0))
      throw new InvalidArgumentError('sweep limit must be a non-negative integer.', { scope });
    let removed = 0;
    for (;;) {
      const batch = Math.min(SWEEP_STEP, limit - removed);
      if (batch <= 0) return removed;
      const result = await this.query(
        {
          name: 'oncely_sweep',
          // A materialised CTE runs once: an IN (subquery … LIMIT) may be re-run by a join and delete more.
          text: `WITH due AS MATERIALIZED (
                   SELECT name FROM oncely_intents WHERE scope = $1 AND ${SWEEPABLE} AND sweep_after < $2
                   ORDER BY sweep_after LIMIT $3 FOR UPDATE SKIP LOCKED)
                 DELETE FROM oncely_intents t USING due WHERE t.scope = $1 AND t.name = due.name
                 RETURNING ${RELAXED}`,
          values: [scope, now, batch],
        },
        'sweep intents',
        { scope },
      );
      const count = result.rowCount ?? 0;
      removed += count;
      if (count < batch) return removed;
    }
  }

  /** The store does not own the pool: ending it is the app's call. */
  async close(): Promise<void> {
    this.#versions.clear();
  }

  /**
   * A statement that may wait for a row lock another transaction holds: the first try waits
   * at most LOCK_WAIT_MS (its own `lock_timeout`), the next ones HELD_LOCK_WAIT_MS, and
   * between tries it holds no connection, until the store's `timeout`; then a `StoreError`
   * (cause 55P03), nothing changed.
   */
  async #bounded(
    config: QueryConfig,
    what: string,
    context: { scope?: string; intent?: string },
  ): Promise<QueryResultLike> {
    const started = performance.now();
    for (let held = 1; ; held++) {
      try {
        return await this.query(held === 1 ? config : afterHeld(config), what, context);
      } catch (error) {
        if ((error as { cause?: { code?: unknown } }).cause?.code !== LOCK_NOT_AVAILABLE) throw error;
        const pause = heldPause(held);
        const elapsed = performance.now() - started;
        if (elapsed + pause + HELD_LOCK_WAIT_MS > this.#timeout) throw heldTooLong(error, what, context, elapsed);
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
    }
  }

  async #read(scope: string, name: string, db: Queryable = this.#db): Promise<StoredRecord | undefined> {
    const result = await this.query(
      {
        name: 'oncely_get',
        text: `SELECT ${RECORD_COLUMNS} FROM oncely_intents WHERE scope = $1 AND name = $2`,
        values: [scope, name],
      },
      'read an intent',
      { scope, intent: name },
      db,
    );
    if (result.rows.length === 0) {
      this.#versions.delete(intentId(scope, name));
      return undefined;
    }
    const stored = fromRow(result.rows[0]);
    this.#remember(stored);
    return stored;
  }

  #remember(stored: StoredRecord): void {
    const id = intentId(stored.record.scope, stored.record.name);
    this.#versions.delete(id);
    this.#versions.set(id, stored);
    if (this.#versions.size > this.#cacheSize) this.#versions.delete(this.#versions.keys().next().value!);
  }
}

/** The key is already another intent's in this scope: a caller-chosen key used twice. */
function keyTaken(error: unknown, context: { scope: string; intent: string }): InvalidKeyError | undefined {
  const cause = (error as { cause?: { code?: string; constraint?: string } }).cause;
  if (cause?.code !== '23505' || cause.constraint !== 'oncely_intents_scope_key_key') return undefined;
  return new InvalidKeyError('it is already the key of another intent in this scope', context);
}

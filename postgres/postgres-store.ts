import { InvalidArgumentError, InvalidKeyError, StoreError } from '../src/errors.js';
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
  boundedQuery,
  isPool,
  type Queryable,
  type QueryConfig,
  type QueryResultLike,
  toStoreError,
} from './database.js';
import { GroupWrites, heldPause, heldTooLong, LOCK_NOT_AVAILABLE } from './group-writes.js';
import { type MigrateResult, migrate } from './migrate.js';
import { RecentRows } from './recent-rows.js';
import { fromRow, RECORD_COLUMNS, recordValues, type StoredRecord } from './rows.js';
import { afterHeld, CLAIM_IN_TRANSACTION, HELD_LOCK_WAIT_MS, LOCK_WAIT, RELAXED } from './statements.js';

export interface PostgresStoreOptions {
  /** A `pg` `Pool` (recommended) or a connected `Client`. The store never ends it. */
  pool: Queryable;
  /**
   * Longest wait (ms) for one database call before it fails with a `StoreError`.
   * @default 10_000
   */
  timeout?: number;
  /**
   * Records this store remembers (about this many, the most recently used), so that an
   * update usually costs one statement (compare-and-set against the remembered row: its
   * key, creation time and version) instead of two.
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
const GET = { name: 'oncely_get', text: `SELECT ${RECORD_COLUMNS} FROM oncely_intents WHERE scope = $1 AND name = $2` };

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
  /**
   * intentId → last row seen: the compare-and-set guess, matched on the row's identity
   * (key, created_at) and version. Wrong guesses only cost a read.
   */
  readonly #versions: RecentRows;
  readonly #writes: GroupWrites;
  /** This store's updates not landed yet, by intent: its reads wait for them (read your writes). */
  readonly #updating = new Map<string, Promise<void>>();
  readonly #sweepBatch: number;
  readonly #prepared: boolean;

  constructor(options: PostgresStoreOptions) {
    if (typeof options?.pool?.query !== 'function')
      throw new InvalidArgumentError('PostgresStore needs `pool`: a pg Pool or a connected pg Client.');
    this.#db = options.pool;
    this.#timeout = options.timeout ?? 10_000;
    this.#versions = new RecentRows(options.cacheSize ?? 10_000);
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
  query(
    config: QueryConfig,
    what: string,
    context: { scope?: string; intent?: string },
    db: Queryable = this.#db,
  ): Promise<QueryResultLike> {
    const statement =
      this.#prepared || config.name === undefined ? config : { text: config.text, values: config.values };
    return boundedQuery(db, statement, this.#timeout, what, context);
  }

  async claim(fresh: IntentRecord, options: ClaimOptions = {}): Promise<ClaimResult> {
    const record = validRecord(fresh, fresh?.scope, fresh?.name);
    checkStorable(record.scope, record.name);
    const tx = options.transaction;
    if (tx !== undefined && (typeof (tx as Queryable)?.query !== 'function' || isPool(tx as Queryable)))
      throw new InvalidArgumentError(
        'PostgresStore: `transaction` must be the pg client on which the app ran BEGIN (from pool.connect()), not a pool.',
        { scope: record.scope, intent: record.name },
      );
    const db = (tx as Queryable | undefined) ?? this.#db;
    const id = intentId(record.scope, record.name);
    for (let round = 0; round < 100; round++) {
      // Never relaxed (`durability` is not read): an acknowledged claim survives a crash of
      // the server, because the app may act on its key. In the app's transaction, its COMMIT,
      // on its connection; otherwise it may go with concurrent writes.
      let version: string | undefined;
      try {
        version =
          tx === undefined
            ? await this.#writes.write({ kind: 'insert', id, record, relaxed: false, what: 'claim an intent' })
            : await this.query(
                { ...CLAIM_IN_TRANSACTION, values: recordValues(record) },
                'claim an intent',
                { scope: record.scope, intent: record.name },
                db,
              ).then((r) => (r.rows.length === 1 ? String(r.rows[0].version) : undefined));
      } catch (error) {
        throw keyTaken(error, record) ?? error;
      }
      if (version !== undefined) {
        this.#versions.set(id, { record, version });
        return { record: { ...record }, created: true };
      }
      const existing = await this.#read(record.scope, record.name, db);
      if (existing) return { record: { ...existing.record }, created: false };
      // Deleted between the conflict and the read: claim again.
    }
    throw new StoreError('PostgresStore: a claim kept conflicting with deletes of the same intent.', {
      scope: record.scope,
      intent: record.name,
    });
  }

  async get(scope: string, name: string): Promise<IntentRecord | undefined> {
    checkStorable(scope, name);
    const writing = this.#updating.get(intentId(scope, name));
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
    const id = intentId(scope, name);
    const write = this.#update(id, scope, name, updater, options.durability === 'relaxed');
    this.#track(id, write);
    return write;
  }

  async #update(
    id: string,
    scope: string,
    name: string,
    updater: RecordUpdater,
    relaxed: boolean,
  ): Promise<IntentRecord | undefined> {
    checkStorable(scope, name);
    let guess = this.#versions.get(id);
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
      let version: string | undefined;
      try {
        version = await this.#writes.write(
          current
            ? {
                kind: 'cas',
                id,
                record,
                seen: { version: current.version, key: current.record.key, createdAt: current.record.createdAt },
                relaxed,
                what: 'update an intent',
              }
            : { kind: 'insert', id, record, relaxed, what: 'update an intent' },
        );
      } catch (error) {
        throw keyTaken(error, record) ?? error;
      }
      if (version !== undefined) {
        this.#versions.set(id, { record, version });
        return { ...record };
      }
      // Another writer got in first: run the updater again on what is stored now.
    }
    throw new StoreError('PostgresStore: an update kept losing to concurrent writers.', { scope, intent: name });
  }

  /** Counts a write of intent `id` among those its reads wait for, until it lands or fails. */
  #track(id: string, write: Promise<unknown>): void {
    const before = this.#updating.get(id);
    const landed = () => {
      if (this.#updating.get(id) === entry) this.#updating.delete(id);
    };
    const entry: Promise<void> = (before ? Promise.all([before, write.catch(() => undefined)]) : write).then(
      landed,
      landed,
    );
    this.#updating.set(id, entry);
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
    if (this.#updating.size > 0) await Promise.all(this.#updating.values());
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
    this.#versions.deleteWhere((stored) => stored.record.scope === scope);
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
    const result = await this.query({ ...GET, values: [scope, name] }, 'read an intent', { scope, intent: name }, db);
    if (result.rows.length === 0) {
      this.#versions.delete(intentId(scope, name));
      return undefined;
    }
    const stored = fromRow(result.rows[0]);
    this.#versions.set(intentId(scope, name), stored);
    return stored;
  }
}

/** The key is already another intent's in this scope: a caller-chosen key used twice. */
function keyTaken(error: unknown, record: IntentRecord): InvalidKeyError | undefined {
  const cause = (error as { cause?: { code?: string; constraint?: string } }).cause;
  if (cause?.code !== '23505' || cause.constraint !== 'oncely_intents_scope_key_key') return undefined;
  return new InvalidKeyError('it is already the key of another intent in this scope', {
    scope: record.scope,
    intent: record.name,
  });
}

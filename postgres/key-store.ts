/**
 * `PostgresKeyStore`: the server half's keys in the app's PostgreSQL. The key row, the
 * handler's rows and the stored answer commit in one transaction on one connection.
 *
 * A request, in one READ COMMITTED transaction (the look-up must see what committed after
 * the locks were taken, so the isolation level is fixed):
 * 1. try an exclusive xact advisory lock on hash(scope, key, operation, fingerprint) (F),
 *    then on hash(scope, key) (K) — one statement, never waiting;
 * 2. look the key up over the retention window (every day partition in it) — 1 and 2 with
 *    the BEGIN in one round trip (simple protocol, each statement its own snapshot);
 * 3. holding K with no live row: run the handler, then in one round trip insert the key row
 *    with its answer (`INSERT … WHERE NOT EXISTS (window) ON CONFLICT DO NOTHING`, a second
 *    guard that fails the statement when it inserts nothing) and COMMIT.
 * A claim costs two round trips besides the handler's; a replay, a 409 or a 422 one (its
 * ROLLBACK is not waited for).
 * A request that cannot take K never waits for it: a committed row is replayed (or 422);
 * with none, the holder has not committed — 409 when F was held too (the same request
 * runs), 422 when this request could take its own F (another request runs).
 * Advisory locks at transaction level only: fit for a transaction-mode pooler.
 */
import { InvalidArgumentError, OncelyError, StoreError } from '../src/errors.js';
import type { Execution, KeyClaim, KeyStore, StoredAnswer } from '../src/server/store.js';
import { isPool, type Queryable, type QueryConfig, type QueryResultLike } from './database.js';
import { type Days, decided, insertKey, type Looked, lockAndLookUp } from './key-claim.js';
import { migrateKeys } from './key-migrations.js';
import type { MigrateResult } from './migrate.js';

/**
 * A connection the pool hands out (`pg`'s `PoolClient` fits): what a handler receives as
 * `tx`. For `pg`'s own type: `new PostgresKeyStore<pg.PoolClient>({ pool })`.
 */
export interface PooledConnection extends Queryable {
  query(config: QueryConfig): Promise<QueryResultLike>;
  query(text: string, values?: unknown[]): Promise<QueryResultLike>;
  release(error?: Error | boolean): void;
}

/** What the store needs of a pool: `pg`'s `Pool` fits; its client type is what handlers receive. */
export interface KeyStorePool<C extends PooledConnection> extends Queryable {
  connect(): Promise<C>;
}

export interface PostgresKeyStoreOptions<C extends PooledConnection> {
  /** The app's `pg` `Pool`: handlers write their effect on the connection it hands out. */
  pool: KeyStorePool<C>;
  /**
   * How long a key is remembered, from its first commit; after that it is new and a retry
   * runs again. At least 24 h, and never less than the clients' `keyTtl`.
   * @default 86_400_000 (24 h)
   */
  retentionMs?: number;
  /**
   * Whether `execute` starts `maintain()` in the background once an hour (creating the days
   * ahead, dropping the days past retention). `false`: schedule `maintain()` yourself.
   * @default true
   */
  autoMaintain?: boolean;
  /**
   * Longest a handler may hold the transaction (ms): past it the request fails with a
   * `StoreError` and its connection is closed, so that the server rolls the transaction back
   * (nothing happened, the key is free) and the handler's later statements throw. A
   * statement still running on the server ends first: bound those with `statement_timeout`.
   * @default 30_000
   */
  transactionTimeout?: number;
  /** Days of partitions created ahead. @default 7 */
  daysAhead?: number;
  /** Called with a background maintenance failure (it is retried an hour later). @default ignore */
  onMaintenanceError?: (error: unknown) => void;
}

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
const MAINTAIN_LOCK = 0x6f6e6367;
const PARTITION = /^oncely_server_keys_(\d{8})$/;

export { lockKeys } from './key-claim.js';

/**
 * An error of the statements sent with the COMMIT that says nothing committed: a constraint,
 * a data or a serialization error (the COMMIT failed or never ran). Anything else — no
 * SQLSTATE (the connection died), a terminated backend, a crash — leaves it unknown.
 */
function refusedBeforeCommit(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^(22|23|25|40|42|P0)/.test(code);
}

export class PostgresKeyStore<C extends PooledConnection = PooledConnection> implements KeyStore<C> {
  readonly #pool: KeyStorePool<C>;
  readonly #retention: string;
  readonly #autoMaintain: boolean;
  readonly #daysAhead: number;
  readonly #transactionTimeout: number;
  readonly #onMaintenanceError: (error: unknown) => void;
  #maintainedAt = Number.NEGATIVE_INFINITY;
  #maintaining: Promise<unknown> | undefined;
  #days: Days | undefined;

  constructor(options: PostgresKeyStoreOptions<C>) {
    if (typeof options?.pool?.connect !== 'function')
      throw new InvalidArgumentError('PostgresKeyStore needs a `pool` (a pg Pool).');
    const retentionMs = options.retentionMs ?? DAY_MS;
    if (!Number.isInteger(retentionMs) || retentionMs < DAY_MS)
      throw new InvalidArgumentError(
        `PostgresKeyStore: retentionMs must be whole ms ≥ 86400000 (24 h), got ${retentionMs}: a key past retention runs again.`,
      );
    const daysAhead = options.daysAhead ?? 7;
    if (!Number.isInteger(daysAhead) || daysAhead < 1 || daysAhead > 366)
      throw new InvalidArgumentError(`PostgresKeyStore: daysAhead must be 1 to 366, got ${daysAhead}.`);
    const transactionTimeout = options.transactionTimeout ?? 30_000;
    if (!Number.isInteger(transactionTimeout) || transactionTimeout < 1)
      throw new InvalidArgumentError(
        `PostgresKeyStore: transactionTimeout must be whole ms ≥ 1, got ${transactionTimeout}.`,
      );
    this.#transactionTimeout = transactionTimeout;
    this.#pool = options.pool;
    this.#retention = `${retentionMs} milliseconds`;
    this.#autoMaintain = options.autoMaintain ?? true;
    this.#daysAhead = daysAhead;
    this.#onMaintenanceError = options.onMaintenanceError ?? (() => undefined);
  }

  /** Creates or upgrades the table, then its partitions (`maintain()`). Safe from every process at start. */
  async migrate(): Promise<MigrateResult> {
    const result = await migrateKeys(this.#pool);
    await this.maintain();
    return result;
  }

  /**
   * Creates the day partitions from today (the database's UTC day) to `daysAhead`, and
   * drops the ones wholly past retention — `DETACH … CONCURRENTLY` then `DROP TABLE`, never
   * a DELETE, and never a lock that stops requests. Safe from every process.
   */
  async maintain(): Promise<{ created: string[]; dropped: string[] }> {
    const created: string[] = [];
    const dropped: string[] = [];
    const conn = await this.#pool.connect();
    let failed: Error | undefined;
    try {
      await conn.query({ text: 'BEGIN' });
      await conn.query({ text: 'SELECT pg_advisory_xact_lock($1)', values: [MAINTAIN_LOCK] });
      const days = await conn.query({
        text: `SELECT to_char(d, 'YYYYMMDD') AS name, d::text AS from, (d + 1)::text AS to
                 FROM generate_series((now() AT TIME ZONE 'UTC')::date, (now() AT TIME ZONE 'UTC')::date + $1::int, '1 day') AS g(t),
                      LATERAL (SELECT t::date AS d) AS x
                WHERE to_regclass('oncely_server_keys_' || to_char(d, 'YYYYMMDD')) IS NULL`,
        values: [this.#daysAhead],
      });
      for (const day of days.rows as { name: string; from: string; to: string }[]) {
        const table = `oncely_server_keys_${day.name}`;
        // CREATE + ATTACH takes SHARE UPDATE EXCLUSIVE on the parent: requests go on.
        await conn.query({ text: `CREATE TABLE ${table} (LIKE oncely_server_keys INCLUDING ALL)` });
        await conn.query({
          text: `ALTER TABLE oncely_server_keys ATTACH PARTITION ${table} FOR VALUES FROM ('${day.from}') TO ('${day.to}')`,
        });
        created.push(table);
      }
      const expired = await conn.query({
        text: `SELECT c.relname AS name, i.inhdetachpending AS pending
                 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = 'oncely_server_keys'::regclass
                  AND c.relname ~ '^oncely_server_keys_[0-9]{8}$'
                  AND to_date(right(c.relname, 8), 'YYYYMMDD') + 1 <= ((now() - $1::interval) AT TIME ZONE 'UTC')::date`,
        values: [this.#retention],
      });
      await conn.query({ text: 'COMMIT' });
      for (const { name, pending } of expired.rows as { name: string; pending: boolean }[]) {
        if (!PARTITION.test(name)) continue;
        // CONCURRENTLY cannot run in a transaction; it waits for readers instead of blocking writers.
        const mode = pending ? 'FINALIZE' : 'CONCURRENTLY';
        await conn.query({ text: `ALTER TABLE oncely_server_keys DETACH PARTITION ${name} ${mode}` });
        await conn.query({ text: `DROP TABLE IF EXISTS ${name}` });
        dropped.push(name);
      }
      this.#maintainedAt = Date.now();
      return { created, dropped };
    } catch (error) {
      failed = error as Error;
      await conn.query({ text: 'ROLLBACK' }).catch(() => undefined);
      throw new StoreError(`PostgresKeyStore could not maintain its partitions: ${failed.message}.`, {
        cause: error,
      });
    } finally {
      conn.release(failed);
    }
  }

  async execute(claim: KeyClaim, work: (tx: C) => Promise<StoredAnswer>): Promise<Execution> {
    this.#maybeMaintain();
    // The days of the last request: checked against the database's clock in the same round
    // trip, the look-up redone on the rare request that finds them changed (a new day).
    const days = this.#days;
    let conn: C;
    try {
      conn = await this.#pool.connect();
    } catch (error) {
      throw new StoreError(
        `PostgresKeyStore could not get a connection: ${(error as Error)?.message ?? String(error)}.`,
        {
          scope: claim.scope,
          cause: error,
        },
      );
    }
    let broken: Error | undefined;
    let inTransaction = true; // from the BEGIN on: a failure anywhere after it rolls back
    let workFailed = false;
    let committing = false;
    // A connection that dies while checked out (pg_terminate_backend, a restart) emits
    // 'error' after failing its query; unheard, that would crash the app's process.
    const events = conn as Partial<Emitter>;
    const onError = (error: Error) => {
      broken = error;
    };
    events.on?.('error', onError);
    let releaseLater = false;
    const done = (error?: Error) => {
      events.off?.('error', onError);
      conn.release(error ?? broken);
    };
    try {
      // One round trip: BEGIN, the try-locks and the look-up (see key-claim.ts).
      const looked = await lockAndLookUp(conn, claim, this.#retention, 'BEGIN ISOLATION LEVEL READ COMMITTED', days);
      this.#days = looked.window;
      const early = decided(looked, claim);
      if (early) {
        // Read only: the answer is known, the ROLLBACK only ends the transaction and frees
        // the locks; the connection goes back to the pool once it has (or is closed).
        inTransaction = false;
        releaseLater = true;
        void conn.query({ text: 'ROLLBACK' }).then(
          () => done(),
          (rollback: Error) => done(rollback),
        );
        return early;
      }
      let answer: StoredAnswer;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timedOut = new StoreError(
        `PostgresKeyStore: the handler held its transaction for more than ${this.#transactionTimeout} ms; its connection was closed, so it is rolled back. Nothing was committed.`,
        { scope: claim.scope },
      );
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(timedOut), this.#transactionTimeout);
      });
      try {
        // Raced, not abandoned: a rejection of the handler after the timeout is still handled here.
        answer = await Promise.race([work(conn), timeout]);
      } catch (error) {
        if (error === timedOut) {
          // No ROLLBACK: it would queue behind the handler's own statement. Closing the
          // connection (released with an error) ends the transaction on the server.
          broken = timedOut;
          inTransaction = false;
          throw timedOut;
        }
        await conn.query({ text: 'ROLLBACK' }).catch((rollback: Error) => {
          broken = rollback;
        });
        inTransaction = false;
        workFailed = true;
        throw error;
      } finally {
        clearTimeout(timer);
      }
      // One round trip: the key row with its answer, then COMMIT — never run when the
      // insert failed (the key committed by a writer that did not hold its lock).
      committing = true;
      await insertKey(conn, looked, claim, this.#retention, answer, 'COMMIT');
      inTransaction = false;
      return { outcome: 'ran', answer };
    } catch (error) {
      if (inTransaction)
        await conn.query({ text: 'ROLLBACK' }).catch((rollback: Error) => {
          broken = rollback;
        });
      if (broken === undefined && !workFailed && isConnectionError(error)) broken = error as Error;
      // The handler's own error as it is; the database's as a StoreError.
      if (workFailed || error instanceof OncelyError) throw error;
      const reason = (error as Error)?.message ?? String(error);
      throw new StoreError(
        committing && !refusedBeforeCommit(error)
          ? `PostgresKeyStore: the COMMIT of the key and its effect got no answer (${reason}); whether it committed is unknown. A retry with the key finds out: the replay, or a first run.`
          : `PostgresKeyStore could not run the request under its key: ${reason}. Nothing was committed.`,
        { scope: claim.scope, cause: error },
      );
    } finally {
      if (!releaseLater) done(broken);
    }
  }

  /**
   * `execute` inside a transaction the app opened on its own connection (`BEGIN` … on a
   * client from `pool.connect()`): the locks, the look-up, `work` and the key row run there,
   * and commit with the app's `COMMIT` — or vanish with its `ROLLBACK`. `ran` means "will
   * commit with your transaction". A `work` that throws is undone to a savepoint taken first
   * (the app's earlier statements stay) and rethrown. Never waits for another holder of the
   * key. The transaction must be `READ COMMITTED` (the look-up must see what committed after
   * the locks were taken); `transactionTimeout` is the app's business here.
   */
  async executeIn(tx: C, claim: KeyClaim, work: (tx: C) => Promise<StoredAnswer>): Promise<Execution> {
    if (typeof tx?.query !== 'function' || isPool(tx))
      throw new InvalidArgumentError(
        'PostgresKeyStore.executeIn needs the pg client on which the app ran BEGIN (from pool.connect()), not a pool.',
      );
    this.#maybeMaintain();
    const fail = (error: unknown, what: string): never => {
      if (error instanceof OncelyError) throw error;
      const reason = (error as Error)?.message ?? String(error);
      throw new StoreError(`PostgresKeyStore could not ${what} in the app's transaction: ${reason}.`, {
        scope: claim.scope,
        cause: error,
      });
    };
    const undo = 'ROLLBACK TO SAVEPOINT oncely_key; RELEASE SAVEPOINT oncely_key';
    let looked: Looked;
    try {
      // A SAVEPOINT outside a transaction block is an error: a client without BEGIN is refused here.
      looked = await lockAndLookUp(tx, claim, this.#retention, 'SAVEPOINT oncely_key', this.#days);
    } catch (error) {
      if ((error as { code?: unknown })?.code === '25P01')
        throw new InvalidArgumentError(
          'PostgresKeyStore.executeIn: the client is not inside a transaction; run BEGIN on it first.',
          { cause: error },
        );
      return fail(error, 'claim the key');
    }
    if (looked.isolation !== 'read committed') {
      await tx.query({ text: undo }).catch(() => undefined);
      throw new InvalidArgumentError(
        `PostgresKeyStore.executeIn needs a READ COMMITTED transaction, got ${looked.isolation}: an older snapshot could miss a committed key.`,
      );
    }
    this.#days = looked.window;
    const early = decided(looked, claim);
    if (early) {
      await tx.query({ text: undo }).catch((error) => fail(error, 'release the key'));
      return early;
    }
    let answer: StoredAnswer;
    try {
      answer = await work(tx);
    } catch (error) {
      await tx.query({ text: undo }).catch(() => undefined); // the app's ROLLBACK undoes it anyway
      throw error;
    }
    try {
      // One round trip: the key row, then the savepoint's release (the COMMIT is the app's).
      await insertKey(tx, looked, claim, this.#retention, answer, 'RELEASE SAVEPOINT oncely_key');
    } catch (error) {
      return fail(error, 'store the key');
    }
    return { outcome: 'ran', answer };
  }

  #maybeMaintain(): void {
    if (!this.#autoMaintain || this.#maintaining || Date.now() - this.#maintainedAt < HOUR_MS) return;
    this.#maintainedAt = Date.now(); // one try an hour, whatever its outcome
    this.#maintaining = this.maintain()
      .catch((error) => this.#onMaintenanceError(error))
      .finally(() => {
        this.#maintaining = undefined;
      });
  }
}

interface Emitter {
  on(event: 'error', listener: (error: Error) => void): unknown;
  off(event: 'error', listener: (error: Error) => void): unknown;
}

/** A driver error without a SQLSTATE: the connection itself failed (terminated, reset). */
function isConnectionError(error: unknown): boolean {
  return typeof (error as { code?: unknown } | undefined)?.code !== 'string';
}

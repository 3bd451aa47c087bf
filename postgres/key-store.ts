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
import { sha256 } from '../src/intent/sha256.js';
import type { Execution, KeyClaim, KeyStore, StoredAnswer } from '../src/server/store.js';
import type { Queryable, QueryConfig, QueryResultLike } from './database.js';
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
  // Thrown as the database would refuse it: execute() makes it a StoreError, nothing run.
  if (value.includes('\0')) throw new Error('a PostgreSQL string cannot hold NUL (0x00)');
  const quoted = `'${value.replaceAll("'", "''")}'`;
  return value.includes('\\') ? ` E${quoted.replaceAll('\\', '\\\\')}` : quoted;
}
const bytes = (value: Uint8Array): string =>
  `decode('${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex')}', 'hex')`;

/** The error a key row that was not inserted raises, so that its COMMIT never runs. */
const NOT_INSERTED = 'oncely: the key row was not inserted';

/** The UTC days a window covers, as the database's clock gives them (`YYYY-MM-DD`). */
interface Days {
  first: string;
  today: string;
}

/** The window's days from the database's clock, in SQL. */
const FIRST_DAY = (retention: string) => `((now() - interval '${retention}') AT TIME ZONE 'UTC')::date`;
const TODAY = `(now() AT TIME ZONE 'UTC')::date`;

/**
 * The window: the key's rows newer than retention, in the day partitions it covers. Literals,
 * not parameters: the statements go with others in one round trip, which only the simple
 * protocol allows. With its days known (`days`), the planner prunes the other partitions
 * when it plans the statement; without, when it starts.
 */
const windowOf = (
  claim: KeyClaim,
  retention: string,
  days: Days | undefined,
): string => `scope = ${literal(claim.scope)}
  AND key = ${literal(claim.key)}
  AND day BETWEEN ${days ? `'${days.first}'::date AND '${days.today}'::date` : `${FIRST_DAY(retention)} AND ${TODAY}`}
  AND created_at > now() - interval '${retention}'`;

/**
 * An error of the statements sent with the COMMIT that says nothing committed: a constraint,
 * a data or a serialization error (the COMMIT failed or never ran). Anything else — no
 * SQLSTATE (the connection died), a terminated backend, a crash — leaves it unknown.
 */
function refusedBeforeCommit(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^(22|23|25|40|42|P0)/.test(code);
}

interface Row {
  operation: string;
  fingerprint: string;
  status: number;
  headers: [string, string][];
  body: Uint8Array;
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
    const locks = lockKeys(claim);
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
      // One round trip (the simple protocol takes several statements, each with a snapshot of
      // its own): BEGIN, the try-locks, then the look-up, whose snapshot is taken after the
      // locks: it sees every commit of a holder the locks found gone.
      const lookUp = (window: Days | undefined) => `SELECT operation, fingerprint, status, headers, body
          FROM oncely_server_keys WHERE ${windowOf(claim, this.#retention, window)} ORDER BY created_at DESC LIMIT 1`;
      const [, held, found] = (await conn.query({
        text: `BEGIN ISOLATION LEVEL READ COMMITTED;
               SELECT CASE WHEN pg_try_advisory_xact_lock(${locks.request[0]}, ${locks.request[1]})
                 THEN CASE WHEN pg_try_advisory_xact_lock(${locks.key}) THEN 'claimed' ELSE 'other' END
                 ELSE 'same' END AS hold,
                 to_char(${FIRST_DAY(this.#retention)}, 'YYYY-MM-DD') AS first, to_char(${TODAY}, 'YYYY-MM-DD') AS today;
               ${lookUp(days)}`,
      })) as unknown as [unknown, { rows: ({ hold: 'claimed' | 'other' | 'same' } & Days)[] }, { rows: Row[] }];
      const { hold, first, today } = held.rows[0]!;
      const window = { first, today };
      let row = found.rows[0];
      if (days?.first !== first || days.today !== today) {
        this.#days = window;
        if (days) row = (await conn.query({ text: lookUp(window) })).rows[0] as Row | undefined;
      }
      if (row || hold !== 'claimed') {
        // Read only: the answer is known, the ROLLBACK only ends the transaction and frees
        // the locks; the connection goes back to the pool once it has (or is closed).
        inTransaction = false;
        releaseLater = true;
        void conn.query({ text: 'ROLLBACK' }).then(
          () => done(),
          (rollback: Error) => done(rollback),
        );
        if (row) {
          if (row.operation !== claim.operation || row.fingerprint !== claim.fingerprint)
            return { outcome: 'mismatch' };
          const answer = { status: row.status, headers: row.headers, body: new Uint8Array(row.body) };
          return { outcome: 'replayed', answer };
        }
        return { outcome: hold === 'same' ? 'in_progress' : 'mismatch' };
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
      if (!Number.isInteger(answer?.status) || !(answer.body instanceof Uint8Array))
        throw new StoreError('PostgresKeyStore: the work answered something that is not a stored answer.');
      // One round trip: the key row with its answer, then COMMIT. An insert of no row (the
      // key committed by a writer that did not hold its lock) fails the statement, so that
      // the COMMIT is never run.
      committing = true;
      await conn.query({
        text: `WITH inserted AS (
                 INSERT INTO oncely_server_keys (scope, key, day, created_at, operation, fingerprint, status, headers, body)
                 SELECT ${literal(claim.scope)}, ${literal(claim.key)}, (now() AT TIME ZONE 'UTC')::date, now(),
                        ${literal(claim.operation)}, ${literal(claim.fingerprint)}, ${answer.status},
                        ${literal(JSON.stringify(answer.headers))}::jsonb, ${bytes(answer.body)}
                  WHERE NOT EXISTS (SELECT 1 FROM oncely_server_keys WHERE ${windowOf(claim, this.#retention, window)})
                 ON CONFLICT DO NOTHING RETURNING 1)
               SELECT CASE WHEN (SELECT count(*) FROM inserted) = 1 THEN 1
                 ELSE ('${NOT_INSERTED}: ' || (SELECT count(*) FROM inserted))::int END AS inserted;
               COMMIT`,
      });
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
      if (String(reason).includes(NOT_INSERTED))
        throw new StoreError(
          'PostgresKeyStore: the key was committed by a transaction that did not hold its advisory lock (another writer of oncely_server_keys?); this one is rolled back.',
          { scope: claim.scope, cause: error },
        );
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

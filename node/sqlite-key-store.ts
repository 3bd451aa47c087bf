/**
 * `SqliteKeyStore`: the server half's keys in the app's own SQLite file (`node:sqlite`, WAL,
 * `synchronous=FULL`), the embedded default for a single-node server. The key row, the
 * handler's rows and the stored answer commit in one transaction, or none of them.
 *
 * node:sqlite is synchronous and a connection has one transaction, while handlers are
 * async: two requests must never share a transaction (one's rollback would undo the
 * other's rows). SQLite admits one writer per file in any case, so this process's write
 * transactions run one at a time on one connection, in arrival order (a queue). Whether a
 * key is taken is known without waiting in that queue: keys being worked on are in a map,
 * committed keys are read on a second connection, which sees commits only. A request:
 * 1. its key in the map: `in_progress` (the same request) or `mismatch` (another one);
 * 2. its key committed within retention (read connection): `replayed` or `mismatch`;
 * 3. else it enters the map (1–3 in one synchronous turn: atomic in this process), queues;
 * 4. `BEGIN IMMEDIATE`; the claim is a constraint: `INSERT … ON CONFLICT (scope, key) DO
 *    UPDATE … WHERE` the old row is past retention — no change means another process
 *    committed the key meanwhile: replayed or mismatch, rolled back;
 * 5. the handler on that connection; the answer into the key row; `COMMIT`, and the key
 *    leaves the map in the same turn.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type {
  DatabaseSync,
  SQLInputValue,
  SQLOutputValue,
  StatementResultingChanges,
  StatementSync,
} from 'node:sqlite';
import { InvalidArgumentError, OncelyError, StoreError } from '../src/errors.js';
import type { Execution, KeyClaim, KeyStore, StoredAnswer } from '../src/server/store.js';
import { wellFormed } from '../src/store/record-rules.js';
import { type Db, databaseClass, isBusy } from './sqlite-driver.js';
import { migrateSqliteKeys, SQLITE_KEY_SCHEMA_VERSION, schemaVersion } from './sqlite-key-migrations.js';
import { retryWhileBusy } from './sqlite-open.js';

/** Positional values, or named ones (`{ $amount: 1 }`) then positional ones. */
export type SqlParameters = SQLInputValue[] | [Record<string, SQLInputValue>, ...SQLInputValue[]];

/**
 * What a handler receives: statements in the transaction that holds the key, on the store's
 * connection to the app's file. Valid until the handler returns (later calls throw);
 * `BEGIN`, `COMMIT`, `END` and `ROLLBACK` are the store's and refused (savepoints are fine).
 * @example tx.run('INSERT INTO ledger (key, amount) VALUES (?, ?)', key, amount);
 */
export interface SqliteTransaction {
  /** Runs one statement; `changes` and `lastInsertRowid` as `node:sqlite` gives them. */
  run(sql: string, ...params: SqlParameters): StatementResultingChanges;
  /** The first row of one statement (`INSERT … RETURNING` included), or `undefined`. */
  get<T = Record<string, SQLOutputValue>>(sql: string, ...params: SqlParameters): T | undefined;
  /** Every row of one statement. */
  all<T = Record<string, SQLOutputValue>>(sql: string, ...params: SqlParameters): T[];
  /** Runs SQL without parameters (several statements allowed), e.g. DDL. */
  exec(sql: string): void;
}

export interface SqliteKeyStoreOptions {
  /**
   * The app's database file: the handlers write their own tables in it, in the key's
   * transaction. Created if missing (and its directory). Not `:memory:`.
   * @example new SqliteKeyStore({ file: '/var/lib/shop/shop.db' })
   */
  file: string;
  /**
   * How long a key is remembered, from its commit; after that it is new and a retry runs
   * again. At least 24 h, and never less than the clients' `keyTtl`.
   * @default 86_400_000 (24 h)
   */
  retentionMs?: number;
  /**
   * How long (ms) a transaction waits for another connection's write lock (another
   * process, or the app's own connection), retrying from a timer, before the request fails
   * with a `StoreError` (nothing ran).
   * @default 5_000
   */
  lockTimeout?: number;
  /**
   * Longest a handler may hold the transaction (ms): past it the transaction is rolled back
   * (nothing happened, the key is free), the request fails with a `StoreError`, and the
   * handler's later statements throw. Every write of this process waits behind it meanwhile.
   * @default 30_000
   */
  transactionTimeout?: number;
  /**
   * Whether `execute` starts `maintain()` in the background once an hour. `false`: schedule
   * `maintain()` yourself.
   * @default true
   */
  autoMaintain?: boolean;
  /** Keys deleted per transaction by `maintain()`. @default 500 */
  maintainBatch?: number;
  /** Called with a background maintenance failure (retried an hour later). @default ignore */
  onMaintenanceError?: (error: unknown) => void;
  /**
   * Called once with the store's write connection when it opens, outside any transaction:
   * per-connection settings the handlers' statements need. Do not keep the connection.
   * @example setup: (db) => db.exec('PRAGMA foreign_keys = ON')
   */
  setup?: (connection: DatabaseSync) => void;
}

export interface SqliteInvariantOptions {
  /** The operation the keys were bound to, e.g. `POST /payments`. */
  operation: string;
  /**
   * SQL that counts the effects in the window, as one number in the first column; its one
   * parameter `?` is the window's start in ms since the epoch (the keys' `created_at` unit).
   * @example "SELECT count(*) FROM ledger WHERE created_at > ?"
   */
  effectsSql: string;
  /** The window, in ms, inside retention. @default 82_800_000 (23 h) */
  windowMs?: number;
  /** Which stored answers count as an effect. @default status 200–299 */
  statuses?: [number, number];
}

/** Effects against the keys that committed them; `drift` above 0 is an effect without its key. */
export interface SqliteInvariantReport {
  operation: string;
  keys: number;
  effects: number;
  drift: number;
}

interface Row {
  operation: string;
  fingerprint: string;
  status: number;
  headers: string;
  body: Uint8Array;
}

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
const STATEMENTS_MAX = 256;
/** Transaction control the store owns (savepoints stay the handler's). */
const CONTROL = /^\s*(?:BEGIN|COMMIT|END|ROLLBACK(?!\s+(?:TRANSACTION\s+)?TO\b))\b/i;

const idOf = (scope: string, key: string): string => JSON.stringify([scope, key]);

function outcomeOf(row: Row, claim: KeyClaim): Execution {
  if (row.operation !== claim.operation || row.fingerprint !== claim.fingerprint) return { outcome: 'mismatch' };
  const headers = JSON.parse(row.headers) as [string, string][];
  return { outcome: 'replayed', answer: { status: row.status, headers, body: new Uint8Array(row.body) } };
}

/**
 * Server keys in the app's SQLite file, for one machine. One process per file gets every
 * guarantee of `PostgresKeyStore`, a repeat of a running key answered `in_progress` at once
 * included. Several processes on one file stay exactly-once (SQLite's write lock and the
 * claim's constraint) but a process cannot see another's running key: its repeat waits for
 * the write lock (up to `lockTimeout`), then is replayed — or fails, and the client retries.
 * Construction touches nothing; the file is opened (and migrated) on first use, or by
 * {@link openSqliteKeyStore}. Not for network file systems.
 *
 * @example
 * const store = await openSqliteKeyStore({ file: 'shop.db' });
 * const idempotency = createIdempotency({ store });
 * idempotency.route('POST /payments', ({ tx, json }) => {
 *   const { id } = tx.get('INSERT INTO ledger (amount) VALUES (?) RETURNING id', json.amount);
 *   return { status: 201, body: { id } };
 * });
 */
export class SqliteKeyStore implements KeyStore<SqliteTransaction> {
  readonly file: string;
  readonly #retentionMs: number;
  readonly #lockTimeout: number;
  readonly #transactionTimeout: number;
  readonly #autoMaintain: boolean;
  readonly #maintainBatch: number;
  readonly #onMaintenanceError: (error: unknown) => void;
  readonly #setup: ((connection: DatabaseSync) => void) | undefined;
  /** Keys this process is working on (claimed, not yet committed or rolled back). */
  readonly #inFlight = new Map<string, KeyClaim>();
  readonly #statements = new Map<string, StatementSync>();
  /** Set while a handler runs, to refuse a nested transaction (it would queue behind its own). */
  readonly #working = new AsyncLocalStorage<{ live: boolean }>();
  #writer: Db | undefined;
  #reader: Db | undefined;
  #opening: Promise<void> | undefined;
  /** The write queue: each transaction starts when the one before has ended. */
  #tail: Promise<unknown> = Promise.resolve();
  #closed = false;
  #maintainedAt = Number.NEGATIVE_INFINITY;
  #maintaining: Promise<unknown> | undefined;

  constructor(options: SqliteKeyStoreOptions) {
    const file = options?.file;
    if (typeof file !== 'string' || file === '' || file === ':memory:' || file.startsWith('file:'))
      throw new InvalidArgumentError('SqliteKeyStore needs a `file`: the path of the app’s database file.');
    const retentionMs = options.retentionMs ?? DAY_MS;
    if (!Number.isInteger(retentionMs) || retentionMs < DAY_MS)
      throw new InvalidArgumentError(
        `SqliteKeyStore: retentionMs must be whole ms ≥ 86400000 (24 h), got ${retentionMs}: a key past retention runs again.`,
      );
    const positive = (value: number | undefined, fallback: number, name: string) => {
      const n = value ?? fallback;
      if (!Number.isInteger(n) || n < 1)
        throw new InvalidArgumentError(`SqliteKeyStore: ${name} must be whole ms ≥ 1, got ${n}.`);
      return n;
    };
    this.file = path.resolve(file);
    this.#retentionMs = retentionMs;
    this.#lockTimeout = positive(options.lockTimeout, 5_000, 'lockTimeout');
    this.#transactionTimeout = positive(options.transactionTimeout, 30_000, 'transactionTimeout');
    this.#maintainBatch = positive(options.maintainBatch, 500, 'maintainBatch');
    this.#autoMaintain = options.autoMaintain ?? true;
    this.#onMaintenanceError = options.onMaintenanceError ?? (() => undefined);
    this.#setup = options.setup;
  }

  /** Opens the file (WAL, `synchronous=FULL`) and brings the key tables up to date. Safe from every process. */
  open(): Promise<void> {
    this.#opening ??= this.#open().catch((error) => {
      this.#opening = undefined;
      if (error instanceof OncelyError) throw error;
      throw new StoreError(`SqliteKeyStore could not open ${this.file}: ${messageOf(error)}.`, { cause: error });
    });
    return this.#opening;
  }

  async #open(): Promise<void> {
    mkdirSync(path.dirname(this.file), { recursive: true });
    const Database = databaseClass();
    const writer = new Database(this.file);
    let reader: Db | undefined;
    try {
      // Never sleep on the event loop for a lock: the holder may be this very process.
      writer.exec('PRAGMA busy_timeout = 0');
      const mode = await retryWhileBusy(() => writer.prepare('PRAGMA journal_mode = WAL').get(), this.#lockTimeout);
      if (String(mode?.journal_mode).toLowerCase() !== 'wal')
        throw new StoreError(`SqliteKeyStore: ${this.file} cannot use WAL (journal_mode ${mode?.journal_mode}).`);
      writer.exec('PRAGMA synchronous = FULL');
      // Read first: a file already migrated is opened without the write lock, which another
      // process may hold for as long as its handler runs.
      const version = await retryWhileBusy(() => schemaVersion(writer), this.#lockTimeout);
      if (version !== SQLITE_KEY_SCHEMA_VERSION)
        await retryWhileBusy(() => {
          writer.exec('BEGIN IMMEDIATE');
          try {
            migrateSqliteKeys(writer);
            writer.exec('COMMIT');
          } catch (error) {
            if (writer.isTransaction) writer.exec('ROLLBACK');
            throw error;
          }
        }, this.#lockTimeout);
      this.#setup?.(writer);
      reader = new Database(this.file);
      reader.exec('PRAGMA busy_timeout = 0; PRAGMA query_only = 1');
    } catch (error) {
      reader?.close();
      writer.close();
      throw error;
    }
    if (this.#closed) {
      reader.close();
      writer.close();
      throw closedError();
    }
    this.#writer = writer;
    this.#reader = reader;
  }

  async execute(claim: KeyClaim, work: (tx: SqliteTransaction) => Promise<StoredAnswer>): Promise<Execution> {
    if (this.#closed) throw closedError();
    this.#notNested();
    // Stored as UTF-8, where two scopes with lone surrogates become one: one tenant's keys.
    if (!wellFormed(claim.scope) || !wellFormed(claim.operation))
      throw new InvalidArgumentError(
        'SqliteKeyStore: the scope and the operation must be well-formed Unicode (no lone surrogate).',
      );
    if (!this.#writer) await this.open();
    this.#maybeMaintain();
    // From here to the queue: one synchronous turn, so no other request of this process can
    // see the key free in between.
    const id = idOf(claim.scope, claim.key);
    const running = this.#inFlight.get(id);
    if (running)
      return running.operation === claim.operation && running.fingerprint === claim.fingerprint
        ? { outcome: 'in_progress' }
        : { outcome: 'mismatch' };
    let workFailed = false;
    // The handler's own error as it is; the database's as a StoreError (nothing committed).
    const failed = (error: unknown) =>
      workFailed || error instanceof OncelyError
        ? error
        : new StoreError(
            `SqliteKeyStore could not run the request under its key: ${messageOf(error)}. Nothing was committed.`,
            { scope: claim.scope, cause: error },
          );
    let committed: Row | undefined;
    try {
      committed = this.#readCommitted(claim);
    } catch (error) {
      throw failed(error);
    }
    if (committed) return outcomeOf(committed, claim);
    this.#inFlight.set(id, claim);
    const release = () => {
      if (this.#inFlight.get(id) === claim) this.#inFlight.delete(id);
    };
    try {
      return await this.#write(release, async (db) => {
        const now = Date.now();
        const claimed = this.#statement(
          db,
          `INSERT INTO oncely_server_keys (scope, key, created_at, operation, fingerprint) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (scope, key) DO UPDATE SET created_at = excluded.created_at, operation = excluded.operation,
             fingerprint = excluded.fingerprint, status = NULL, headers = NULL, body = NULL
           WHERE oncely_server_keys.created_at <= ?`,
        ).run(claim.scope, claim.key, now, claim.operation, claim.fingerprint, now - this.#retentionMs);
        if (Number(claimed.changes) !== 1) {
          // Committed by another process since the look-up: its answer, and nothing of ours.
          const row = this.#statement(db, LIVE).get(claim.scope, claim.key, now - this.#retentionMs) as Row | undefined;
          if (!row) throw new StoreError('SqliteKeyStore: the key row was neither claimed nor found.');
          return { commit: false, value: outcomeOf(row, claim) };
        }
        const answer = await this.#runWork(db, work).catch((error: unknown) => {
          workFailed = true;
          throw error;
        });
        this.#statement(
          db,
          'UPDATE oncely_server_keys SET status = ?, headers = ?, body = ?, created_at = ? WHERE scope = ? AND key = ?',
        ).run(answer.status, JSON.stringify(answer.headers), answer.body, Date.now(), claim.scope, claim.key);
        return { commit: true, value: { outcome: 'ran', answer } satisfies Execution };
      });
    } catch (error) {
      throw failed(error);
    } finally {
      release();
    }
  }

  /**
   * Runs `work` in a write transaction of its own, with no key: the app's writes outside an
   * idempotent route (set-up, admin) take their turn with the handlers' instead of failing
   * on SQLite's write lock. Commits what `work` wrote, or nothing when it throws.
   * @example await store.transaction((tx) => tx.exec('CREATE TABLE IF NOT EXISTS ledger (…)'));
   */
  async transaction<T>(work: (tx: SqliteTransaction) => T | Promise<T>): Promise<T> {
    if (this.#closed) throw closedError();
    this.#notNested();
    if (!this.#writer) await this.open();
    return this.#write(
      () => undefined,
      async (db) => ({ commit: true, value: await this.#runWork(db, async (tx) => work(tx)) }),
    );
  }

  /**
   * Deletes the keys past retention, `maintainBatch` at a time, each batch its own short
   * transaction so that requests take turns with it. Safe from every process.
   */
  async maintain(): Promise<{ deleted: number }> {
    if (this.#closed) throw closedError();
    if (!this.#writer) await this.open();
    let deleted = 0;
    for (;;) {
      const n = await this.#write(
        () => undefined,
        async (db) => {
          const cutoff = Date.now() - this.#retentionMs;
          const gone = this.#statement(
            db,
            `DELETE FROM oncely_server_keys WHERE rowid IN
               (SELECT rowid FROM oncely_server_keys WHERE created_at <= ? ORDER BY created_at LIMIT ?)`,
          ).run(cutoff, this.#maintainBatch);
          return { commit: true, value: Number(gone.changes) };
        },
      );
      deleted += n;
      if (n < this.#maintainBatch) break;
    }
    this.#maintainedAt = Date.now();
    return { deleted };
  }

  /**
   * The seeds' daily invariant: effects recorded vs keys committed for `operation` over a
   * window, both counted in one read transaction (one snapshot) on the read connection.
   * Schedule it; page on `drift > 0` (a duplicate, or an effect written outside its key's
   * transaction). At the window's start an effect and its key may fall either side, by the
   * handler's duration.
   * @example await store.checkInvariant({ operation: 'POST /payments', effectsSql: 'SELECT count(*) FROM ledger WHERE created_at > ?' })
   */
  async checkInvariant(options: SqliteInvariantOptions): Promise<SqliteInvariantReport> {
    if (typeof options?.operation !== 'string' || typeof options.effectsSql !== 'string')
      throw new InvalidArgumentError('checkInvariant needs an `operation` and an `effectsSql`.');
    if (this.#closed) throw closedError();
    if (!this.#writer) await this.open();
    const [low, high] = options.statuses ?? [200, 299];
    const since = Date.now() - (options.windowMs ?? 82_800_000);
    const reader = this.#reader!;
    return retryWhileBusy(() => {
      reader.exec('BEGIN');
      try {
        const keys = reader
          .prepare(
            'SELECT count(*) AS n FROM oncely_server_keys WHERE operation = ? AND status BETWEEN ? AND ? AND created_at > ?',
          )
          .get(options.operation, low, high, since);
        const effects = reader.prepare(options.effectsSql).get(since);
        reader.exec('COMMIT');
        const report = {
          operation: options.operation,
          keys: Number(keys?.n ?? 0),
          effects: Number(Object.values(effects ?? { n: 0 })[0]),
        };
        return { ...report, drift: report.effects - report.keys };
      } catch (error) {
        if (reader.isTransaction) reader.exec('ROLLBACK');
        if (isBusy(error)) throw error;
        throw new StoreError(`checkInvariant could not count: ${messageOf(error)}.`, { cause: error });
      }
    }, this.#lockTimeout);
  }

  /** Waits for the transactions under way, then closes both connections. Later calls throw. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#opening?.catch(() => undefined);
    await this.#tail;
    await this.#maintaining;
    this.#statements.clear();
    this.#reader?.close();
    this.#writer?.close();
    this.#reader = undefined;
    this.#writer = undefined;
  }

  /** The key's committed row within retention, read on the connection that sees commits only. */
  #readCommitted(claim: KeyClaim): Row | undefined {
    const reader = this.#reader!;
    try {
      return this.#statement(reader, LIVE).get(claim.scope, claim.key, Date.now() - this.#retentionMs) as
        | Row
        | undefined;
    } catch (error) {
      // Rare in WAL (a reader waits only on recovery): the claim re-reads under the write lock.
      if (isBusy(error)) return undefined;
      throw error;
    }
  }

  /**
   * One write transaction, after the ones queued before it: `BEGIN IMMEDIATE` (another
   * connection's lock waited for from a timer), `body`, then `COMMIT` — or `ROLLBACK` when
   * it throws or says not to commit. `ended` runs in the same synchronous turn as either.
   */
  #write<T>(ended: () => void, body: (db: Db) => Promise<{ commit: boolean; value: T }>): Promise<T> {
    const run = this.#tail.then(async () => {
      const db = this.#writer;
      if (!db) throw closedError();
      try {
        await retryWhileBusy(() => db.exec('BEGIN IMMEDIATE'), this.#lockTimeout);
      } catch (error) {
        ended();
        if (!isBusy(error)) throw error;
        throw new StoreError(
          `SqliteKeyStore: another connection held ${this.file}'s write lock for more than ${this.#lockTimeout} ms; nothing ran.`,
          { cause: error },
        );
      }
      try {
        const { commit, value } = await body(db);
        if (!db.isTransaction)
          throw new StoreError('SqliteKeyStore: the transaction was ended by its work; nothing of the key was stored.');
        if (!commit) db.exec('ROLLBACK');
        else
          try {
            db.exec('COMMIT');
          } catch (error) {
            // Still open (a deferred constraint, a lock): it is rolled back below, nothing
            // committed. Ended by SQLite itself (an I/O error, fsync): the WAL may hold it.
            if (db.isTransaction) throw error;
            ended();
            throw new StoreError(
              `SqliteKeyStore: the COMMIT of the key and its effect failed (${messageOf(error)}); whether it committed is unknown. A retry with the key finds out: the replay, or a first run.`,
              { cause: error },
            );
          }
        ended();
        return value;
      } catch (error) {
        try {
          if (db.isTransaction) db.exec('ROLLBACK');
        } finally {
          ended();
        }
        throw error;
      }
    });
    this.#tail = run.catch(() => undefined);
    return run;
  }

  /** Runs the handler with a transaction handle that dies when it returns, bounded by `transactionTimeout`. */
  async #runWork<T>(db: Db, work: (tx: SqliteTransaction) => Promise<T>): Promise<T> {
    let live = true;
    const check = (sql: string) => {
      if (!live)
        throw new StoreError('SqliteKeyStore: this transaction is over; a handler writes only before it returns.');
      if (sql.split(';').some((part) => CONTROL.test(part)))
        throw new InvalidArgumentError(
          'SqliteKeyStore: BEGIN, COMMIT, END and ROLLBACK belong to the store (the key commits with your rows); use SAVEPOINT.',
        );
    };
    const statement = (sql: string) => {
      check(sql);
      return this.#statement(db, sql) as unknown as Record<
        'run' | 'get' | 'all',
        (...params: SqlParameters) => unknown
      >;
    };
    const tx: SqliteTransaction = {
      run: (sql, ...params) => statement(sql).run(...params) as StatementResultingChanges,
      get: <R>(sql: string, ...params: SqlParameters) => statement(sql).get(...params) as R | undefined,
      all: <R>(sql: string, ...params: SqlParameters) => statement(sql).all(...params) as R[],
      exec: (sql) => {
        check(sql);
        db.exec(sql);
      },
    };
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new StoreError(
              `SqliteKeyStore: the handler held its transaction for more than ${this.#transactionTimeout} ms; it was rolled back.`,
            ),
          ),
        this.#transactionTimeout,
      );
    });
    const context = { live: true };
    try {
      return await Promise.race([this.#working.run(context, () => work(tx)), timeout]);
    } finally {
      live = false;
      context.live = false;
      clearTimeout(timer);
    }
  }

  /** A handler that awaits another transaction of this store would wait for itself (until transactionTimeout). */
  #notNested(): void {
    if (this.#working.getStore()?.live)
      throw new InvalidArgumentError(
        'SqliteKeyStore: a handler called execute() or transaction() of its own store; it would wait for its own transaction. Write through its `tx`.',
      );
  }

  #statement(db: Db, sql: string): StatementSync {
    const id = `${db === this.#reader ? 'r' : 'w'}${sql}`;
    let statement = this.#statements.get(id);
    if (!statement) {
      if (this.#statements.size >= STATEMENTS_MAX) this.#statements.clear();
      statement = db.prepare(sql);
      this.#statements.set(id, statement);
    }
    return statement;
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

/** A key's row newer than the cutoff (committed, when read outside the claiming transaction). */
const LIVE = `SELECT operation, fingerprint, status, headers, body FROM oncely_server_keys
               WHERE scope = ? AND key = ? AND created_at > ?`;

const closedError = () => new StoreError('SqliteKeyStore is closed.');
const messageOf = (error: unknown): string => (error as Error)?.message ?? String(error);

/**
 * A `SqliteKeyStore` with its file opened and migrated: errors (a file that is not SQLite,
 * a newer schema, a lock held too long) surface here rather than on the first request.
 */
export async function openSqliteKeyStore(options: SqliteKeyStoreOptions): Promise<SqliteKeyStore> {
  const store = new SqliteKeyStore(options);
  await store.open();
  return store;
}

/**
 * The write side of `SqliteKeyStore`: one write connection, its transactions one at a time in
 * arrival order (a queue: node:sqlite is synchronous, a connection has one transaction, and
 * two requests must never share one), the handler's transaction handle, and the statement
 * cache of both connections.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { StatementResultingChanges, StatementSync } from 'node:sqlite';
import { InvalidArgumentError, StoreError } from '../src/errors.js';
import { type Db, inTransaction, isBusy } from './sqlite-driver.js';
import type { SqliteTransaction, SqlParameters } from './sqlite-key-types.js';
import { retryWhileBusy } from './sqlite-open.js';

const STATEMENTS_MAX = 256;
/** Transaction control the store owns (savepoints stay the handler's). */
const CONTROL = /^\s*(?:BEGIN|COMMIT|END|ROLLBACK(?!\s+(?:TRANSACTION\s+)?TO\b))\b/i;

export const closedError = () => new StoreError('SqliteKeyStore is closed.');
export const messageOf = (error: unknown): string => (error as Error)?.message ?? String(error);

export interface WritesOptions {
  file: string;
  lockTimeout: number;
  transactionTimeout: number;
}

/** Prepared statements per connection, reused; the cache is emptied when it grows past a bound. */
export class Statements {
  readonly #cache = new Map<Db, Map<string, StatementSync>>();

  get(db: Db, sql: string): StatementSync {
    let forDb = this.#cache.get(db);
    if (!forDb) {
      forDb = new Map();
      this.#cache.set(db, forDb);
    }
    let statement = forDb.get(sql);
    if (!statement) {
      if (forDb.size >= STATEMENTS_MAX) forDb.clear();
      statement = db.prepare(sql);
      forDb.set(sql, statement);
    }
    return statement;
  }

  clear(): void {
    this.#cache.clear();
  }
}

/** The write queue over the store's write connection (set once it opens). */
export class SqliteWrites {
  writer: Db | undefined;
  readonly #options: WritesOptions;
  readonly #statements: Statements;
  /** Set while a handler runs, to refuse a nested transaction (it would queue behind its own). */
  readonly #working = new AsyncLocalStorage<{ live: boolean }>();
  /** Each transaction starts when the one before has ended. */
  #tail: Promise<unknown> = Promise.resolve();

  constructor(options: WritesOptions, statements: Statements) {
    this.#options = options;
    this.#statements = statements;
  }

  /** Resolves when the transactions queued so far have ended. */
  idle(): Promise<unknown> {
    return this.#tail;
  }

  /**
   * One write transaction, after the ones queued before it: `BEGIN IMMEDIATE` (another
   * connection's lock waited for from a timer), `body`, then `COMMIT` — or `ROLLBACK` when
   * it throws or says not to commit. `ended` runs in the same synchronous turn as either.
   */
  write<T>(ended: () => void, body: (db: Db) => Promise<{ commit: boolean; value: T }>): Promise<T> {
    const { file, lockTimeout } = this.#options;
    const run = this.#tail.then(async () => {
      const db = this.writer;
      if (!db) throw closedError();
      try {
        await retryWhileBusy(() => db.exec('BEGIN IMMEDIATE'), lockTimeout);
      } catch (error) {
        ended();
        if (!isBusy(error)) throw error;
        throw new StoreError(
          `SqliteKeyStore: another connection held ${file}'s write lock for more than ${lockTimeout} ms; nothing ran.`,
          { cause: error },
        );
      }
      try {
        const { commit, value } = await body(db);
        if (!inTransaction(db))
          throw new StoreError('SqliteKeyStore: the transaction was ended by its work; nothing of the key was stored.');
        if (!commit) db.exec('ROLLBACK');
        else
          try {
            db.exec('COMMIT');
          } catch (error) {
            // Still open (a deferred constraint, a lock): it is rolled back below, nothing
            // committed. Ended by SQLite itself (an I/O error, fsync): the WAL may hold it.
            if (inTransaction(db)) throw error;
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
          if (inTransaction(db)) db.exec('ROLLBACK');
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
  async runWork<T>(db: Db, work: (tx: SqliteTransaction) => Promise<T>): Promise<T> {
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
      return this.#statements.get(db, sql) as unknown as Record<
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
    const { transactionTimeout } = this.#options;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new StoreError(
              `SqliteKeyStore: the handler held its transaction for more than ${transactionTimeout} ms; it was rolled back.`,
            ),
          ),
        transactionTimeout,
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
  notNested(): void {
    if (this.#working.getStore()?.live)
      throw new InvalidArgumentError(
        'SqliteKeyStore: a handler called execute() or transaction() of its own store; it would wait for its own transaction. Write through its `tx`.',
      );
  }
}

/**
 * Group commit on one SQLite connection: every write submitted during one event-loop
 * turn runs in one `BEGIN IMMEDIATE` transaction (each in its own savepoint, so one
 * failing write does not undo the others) and one commit. When another process holds
 * the write lock (SQLITE_BUSY, `busy_timeout` is 0) the batch is retried from a timer:
 * the event loop never sleeps on a lock.
 */
import { StoreError } from '../src/errors.js';
import { type Db, isBusy } from './sqlite-driver.js';

/** What a write sees while it runs inside the transaction. */
export interface WriteContext {
  /** Runs `fn` once the transaction has committed (reports, events). */
  afterCommit(fn: () => void): void;
  /** Keeps this write's changes but rejects its promise with `error` once committed. */
  failAfterCommit(error: unknown): never;
}

interface Job {
  strict: boolean;
  run: (context: WriteContext) => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

class CommitThenReject {
  constructor(readonly error: unknown) {}
}

/** Writes in one commit at most: bounds how long one commit holds the event loop. */
const MAX_BATCH = 256;
const FIRST_RETRY_MS = 1;
const MAX_RETRY_MS = 25;

export interface CommitQueueOptions {
  /** false: never sync (tests, throwaway stores). */
  fsync: boolean;
  /** How long a batch waits for other processes' lock before its writes fail (ms). */
  lockTimeout: number;
  /** Turns a SQLite error into the error the caller gets. */
  wrap: (error: unknown) => unknown;
}

export class CommitQueue {
  readonly #db: Db;
  readonly #options: CommitQueueOptions;
  #waiting: Job[] = [];
  #scheduled = false;
  /** When the batch now waiting for the lock first tried it, and its next delay. */
  #busySince: number | undefined;
  #retryDelay = FIRST_RETRY_MS;
  #synchronous: 'FULL' | 'NORMAL' | 'OFF' | undefined;
  #idle: (() => void)[] = [];
  readonly #touch;

  constructor(db: Db, options: CommitQueueOptions) {
    this.#db = db;
    this.#options = options;
    this.#touch = db.prepare("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'sync'");
  }

  /**
   * Runs `run` inside the next commit and resolves with what it returned once that
   * commit is done: synced when `strict` (which syncs every earlier relaxed commit too,
   * the WAL being one file), merely written to the OS when relaxed. `run` must be
   * synchronous; it runs again if the commit has to be retried.
   */
  submit<T>(strict: boolean, run: (context: WriteContext) => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#waiting.push({ strict, run, resolve: resolve as (value: unknown) => void, reject });
      this.#schedule(0);
    });
  }

  /** Resolves once nothing is waiting. */
  idle(): Promise<void> {
    if (this.#waiting.length === 0 && !this.#scheduled) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #schedule(delay: number): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    const flush = () => {
      this.#scheduled = false;
      this.#flush();
    };
    // Jittered, so that processes waiting for one another do not retry in step.
    if (delay === 0) setImmediate(flush);
    else setTimeout(flush, delay * (0.5 + Math.random() / 2));
  }

  #flush(): void {
    const batch = this.#waiting.splice(0, MAX_BATCH);
    if (batch.length > 0) this.#commit(batch);
    if (this.#waiting.length > 0) this.#schedule(this.#busySince === undefined ? 0 : this.#retryDelay);
    else for (const resolve of this.#idle.splice(0)) resolve();
  }

  #commit(batch: Job[]): void {
    const db = this.#db;
    const strict = batch.some((job) => job.strict);
    try {
      this.#setSynchronous(!this.#options.fsync ? 'OFF' : strict ? 'FULL' : 'NORMAL');
      db.exec('BEGIN IMMEDIATE');
    } catch (error) {
      this.#failedToStart(batch, error);
      return;
    }
    const after: (() => void)[] = [];
    const outcomes: ({ value: unknown } | { error: unknown })[] = [];
    let aborted: unknown;
    for (const job of batch) {
      if (aborted !== undefined) break;
      db.exec('SAVEPOINT job');
      const context: WriteContext = {
        afterCommit: (fn) => after.push(fn),
        failAfterCommit: (error) => {
          throw new CommitThenReject(error);
        },
      };
      try {
        outcomes.push({ value: job.run(context) });
        db.exec('RELEASE job');
      } catch (error) {
        if (!db.isTransaction) {
          // SQLite ended the transaction itself (I/O error, full disk): nothing of it stays.
          aborted = error;
          break;
        }
        if (error instanceof CommitThenReject) {
          db.exec('RELEASE job');
          outcomes.push({ error: error.error });
        } else {
          db.exec('ROLLBACK TO job; RELEASE job');
          outcomes.push({ error });
        }
      }
    }
    if (aborted === undefined) {
      try {
        // A strict commit that wrote nothing would sync nothing: write one row, so that the
        // records it read (maybe committed relaxed by another process) are synced too.
        if (strict && this.#options.fsync) this.#touch.run();
        db.exec('COMMIT');
      } catch (error) {
        aborted = error;
      }
    }
    if (aborted !== undefined) {
      if (db.isTransaction) db.exec('ROLLBACK');
      if (isBusy(aborted)) {
        this.#failedToStart(batch, aborted);
        return;
      }
      const wrapped = this.#options.wrap(aborted);
      for (const job of batch) job.reject(wrapped);
      return;
    }
    this.#busySince = undefined;
    this.#retryDelay = FIRST_RETRY_MS;
    for (const fn of after) fn();
    batch.forEach((job, i) => {
      const outcome = outcomes[i]!;
      if ('value' in outcome) job.resolve(outcome.value);
      else job.reject(outcome.error);
    });
  }

  /** The lock is taken (retry later, from a timer) or the database failed (reject). */
  #failedToStart(batch: Job[], error: unknown): void {
    if (!isBusy(error)) {
      const wrapped = this.#options.wrap(error);
      for (const job of batch) job.reject(wrapped);
      return;
    }
    const now = Date.now();
    this.#busySince ??= now;
    if (now - this.#busySince > this.#options.lockTimeout) {
      this.#busySince = undefined;
      const timeout = new StoreError(
        `oncely's database stayed locked by another process for over ${this.#options.lockTimeout} ms; nothing was written.`,
        { cause: error },
      );
      for (const job of batch) job.reject(timeout);
      return;
    }
    this.#waiting.unshift(...batch);
    this.#retryDelay = Math.min(MAX_RETRY_MS, this.#retryDelay * 2);
  }

  #setSynchronous(level: 'FULL' | 'NORMAL' | 'OFF'): void {
    if (this.#synchronous === level) return;
    this.#db.exec(`PRAGMA synchronous = ${level}`);
    this.#synchronous = level;
  }
}

/**
 * Group commit on one SQLite connection, run by a SqliteStore's database thread: every
 * write submitted during one turn of that thread runs in one `BEGIN IMMEDIATE`
 * transaction (each in its own savepoint, so one failing write does not undo the others)
 * and one commit. When another process holds the write lock (SQLITE_BUSY, `busy_timeout`
 * is 0) the batch is retried from a timer: the thread never sleeps on a lock.
 *
 * Commits run with `synchronous=NORMAL`: SQLite writes the WAL to the OS and does not
 * sync it. A strict write resolves once the WAL file has been synced after its commit,
 * by an `fdatasync` on this thread, which also syncs every earlier relaxed commit, of
 * any process. Writes that arrive during a sync share the next commit. Frames that left
 * the WAL meanwhile were moved by a checkpoint, which SQLite syncs itself.
 */
import { channel } from 'node:diagnostics_channel';
import { closeSync, fdatasyncSync, openSync } from 'node:fs';
import { StoreError } from '../src/errors.js';
import { type Db, inTransaction, isBusy } from './sqlite-driver.js';
import { extendWalAhead } from './wal-zeros.js';

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
  readonly error: unknown;
  constructor(error: unknown) {
    this.error = error;
  }
}

/**
 * Publishes `{ ms, cpuMs, writes }` after each commit (wall and this thread's CPU time), for whoever subscribes (the bench
 * measures how long a commit holds the event loop). Costs nothing without subscribers.
 */
export const commitChannel = channel('oncely:sqlite:commit');

/**
 * This thread's CPU time so far (ms): `process.threadCpuUsage` exists from Node 23.9 and
 * 22.19 only; before it, `NaN` (a subscriber must not crash the database thread).
 */
export const threadCpuMs = (): number => {
  const used = process.threadCpuUsage?.();
  return used ? (used.user + used.system) / 1000 : Number.NaN;
};

/** Writes in one commit at most: bounds how long one commit holds the database thread's loop. */
const MAX_BATCH = 256;
const FIRST_RETRY_MS = 1;
const MAX_RETRY_MS = 25;

export interface CommitQueueOptions {
  /** The database file; its WAL is `<file>-wal`. */
  file: string;
  /** false: never sync (tests, throwaway stores). */
  fsync: boolean;
  /** How long a batch waits for other processes' lock before its writes fail (ms). */
  lockTimeout: number;
  /** Turns a SQLite error into the error the caller gets. */
  wrap: (error: unknown) => unknown;
  /** Called after each commit. */
  committed?: () => void;
  /** Called inside each transaction, before its commit (a test's stuck disk). */
  committing?: () => void;
  /** Called after each sync of the WAL. */
  synced?: () => void;
}

export class CommitQueue {
  readonly #db: Db;
  readonly #options: CommitQueueOptions;
  #waiting: Job[] = [];
  #scheduled = false;
  /** When the batch now waiting for the lock first tried it, and its next delay. */
  #busySince: number | undefined;
  #retryDelay = FIRST_RETRY_MS;
  #idle: (() => void)[] = [];
  /** Strict writes committed, waiting for the next sync of the WAL. */
  #unsynced: (() => void)[] = [];
  #unsyncedFailed: ((error: unknown) => void)[] = [];
  #syncing = false;
  /** The WAL, kept open: SQLite removes it only when its last connection closes, and ours is open. */
  #wal: number | undefined;
  /** The WAL reached `WAL_CAP`: checkpoint from this connection once the batch is answered. */
  #startOver = false;

  readonly #sql;

  constructor(db: Db, options: CommitQueueOptions) {
    this.#db = db;
    this.#options = options;
    db.exec(`PRAGMA synchronous = ${options.fsync ? 'NORMAL' : 'OFF'}`);
    // Prepared once: parsing these on every commit showed in the commit's time.
    const prepare = (sql: string) => db.prepare(sql);
    this.#sql = {
      begin: prepare('BEGIN IMMEDIATE'),
      commit: prepare('COMMIT'),
      savepoint: prepare('SAVEPOINT job'),
      release: prepare('RELEASE job'),
      rollbackTo: prepare('ROLLBACK TO job'),
      checkpoint: prepare('PRAGMA wal_checkpoint(PASSIVE)'),
    };
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
      this.#schedule(this.#busySince === undefined ? 'tick' : this.#retryDelay);
    });
  }

  /** Closes the WAL handle once nothing is waiting. */
  async close(): Promise<void> {
    await this.idle();
    if (this.#wal !== undefined) closeSync(this.#wal);
    this.#wal = undefined;
  }

  /**
   * `fdatasync` of the WAL through a descriptor of our own: a sync flushes the file, whoever
   * wrote it. Synchronous: this runs on the store's own database thread, where a hop to the
   * thread pool and back would only add latency; writes that arrive meanwhile wait in the
   * thread's message queue and share the next commit.
   */
  async #syncWal(): Promise<void> {
    // No WAL: everything is in the database file, which SQLite syncs when it checkpoints.
    const wal = this.#openWal();
    if (wal !== undefined) fdatasyncSync(wal);
  }

  #openWal(): number | undefined {
    try {
      this.#wal ??= openSync(`${this.#options.file}-wal`, 'r+');
      return this.#wal;
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  /**
   * Inside a write transaction: zeros ahead of SQLite's frames (wal-zeros.ts). Best effort:
   * a failure here (a full disk) is SQLite's to meet and report.
   */
  #extendWal(): void {
    if (!this.#options.fsync) return;
    try {
      const wal = this.#openWal();
      if (wal !== undefined && extendWalAhead(wal)) this.#startOver = true;
    } catch {
      // Nothing was promised: the commit goes on without the zeros.
    }
  }

  /** True while writes wait for their commit: a read must queue behind them to see them. */
  get busy(): boolean {
    return this.#waiting.length > 0 || this.#scheduled;
  }

  /** Resolves once nothing is waiting for a commit or a sync. */
  idle(): Promise<void> {
    if (this.#waiting.length === 0 && !this.#scheduled && !this.#syncing) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /**
   * `tick`: once this turn's promise jobs have run, so that every write they submit shares
   * the commit, without waiting for another turn of the loop; `turn`: after what else
   * waits (a batch left over); a number: from a timer, that many ms (jittered, so that
   * processes waiting for one another do not retry in step).
   */
  #schedule(when: 'tick' | 'turn' | number): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    const flush = () => {
      this.#scheduled = false;
      this.#flush();
    };
    if (when === 'tick') process.nextTick(flush);
    else if (when === 'turn') setImmediate(flush);
    else setTimeout(flush, when * (0.5 + Math.random() / 2));
  }

  #flush(): void {
    const batch = this.#waiting.splice(0, MAX_BATCH);
    if (batch.length > 0) this.#commit(batch);
    if (this.#waiting.length > 0) this.#schedule(this.#busySince === undefined ? 'turn' : this.#retryDelay);
    else this.#settleIdle();
  }

  #settleIdle(): void {
    if (this.#waiting.length === 0 && !this.#scheduled && !this.#syncing) {
      for (const resolve of this.#idle.splice(0)) resolve();
    }
  }

  #commit(batch: Job[]): void {
    if (!commitChannel.hasSubscribers) {
      this.#run(batch);
      return;
    }
    const started = performance.now();
    const cpu = threadCpuMs();
    this.#run(batch);
    const cpuMs = threadCpuMs() - cpu;
    commitChannel.publish({ ms: performance.now() - started, cpuMs, writes: batch.length });
  }

  /**
   * One transaction for `batch`. First without a savepoint per write (two statements each,
   * a fifth of a claim's time on the thread): a write that throws then rolls the batch back,
   * and it runs again with savepoints, so that its failure undoes its own changes only.
   */
  #run(batch: Job[], savepoints = false): void {
    const db = this.#db;
    const sql = this.#sql;
    try {
      sql.begin.run();
    } catch (error) {
      this.#failedToStart(batch, error);
      return;
    }
    this.#extendWal();
    const after: (() => void)[] = [];
    const outcomes: ({ value: unknown } | { error: unknown })[] = [];
    let aborted: unknown;
    // One write alone needs no savepoint: its failure rolls the whole transaction back.
    const alone = !savepoints || batch.length === 1;
    for (const job of batch) {
      if (aborted !== undefined) break;
      if (!alone) sql.savepoint.run();
      // Kept only if the job's changes are: a rolled-back quarantine must not be reported.
      const jobAfter: (() => void)[] = [];
      const context: WriteContext = {
        afterCommit: (fn) => jobAfter.push(fn),
        failAfterCommit: (error) => {
          throw new CommitThenReject(error);
        },
      };
      try {
        outcomes.push({ value: job.run(context) });
        if (!alone) sql.release.run();
        after.push(...jobAfter);
      } catch (error) {
        if (!inTransaction(db)) {
          // SQLite ended the transaction itself (I/O error, full disk): nothing of it stays.
          aborted = error;
          break;
        }
        if (error instanceof CommitThenReject) {
          if (!alone) sql.release.run();
          after.push(...jobAfter);
          outcomes.push({ error: error.error });
        } else if (!savepoints && batch.length > 1) {
          db.exec('ROLLBACK');
          this.#run(batch, true);
          return;
        } else {
          if (alone) db.exec('ROLLBACK');
          else {
            sql.rollbackTo.run();
            sql.release.run();
          }
          outcomes.push({ error });
        }
      }
    }
    if (aborted === undefined && inTransaction(db)) {
      try {
        this.#options.committing?.();
        sql.commit.run();
      } catch (error) {
        aborted = error;
      }
    }
    if (aborted !== undefined) {
      if (inTransaction(db)) db.exec('ROLLBACK');
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
    this.#options.committed?.();
    for (const [i, job] of batch.entries()) {
      const outcome = outcomes[i]!;
      const settle = () => ('value' in outcome ? job.resolve(outcome.value) : job.reject(outcome.error));
      // A strict write that found a record (maybe committed relaxed elsewhere) waits for the sync too.
      if (job.strict && this.#options.fsync) {
        this.#unsynced.push(settle);
        this.#unsyncedFailed.push(job.reject);
      } else settle();
    }
    this.#sync();
    if (this.#startOver) {
      this.#startOver = false;
      // After this batch's answers (they go out on a tick). This thread is the process's only
      // writer: between its commits the checkpoint copies every frame left, and the next
      // commit starts the WAL over. Busy (another checkpoint, a reader of an old snapshot): next time.
      setImmediate(() => this.#tryCheckpoint());
    }
  }

  #tryCheckpoint(): void {
    try {
      if (this.#wal !== undefined && !inTransaction(this.#db)) this.#sql.checkpoint.get();
    } catch {
      // Nothing depends on it (the store may even have closed meanwhile): the WAL grows until a later try.
    }
  }

  /** Syncs the WAL for the strict writes committed so far; again if more came meanwhile. */
  #sync(): void {
    if (this.#syncing || this.#unsynced.length === 0) return;
    this.#syncing = true;
    const settle = this.#unsynced.splice(0);
    const fail = this.#unsyncedFailed.splice(0);
    this.#syncWal()
      .then(
        () => {
          this.#options.synced?.();
          for (const fn of settle) fn();
        },
        (error: unknown) => {
          const wrapped = new StoreError(`oncely could not sync its database to disk: ${String(error)}`, {
            cause: error,
          });
          for (const fn of fail) fn(wrapped);
        },
      )
      .finally(() => {
        this.#syncing = false;
        this.#sync();
        this.#settleIdle();
      });
  }

  /** The lock is taken (retry later, from a timer) or the database failed (reject). */
  #failedToStart(batch: Job[], error: unknown): void {
    if (!isBusy(error)) {
      const wrapped = this.#options.wrap(error);
      for (const job of batch) job.reject(wrapped);
      return;
    }
    // A monotonic clock: a wall clock stepped back (NTP, a resumed VM) must not stretch the bound.
    const now = performance.now();
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
}

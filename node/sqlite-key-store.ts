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
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import { InvalidArgumentError, OncelyError, StoreError } from '../src/errors.js';
import type { Execution, KeyClaim, KeyStore, StoredAnswer } from '../src/server/store.js';
import { wellFormed } from '../src/store/record-rules.js';
import { type Db, databaseClass, inTransaction, isBusy } from './sqlite-driver.js';
import { migrateSqliteKeys, SQLITE_KEY_SCHEMA_VERSION, schemaVersion } from './sqlite-key-migrations.js';
import type {
  SqliteInvariantOptions,
  SqliteInvariantReport,
  SqliteKeyStoreOptions,
  SqliteTransaction,
} from './sqlite-key-types.js';
import { closedError, messageOf, SqliteWrites, Statements } from './sqlite-key-writes.js';
import { retryWhileBusy } from './sqlite-open.js';

export type {
  SqliteInvariantOptions,
  SqliteInvariantReport,
  SqliteKeyStoreOptions,
  SqliteTransaction,
  SqlParameters,
} from './sqlite-key-types.js';

interface Row {
  operation: string;
  fingerprint: string;
  status: number;
  headers: string;
  body: Uint8Array;
}

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

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
  readonly #statements = new Statements();
  readonly #writes: SqliteWrites;
  #reader: Db | undefined;
  #opening: Promise<void> | undefined;
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
    const writes = { file: this.file, lockTimeout: this.#lockTimeout, transactionTimeout: this.#transactionTimeout };
    this.#writes = new SqliteWrites(writes, this.#statements);
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
            if (inTransaction(writer)) writer.exec('ROLLBACK');
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
    this.#writes.writer = writer;
    this.#reader = reader;
  }

  async execute(claim: KeyClaim, work: (tx: SqliteTransaction) => Promise<StoredAnswer>): Promise<Execution> {
    if (this.#closed) throw closedError();
    this.#writes.notNested();
    // Stored as UTF-8, where two scopes with lone surrogates become one: one tenant's keys.
    if (!wellFormed(claim.scope) || !wellFormed(claim.operation))
      throw new InvalidArgumentError(
        'SqliteKeyStore: the scope and the operation must be well-formed Unicode (no lone surrogate).',
      );
    if (!this.#writes.writer) await this.open();
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
      return await this.#writes.write(release, async (db) => {
        const now = Date.now();
        const claimed = this.#statements
          .get(
            db,
            `INSERT INTO oncely_server_keys (scope, key, created_at, operation, fingerprint) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (scope, key) DO UPDATE SET created_at = excluded.created_at, operation = excluded.operation,
             fingerprint = excluded.fingerprint, status = NULL, headers = NULL, body = NULL
           WHERE oncely_server_keys.created_at <= ?`,
          )
          .run(claim.scope, claim.key, now, claim.operation, claim.fingerprint, now - this.#retentionMs);
        if (Number(claimed.changes) !== 1) {
          // Committed by another process since the look-up: its answer, and nothing of ours.
          const row = this.#statements.get(db, LIVE).get(claim.scope, claim.key, now - this.#retentionMs) as
            | Row
            | undefined;
          if (!row) throw new StoreError('SqliteKeyStore: the key row was neither claimed nor found.');
          return { commit: false, value: outcomeOf(row, claim) };
        }
        const answer = await this.#writes.runWork(db, work).catch((error: unknown) => {
          workFailed = true;
          throw error;
        });
        this.#statements
          .get(
            db,
            'UPDATE oncely_server_keys SET status = ?, headers = ?, body = ?, created_at = ? WHERE scope = ? AND key = ?',
          )
          .run(answer.status, JSON.stringify(answer.headers), answer.body, Date.now(), claim.scope, claim.key);
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
    this.#writes.notNested();
    if (!this.#writes.writer) await this.open();
    return this.#writes.write(
      () => undefined,
      async (db) => ({ commit: true, value: await this.#writes.runWork(db, async (tx) => work(tx)) }),
    );
  }

  /**
   * Deletes the keys past retention, `maintainBatch` at a time, each batch its own short
   * transaction so that requests take turns with it. Safe from every process.
   */
  async maintain(): Promise<{ deleted: number }> {
    if (this.#closed) throw closedError();
    if (!this.#writes.writer) await this.open();
    let deleted = 0;
    for (;;) {
      const n = await this.#writes.write(
        () => undefined,
        async (db) => {
          const cutoff = Date.now() - this.#retentionMs;
          const gone = this.#statements
            .get(
              db,
              `DELETE FROM oncely_server_keys WHERE rowid IN
               (SELECT rowid FROM oncely_server_keys WHERE created_at <= ? ORDER BY created_at LIMIT ?)`,
            )
            .run(cutoff, this.#maintainBatch);
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
    if (!this.#writes.writer) await this.open();
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
        if (inTransaction(reader)) reader.exec('ROLLBACK');
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
    await this.#writes.idle();
    await this.#maintaining;
    this.#statements.clear();
    this.#reader?.close();
    this.#writes.writer?.close();
    this.#reader = undefined;
    this.#writes.writer = undefined;
  }

  /** The key's committed row within retention, read on the connection that sees commits only. */
  #readCommitted(claim: KeyClaim): Row | undefined {
    const reader = this.#reader!;
    try {
      return this.#statements.get(reader, LIVE).get(claim.scope, claim.key, Date.now() - this.#retentionMs) as
        | Row
        | undefined;
    } catch (error) {
      // Rare in WAL (a reader waits only on recovery): the claim re-reads under the write lock.
      if (isBusy(error)) return undefined;
      throw error;
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

/** A key's row newer than the cutoff (committed, when read outside the claiming transaction). */
const LIVE = `SELECT operation, fingerprint, status, headers, body FROM oncely_server_keys
               WHERE scope = ? AND key = ? AND created_at > ?`;

/**
 * A `SqliteKeyStore` with its file opened and migrated: errors (a file that is not SQLite,
 * a newer schema, a lock held too long) surface here rather than on the first request.
 */
export async function openSqliteKeyStore(options: SqliteKeyStoreOptions): Promise<SqliteKeyStore> {
  const store = new SqliteKeyStore(options);
  await store.open();
  return store;
}

import path from 'node:path';
import { InvalidArgumentError, StoreError } from '../src/errors.js';
import { StoreListeners } from '../src/store/listeners.js';
import { checkStorable, intentId } from '../src/store/record-rules.js';
import { validRecord } from '../src/store/record-schema.js';
import type {
  ClaimOptions,
  ClaimResult,
  DeleteOptions,
  IntentRecord,
  IntentState,
  ObservableStore,
  RecordUpdater,
  Store,
  StoreEvent,
  SweepOptions,
  WriteOptions,
} from '../src/store/store.js';
import { type RunningCheck, startIntegrityCheck } from './integrity-check.js';
import { MainThreadReader } from './sqlite-reader.js';
import { type QuarantinedRecord, rowValue } from './sqlite-rows.js';
import { SqliteThread, stallTimeout, testHooks } from './sqlite-thread.js';
import type { Calls, Op, SeenRow, WorkerConfig } from './sqlite-wire.js';
import { defaultStateDir } from './state-dir.js';

export type { QuarantinedRecord } from './sqlite-rows.js';
export { StoreFileError, type StoreFileProblem } from './sqlite-schema.js';

export interface SqliteStoreOptions {
  /**
   * The directory of the store; processes that use the same one share their intents.
   * Created if missing. A FileStore directory (oncely 0.1) found there is imported.
   * @default defaultStateDir(): `$ONCELY_STATE_DIR`, else `$XDG_STATE_HOME/oncely` or
   * `~/.local/state/oncely` (Linux), `~/Library/Application Support/oncely` (macOS),
   * `%LOCALAPPDATA%\oncely` (Windows)
   * @example new SqliteStore({ dir: '/var/lib/my-worker/oncely' })
   */
  dir?: string;
  /**
   * The database file.
   * @default path.join(dir, 'intents.db')
   */
  file?: string;
  /**
   * Sync strict commits to disk before they resolve, so a claimed key survives a power
   * cut, not only a crash of the process. Turn off only for throwaway stores (tests).
   * @default true
   */
  fsync?: boolean;
  /**
   * How long (ms) a write waits for another process's write lock, retrying from a timer,
   * before it fails with a `StoreError`.
   * @default 10_000
   */
  lockTimeout?: number;
  /**
   * Records one `sweep()` examines unless its `limit` says otherwise.
   * @default 200
   */
  sweepBatch?: number;
  /**
   * Clock in ms since epoch, for quarantine timestamps.
   * @default Date.now
   */
  now?: () => number;
}

/** Rows last seen, kept to send an update's conditional write without reading first. */
const SEEN_MAX = 1024;

/**
 * Intents in one SQLite database file (`node:sqlite`, WAL), for Node: durable across
 * crashes and restarts, shared by the processes of one machine that use the same file.
 *
 * A claim is `INSERT … ON CONFLICT DO NOTHING` plus a read-back in one `BEGIN IMMEDIATE`
 * transaction; an update reads, runs the updater and writes in one, so updates are atomic
 * across processes. Writes made during one event-loop turn share one transaction and one
 * commit (group commit); strict commits sync the WAL (`synchronous=FULL`), relaxed ones
 * do not (`NORMAL`) and are synced by the next strict commit; claims are always strict.
 * A relaxed write waits for the next call made before the loop turns (a sequential
 * caller's next send), to share its message and its commit.
 * A lock held by another process is waited for from a timer, never by sleeping on the
 * event loop.
 *
 * Bad records (edited by hand, damaged) follow the rules of `corrupt-records.ts`: moved to
 * the `quarantine` table and reported to {@link SqliteStore.subscribe} listeners; the key
 * is kept (state `unknown`) when it can be read, otherwise the intent is blocked
 * (`CorruptRecordError`) until the app reconciles and deletes it. A database file that is
 * not oncely's is reported (`StoreFileError`) and left alone.
 *
 * Construction touches no file and starts no thread; the file is opened on first use
 * ({@link openSqliteStore} opens it up front). Until its first write the store reads on
 * the main thread, read-only (`sqlite-reader.ts`): the database thread starts when a
 * write needs it, so a process that only reads, or never forms an intent, pays for none.
 * One machine only: not for network file systems.
 *
 * @example
 * const store = await openSqliteStore(); // ~/.local/state/oncely/intents.db on Linux
 * const { record, created } = await store.claim(fresh);
 */
export class SqliteStore implements Store, ObservableStore {
  /** The directory of the store. */
  readonly dir: string;
  /** The database file. */
  readonly file: string;
  readonly #lockTimeout: number;
  readonly #sweepBatch: number;
  readonly #now: () => number;
  readonly #listeners = new StoreListeners();
  readonly #thread: SqliteThread;
  readonly #reader: MainThreadReader;
  /** A call went to the thread: from then on every call does, in order, so reads see this store's writes. */
  #threaded = false;
  /** Reads under way on the main thread, each until it has its answer or has handed its call to the thread: close() waits for them. */
  readonly #reading = new Set<Promise<unknown>>();
  /** By `intentId(scope, name)`: the row as this store last read or wrote it (a hint: a conditional write checks it). */
  readonly #seen = new Map<string, SeenRow>();
  readonly #checks = new Set<RunningCheck>();
  readonly #hooks: SharedArrayBuffer | undefined;
  #closed = false;

  constructor(options: SqliteStoreOptions = {}) {
    this.dir = path.resolve(options.dir ?? defaultStateDir());
    this.file = path.resolve(this.dir, options.file ?? 'intents.db');
    this.#lockTimeout = options.lockTimeout ?? 10_000;
    this.#sweepBatch = Math.max(1, Math.floor(options.sweepBatch ?? 200) || 200);
    this.#now = options.now ?? Date.now;
    const internal = options as { [testHooks]?: SharedArrayBuffer; [stallTimeout]?: number };
    const config: WorkerConfig = {
      dir: this.dir,
      file: this.file,
      fsync: options.fsync ?? true,
      lockTimeout: this.#lockTimeout,
      now: this.#now(),
      ...(internal[testHooks] && { hooks: internal[testHooks] }),
    };
    this.#hooks = internal[testHooks];
    this.#thread = new SqliteThread(config, (event) => this.#listeners.emit(event), internal[stallTimeout]);
    this.#reader = new MainThreadReader(this.dir, this.file, this.#lockTimeout);
  }

  /** Opens the database (idempotent): checks, migrates, imports a FileStore directory. */
  async open(): Promise<void> {
    if (this.#closed) throw this.#closedError();
    await this.#readFirst(async () => ((await this.#reader.ready()) ? null : undefined), 'open', {});
  }

  async claim(fresh: IntentRecord, options: ClaimOptions = {}): Promise<ClaimResult> {
    const record = validRecord(fresh, fresh.scope, fresh.name);
    checkStorable(record.scope, record.name);
    void options; // Always strict: an acknowledged claim survives a power cut, because the app may act on its key.
    const row = rowValue(record);
    const claimed = await this.#call('claim', { scope: record.scope, name: record.name, row, now: this.#now() });
    const found = claimed.created ? { record, text: row.text } : claimed;
    this.#remember(record.scope, record.name, found);
    return { record: { ...found.record }, created: claimed.created };
  }

  async get(scope: string, name: string): Promise<IntentRecord | undefined> {
    checkStorable(scope, name);
    const row = await this.#read(scope, name);
    return row.record;
  }

  /**
   * Read-modify-write, atomic across processes: `updater` runs on this thread over the
   * row as last seen (or as empty when never seen), and its result is stored only if the
   * row is unchanged (compared on its whole stored text, key included); otherwise it runs
   * again over the row found. An updater that writes nothing over a row not just read
   * runs again after a read, unless the row was as it saw it.
   */
  async update(
    scope: string,
    name: string,
    updater: RecordUpdater,
    options: WriteOptions = {},
  ): Promise<IntentRecord | undefined> {
    checkStorable(scope, name);
    const strict = options.durability !== 'relaxed';
    // Not seen yet: guessed empty (what a one-step send meets), which the write checks.
    let seen: SeenRow = this.#seen.get(rowId(scope, name)) ?? {};
    let fresh = false;
    for (;;) {
      const next = updater(seen.record && { ...seen.record });
      if (next === undefined) {
        if (fresh) break;
        // Decided on a row remembered from earlier: only an unchanged row makes that the answer.
        const was = seen.text;
        seen = await this.#read(scope, name, true);
        fresh = true;
        if (seen.text === was) break;
        continue;
      }
      const record = validRecord(next, scope, name);
      const row = rowValue(record);
      const args = {
        scope,
        name,
        row,
        expected: seen.text ?? null,
        damaged: seen.damaged === true,
        strict,
        now: this.#now(),
      };
      // A relaxed write goes with the next strict one, in its commit (`SqliteThread.call`).
      const written = await this.#call('write', args, !strict);
      if (written.ok) {
        this.#remember(scope, name, { record, text: row.text });
        return { ...record };
      }
      seen = written.current;
      fresh = true;
      this.#remember(scope, name, seen);
    }
    // Nothing to write. A damaged row read as salvaged is settled (quarantined) now, as a read would.
    return seen.damaged ? (await this.#read(scope, name)).record : seen.record && { ...seen.record };
  }

  async delete(scope: string, name: string, key?: string, options: DeleteOptions = {}): Promise<void> {
    checkStorable(scope, name);
    this.#seen.delete(rowId(scope, name));
    await this.#call('delete', { scope, name, key, keepPending: options.keepPending });
  }

  /** The records of `scope`. Bad rows met are quarantined (salvaged keys are listed as unknown). */
  async list(scope: string, states?: readonly IntentState[]): Promise<IntentRecord[]> {
    checkStorable(scope);
    const now = this.#now();
    return this.#readFirst(() => this.#reader.list(scope, states, now), 'list', { scope, states, now });
  }

  /** Removes the scope's intents and its quarantined records (with `keepPending`, only settled and unsent intents). */
  async clear(scope: string, options: DeleteOptions = {}): Promise<void> {
    checkStorable(scope);
    this.#seen.clear();
    await this.#call('clear', { scope, keepPending: options.keepPending });
  }

  /**
   * Removes sweepable records of `scope` (see `isSweepable`), oldest first, examining at
   * most `limit` (default `sweepBatch`); the next call goes on with the next oldest.
   */
  async sweep(scope: string, now: number, options: SweepOptions = {}): Promise<number> {
    checkStorable(scope);
    const limit = Math.max(1, Math.floor(options.limit ?? this.#sweepBatch) || this.#sweepBatch);
    this.#seen.clear();
    return this.#call('sweep', { scope, now, limit });
  }

  /** Bad records set aside, of one scope or of all. Kept until `clear(scope)`. */
  async listQuarantined(scope?: string): Promise<QuarantinedRecord[]> {
    return this.#readFirst(() => this.#reader.quarantined(scope), 'quarantined', { scope });
  }

  /**
   * SQLite's `PRAGMA integrity_check`: `['ok']` for a sound file. Reads the whole file, on a
   * thread and a read-only connection of its own, so the store keeps serving meanwhile.
   * Fails with a `StoreError` past `timeout` ms (default 10 minutes; `Infinity`: no bound) or when the store closes,
   * with an `InvalidArgumentError` for a timeout that is not a number of ms.
   */
  async integrityCheck(options: { timeout?: number } = {}): Promise<string[]> {
    const timeout = options.timeout ?? 600_000;
    if (typeof timeout !== 'number' || !(timeout >= 0)) {
      throw new InvalidArgumentError(
        `integrityCheck()'s timeout must be a number of ms, 0 or more (Infinity: no bound); got ${String(timeout)}.`,
      );
    }
    await this.open();
    // Asked for before close() and opened after it began: close() has stopped the checks it saw.
    if (this.#closed) throw this.#closedError();
    const check = startIntegrityCheck({
      file: this.file,
      lockTimeout: this.#lockTimeout,
      timeout,
      hooks: this.#hooks,
    });
    this.#checks.add(check);
    try {
      return await check.result;
    } finally {
      this.#checks.delete(check);
    }
  }

  subscribe(listener: (event: StoreEvent) => void): () => void {
    return this.#listeners.add(listener);
  }

  /**
   * Waits for pending writes, then closes the database. Later calls fail. A database
   * thread that does not finish within `lockTimeout` + 5 s (a stuck disk) is terminated.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#seen.clear();
    await Promise.allSettled([...this.#reading]);
    this.#reader.close();
    await Promise.all([...this.#checks].map((check) => check.stop()));
    await this.#thread.close(this.#lockTimeout + 5_000);
  }

  #call<K extends Op>(op: K, args: Calls[K][0], lazy = false): Promise<Calls[K][1]> {
    if (this.#closed) return Promise.reject(this.#closedError());
    return this.#toThread(op, args, lazy);
  }

  #toThread<K extends Op>(op: K, args: Calls[K][0], lazy = false): Promise<Calls[K][1]> {
    if (!this.#threaded) {
      this.#threaded = true;
      this.#reader.close();
    }
    return this.#thread.call(op, args, lazy);
  }

  /**
   * A read answered on the main thread while this store has not written (`here`: undefined
   * when it cannot answer), else by the thread. One called before close() is answered.
   */
  async #readFirst<K extends Op>(
    here: () => Promise<Calls[K][1] | null | undefined>,
    op: K,
    args: Calls[K][0],
  ): Promise<Calls[K][1]> {
    if (this.#closed) throw this.#closedError();
    if (this.#threaded) return this.#toThread(op, args);
    const decided = here().then((found) =>
      found === undefined ? { call: this.#toThread(op, args) } : { found: found ?? undefined },
    );
    this.#reading.add(decided);
    try {
      const answer = await decided;
      return 'call' in answer ? await answer.call : (answer.found as Calls[K][1]);
    } finally {
      this.#reading.delete(decided);
    }
  }

  #closedError(): StoreError {
    return new StoreError(`The store over ${this.file} is closed.`);
  }

  async #read(scope: string, name: string, peek = false): Promise<SeenRow> {
    const now = this.#now();
    const row = await this.#readFirst(() => this.#reader.get(scope, name, now), 'read', { scope, name, now, peek });
    this.#remember(scope, name, row);
    return row;
  }

  #remember(scope: string, name: string, row: SeenRow): void {
    const id = rowId(scope, name);
    this.#seen.delete(id);
    this.#seen.set(id, row);
    if (this.#seen.size > SEEN_MAX) this.#seen.delete(this.#seen.keys().next().value!);
  }
}

/** JSON, not a separator: a scope or name may hold any character, NUL included ('a\0b'/'c' is not 'a'/'b\0c'). */
const rowId = intentId;

/** Creates a {@link SqliteStore} and opens its database; rejects if it cannot be used. */
export async function openSqliteStore(options: SqliteStoreOptions = {}): Promise<SqliteStore> {
  const store = new SqliteStore(options);
  await store.open();
  return store;
}

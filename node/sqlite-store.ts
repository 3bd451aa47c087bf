import path from 'node:path';
import { OncelyError, StoreError } from '../src/errors.js';
import { corruptRecordError, type QuarantineMarker, readSlot } from '../src/store/corrupt-records.js';
import { StoreListeners } from '../src/store/listeners.js';
import { isPending, isSweepable, SWEEPABLE_STATES } from '../src/store/record-rules.js';
import { parseRecord, validRecord } from '../src/store/record-schema.js';
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
import { CommitQueue, type WriteContext } from './commit-queue.js';
import { legacyId } from './file-store-import.js';
import { type Db, sqliteCode } from './sqlite-driver.js';
import { openDatabase, retryWhileBusy } from './sqlite-open.js';
import type { IntentRows, QuarantinedRecord, StoredRow } from './sqlite-rows.js';
import { fileError } from './sqlite-schema.js';
import { defaultStateDir } from './state-dir.js';
import { WalCheckpointer } from './wal-checkpointer.js';

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

interface Opened {
  db: Db;
  checkpointer: WalCheckpointer | undefined;
  rows: IntentRows;
  queue: CommitQueue;
  /** Slots blocked by unreadable FileStore files, as last counted: checked only while > 0. */
  legacyBlocked: number;
  legacyLookup: ReturnType<Db['prepare']>;
  legacyDelete: ReturnType<Db['prepare']>;
}

/** Commits after which a durable store checkpoints from a worker thread. */
const CHECKPOINTER_AFTER = 100;

/**
 * Intents in one SQLite database file (`node:sqlite`, WAL), for Node: durable across
 * crashes and restarts, shared by the processes of one machine that use the same file.
 *
 * A claim is `INSERT … ON CONFLICT DO NOTHING` plus a read-back in one `BEGIN IMMEDIATE`
 * transaction; an update reads, runs the updater and writes in one, so updates are atomic
 * across processes. Writes made during one event-loop turn share one transaction and one
 * commit (group commit); strict commits sync the WAL (`synchronous=FULL`), relaxed ones
 * do not (`NORMAL`) and are synced by the next strict commit; claims are always strict.
 * A lock held by another process is waited for from a timer, never by sleeping on the
 * event loop.
 *
 * Bad records (edited by hand, damaged) follow the rules of `corrupt-records.ts`: moved to
 * the `quarantine` table and reported to {@link SqliteStore.subscribe} listeners; the key
 * is kept (state `unknown`) when it can be read, otherwise the intent is blocked
 * (`CorruptRecordError`) until the app reconciles and deletes it. A database file that is
 * not oncely's is reported (`StoreFileError`) and left alone.
 *
 * Construction touches nothing; the file is opened on first use ({@link openSqliteStore}
 * opens it up front). One machine only: not for network file systems.
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
  readonly #fsync: boolean;
  readonly #lockTimeout: number;
  readonly #sweepBatch: number;
  readonly #now: () => number;
  readonly #listeners = new StoreListeners();
  #opening: Promise<Opened> | undefined;
  #closed = false;

  constructor(options: SqliteStoreOptions = {}) {
    this.dir = path.resolve(options.dir ?? defaultStateDir());
    this.file = path.resolve(this.dir, options.file ?? 'intents.db');
    this.#fsync = options.fsync ?? true;
    this.#lockTimeout = options.lockTimeout ?? 10_000;
    this.#sweepBatch = Math.max(1, Math.floor(options.sweepBatch ?? 200) || 200);
    this.#now = options.now ?? Date.now;
  }

  /** Opens the database (idempotent): checks, migrates, imports a FileStore directory. */
  async open(): Promise<void> {
    await this.#ready();
  }

  async claim(fresh: IntentRecord, options: ClaimOptions = {}): Promise<ClaimResult> {
    const record = validRecord(fresh, fresh.scope, fresh.name);
    const o = await this.#ready();
    // Always strict: an acknowledged claim survives a power cut, because the app may act on its key.
    return this.#write(o, { ...options, durability: 'strict' }, (context) => {
      this.#checkLegacy(context, o, record.scope, record.name);
      if (o.rows.insert(record)) return { record: { ...record }, created: true };
      const existing = this.#settle(context, o, record.scope, record.name, o.rows.read(record.scope, record.name));
      // The row cannot vanish inside the transaction; a settled one is a record or a throw.
      return { record: existing!, created: false };
    });
  }

  async get(scope: string, name: string): Promise<IntentRecord | undefined> {
    const o = await this.#ready();
    if (o.legacyBlocked === 0) {
      const row = await this.#read(() => o.rows.read(scope, name));
      if (!row) return undefined;
      const slot = readSlot(row.value, scope, name, this.#now());
      if (slot.kind === 'record') return slot.record;
      if (slot.kind === 'blocked') throw corruptRecordError(scope, name, slot.marker);
    }
    // Relaxed: a quarantine lost in a crash is redone the next time the row is read.
    return this.#write(o, { durability: 'relaxed' }, (context) => {
      this.#checkLegacy(context, o, scope, name);
      return this.#settle(context, o, scope, name, o.rows.read(scope, name));
    });
  }

  /** Read-modify-write in one transaction. `updater` may run again if the commit is retried. */
  async update(
    scope: string,
    name: string,
    updater: RecordUpdater,
    options: WriteOptions = {},
  ): Promise<IntentRecord | undefined> {
    const o = await this.#ready();
    return this.#write(o, options, (context) => {
      this.#checkLegacy(context, o, scope, name);
      const current = this.#settle(context, o, scope, name, o.rows.read(scope, name));
      const next = updater(current && { ...current });
      if (next === undefined) return current;
      const record = validRecord(next, scope, name);
      o.rows.put(scope, name, record);
      return { ...record };
    });
  }

  async delete(scope: string, name: string, key?: string, options: DeleteOptions = {}): Promise<void> {
    const o = await this.#ready();
    await this.#write(o, {}, () => {
      const keep = options.keepPending;
      if (keep !== undefined) {
        const parsed = parseRecord(o.rows.read(scope, name)?.value);
        // Not a readable record (a quarantine marker) is kept too: its key may have been sent.
        if (!('record' in parsed) || isPending(parsed.record, keep) || (key !== undefined && parsed.record.key !== key))
          return;
        o.rows.remove(scope, name);
        return;
      }
      if (key === undefined) {
        o.rows.remove(scope, name);
        if (o.legacyBlocked > 0) o.legacyDelete.run(legacyId(scope, name));
        return;
      }
      const parsed = parseRecord(o.rows.read(scope, name)?.value);
      if ('record' in parsed && parsed.record.key === key) o.rows.remove(scope, name);
    });
  }

  /** The records of `scope`. Bad rows met are quarantined (salvaged keys are listed as unknown). */
  async list(scope: string, states?: readonly IntentState[]): Promise<IntentRecord[]> {
    const o = await this.#ready();
    const rows = await this.#read(() => o.rows.list(scope, states));
    const records: IntentRecord[] = [];
    const bad: string[] = [];
    for (const row of rows) {
      const slot = readSlot(row.value, scope, row.name, this.#now());
      if (slot.kind === 'record') records.push(slot.record);
      else if (slot.kind === 'corrupt') bad.push(row.name);
    }
    if (bad.length > 0) {
      const salvaged = await this.#write(o, { durability: 'relaxed' }, (context) =>
        bad.map((name) => this.#settle(context, o, scope, name, o.rows.read(scope, name), false)),
      );
      for (const record of salvaged) if (record && (!states || states.includes(record.state))) records.push(record);
    }
    return records;
  }

  /** Removes the scope's intents and its quarantined records (with `keepPending`, only settled and unsent intents). */
  async clear(scope: string, options: DeleteOptions = {}): Promise<void> {
    const o = await this.#ready();
    await this.#write(o, {}, () => o.rows.clear(scope, options.keepPending));
  }

  /**
   * Removes sweepable records of `scope` (see `isSweepable`), oldest first, examining at
   * most `limit` (default `sweepBatch`); the next call goes on with the next oldest.
   */
  async sweep(scope: string, now: number, options: SweepOptions = {}): Promise<number> {
    const limit = Math.max(1, Math.floor(options.limit ?? this.#sweepBatch) || this.#sweepBatch);
    const o = await this.#ready();
    // Relaxed: a removal lost in a crash only leaves an old record for the next sweep.
    return this.#write(o, { durability: 'relaxed' }, (context) => {
      let removed = 0;
      let examined = 0;
      for (const state of SWEEPABLE_STATES) {
        for (const row of o.rows.sweepable(scope, state, now, limit - examined)) {
          examined++;
          const record = this.#settle(context, o, scope, row.name, row, false);
          if (record && isSweepable(record, now)) {
            o.rows.remove(scope, row.name);
            removed++;
          }
        }
        if (examined >= limit) break;
      }
      return removed;
    });
  }

  /** Bad records set aside, of one scope or of all. Kept until `clear(scope)`. */
  async listQuarantined(scope?: string): Promise<QuarantinedRecord[]> {
    const o = await this.#ready();
    return this.#read(() => o.rows.quarantined(scope));
  }

  /** SQLite's `PRAGMA integrity_check`: `['ok']` for a sound file. Reads the whole file. */
  async integrityCheck(): Promise<string[]> {
    const o = await this.#ready();
    return this.#read(() =>
      o.db
        .prepare('PRAGMA integrity_check')
        .all()
        .map((row) => String(Object.values(row)[0])),
    );
  }

  subscribe(listener: (event: StoreEvent) => void): () => void {
    return this.#listeners.add(listener);
  }

  /** Waits for pending writes, then closes the database. Later calls fail. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const o = await this.#opening?.catch(() => undefined);
    if (!o) return;
    await o.queue.close();
    await o.checkpointer?.stop();
    o.db.close();
  }

  #ready(): Promise<Opened> {
    if (this.#closed) return Promise.reject(new StoreError(`The store over ${this.file} is closed.`));
    this.#opening ??= this.#openNow().catch((error: unknown) => {
      this.#opening = undefined;
      throw this.#wrap(error);
    });
    return this.#opening;
  }

  async #openNow(): Promise<Opened> {
    const { db, rows, imported } = await openDatabase({
      dir: this.dir,
      file: this.file,
      lockTimeout: this.#lockTimeout,
      now: this.#now,
    });
    for (const { salvaged, ...event } of imported?.quarantined ?? []) {
      this.#listeners.emit({ type: 'quarantine', ...event, reason: quarantineReason(event.reason, salvaged) });
    }
    let commits = 0;
    const queue = new CommitQueue(db, {
      file: this.file,
      fsync: this.#fsync,
      lockTimeout: this.#lockTimeout,
      wrap: (error) => this.#wrap(error),
      committed: () => {
        // A store that writes a lot checkpoints from a worker thread (a checkpoint flushes
        // twice: off the loop); a short-lived one keeps SQLite's auto-checkpoint.
        if (++commits !== CHECKPOINTER_AFTER || !this.#fsync || this.#closed) return;
        opened.checkpointer = new WalCheckpointer(this.file);
        db.exec('PRAGMA wal_autocheckpoint = 0');
      },
    });
    const opened: Opened = {
      db,
      checkpointer: undefined,
      rows,
      queue,
      legacyBlocked: Number(db.prepare('SELECT count(*) AS n FROM legacy_blocked').get()?.n),
      legacyLookup: db.prepare('SELECT reason, location FROM legacy_blocked WHERE id = ?'),
      legacyDelete: db.prepare('DELETE FROM legacy_blocked WHERE id = ?'),
    };
    return opened;
  }

  #write<T>(o: Opened, options: WriteOptions, run: (context: WriteContext) => T): Promise<T> {
    return o.queue.submit(options.durability !== 'relaxed', run).catch((error: unknown) => {
      throw this.#wrap(error);
    });
  }

  #read<T>(fn: () => T): Promise<T> {
    return retryWhileBusy(fn, this.#lockTimeout).catch((error: unknown) => {
      throw this.#wrap(error);
    });
  }

  /**
   * The record in `row`, settling a bad one: quarantined, replaced by its salvaged record
   * or by a marker that blocks the intent. Throws `CorruptRecordError` for a blocked
   * intent, unless `throwBlocked` is false (then `undefined`).
   */
  #settle(
    context: WriteContext,
    o: Opened,
    scope: string,
    name: string,
    row: StoredRow | undefined,
    throwBlocked = true,
  ): IntentRecord | undefined {
    const now = this.#now();
    const slot = readSlot(row?.value, scope, name, now);
    if (slot.kind === 'empty') return undefined;
    if (slot.kind === 'record') return slot.record;
    if (slot.kind === 'blocked') {
      if (throwBlocked) throw corruptRecordError(scope, name, slot.marker);
      return undefined;
    }
    const reason = typeof row!.value === 'string' ? 'stored record is not JSON' : slot.reason;
    const { salvaged } = slot;
    const location = o.rows.quarantine({ scope, name, reason, at: now, salvagedKey: salvaged?.key, value: row!.text });
    const marker: QuarantineMarker = { oncely: 'quarantined', reason, location, at: now };
    o.rows.put(scope, name, salvaged ?? marker);
    context.afterCommit(() =>
      this.#listeners.emit({ type: 'quarantine', reason: quarantineReason(reason, !!salvaged), location, scope, name }),
    );
    if (salvaged) return { ...salvaged };
    if (throwBlocked) context.failAfterCommit(corruptRecordError(scope, name, marker));
    return undefined;
  }

  /** A slot blocked by an unreadable FileStore file becomes a marker row here, and blocks. */
  #checkLegacy(context: WriteContext, o: Opened, scope: string, name: string): void {
    if (o.legacyBlocked === 0) return;
    const id = legacyId(scope, name);
    const found = o.legacyLookup.get(id) as { reason: string; location: string } | undefined;
    if (!found) return;
    o.legacyDelete.run(id);
    context.afterCommit(() => {
      o.legacyBlocked--;
    });
    // A row written since the import stands; otherwise the lost key blocks the intent.
    if (o.rows.read(scope, name)) return;
    const marker: QuarantineMarker = { oncely: 'quarantined', ...found, at: this.#now() };
    o.rows.put(scope, name, marker);
    context.failAfterCommit(corruptRecordError(scope, name, marker));
  }

  #wrap(error: unknown): unknown {
    if (error instanceof OncelyError) return error;
    const bad = fileError(this.file, error);
    if (bad) return bad;
    const code = (error as { code?: unknown } | null)?.code;
    if (
      sqliteCode(error) !== undefined ||
      (typeof code === 'string' && (code.startsWith('ERR_SQLITE') || code.startsWith('E')))
    ) {
      const message = error instanceof Error ? error.message : String(error);
      return new StoreError(`oncely's database ${this.file} failed: ${message}`, { cause: error });
    }
    return error;
  }
}

/** Creates a {@link SqliteStore} and opens its database; rejects if it cannot be used. */
export async function openSqliteStore(options: SqliteStoreOptions = {}): Promise<SqliteStore> {
  const store = new SqliteStore(options);
  await store.open();
  return store;
}

const quarantineReason = (reason: string, salvaged: boolean) =>
  `${reason}; ${salvaged ? 'its key was kept and the intent set to unknown' : 'no usable key: the intent is blocked until it is reconciled and deleted'}`;

/**
 * A SqliteStore's reads before its first write, on the main thread through a read-only
 * connection: a process that only reads, or never forms an intent, starts no database
 * thread (a thread costs 100–200 ms to start and ~17 MB). It answers only what needs no
 * write; anything else — no file yet beside a FileStore directory to import, a schema to
 * migrate, a row to quarantine, rows the import blocked — is `undefined`, and the thread
 * answers it. A read here is synchronous: a stuck disk holds the event loop for it, as it
 * would hold the thread after the first write.
 */
import { existsSync } from 'node:fs';
import { corruptRecordError, readSlot } from '../src/store/corrupt-records.js';
import type { IntentRecord } from '../src/store/store.js';
import { hasFileStore } from './file-store-import.js';
import { type Db, databaseClass } from './sqlite-driver.js';
import { retryWhileBusy } from './sqlite-open.js';
import { IntentRows, type QuarantinedRecord } from './sqlite-rows.js';
import { checkAndMigrate, storeError } from './sqlite-schema.js';
import type { SeenRow } from './sqlite-wire.js';

/** No database file and nothing to import: nothing is stored, and nothing is created to say so. */
const ABSENT = Symbol('absent');

export class MainThreadReader {
  readonly #dir: string;
  readonly #file: string;
  readonly #lockTimeout: number;
  #db: Db | undefined;
  #rows: IntentRows | undefined;
  /** Once false, for good: the thread answers from then on. */
  #usable = true;

  constructor(dir: string, file: string, lockTimeout: number) {
    this.#dir = dir;
    this.#file = file;
    this.#lockTimeout = lockTimeout;
  }

  /** True when the file is there and of this schema, with nothing left to import: `open()` needs no thread. */
  async ready(): Promise<boolean> {
    const rows = await this.#open();
    return rows !== undefined && rows !== ABSENT;
  }

  async get(scope: string, name: string, now: number): Promise<SeenRow | undefined> {
    const rows = await this.#open();
    if (rows === ABSENT) return {};
    if (!rows) return undefined;
    const row = await this.#retry(() => rows.read(scope, name));
    const slot = readSlot(row?.value, scope, name, now);
    if (slot.kind === 'empty') return {};
    if (slot.kind === 'record') return { record: slot.record, text: row!.text };
    if (slot.kind === 'blocked') throw corruptRecordError(scope, name, slot.marker);
    return undefined; // a damaged row: the thread quarantines it
  }

  async list(scope: string, states: readonly string[] | undefined, now: number): Promise<IntentRecord[] | undefined> {
    const rows = await this.#open();
    if (rows === ABSENT) return [];
    if (!rows) return undefined;
    const found = await this.#retry(() => rows.list(scope, states));
    const records: IntentRecord[] = [];
    for (const row of found) {
      const slot = readSlot(row.value, scope, row.name, now);
      if (slot.kind === 'record') records.push(slot.record);
      else if (slot.kind === 'corrupt') return undefined;
    }
    return records;
  }

  async quarantined(scope: string | undefined): Promise<QuarantinedRecord[] | undefined> {
    const rows = await this.#open();
    if (rows === ABSENT) return [];
    return rows && this.#retry(() => rows.quarantined(scope));
  }

  /** From now on the thread answers (this store has written). */
  close(): void {
    this.#usable = false;
    this.#rows = undefined;
    this.#db?.close();
    this.#db = undefined;
  }

  #retry<T>(fn: () => T): Promise<T> {
    return retryWhileBusy(fn, this.#lockTimeout).catch((error: unknown) => {
      throw storeError(this.#file, error);
    });
  }

  /** One open at a time: concurrent first reads share it (each would open a connection of its own). */
  #open(): Promise<IntentRows | typeof ABSENT | undefined> {
    if (this.#rows) return Promise.resolve(this.#rows);
    this.#opening ??= this.#openOnce().finally(() => {
      this.#opening = undefined;
    });
    return this.#opening;
  }

  #opening: Promise<IntentRows | typeof ABSENT | undefined> | undefined;

  async #openOnce(): Promise<IntentRows | typeof ABSENT | undefined> {
    if (this.#rows) return this.#rows;
    if (!this.#usable) return undefined;
    const file = existsSync(this.#file);
    if (hasFileStore(this.#dir)) {
      this.close();
      return undefined;
    }
    if (!file) return ABSENT;
    const Database = databaseClass();
    let db: Db;
    try {
      db = new Database(this.#file, { readOnly: true });
    } catch (error) {
      throw storeError(this.#file, error);
    }
    try {
      // A foreign or newer file throws its StoreFileError here, as the thread would. One
      // snapshot: another process creating the file commits its tables and its id together.
      const [current, blocked] = await this.#retry(() => {
        db.exec('BEGIN');
        try {
          const current = checkAndMigrate(db, this.#file, false);
          return [current, current && Number(db.prepare('SELECT count(*) AS n FROM legacy_blocked').get()?.n) > 0];
        } finally {
          db.exec('COMMIT');
        }
      });
      if (!current || blocked) {
        db.close();
        this.close();
        return undefined;
      }
      this.#rows = new IntentRows(db, this.#file);
    } catch (error) {
      db.close();
      throw storeError(this.#file, error);
    }
    this.#db = db;
    return this.#rows;
  }
}

/**
 * The statements of `SqliteStore` over its tables (see `sqlite-schema.ts`): one row per
 * intent, keyed by (scope, name), holding the record as JSON plus the columns that are
 * indexed. Rows are written only through these, inside the store's transactions.
 */
import type { QuarantineMarker } from '../src/store/corrupt-records.js';
import { recordTtl } from '../src/store/record-rules.js';
import type { IntentRecord, IntentState } from '../src/store/store.js';
import type { Db } from './sqlite-driver.js';

/** A stored row: the JSON of its record parsed, or the text itself when it is not JSON. */
export interface StoredRow {
  name: string;
  text: string;
  value: unknown;
}

/** One row of the quarantine table, as `SqliteStore.listQuarantined()` reports it. */
export interface QuarantinedRecord {
  /** Where it is kept: `<database file>#quarantine/<id>`. */
  location: string;
  reason: string;
  /** When it was set aside (ms since epoch). */
  at: number;
  /** Missing when the value did not say which intent it belonged to. */
  scope?: string;
  name?: string;
  /** The key kept in place of the bad record, when one could be salvaged. */
  salvagedKey?: string;
  /** The stored text, untouched. */
  value: string;
}

/** A stored value as text: a damaged row may hold a blob or a number instead. */
const textOf = (raw: unknown): string =>
  typeof raw === 'string' ? raw : raw instanceof Uint8Array ? Buffer.from(raw).toString('utf8') : String(raw);

// Text columns are read as blobs: Node 22.13–22.x reads a TEXT value up to its first NUL,
// and a name or a damaged value may hold one.
const NAME = 'CAST(name AS BLOB) AS name';
const RECORD = 'CAST(record AS BLOB) AS record';
const QUARANTINED =
  'id, CAST(scope AS BLOB) AS scope, CAST(name AS BLOB) AS name, reason, at, salvaged_key, CAST(value AS BLOB) AS value';

const stored = (name: string, raw: unknown): StoredRow => {
  const text = textOf(raw);
  return { name, text, value: parse(text) };
};

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

/**
 * A value as a row stores it: its JSON and the columns that are indexed. A record's is
 * made on the main thread, which sends it as is: the database thread neither clones an
 * object nor serialises it again.
 */
export interface RowValue {
  text: string;
  state: string;
  sweepAt: number;
}

export const rowValue = (value: IntentRecord | QuarantineMarker): RowValue =>
  'oncely' in value
    ? { text: JSON.stringify(value), state: 'blocked', sweepAt: 0 }
    : { text: JSON.stringify(value), state: value.state, sweepAt: value.updatedAt + recordTtl(value) };

export class IntentRows {
  readonly file: string;
  readonly #insert;
  readonly #put;
  readonly #read;
  readonly #remove;
  readonly #list;
  readonly #listStates;
  readonly #sweepable;
  readonly #clear;
  readonly #clearSettled;
  readonly #quarantine;
  readonly #quarantined;
  readonly #quarantinedOf;
  readonly #clearQuarantine;

  constructor(db: Db, file: string) {
    this.file = file;
    this.#insert = db.prepare(
      'INSERT INTO intents (scope, name, state, sweep_at, record) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
    );
    this.#put = db.prepare(
      `INSERT INTO intents (scope, name, state, sweep_at, record) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT DO UPDATE SET state = excluded.state, sweep_at = excluded.sweep_at, record = excluded.record`,
    );
    this.#read = db.prepare(`SELECT ${RECORD} FROM intents WHERE scope = ? AND name = ?`);
    this.#remove = db.prepare('DELETE FROM intents WHERE scope = ? AND name = ?');
    this.#list = db.prepare(`SELECT ${NAME}, ${RECORD} FROM intents WHERE scope = ?`);
    this.#listStates = db.prepare(
      `SELECT ${NAME}, ${RECORD} FROM intents WHERE scope = ? AND state IN (SELECT value FROM json_each(?))`,
    );
    this.#sweepable = db.prepare(
      `SELECT ${NAME}, ${RECORD} FROM intents WHERE scope = ? AND state = ? AND sweep_at < ? ORDER BY sweep_at LIMIT ?`,
    );
    this.#clear = db.prepare('DELETE FROM intents WHERE scope = ?');
    this.#clearSettled = db.prepare(
      `DELETE FROM intents WHERE scope = ? AND state NOT IN ('in_flight', 'unknown', 'blocked')
         AND COALESCE(json_extract(record, '$.lease.until'), 0) <= ?`,
    );
    this.#quarantine = db.prepare(
      'INSERT INTO quarantine (scope, name, reason, at, salvaged_key, value) VALUES (?, ?, ?, ?, ?, ?)',
    );
    this.#quarantined = db.prepare(`SELECT ${QUARANTINED} FROM quarantine ORDER BY id`);
    this.#quarantinedOf = db.prepare(`SELECT ${QUARANTINED} FROM quarantine WHERE scope = ? ORDER BY id`);
    this.#clearQuarantine = db.prepare('DELETE FROM quarantine WHERE scope = ?');
  }

  /** Stores `row` unless (scope, name) has a row. True when it did. */
  insert(scope: string, name: string, row: RowValue): boolean {
    return this.#insert.run(scope, name, row.state, row.sweepAt, row.text).changes === 1;
  }

  /** Stores `row` in the row of (scope, name), replacing what is there. */
  put(scope: string, name: string, row: RowValue): void {
    this.#put.run(scope, name, row.state, row.sweepAt, row.text);
  }

  read(scope: string, name: string): StoredRow | undefined {
    const text = this.readText(scope, name);
    return text === undefined ? undefined : stored(name, text);
  }

  /** The stored text alone, unparsed (a conditional write compares it). */
  readText(scope: string, name: string): string | undefined {
    const row = this.#read.get(scope, name);
    return row && textOf(row.record);
  }

  /** A row whose text `readText` gave. */
  static parsed(name: string, text: string | undefined): StoredRow | undefined {
    return text === undefined ? undefined : stored(name, text);
  }

  remove(scope: string, name: string): void {
    this.#remove.run(scope, name);
  }

  list(scope: string, states?: readonly string[]): StoredRow[] {
    const rows = states ? this.#listStates.all(scope, JSON.stringify(states)) : this.#list.all(scope);
    return rows.map((row) => stored(textOf(row.name), row.record));
  }

  /** Rows of `scope` in `state` whose sweep time is before `now`, oldest first. */
  sweepable(scope: string, state: IntentState, now: number, limit: number): StoredRow[] {
    return this.#sweepable.all(scope, state, now, limit).map((row) => stored(textOf(row.name), row.record));
  }

  /** With `keepPending` (a time), only rows that are not pending then (see `isPending`), and no quarantine. */
  clear(scope: string, keepPending?: number): void {
    if (keepPending !== undefined) {
      this.#clearSettled.run(scope, keepPending);
      return;
    }
    this.#clear.run(scope);
    this.#clearQuarantine.run(scope);
  }

  /** Keeps a bad value as it was found. Returns where it went. */
  quarantine(entry: Omit<QuarantinedRecord, 'location'>): string {
    const { lastInsertRowid } = this.#quarantine.run(
      entry.scope ?? null,
      entry.name ?? null,
      entry.reason,
      entry.at,
      entry.salvagedKey ?? null,
      entry.value,
    );
    return this.#location(lastInsertRowid);
  }

  quarantined(scope?: string): QuarantinedRecord[] {
    const rows = (scope === undefined ? this.#quarantined.all() : this.#quarantinedOf.all(scope)) as {
      id: number;
      scope: Uint8Array | null;
      name: Uint8Array | null;
      reason: string;
      at: number;
      salvaged_key: string | null;
      value: Uint8Array;
    }[];
    return rows.map((row) => ({
      location: this.#location(row.id),
      reason: row.reason,
      at: row.at,
      ...(row.scope !== null && { scope: textOf(row.scope) }),
      ...(row.name !== null && { name: textOf(row.name) }),
      ...(row.salvaged_key !== null && { salvagedKey: row.salvaged_key }),
      value: textOf(row.value),
    }));
  }

  #location(id: number | bigint): string {
    return `${this.file}#quarantine/${id}`;
  }
}

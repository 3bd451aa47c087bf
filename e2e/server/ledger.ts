/**
 * The payments API's own table, `charges`, in the SQLite file the `SqliteKeyStore` keeps its
 * keys in. A charge is written on the transaction that holds its key (`insertCharge(tx, …)`),
 * so key, charge and stored answer commit together or not at all; the ledger is read on a
 * read-only connection of its own, which sees commits only and never waits for a held one.
 */
import { randomUUID } from 'node:crypto';
import { DatabaseSync } from 'node:sqlite';
import type { SqliteKeyStore, SqliteTransaction } from 'oncely/node';

export interface Charge {
  id: string;
  scope: string;
  key: string;
  amount: number;
  currency: string;
  created_at: number;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS charges (
  id          TEXT    PRIMARY KEY,
  scope       TEXT    NOT NULL,
  key         TEXT    NOT NULL,
  amount      REAL    NOT NULL,
  currency    TEXT    NOT NULL,
  created_at  INTEGER NOT NULL,
  -- The business row carries the constraint too: a second charge for one key cannot exist.
  UNIQUE (scope, key)
);`;

/** Writes the charge in the key's transaction. */
export function insertCharge(
  tx: SqliteTransaction,
  charge: { scope: string; key: string; amount: number; currency: string },
  now: number,
): Charge {
  const id = `ch_${randomUUID().replaceAll('-', '').slice(0, 20)}`;
  tx.run(
    'INSERT INTO charges (id, scope, key, amount, currency, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    id,
    charge.scope,
    charge.key,
    charge.amount,
    charge.currency,
    now,
  );
  return { id, ...charge, created_at: now };
}

export class Ledger {
  readonly #store: SqliteKeyStore;
  readonly #reader: DatabaseSync;

  private constructor(store: SqliteKeyStore, reader: DatabaseSync) {
    this.#store = store;
    this.#reader = reader;
  }

  /** Creates the table (in the store's write queue) and opens the read connection. */
  static async open(store: SqliteKeyStore): Promise<Ledger> {
    await store.transaction((tx) => tx.exec(SCHEMA));
    const reader = new DatabaseSync(store.file, { readOnly: true });
    return new Ledger(store, reader);
  }

  /** Every committed charge, oldest first. */
  charges(): Charge[] {
    const rows = this.#reader.prepare('SELECT * FROM charges ORDER BY created_at, id').all();
    return (rows as unknown as Charge[]).map((row) => ({ ...row }));
  }

  /**
   * Empties the charges and the keys (`{ reset: true }`), after the transactions under way.
   * The key table is the store's; a test server may empty it, an app never needs to.
   */
  reset(): Promise<void> {
    return this.#store.transaction((tx) => tx.exec('DELETE FROM charges; DELETE FROM oncely_server_keys;'));
  }

  close(): void {
    if (this.#reader.isOpen) this.#reader.close();
  }
}

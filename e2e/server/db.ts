/**
 * The payments database: idempotency records and charges in one SQLite file
 * (`node:sqlite`). The key row is claimed with an INSERT that the primary key may
 * reject (a constraint, not a lookup); the charge and the stored response commit in
 * one transaction, so a key is never `succeeded` without its charge, nor a charge
 * there without its key.
 */
import { randomUUID } from 'node:crypto';
import { DatabaseSync, type StatementSync } from 'node:sqlite';

export type KeyState = 'in_progress' | 'succeeded';

export interface KeyRow {
  scope: string;
  key: string;
  request_hash: string;
  state: KeyState;
  response_code: number | null;
  response_body: string | null;
  created_at: number;
}

export interface Charge {
  id: string;
  scope: string;
  key: string;
  amount: number;
  currency: string;
  created_at: number;
}

/** What a claim found: this request owns the key now, or another request had it first. */
export type ClaimResult = { claimed: true } | { claimed: false; existing: KeyRow };

/** The response stored with the charge and replayed for every repeat of the key. */
export interface StoredResponse {
  status: number;
  body: unknown;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS idempotency_keys (
  scope          TEXT    NOT NULL,
  key            TEXT    NOT NULL,
  request_hash   TEXT    NOT NULL,
  state          TEXT    NOT NULL CHECK (state IN ('in_progress', 'succeeded')),
  response_code  INTEGER,
  response_body  TEXT,
  created_at     INTEGER NOT NULL,
  PRIMARY KEY (scope, key)
);
CREATE TABLE IF NOT EXISTS charges (
  id          TEXT    PRIMARY KEY,
  scope       TEXT    NOT NULL,
  key         TEXT    NOT NULL,
  amount      REAL    NOT NULL,
  currency    TEXT    NOT NULL,
  created_at  INTEGER NOT NULL,
  -- The business row carries the constraint too: a second charge for one key cannot exist.
  UNIQUE (scope, key)
);
`;

/** SQLITE_CONSTRAINT and its extended codes (PRIMARYKEY 1555, UNIQUE 2067). */
const isConstraintViolation = (error: unknown): boolean =>
  typeof error === 'object' &&
  error !== null &&
  typeof (error as { errcode?: unknown }).errcode === 'number' &&
  ((error as { errcode: number }).errcode & 0xff) === 19;

/** Thrown inside the effect transaction to roll it back on purpose (fault injection). */
export class RollbackRequested extends Error {}

export class PaymentsDb {
  readonly path: string;
  readonly #db: DatabaseSync;
  readonly #insertKey: StatementSync;
  readonly #selectKey: StatementSync;
  readonly #completeKey: StatementSync;
  readonly #releaseKey: StatementSync;
  readonly #insertCharge: StatementSync;
  readonly #selectCharges: StatementSync;

  constructor(path: string) {
    this.path = path;
    this.#db = new DatabaseSync(path);
    this.#db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;');
    this.#db.exec(SCHEMA);
    this.#insertKey = this.#db.prepare(
      `INSERT INTO idempotency_keys (scope, key, request_hash, state, created_at) VALUES (?, ?, ?, 'in_progress', ?)`,
    );
    this.#selectKey = this.#db.prepare('SELECT * FROM idempotency_keys WHERE scope = ? AND key = ?');
    this.#completeKey = this.#db.prepare(
      `UPDATE idempotency_keys SET state = 'succeeded', response_code = ?, response_body = ?
       WHERE scope = ? AND key = ? AND state = 'in_progress'`,
    );
    this.#releaseKey = this.#db.prepare(
      `DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND state = 'in_progress'`,
    );
    this.#insertCharge = this.#db.prepare(
      'INSERT INTO charges (id, scope, key, amount, currency, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    );
    this.#selectCharges = this.#db.prepare('SELECT * FROM charges ORDER BY created_at, id');
    this.releaseOrphanedClaims();
  }

  /**
   * At startup no request of this (single-process) server is running, so an
   * `in_progress` key was left by a crash between its claim and its effect. The effect
   * commits together with `succeeded`, so such a key has no charge: free it, or every
   * retry of it would get 409 forever. Returns how many were freed.
   */
  releaseOrphanedClaims(): number {
    return Number(this.#db.prepare(`DELETE FROM idempotency_keys WHERE state = 'in_progress'`).run().changes);
  }

  /**
   * The server's first act for a keyed request: INSERT the key as `in_progress`. The
   * primary key decides who is first; a violation means a repeat, and the row it hit is
   * read back in the same transaction.
   */
  claim(scope: string, key: string, requestHash: string, now: number): ClaimResult {
    return this.#transaction(() => {
      try {
        this.#insertKey.run(scope, key, requestHash, now);
        return { claimed: true };
      } catch (error) {
        if (!isConstraintViolation(error)) throw error;
        const existing = this.#selectKey.get(scope, key) as unknown as KeyRow | undefined;
        if (!existing) throw error;
        return { claimed: false, existing: { ...existing } };
      }
    });
  }

  /**
   * The effect: inserts the charge and stores the response on the key row, in ONE
   * transaction. `beforeCommit` runs inside it (after both writes); throwing there
   * rolls both back.
   */
  commitCharge(
    scope: string,
    key: string,
    charge: { amount: number; currency: string },
    now: number,
    beforeCommit?: () => void,
  ): { charge: Charge; response: StoredResponse } {
    return this.#transaction(() => {
      const id = `ch_${randomUUID().replaceAll('-', '').slice(0, 20)}`;
      this.#insertCharge.run(id, scope, key, charge.amount, charge.currency, now);
      const response: StoredResponse = {
        status: 201,
        body: { id, amount: charge.amount, currency: charge.currency, status: 'succeeded' },
      };
      const { changes } = this.#completeKey.run(response.status, JSON.stringify(response.body), scope, key);
      if (changes !== 1) throw new Error(`idempotency key ${key} is not in progress any more`);
      beforeCommit?.();
      return {
        charge: { id, scope, key, amount: charge.amount, currency: charge.currency, created_at: now },
        response,
      };
    });
  }

  /** Gives up an `in_progress` claim whose effect did not commit, so a retry runs again. */
  release(scope: string, key: string): void {
    this.#releaseKey.run(scope, key);
  }

  getKey(scope: string, key: string): KeyRow | undefined {
    const row = this.#selectKey.get(scope, key) as unknown as KeyRow | undefined;
    return row && { ...row };
  }

  charges(): Charge[] {
    return (this.#selectCharges.all() as unknown as Charge[]).map((row) => ({ ...row }));
  }

  keys(): KeyRow[] {
    return (this.#db.prepare('SELECT * FROM idempotency_keys ORDER BY created_at').all() as unknown as KeyRow[]).map(
      (row) => ({ ...row }),
    );
  }

  /** Empties both tables (control endpoint `{ reset: true }`). */
  reset(): void {
    this.#transaction(() => {
      this.#db.exec('DELETE FROM charges; DELETE FROM idempotency_keys;');
    });
  }

  close(): void {
    if (this.#db.isOpen) this.#db.close();
  }

  #transaction<T>(fn: () => T): T {
    this.#db.exec('BEGIN IMMEDIATE');
    try {
      const result = fn();
      this.#db.exec('COMMIT');
      return result;
    } catch (error) {
      this.#db.exec('ROLLBACK');
      throw error;
    }
  }
}

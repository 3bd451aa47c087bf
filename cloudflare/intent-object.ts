import { isPending, isSweepable } from '../src/store/record-rules.js';
import type { IntentRecord } from '../src/store/store.js';
import type { StoreRequest } from './protocol.js';

/** The part of a Durable Object's `ctx.storage` (SQLite-backed) the object uses. */
export interface SqlStorageLike {
  sql: { exec(query: string, ...bindings: unknown[]): { toArray(): Record<string, unknown>[] } };
  transactionSync<T>(fn: () => T): T;
}

const rowsOf = (storage: SqlStorageLike, query: string, ...bindings: unknown[]) =>
  storage.sql.exec(query, ...bindings).toArray() as { name: string; record: string }[];

/**
 * The Durable Object class that keeps one scope's intents in its SQLite storage: re-export
 * it from your Worker's entry and bind it as a SQLite-backed namespace (wrangler:
 * `new_sqlite_classes`), then pass the binding to `DurableObjectStore`. One object per scope,
 * so every call of a scope is serialized by the platform; each request is one synchronous
 * transaction, durable before it is answered.
 */
export class IntentStoreObject {
  readonly #storage: SqlStorageLike;

  constructor(ctx: { storage: SqlStorageLike }, _env?: unknown) {
    this.#storage = ctx.storage;
    this.#storage.sql.exec('CREATE TABLE IF NOT EXISTS oncely_intents (name TEXT PRIMARY KEY, record TEXT NOT NULL)');
  }

  async fetch(request: Request): Promise<Response> {
    let asked: StoreRequest;
    try {
      asked = (await request.json()) as StoreRequest;
    } catch {
      return Response.json({ error: 'not a store request' }, { status: 400 });
    }
    try {
      return Response.json({ result: this.#storage.transactionSync(() => this.#run(asked)) ?? null });
    } catch (error) {
      return Response.json({ error: String((error as Error)?.message ?? error) }, { status: 500 });
    }
  }

  #row(name: string): string | null {
    return rowsOf(this.#storage, 'SELECT record FROM oncely_intents WHERE name = ?', name)[0]?.record ?? null;
  }

  #all(): IntentRecord[] {
    return rowsOf(this.#storage, 'SELECT name, record FROM oncely_intents ORDER BY name').map(
      (row) => JSON.parse(row.record) as IntentRecord,
    );
  }

  #remove(name: string): void {
    this.#storage.sql.exec('DELETE FROM oncely_intents WHERE name = ?', name);
  }

  #run(asked: StoreRequest): unknown {
    const sql = this.#storage.sql;
    switch (asked.op) {
      case 'claim': {
        const existing = this.#row(asked.fresh.name);
        if (existing !== null) return { record: JSON.parse(existing), created: false };
        sql.exec(
          'INSERT INTO oncely_intents (name, record) VALUES (?, ?)',
          asked.fresh.name,
          JSON.stringify(asked.fresh),
        );
        return { record: asked.fresh, created: true };
      }
      case 'read':
        return { text: this.#row(asked.name) };
      case 'write': {
        // Identity compare-and-set: written only over the very row the updater saw.
        const text = this.#row(asked.name);
        if (text !== asked.expected) return { written: false, text };
        sql.exec(
          'INSERT INTO oncely_intents (name, record) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET record = excluded.record',
          asked.name,
          JSON.stringify(asked.next),
        );
        return { written: true };
      }
      case 'delete': {
        const text = this.#row(asked.name);
        if (text === null) return null;
        const record = JSON.parse(text) as IntentRecord;
        if (asked.key !== undefined && record.key !== asked.key) return null;
        if (asked.keepPending !== undefined && isPending(record, asked.keepPending)) return null;
        this.#remove(asked.name);
        return null;
      }
      case 'list':
        return this.#all().filter((record) => !asked.states || asked.states.includes(record.state));
      case 'clear':
        for (const record of this.#all())
          if (asked.keepPending === undefined || !isPending(record, asked.keepPending)) this.#remove(record.name);
        return null;
      case 'sweep': {
        let removed = 0;
        for (const record of this.#all().slice(0, asked.limit ?? Number.POSITIVE_INFINITY))
          if (isSweepable(record, asked.now)) {
            this.#remove(record.name);
            removed++;
          }
        return removed;
      }
    }
  }
}

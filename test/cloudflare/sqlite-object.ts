/**
 * `IntentStoreObject` outside workerd, for fast tests in Node: its SQLite storage is a
 * `node:sqlite` database per object, and the namespace a map of objects whose transport a
 * test can fault (before the object runs, after it ran with the answer lost, a 500, garbage,
 * a hang).
 */
import { DatabaseSync } from 'node:sqlite';
import type { DurableObjectNamespaceLike } from '../../cloudflare/durable-object-store.js';
import { IntentStoreObject, type SqlStorageLike } from '../../cloudflare/intent-object.js';

function storageOf(db: DatabaseSync): SqlStorageLike {
  return {
    sql: {
      exec(query: string, ...bindings: unknown[]) {
        const statement = db.prepare(query);
        const args = bindings as (string | number | null)[];
        // Run now, as the platform's exec does; a statement that returns no rows answers [].
        if (!/^\s*SELECT/i.test(query)) {
          statement.run(...args);
          return { toArray: () => [] };
        }
        const rows = statement.all(...args) as Record<string, unknown>[];
        return { toArray: () => rows };
      },
    },
    transactionSync<T>(fn: () => T): T {
      db.exec('BEGIN IMMEDIATE');
      try {
        const result = fn();
        db.exec('COMMIT');
        return result;
      } catch (error) {
        db.exec('ROLLBACK');
        throw error;
      }
    },
  };
}

export type TransportFault = 'before' | 'after' | 'status-500' | 'garbage' | 'hang';

export interface FakeNamespace extends DurableObjectNamespaceLike {
  /** Decides, per request to an object, whether (and how) its transport fails. */
  fault?: (op: string) => TransportFault | undefined;
}

/** A namespace of objects over in-memory SQLite databases, one per object name. */
export function fakeNamespace(): FakeNamespace {
  const objects = new Map<string, IntentStoreObject>();
  const namespace: FakeNamespace = {
    idFromName: (name: string) => name,
    get(id: unknown) {
      const name = String(id);
      if (!objects.has(name))
        objects.set(name, new IntentStoreObject({ storage: storageOf(new DatabaseSync(':memory:')) }));
      const object = objects.get(name)!;
      return {
        async fetch(input: string, init?: RequestInit) {
          const { op } = JSON.parse(String(init?.body)) as { op: string };
          const fault = namespace.fault?.(op);
          if (fault === 'before') throw new TypeError('Network connection lost.');
          if (fault === 'hang') return new Promise<Response>(() => {});
          const response = await object.fetch(new Request(input, init));
          if (fault === 'after') throw new TypeError('Network connection lost.');
          if (fault === 'status-500') return new Response('internal error', { status: 500 });
          if (fault === 'garbage') return new Response('<html>', { status: 200 });
          return response;
        },
      };
    },
  };
  return namespace;
}

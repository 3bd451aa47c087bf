/**
 * The library as the benchmarks use it: by package name (`oncely`, `oncely/node`), i.e.
 * the built `dist/`. Where an entry does not export a piece yet (work in progress), the
 * built file is imported directly and a note says so.
 */
// Types from the sources, so that type-checking needs no build; values from dist/.
import type { SqliteStore as SqliteStoreClass, SqliteStoreOptions } from '../node/sqlite-store.ts';
import type * as Core from '../src/index.ts';

export const notes: string[] = [];

async function importFirst<T>(what: string, candidates: string[], has: (m: T) => boolean): Promise<T> {
  const failures: string[] = [];
  for (const specifier of candidates) {
    try {
      const m = (await import(specifier)) as T;
      if (has(m)) {
        if (specifier !== candidates[0])
          notes.push(`${what} loaded from ${specifier} (not exported by ${candidates[0]})`);
        return m;
      }
      failures.push(`${specifier}: no ${what}`);
    } catch (error) {
      failures.push(`${specifier}: ${(error as Error).message.split('\n')[0]}`);
    }
  }
  throw new Error(`cannot load ${what}: ${failures.join('; ')}`);
}

export const oncely: typeof Core = await importFirst<typeof Core>(
  'createClient',
  ['oncely', '../dist/src/index.js'],
  (m) => typeof m.createClient === 'function' && typeof m.MemoryStore === 'function',
);

type SqliteStoreModule = { SqliteStore: typeof SqliteStoreClass };
const sqliteStoreModule = await importFirst<SqliteStoreModule>(
  'SqliteStore',
  ['oncely/node', '../dist/node/sqlite-store.js'],
  (m) => typeof m.SqliteStore === 'function',
);

/** The default store of `createClient` in Node. */
export const { SqliteStore } = sqliteStoreModule;
export type SqliteStore = SqliteStoreClass;

/** The default Node store in `dir`, opened (file created, schema in place) before it is timed. */
export async function openDiskStore(dir: string, options: SqliteStoreOptions = {}): Promise<SqliteStoreClass> {
  const store = new SqliteStore({ dir, ...options });
  await store.open();
  return store;
}
